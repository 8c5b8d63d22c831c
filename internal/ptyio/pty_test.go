//go:build linux

package ptyio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const waitLimit = 10 * time.Second

// session is a command on a Pty whose output is collected.
type session struct {
	t   *testing.T
	p   *Pty
	cmd *exec.Cmd
	mu  sync.Mutex
	out bytes.Buffer
	eof chan error
}

func start(t *testing.T, argv ...string) *session {
	t.Helper()
	p, err := Open(DefaultSize)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	// An empty HOME: login shells must not run the developer's dotfiles.
	cmd.Env = append(os.Environ(), "TERM=dumb", "PS1=$ ", "HOME="+t.TempDir())
	p.Attach(cmd)
	err = cmd.Start()
	p.Started()
	if err != nil {
		p.Close()
		t.Skipf("%s: %v", argv[0], err)
	}
	s := &session{t: t, p: p, cmd: cmd, eof: make(chan error, 1)}
	go func() { // ends at EOF or when the Pty is closed
		err := p.ReadEach(make([]byte, 4096), func(b []byte) {
			s.mu.Lock()
			s.out.Write(b)
			s.mu.Unlock()
		})
		if err == nil {
			err = io.EOF
		}
		s.eof <- err
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = p.Close()
	})
	return s
}

func (s *session) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

func (s *session) waitFor(substr string) {
	s.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !strings.Contains(s.output(), substr) {
		if time.Now().After(deadline) {
			s.t.Fatalf("no %q in output %q", substr, s.output())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestTerminalIsControllingAndSized(t *testing.T) {
	s := start(t, "bash", "-c", "tty; stty size; test -t 0 && echo interactive")
	if err := <-s.eof; !errors.Is(err, io.EOF) {
		t.Fatalf("end of output = %v, want io.EOF (not EIO)", err)
	}
	out := s.output()
	if !strings.Contains(out, "/dev/pts/") || !strings.Contains(out, "24 80") || !strings.Contains(out, "interactive") {
		t.Fatalf("output %q", out)
	}
}

func TestResize(t *testing.T) {
	s := start(t, "bash", "-c", "read line; stty size")
	if err := s.p.Resize(Size{Rows: 40, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.p.Size(); err != nil || got != (Size{40, 100}) {
		t.Fatalf("Size = %v, %v", got, err)
	}
	if _, err := s.p.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	s.waitFor("40 100")
}

func TestCanonical(t *testing.T) {
	s := start(t, "bash", "-c", "read line; stty raw; echo switched; sleep 30")
	time.Sleep(100 * time.Millisecond)
	if !s.p.Canonical() {
		t.Fatal("a fresh terminal is in canonical mode")
	}
	if _, err := s.p.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	s.waitFor("switched")
	if s.p.Canonical() {
		t.Fatal("still canonical after stty raw")
	}
}

func TestCloseInterruptsRead(t *testing.T) {
	s := start(t, "sleep", "30")
	time.Sleep(50 * time.Millisecond)
	if err := s.p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.eof:
	case <-time.After(waitLimit):
		t.Fatal("Close did not interrupt the blocked Read")
	}
}

func TestForegroundGroup(t *testing.T) {
	s := start(t, "bash", "--norc", "-i")
	s.waitFor("$ ")
	if pgrp, err := s.p.ForegroundGroup(); err != nil || pgrp != s.cmd.Process.Pid {
		t.Fatalf("ForegroundGroup = %d, %v; want the shell %d", pgrp, err, s.cmd.Process.Pid)
	}
}

// eventually reports whether cond holds within limit.
func eventually(cond func() bool, limit time.Duration) bool {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}

// never reports whether cond stays false for d.
func never(cond func() bool, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return false
		}
	}
	return true
}

// TestForegroundWait checks what a probe makes of programs at rest:
// waiting only for input where nothing but input (or a signal) can end
// the wait, waiting where a timeout, another descriptor or another thread
// could, and not waiting otherwise (SPEC §4.4).
func TestForegroundWait(t *testing.T) {
	const (
		tcp       = "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); "
		stdinPoll = "import sys,select; p=select.poll(); p.register(sys.stdin, select.POLLIN); "
		nonCanon  = "import os,termios; a=termios.tcgetattr(0); a[3]&=~termios.ICANON; a[6][termios.VMIN]=%d; a[6][termios.VTIME]=%d; termios.tcsetattr(0,termios.TCSANOW,a); os.read(0,1)"
	)
	tests := []struct {
		name  string
		argv  []string
		ready string // output that shows the program started
		typed string // typed after ready, if any
		want  Wait
	}{
		{"cat", []string{"cat"}, "", "", WaitingOnlyForInput},
		{"cat under a login shell (no exec)", []string{"bash", "-lc", "cat"}, "", "", WaitingOnlyForInput},
		{"login shell waiting for sleep", []string{"bash", "-lc", "sleep 30"}, "", "", NotWaiting},
		{"shell waiting for a setsid'd child", []string{"bash", "-c", "setsid sleep 30; true"}, "", "", NotWaiting},
		{"bash -i at its prompt", []string{"bash", "--norc", "-i"}, "$ ", "", WaitingOnlyForInput},
		{"python3 REPL", []string{"python3", "-i", "-q"}, ">>> ", "", WaitingOnlyForInput},
		{"node REPL", []string{"node", "-i"}, "> ", "", Waiting},
		{"sleep", []string{"sleep", "30"}, "", "", NotWaiting},
		{"bash -i running sleep", []string{"bash", "--norc", "-i"}, "$ ", "sleep 30\n", NotWaiting},
		{"python3 sleeping", []string{"python3", "-i", "-q"}, ">>> ", "import time; time.sleep(30)\n", NotWaiting},
		{"busy loop", []string{"bash", "-c", "while :; do :; done"}, "", "", NotWaiting},
		{"poll on nothing (a sleep)", []string{"python3", "-c", "import select; select.poll().poll(30000)"}, "", "", NotWaiting},
		{"poll on a socket", []string{"python3", "-c", tcp + "import select; p=select.poll(); p.register(s); p.poll(30000)"}, "", "", NotWaiting},
		{"select on a socket", []string{"python3", "-c", tcp + "import select; select.select([s],[],[],30)"}, "", "", NotWaiting},
		{"poll on the terminal", []string{"python3", "-c", stdinPoll + "p.poll()"}, "", "", WaitingOnlyForInput},
		{"poll on the terminal, with a timeout", []string{"python3", "-c", stdinPoll + "p.poll(30000)"}, "", "", Waiting},
		{"poll on the terminal and a socket", []string{"python3", "-c", tcp + stdinPoll + "p.register(s); p.poll()"}, "", "", Waiting},
		{"select on the terminal", []string{"python3", "-c", "import sys,select; select.select([sys.stdin],[],[])"}, "", "", WaitingOnlyForInput},
		{"select on the terminal, with a timeout", []string{"python3", "-c", "import sys,select; select.select([sys.stdin],[],[],30)"}, "", "", Waiting},
		{"select on the terminal and a socket", []string{"python3", "-c", tcp + "import sys,select; select.select([sys.stdin,s],[],[])"}, "", "", Waiting},
		{"read beside another thread", []string{"python3", "-c", "import sys,threading,time; threading.Thread(target=time.sleep, args=(30,), daemon=True).start(); sys.stdin.readline()"}, "", "", Waiting},
		{"non-canonical read, MIN 1", []string{"python3", "-c", fmt.Sprintf(nonCanon, 1, 0)}, "", "", WaitingOnlyForInput},
		{"non-canonical read, MIN 0 and TIME 25.5 s", []string{"python3", "-c", fmt.Sprintf(nonCanon, 0, 255)}, "", "", Waiting},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := exec.LookPath(tt.argv[0]); err != nil {
				t.Skipf("%s is not installed", tt.argv[0])
			}
			s := start(t, tt.argv...)
			if tt.ready != "" {
				s.waitFor(tt.ready)
			}
			if tt.typed != "" {
				if _, err := s.p.Write([]byte(tt.typed)); err != nil {
					t.Fatal(err)
				}
				time.Sleep(100 * time.Millisecond) // let it start what was typed
			}
			probe := func() Wait { return s.p.ForegroundWait(s.cmd.Process.Pid) }
			if tt.want == NotWaiting {
				if !never(func() bool { return probe() != NotWaiting }, 500*time.Millisecond) {
					t.Fatalf("seen waiting for input while it is not")
				}
				return
			}
			// A slow start under load (python3 beside other packages'
			// tests under -race) is not what this tests: wait long.
			if !eventually(func() bool { return probe() == tt.want }, 3*waitLimit) {
				t.Fatalf("never seen %v (last %v); output %q", tt.want, probe(), s.output())
			}
			if tt.want == Waiting && !never(func() bool { return probe() == WaitingOnlyForInput }, 200*time.Millisecond) {
				t.Fatalf("seen waiting only for input while something else could wake it")
			}
			if !s.p.WaitingForInput(s.cmd.Process.Pid) {
				t.Errorf("WaitingForInput = false; ForegroundWait = %v", probe())
			}
		})
	}
}

// BenchmarkWaitingForInput measures one probe of an idle bash -i and of a
// login shell running cat (its foreground group has two members).
func BenchmarkWaitingForInput(b *testing.B) {
	for _, argv := range [][]string{{"bash", "--norc", "-i"}, {"bash", "-lc", "cat"}} {
		b.Run(strings.Join(argv, " "), func(b *testing.B) {
			t := &testing.T{}
			s := start(t, argv...)
			if !eventually(func() bool { return s.p.WaitingForInput(s.cmd.Process.Pid) }, 5*time.Second) {
				b.Fatal("not waiting")
			}
			b.ResetTimer()
			for b.Loop() {
				s.p.WaitingForInput(s.cmd.Process.Pid)
			}
			b.StopTimer()
			_ = s.cmd.Process.Kill()
			_ = s.cmd.Wait()
			_ = s.p.Close()
		})
	}
}

// Output that left the master but that ReadEach's caller has not taken
// yet still counts as pending: a probe that saw an empty master while
// the reader was between its read and its take answered a write_stdin
// without the output that answered it.
func TestOutputPendingUntilTaken(t *testing.T) {
	p, err := Open(DefaultSize)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tty := p.tty // the command's side, kept open: this test writes the output
	defer tty.Close()
	entered := make(chan struct{}, 1)
	var taken atomic.Bool
	go func() {
		_ = p.ReadEach(make([]byte, 64), func([]byte) {
			entered <- struct{}{}
			time.Sleep(100 * time.Millisecond) // a reader preempted before it takes the bytes
			taken.Store(true)
		})
	}()
	if _, err := tty.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	<-entered
	if !p.OutputPending() && !taken.Load() {
		t.Fatal("OutputPending reported nothing pending while the output read was not taken yet")
	}
}
