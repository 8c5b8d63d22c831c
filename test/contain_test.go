package test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execd/execd/internal/proctest"
)

// containedProcesses starts, through cs, processes of every kind a
// command can leave (a running one-shot, a `setsid nohup` child, a PTY
// session, a fork-racer), each with marker in its command line, and waits
// until all of them run. cancel cancels the one-shot's call (which kills
// it): the SDK's Close waits for calls in flight.
func containedProcesses(t *testing.T, cs *mcp.ClientSession, marker string) (cancel func()) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 for the fork-racer")
	}
	t.Cleanup(func() { proctest.Kill(marker) }) // what a failing test leaves
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { // answered only if execd lives
		_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{
			"command": []string{"sh", "-c", "sleep 1000; true", marker + "-oneshot"}, "timeout_ms": 600000}})
	}()
	for _, args := range []map[string]any{
		{"cmd": "setsid nohup sh -c 'sleep 1000; true' " + marker + "-nohup >/dev/null 2>&1 &", "yield_time_ms": 1000},
		{"cmd": "sh -c 'sleep 1000; true' " + marker + "-pty", "tty": true, "yield_time_ms": 250},
		{"cmd": "python3 -c '" + proctest.ForkRacer + "' " + marker + "-racer", "yield_time_ms": 250},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec_command", Arguments: args})
		cancel()
		if err != nil || res.IsError {
			t.Fatalf("exec_command %v: %v %v", args["cmd"], err, res)
		}
	}
	for _, kind := range []string{"oneshot", "nohup", "pty", "racer"} {
		proctest.Running(t, marker+"-"+kind, 1, waitLimit)
	}
	return cancel
}

func newMarker() string { return fmt.Sprintf("execd-marker-%d", rand.Uint64()) }

// containmentOf returns doctor's containment line for h's user.
func containmentOf(h *sandboxHost) string {
	for line := range strings.SplitSeq(h.run("", "doctor").stdout, "\n") {
		if strings.HasPrefix(line, "containment:") {
			return line
		}
	}
	return ""
}

// hasPIDNamespace reports whether doctor finds that h's user's
// sandboxed commands run in a PID namespace.
func hasPIDNamespace(h *sandboxHost) bool {
	return strings.HasPrefix(h.support["pid namespace"], "yes")
}

// killedServe starts execd serve for h, for a test that SIGKILLs it, and
// returns the session and execd's process (setpriv execs it, so the pid
// is execd's).
func killedServe(t *testing.T, h *sandboxHost, config string) (*mcp.ClientSession, *os.Process) {
	t.Helper()
	cmd := h.command(config, "serve")
	cmd.Stderr = &testLog{t: t}
	cs := connectExiting(t, cmd, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"}, func(err error) {
		if !strings.Contains(fmt.Sprint(err), "killed") {
			t.Errorf("execd was to die of SIGKILL: %v", err)
		}
	})
	return cs, cmd.Process
}

// SIGKILL of execd leaves nothing behind where it can contain its
// commands in a cgroup, or, sandboxed, in a PID namespace (SPEC §3.2):
// not the running one-shot, the `setsid nohup` child, the PTY session or
// the fork-racer.
func TestSIGKILLLeavesNothing(t *testing.T) {
	for _, mode := range []string{"danger-full-access", "workspace-write"} {
		t.Run(mode, func(t *testing.T) {
			asEachUser(t, func(t *testing.T, h *sandboxHost) {
				c := containmentOf(h)
				pidns := mode == "workspace-write" && hasPIDNamespace(h)
				if !strings.Contains(c, "cgroup.kill") && !pidns {
					t.Skipf("no cgroup containment on this host for this user, and no PID namespace: %q", c)
				}
				marker := newMarker()
				cs, execd := killedServe(t, h, "[sandbox]\nmode = \""+mode+"\"\n")
				containedProcesses(t, cs, marker)
				if err := execd.Kill(); err != nil {
					t.Fatal(err)
				}
				proctest.Gone(t, marker, 2*time.Second)
			})
		})
	}
}

// On every host, the fork-racer is gone once execd has shut down after
// stdin's end (SPEC §3.2): with a cgroup by cgroup.kill, without one by a
// scan that stops (SIGSTOP) every descendant before killing them.
func TestForkRacerGoneAfterEOF(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		t.Log(containmentOf(h))
		marker := newMarker()
		cmd := h.command("", "serve")
		cmd.Stderr = &testLog{t: t}
		cs := connect(t, cmd, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
		cancel := containedProcesses(t, cs, marker)
		cancel()
		_ = cs.Close() // closes execd's stdin and waits for its exit (connect checks how)
		proctest.Gone(t, marker, time.Second)
	})
}

// SIGKILL of an execd that runs another execd leaves no cgroup behind:
// the guard removes the nested execd's cgroup before its own (SPEC §3.2).
func TestSIGKILLRemovesNestedCgroups(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		c := containmentOf(h)
		if !strings.Contains(c, "cgroup.kill") {
			t.Skipf("no cgroup containment on this host for this user: %q", c)
		}
		outer := strings.Fields(strings.TrimPrefix(c, "containment:"))[1] // "cgroup PATH: ..."
		parent := filepath.Dir(strings.TrimSuffix(outer, ":"))
		cs, execd := killedServe(t, h, fullAccess)
		// The nested execd waits for MCP on a pipe that a sleep holds
		// open: nothing tells it that the outer one died before the
		// guard's cgroup.kill kills both (a terminal would: it would shut
		// down and remove its cgroup itself).
		nested := "sleep 1000 | " + h.bin + " serve --config " + h.path("config.toml") + " --cwd " + h.work
		start(t, cs, map[string]any{"cmd": nested, "yield_time_ms": 1500})
		mine := func() []string {
			m, _ := filepath.Glob(filepath.Join(parent, "execd-"+strconv.Itoa(execd.Pid)+"-*", "execd-*"))
			return m
		}
		deadline := time.Now().Add(waitLimit)
		for len(mine()) == 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if len(mine()) == 0 {
			t.Fatal("the nested execd made no cgroup inside the outer one")
		}
		if err := execd.Kill(); err != nil {
			t.Fatal(err)
		}
		deadline = time.Now().Add(2 * time.Second)
		left := func() []string {
			m, _ := filepath.Glob(filepath.Join(parent, "execd-"+strconv.Itoa(execd.Pid)+"-*"))
			return m
		}
		for len(left()) > 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if l := left(); len(l) > 0 {
			t.Errorf("left behind 2 s after SIGKILL: %v", l)
		}
	})
}

// Sandboxed commands run in a PID namespace of their own (SPEC §8.3):
// ps shows the launcher as PID 1 and the sandbox's processes only; a
// command that signals PID 1 ends neither the launcher nor, with it, the
// other commands of the sandbox.
func TestSandboxPIDNamespace(t *testing.T) {
	if _, err := exec.LookPath("ps"); err != nil {
		t.Skip("no ps")
	}
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		if !hasPIDNamespace(h) {
			t.Skip("no PID namespace for sandboxed commands on this host")
		}
		marker := newMarker()
		t.Cleanup(func() { proctest.Kill(marker) })
		cmd := h.command("", "serve")
		cmd.Stderr = &testLog{t: t}
		cs := connect(t, cmd, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
		defer cs.Close()
		call := func(name string, args map[string]any) string {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
			if err != nil || res.IsError {
				t.Fatalf("%s %v: %v %v", name, args, err, res)
			}
			return textOf(res)
		}
		call("exec_command", map[string]any{"cmd": "sh -c 'sleep 1000; true' " + marker, "yield_time_ms": 250})
		proctest.Running(t, marker, 1, waitLimit)
		ps := call("shell", map[string]any{"command": []string{"ps", "-e", "-o", "pid=,args="}})
		var pids []string
		for line := range strings.SplitSeq(ps, "\n") {
			if f := strings.Fields(line); len(f) < 2 {
				continue
			} else if _, err := strconv.Atoi(f[0]); err == nil {
				pids = append(pids, line)
			}
		}
		if !strings.Contains(ps, "1 execd-sandbox") || !strings.Contains(ps, marker) || len(pids) > 8 {
			t.Errorf("ps in the sandbox: want the launcher as PID 1, the session and ps only, got\n%s", ps)
		}
		out := call("shell", map[string]any{"command": []string{"sh", "-c",
			"for s in $(seq 1 64); do kill -$s 1 2>/dev/null; done; sleep 0.3; echo done"}})
		if !strings.Contains(out, "done") {
			t.Errorf("signalling PID 1: %s", out)
		}
		proctest.Running(t, marker, 1, waitLimit) // the session lives on
		if out := call("shell", map[string]any{"command": []string{"echo", "still"}}); !strings.Contains(out, "still") {
			t.Errorf("a command after the signals: %s", out)
		}
	})
}
