package test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Many commands running at once hold no OS thread each, and those beyond
// exec.max_concurrent wait their turn instead of failing (issue 13 item 4,
// SPEC §2).
func TestManyCommandsFewThreads(t *testing.T) {
	const calls, limit = 200, 128
	cmd, work := execdCmd(t, fullAccess)
	cs := connect(t, cmd, nil, nil)
	fifo := filepath.Join(work, "gate")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Each command blocks opening the FIFO until a writer comes.
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for range calls {
		wg.Go(func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{
				"command": []string{"sh", "-c", "read x < gate; true"}, "timeout_ms": 120000}})
			switch {
			case err != nil:
				errs <- err
			case res.IsError:
				errs <- fmt.Errorf("tool error: %v", res.Content)
			}
		})
	}
	pid := cmd.Process.Pid
	deadline := time.Now().Add(time.Minute)
	for len(childrenOf(pid)) < limit && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // a wrong execd would start more meanwhile
	running, threads := len(childrenOf(pid)), procStatus(t, pid, "Threads")
	t.Logf("%d calls: %d commands running, execd has %d threads", calls, running, threads)
	if running != limit {
		t.Errorf("%d commands running at once, want exec.max_concurrent = %d", running, limit)
	}
	if threads >= limit/2 {
		t.Errorf("execd holds %d threads while %d commands run", threads, running)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for open := true; open; { // let the readers through until every call is answered
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		} else if !errors.Is(err, syscall.ENXIO) {
			t.Fatal(err)
		}
		select {
		case <-done:
			open = false
		case <-time.After(10 * time.Millisecond):
		}
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// childrenOf returns the pids whose parent is pid.
func childrenOf(pid int) []int { // but its cgroup guard (SPEC §3.2)
	var kids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) && !isGuard(e.Name()) {
			k, _ := strconv.Atoi(e.Name())
			kids = append(kids, k)
		}
	}
	return kids
}

// isGuard reports whether pid is execd's cgroup guard, a child of execd
// that is not a command.
func isGuard(pid string) bool {
	b, _ := os.ReadFile("/proc/" + pid + "/cmdline")
	return strings.HasPrefix(string(b), "execd-cgroup-guard\x00")
}
