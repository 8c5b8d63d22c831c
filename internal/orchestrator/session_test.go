package orchestrator

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/execd/execd/internal/procstore"
	"github.com/execd/execd/internal/proctest"
)

func startSession(t *testing.T, o *Orchestrator, req SessionRequest) *Chunk {
	t.Helper()
	if req.Yield == 0 {
		req.Yield = 5 * time.Second
	}
	c, err := o.StartSession(t.Context(), req)
	if err != nil {
		t.Fatalf("StartSession(%q): %v", req.Argv, err)
	}
	return c
}

func write(t *testing.T, o *Orchestrator, id procstore.ID, chars string, yield time.Duration) *Chunk {
	t.Helper()
	c, err := o.WriteSession(t.Context(), WriteRequest{ID: id, Chars: []byte(chars), Yield: yield})
	if err != nil {
		t.Fatalf("WriteSession(%d, %q): %v", id, chars, err)
	}
	return c
}

var interactiveBash = []string{"bash", "--norc", "--noprofile", "-i"}

func TestSessionKeepsShellStateAcrossCalls(t *testing.T) {
	o := newTest(t, nil)
	c := startSession(t, o, SessionRequest{Argv: interactiveBash, TTY: true, Yield: 10 * time.Second})
	if c.ID == 0 || c.Exit != nil || !c.Waiting {
		t.Fatalf("start: id %d exit %v waiting %v", c.ID, c.Exit, c.Waiting)
	}
	write(t, o, c.ID, "export FOO=bar\n", 10*time.Second)
	c2 := write(t, o, c.ID, "echo $FOO\n", 10*time.Second)
	if !strings.Contains(string(c2.Output), "bar") || !c2.Waiting {
		t.Fatalf("echo $FOO: %q (waiting %v)", c2.Output, c2.Waiting)
	}
	if strings.Contains(string(c2.Output), "export") {
		t.Errorf("output of an earlier call repeated: %q", c2.Output)
	}
	c3 := write(t, o, c.ID, "exit 3\n", 10*time.Second)
	if c3.Exit == nil || c3.Exit.Code != 3 || c3.ID != 0 {
		t.Fatalf("exit 3: %+v", c3)
	}
	_, err := o.WriteSession(t.Context(), WriteRequest{ID: c.ID, Yield: time.Second})
	var ue *UnknownSessionError
	if !errors.As(err, &ue) || ue.ID != c.ID || err.Error() != "unknown session_id "+strconv.Itoa(int(c.ID)) {
		t.Fatalf("write after the exit was reported: %v", err)
	}
}

func TestSessionThatExitsWithinTheYieldIsNotKept(t *testing.T) {
	o := newTest(t, nil)
	for _, tty := range []bool{false, true} {
		c := startSession(t, o, SessionRequest{Argv: sh("echo out; echo err >&2; exit 4"), TTY: tty})
		if c.Exit == nil || c.Exit.Code != 4 || c.ID != 0 {
			t.Fatalf("tty=%v: %+v", tty, c)
		}
		want := "out\nerr\n"
		if tty {
			want = "out\r\nerr\r\n" // a terminal keeps its CRLF
		}
		if string(c.Output) != want {
			t.Errorf("tty=%v: output %q, want %q", tty, c.Output, want)
		}
	}
	if o.SessionCount() != 0 {
		t.Fatalf("%d sessions kept", o.SessionCount())
	}
}

func TestSessionStdinIsATerminalOnlyWithTTY(t *testing.T) {
	o := newTest(t, nil)
	script := sh("if [ -t 0 ]; then echo terminal; else echo notty; readlink /proc/self/fd/0; fi")
	if c := startSession(t, o, SessionRequest{Argv: script}); string(c.Output) != "notty\n/dev/null\n" {
		t.Errorf("tty=false: %q", c.Output)
	}
	if c := startSession(t, o, SessionRequest{Argv: script, TTY: true}); string(c.Output) != "terminal\r\n" {
		t.Errorf("tty=true: %q", c.Output)
	}
}

func TestSessionEnvironment(t *testing.T) {
	o := newTest(t, func(opts *Options) { opts.BaseEnv = []string{"PATH=/usr/bin:/bin", "TERM=xterm", "LANG=fr_FR"} })
	c := startSession(t, o, SessionRequest{Argv: []string{"env"}})
	for _, want := range []string{"TERM=dumb", "NO_COLOR=1", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "PAGER=cat", "GIT_PAGER=cat", "GH_PAGER=cat", "COLORTERM=\n"} {
		if !strings.Contains(string(c.Output), want) {
			t.Errorf("session env lacks %q:\n%s", want, c.Output)
		}
	}
	if strings.Contains(string(c.Output), "TERM=xterm") || strings.Contains(string(c.Output), "LANG=fr_FR") {
		t.Errorf("overridden variables kept:\n%s", c.Output)
	}
}

func TestInterruptInBothModes(t *testing.T) {
	o := newTest(t, nil)
	for _, tty := range []bool{false, true} {
		c := startSession(t, o, SessionRequest{Argv: []string{"sleep", "30"}, TTY: tty, Yield: 250 * time.Millisecond})
		if c.ID == 0 {
			t.Fatalf("tty=%v: sleep exited: %+v", tty, c)
		}
		c2 := write(t, o, c.ID, "\x03", 5*time.Second)
		if c2.Exit == nil || c2.Exit.Signal != syscall.SIGINT || c2.Exit.Code != 130 {
			t.Fatalf("tty=%v: after ^C: %+v", tty, c2.Exit)
		}
	}
}

func TestTextToASessionWithoutTerminal(t *testing.T) {
	o := newTest(t, nil)
	c := startSession(t, o, SessionRequest{Argv: []string{"sleep", "30"}, Yield: 250 * time.Millisecond})
	_, err := o.WriteSession(t.Context(), WriteRequest{ID: c.ID, Chars: []byte("hello\n"), Yield: time.Second})
	if !errors.Is(err, ErrStdinClosed) {
		t.Fatalf("text without a terminal: %v", err)
	}
	if c2 := write(t, o, c.ID, "\x1c", 5*time.Second); c2.Exit == nil || c2.Exit.Signal != syscall.SIGQUIT {
		t.Fatalf("^\\ : %+v", c2.Exit)
	}
}

func TestPollReturnsWhenTheProcessExits(t *testing.T) {
	o := newTest(t, nil)
	c := startSession(t, o, SessionRequest{Argv: sh("sleep 0.5; echo done"), Yield: 250 * time.Millisecond})
	if c.ID == 0 {
		t.Fatal("exited within 250 ms")
	}
	c2 := write(t, o, c.ID, "", 20*time.Second)
	if c2.Exit == nil || string(c2.Output) != "done\n" {
		t.Fatalf("poll: %+v output %q", c2.Exit, c2.Output)
	}
	if c2.Wall > 10*time.Second {
		t.Fatalf("poll waited %v for a process that exited after 0.5 s", c2.Wall)
	}
}

// A terminal that waits for input answers early; a busy or sleeping one
// gets its whole yield.
func TestEarlyReturnOnlyWhenWaitingForInput(t *testing.T) {
	o := newTest(t, nil)
	c := startSession(t, o, SessionRequest{Argv: interactiveBash, TTY: true, Yield: 10 * time.Second})
	if c2 := write(t, o, c.ID, "echo $((6*7))\n", 10*time.Second); !c2.Waiting || c2.Exit != nil || !strings.Contains(string(c2.Output), "42\r\n") {
		t.Fatalf("idle shell: waiting %v output %q", c2.Waiting, c2.Output)
	}
	if c3 := write(t, o, c.ID, "sleep 1\n", 400*time.Millisecond); c3.Waiting {
		t.Fatalf("a shell running sleep was seen waiting for input")
	}
	cat := startSession(t, o, SessionRequest{Argv: []string{"cat"}, TTY: true, Yield: 10 * time.Second})
	if c4 := write(t, o, cat.ID, "hello\n", 10*time.Second); !c4.Waiting || !strings.Contains(string(c4.Output), "hello\r\nhello\r\n") {
		t.Fatalf("cat: waiting %v output %q", c4.Waiting, c4.Output)
	}
}

// A program that prints, then waits on its terminal in a way that can end
// without input, then prints more, is answered only after the quiet
// window (SPEC §4.4): its reply holds both parts. The window is
// lengthened here so that the programs' 0.2 s pause sits well inside it
// on a loaded machine; an early return at the pause, as a probe that
// took these waits for ones only input can end would give, lacks part2.
func TestQuietWindowWhenTheForegroundCanWakeWithoutInput(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	o := newTest(t, nil)
	o.quiet = 2 * time.Second
	programs := map[string]string{
		"a select with a timeout": "import select,sys\nwhile True:\n sys.stdin.readline(); print('part1', flush=True)\n select.select([sys.stdin], [], [], 0.2); print('part2', flush=True)",
		"another thread":          "import sys,threading\nwhile True:\n sys.stdin.readline(); print('part1', flush=True)\n threading.Timer(0.2, print, args=('part2',), kwargs={'flush': True}).start()",
	}
	for name, program := range programs {
		t.Run(name, func(t *testing.T) {
			c := startSession(t, o, SessionRequest{Argv: []string{"python3", "-c", program}, TTY: true, Yield: 30 * time.Second})
			if c.ID == 0 || !c.Waiting {
				t.Fatalf("start: id %d waiting %v output %q", c.ID, c.Waiting, c.Output)
			}
			c2 := write(t, o, c.ID, "go\n", 30*time.Second)
			if !c2.Waiting || !strings.Contains(string(c2.Output), "part1\r\npart2\r\n") {
				t.Fatalf("waiting %v output %q; want both parts", c2.Waiting, c2.Output)
			}
		})
	}
}

func TestEvictionKillsTheLeastRecentlyUsed(t *testing.T) {
	o := newTest(t, func(opts *Options) { opts.Sessions = procstore.Options{Max: 4, Protect: 2} })
	var ids []procstore.ID
	for i := range 5 {
		c := startSession(t, o, SessionRequest{Argv: sh("sleep 815." + strconv.Itoa(i+1)), Yield: 250 * time.Millisecond})
		ids = append(ids, c.ID)
		if c.Open != min(i+1, 4) || c.Max != 4 {
			t.Fatalf("session %d: open %d max %d", i, c.Open, c.Max)
		}
	}
	proctest.Gone(t, "sleep 815.1", waitLimit) // the first, least recently used, was evicted and killed
	if _, err := o.WriteSession(t.Context(), WriteRequest{ID: ids[0], Yield: time.Second}); err == nil {
		t.Fatal("the evicted session still answers")
	}
	if o.SessionCount() != 4 {
		t.Fatalf("%d sessions", o.SessionCount())
	}
}

func TestCancelledStartKillsTheCommand(t *testing.T) {
	o := newTest(t, nil)
	const marker = "sleep 816.5"
	ctx, cancel := context.WithCancelCause(t.Context())
	done := make(chan *Chunk, 1)
	go func() {
		c, err := o.StartSession(ctx, SessionRequest{Argv: sh(marker + "; true"), Yield: 30 * time.Second})
		if err != nil {
			t.Error(err)
		}
		done <- c
	}()
	proctest.Running(t, marker, 1, waitLimit)
	why := errors.New("client cancelled")
	cancel(why)
	c := <-done
	if !errors.Is(c.Stopped, why) || c.ID != 0 {
		t.Fatalf("cancelled start: %+v", c)
	}
	proctest.Gone(t, marker, waitLimit)
	if o.SessionCount() != 0 {
		t.Fatal("a cancelled start was kept")
	}
}

func TestCloseKillsOpenSessions(t *testing.T) {
	o := newTest(t, nil)
	const marker = "sleep 817.5"
	c := startSession(t, o, SessionRequest{Argv: sh(marker + "; true"), TTY: true, Yield: 250 * time.Millisecond})
	if c.ID == 0 {
		t.Fatal("exited")
	}
	o.Close()
	proctest.Gone(t, marker, waitLimit)
}

// HangUp closes the terminals of the open sessions: their foreground gets
// SIGHUP, as when a terminal window closes, and an interactive shell,
// which ignores SIGTERM, exits at once.
func TestHangUpEndsTerminalSessions(t *testing.T) {
	o := newTest(t, nil)
	const marker = "sleep 818.5"
	c := startSession(t, o, SessionRequest{Argv: sh("trap '' TERM; " + marker + "; true"), TTY: true, Yield: 250 * time.Millisecond})
	bash := startSession(t, o, SessionRequest{Argv: interactiveBash, TTY: true, Yield: 5 * time.Second})
	if c.ID == 0 || bash.ID == 0 {
		t.Fatal("sessions exited")
	}
	o.HangUp()
	proctest.Gone(t, marker, waitLimit)
	c2, err := o.WriteSession(t.Context(), WriteRequest{ID: bash.ID, Yield: 5 * time.Second})
	if err != nil || c2.Exit == nil {
		t.Fatalf("interactive bash after hang-up: %v %+v", err, c2)
	}
}

// A call on a session does not wait for a poll already running on it: the
// poll returns with what it has and the new call goes ahead (review #1).
func TestInputPreemptsARunningPoll(t *testing.T) {
	o := newTest(t, nil)
	for _, tty := range []bool{true, false} {
		argv, chars := interactiveBash, "echo hi\n"
		if !tty {
			argv, chars = []string{"sleep", "30"}, "\x03"
		}
		c := startSession(t, o, SessionRequest{Argv: argv, TTY: tty, Yield: 2 * time.Second})
		polled := make(chan *Chunk, 1)
		go func() {
			p, err := o.WriteSession(t.Context(), WriteRequest{ID: c.ID, Yield: 20 * time.Second})
			if err != nil {
				t.Error(err)
			}
			polled <- p
		}()
		time.Sleep(200 * time.Millisecond) // the poll is collecting
		start := time.Now()
		w, err := o.WriteSession(t.Context(), WriteRequest{ID: c.ID, Chars: []byte(chars), Yield: 5 * time.Second})
		if err != nil {
			t.Fatalf("tty=%v: write behind a poll: %v", tty, err)
		}
		if p := <-polled; p.Exit != nil {
			t.Fatalf("tty=%v: the poll saw an exit", tty)
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("tty=%v: the write waited for the 20 s poll", tty)
		}
		if tty && !strings.Contains(string(w.Output), "hi") {
			t.Errorf("output %q", w.Output)
		}
		if !tty && (w.Exit == nil || w.Exit.Signal != syscall.SIGINT) {
			t.Errorf("^C behind a poll: %+v", w.Exit)
		}
	}
}

// Input to a terminal session that has exited reports the exit (review #3).
func TestInputToAnExitedTerminalSessionReportsTheExit(t *testing.T) {
	o := newTest(t, nil)
	c := startSession(t, o, SessionRequest{Argv: sh("sleep 0.3; echo done"), TTY: true, Yield: 250 * time.Millisecond})
	time.Sleep(800 * time.Millisecond)
	w, err := o.WriteSession(t.Context(), WriteRequest{ID: c.ID, Chars: []byte("hello\n"), Yield: time.Second})
	if err != nil || w.Exit == nil || !strings.Contains(string(w.Output), "done") {
		t.Fatalf("write after the exit: %v %+v", err, w)
	}
}

// Evicting a shell session kills the jobs it put in groups of their own
// (review #5).
func TestEvictionKillsTheShellsJobs(t *testing.T) {
	o := newTest(t, func(opts *Options) { opts.Sessions = procstore.Options{Max: 1} })
	const marker = "sleep 819.5"
	c := startSession(t, o, SessionRequest{Argv: interactiveBash, TTY: true, Yield: 5 * time.Second})
	write(t, o, c.ID, marker+" &\n", 5*time.Second)
	proctest.Running(t, marker, 1, waitLimit)
	startSession(t, o, SessionRequest{Argv: []string{"sleep", "30"}, Yield: 250 * time.Millisecond}) // evicts the shell
	proctest.Gone(t, marker, waitLimit)
}

func TestOverlongLineForACanonicalTerminalIsRefused(t *testing.T) {
	o := newTest(t, nil)
	c := startSession(t, o, SessionRequest{Argv: []string{"cat"}, TTY: true, Yield: time.Second})
	_, err := o.WriteSession(t.Context(), WriteRequest{ID: c.ID, Chars: []byte(strings.Repeat("a", 5000) + "\n"), Yield: time.Second})
	if err == nil || !strings.Contains(err.Error(), "5000 bytes is longer than the 4095") {
		t.Fatalf("long line: %v", err)
	}
	if w := write(t, o, c.ID, strings.Repeat("b", 4095)+"\n", 5*time.Second); !strings.Contains(string(w.Output), strings.Repeat("b", 4095)) {
		t.Fatalf("a 4095-byte line was not echoed whole")
	}
}

func TestStartAndInputCallbacks(t *testing.T) {
	o := newTest(t, nil)
	var order []string
	c := startSession(t, o, SessionRequest{Argv: []string{"cat"}, TTY: true, Yield: time.Second,
		OnStart: func(string) { order = append(order, "start") }})
	w, err := o.WriteSession(t.Context(), WriteRequest{ID: c.ID, Chars: []byte("x\n"), Yield: time.Second,
		OnInput: func() { order = append(order, "input") }})
	if err != nil || w.Exit != nil {
		t.Fatal(err)
	}
	if strings.Join(order, ",") != "start,input" {
		t.Fatalf("callbacks %v", order)
	}
	if _, err := o.StartSession(t.Context(), SessionRequest{Argv: []string{"no-such-program-xyz"},
		OnStart: func(string) { t.Error("OnStart for a command that never started") }}); err == nil {
		t.Fatal("no error")
	}
}
