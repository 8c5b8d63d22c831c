package test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"testing"
	"time"
)

// A host that never reads execd's stderr: once the pipe is full, log
// lines are dropped, never waited on. Every call is still answered, and
// stdin EOF still ends execd (SPEC §11).
func TestStderrNeverRead(t *testing.T) {
	cmd, _ := execdCmd(t, fullAccess)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer errR.Close() // open, never read: writes block once it is full
	cmd.Stderr = errW
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	errW.Close()
	out := bufio.NewScanner(stdout)
	out.Buffer(nil, 1<<20)
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatalf("write to execd: %v", err)
		}
	}
	// Each answered call reads its reply; a reply that never comes fails
	// the test at the deadline below.
	replies := make(chan string, 1)
	go func() {
		defer close(replies)
		for out.Scan() {
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(out.Bytes(), &m) == nil && len(m.ID) > 0 {
				replies <- string(m.ID)
			}
		}
	}()
	next := func(what string) {
		t.Helper()
		select {
		case _, ok := <-replies:
			if !ok {
				t.Fatalf("%s: execd closed stdout", what)
			}
		case <-time.After(waitLimit):
			t.Fatalf("%s: no reply; execd waits on its stderr", what)
		}
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	next("initialize")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i := 1; i <= 300; i++ { // about 4 log lines each: well past 64 KiB
		send(toolCall(fmt.Sprint(i), "shell", map[string]any{"command": []string{"true"}}))
		next(fmt.Sprintf("call %d", i))
	}
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(waitLimit):
		_ = cmd.Process.Kill()
		<-done
		t.Fatal("execd did not exit after stdin closed; it waits on its stderr")
	}
}
