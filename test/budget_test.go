package test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execd/execd/internal/proctest"
)

// forkFiller forks until the kernel refuses and keeps what it got until
// its deadline (argv[1] seconds), so that the user's budget of processes
// stays full.
const forkFiller = `import os, sys, time
end = time.time() + float(sys.argv[1])
while time.time() < end:
    try:
        if os.fork() == 0:
            time.sleep(max(end - time.time(), 0)); os._exit(0)
    except OSError:
        time.sleep(0.001)
`

// A fork loop that uses up the process budget execd shares with it
// (RLIMIT_NPROC of execd's user) cannot crash execd: it keeps answering,
// and the calls it cannot start say which limit is reached (issue 13 item
// 3, SPEC §3.2). Before the fix the Go runtime aborted ("fatal error:
// newosproc") in most runs at these limits.
func TestForkLoopCannotCrashExecd(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run execd as a fresh uid under prlimit")
	}
	for _, tool := range []string{"setpriv", "prlimit", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	for _, nproc := range []int{24, 32} {
		t.Run("RLIMIT_NPROC="+strconv.Itoa(nproc), func(t *testing.T) {
			h := newSandboxHost(t, true)
			uid := strconv.Itoa(61000 + rand.IntN(3000)) // a user with no other process
			t.Cleanup(func() { _ = exec.Command("pkill", "-KILL", "-U", uid).Run() })
			config := "[sandbox]\nmode = \"danger-full-access\"\n"
			cmd := h.command(config, "serve")
			args := cmd.Args[4:] // after setpriv's flags
			cmd = exec.Command("prlimit", append([]string{"--nproc=" + strconv.Itoa(nproc), "setpriv",
				"--reuid=" + uid, "--regid=" + uid, "--clear-groups"}, args...)...)
			cmd.Env = h.command(config, "serve").Env // (which writes the config file again)
			fillTheBudget(t, cmd, "RLIMIT_NPROC")
		})
	}
	t.Run("pids.max=40", func(t *testing.T) {
		dir := pidsCgroup(t, 40)
		h := newSandboxHost(t, false)
		cmd := h.command("[sandbox]\nmode = \"danger-full-access\"\n", "serve")
		cmd.Args = append([]string{"sh", "-c", `echo $$ >"$0/cgroup.procs" && exec "$@"`, dir}, cmd.Args...)
		cmd.Path = "/bin/sh"
		fillTheBudget(t, cmd, "pids.max")
	})
}

// pidsCgroup creates a cgroup with pids.max = max, in a cgroup v1 pids
// hierarchy or in cgroup v2 where the root enables pids for its children,
// and returns its directory; it skips the test where neither is there.
func pidsCgroup(t *testing.T, max int) string {
	t.Helper()
	var parent string
	switch {
	case fileExists("/sys/fs/cgroup/pids/pids.current") || fileExists("/sys/fs/cgroup/pids/cgroup.procs"):
		parent = "/sys/fs/cgroup/pids"
	case strings.Contains(readFile("/sys/fs/cgroup/cgroup.subtree_control"), "pids"):
		parent = "/sys/fs/cgroup"
	default:
		t.Skip("no pids controller this test can use (cgroup v1 pids, or pids enabled in cgroup v2's root)")
	}
	dir, err := os.MkdirTemp(parent, "execd-test-pids-")
	if err != nil {
		t.Skipf("cannot create a pids cgroup: %v", err)
	}
	t.Cleanup(func() {
		_ = os.WriteFile(dir+"/cgroup.kill", []byte("1"), 0)
		for range 100 {
			if err := os.Remove(dir); err == nil {
				return
			}
			for _, pid := range strings.Fields(readFile(dir + "/cgroup.procs")) {
				if n, err := strconv.Atoi(pid); err == nil {
					_ = syscall.Kill(n, syscall.SIGKILL)
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	if err := os.WriteFile(dir+"/pids.max", []byte(strconv.Itoa(max)), 0); err != nil {
		t.Fatal(err)
	}
	return dir
}

func fileExists(name string) bool { _, err := os.Stat(name); return err == nil }

func readFile(name string) string { b, _ := os.ReadFile(name); return string(b) }

// fillTheBudget connects to execd started by cmd, runs the fork filler in
// it and, while the budget is full, 40 commands and 40 pings at once: all
// are answered, each command that cannot start names limit, and execd
// exits cleanly at the end (connect checks).
func fillTheBudget(t *testing.T, cmd *exec.Cmd, limit string) {
	t.Helper()
	cmd.Stderr = &testLog{t: t}
	cs := connect(t, cmd, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	marker := newMarker()
	t.Cleanup(func() { proctest.Kill(marker) })
	filled := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{
			"command": []string{"python3", "-c", forkFiller, "5", marker}, "timeout_ms": 60000}})
		filled <- res
	}()
	proctest.Running(t, marker, 2, waitLimit) // it has forked
	time.Sleep(500 * time.Millisecond)        // and used up the budget

	var wg sync.WaitGroup
	var mu sync.Mutex
	named, failed := 0, []string{}
	for range 40 {
		wg.Go(func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{
				"command": []string{"sleep", "0.2"}}})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				failed = append(failed, err.Error())
			case res.IsError && strings.Contains(textOf(res), limit):
				named++
			case res.IsError:
				failed = append(failed, textOf(res))
			}
		})
		wg.Go(func() {
			if err := cs.Ping(ctx, nil); err != nil {
				mu.Lock()
				failed = append(failed, "ping: "+err.Error())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Errorf("%d calls failed otherwise than naming %s, e.g. %q", len(failed), limit, failed[0])
	}
	if named == 0 {
		t.Errorf("no call said that %s is reached", limit)
	}
	if res := <-filled; res == nil || res.IsError {
		t.Errorf("the fork loop's own call: %v", res)
	}
	t.Logf("%d of 40 calls refused, naming %s", named, limit)
}

// textOf is a tool result's text.
func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		} else {
			fmt.Fprint(&b, c)
		}
	}
	return b.String()
}
