package test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A host that closes execd's stdout while stdin stays open is gone: the
// next reply fails (EPIPE) and execd shuts down as on stdin EOF, its
// commands with it, instead of running commands nobody can see (SPEC
// §3.2).
func TestHostClosedStdout(t *testing.T) {
	c := startRaw(t, fullAccess)
	c.initialize()
	marker := filepath.Join(t.TempDir(), "started")
	nap := fmt.Sprintf("%d.%d", 300, os.Getpid()) // a sleep no one else runs
	c.send(toolCall("sleep", "shell", map[string]any{"command": []string{"sh", "-c", "touch " + marker + "; exec sleep " + nap}}))
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Since(start) > waitLimit {
			t.Fatal("the command did not start")
		}
	}
	c.stdout.Close()
	c.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`) // its reply finds stdout closed
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
	case <-time.After(waitLimit):
		_ = c.cmd.Process.Kill()
		<-done
		t.Fatal("execd kept running after its stdout was closed")
	}
	if pids := processesWith("sleep " + nap); len(pids) > 0 {
		t.Errorf("the command outlived execd: %v", pids)
	}
}

// processesWith returns the pids whose command line contains s.
func processesWith(s string) []string {
	var pids []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}
