package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/execd/execd/internal/procstore"
	"github.com/execd/execd/internal/ptyio"
	"github.com/execd/execd/internal/sandbox"
)

// Session tuning (SPEC §4.3, §4.4, §5.1).
const (
	// quietWindow is how long a terminal must stay silent, after the
	// input and after its last output, before a probe may decide that a
	// foreground that could wake without input (ptyio.Waiting) waits for
	// input. One that only input can wake (ptyio.WaitingOnlyForInput)
	// needs no window.
	quietWindow = 5 * time.Millisecond
	// firstProbe is when the first probe runs after the input (or the
	// start), and the least time between two. Probes cost 50-150 µs;
	// bash answers a line on a bare terminal in about 0.3 ms.
	firstProbe = 250 * time.Microsecond
	// maxProbeInterval caps the back-off of probes while the session is
	// busy or asleep.
	maxProbeInterval = 100 * time.Millisecond
	// SessionBuffer is the output a session keeps between calls: head and
	// tail halves.
	SessionBuffer = 1 << 20
	// sessionReadBytes is a session pump's read size; it lives as long as
	// the session.
	sessionReadBytes = 16 << 10
	// killWait bounds how long a cancelled start waits for its killed
	// process to be gone.
	killWait = 2 * time.Second
)

// sessionOverrides are set for every session (SPEC §10, compat): a dumb
// terminal, UTF-8, no pagers and no colours.
var sessionOverrides = []string{"NO_COLOR=1", "TERM=dumb", "LANG=C.UTF-8", "LC_CTYPE=C.UTF-8",
	"LC_ALL=C.UTF-8", "COLORTERM=", "PAGER=cat", "GIT_PAGER=cat", "GH_PAGER=cat"}

// ErrStdinClosed refuses text for a session started without a terminal.
var ErrStdinClosed = errors.New("stdin is closed for this session; rerun exec_command with tty: true to keep stdin open")

// UnknownSessionError is a write to a session that does not exist: it
// never did, its exit was already reported, or it was evicted.
type UnknownSessionError struct{ ID procstore.ID }

func (e *UnknownSessionError) Error() string { return fmt.Sprintf("unknown session_id %d", e.ID) }

// SessionRequest starts a command that becomes a session if it is still
// running when its yield ends (exec_command).
type SessionRequest struct {
	CallID  string
	Argv    []string
	Workdir string
	// TTY gives the command a 24×80 terminal; otherwise stdin is /dev/null
	// and stdout and stderr share one pipe, so output keeps its order.
	TTY   bool
	Yield time.Duration
	// Output sees this call's output; Watch sees the session's whole life.
	Output OutputFunc
	Watch  Watcher
	// OnStart, if set, is called once the process has started, before any
	// of its output is seen, with what confines it (SandboxLabel).
	OnStart func(sandbox string)
	// Approval and Approver are as in ExecRequest.
	Approval Approval
	Approver Approver
}

// WriteRequest continues a session (write_stdin). Empty Chars is a poll.
type WriteRequest struct {
	ID     procstore.ID
	Chars  []byte
	Yield  time.Duration
	Output OutputFunc
	// OnInput, if set, is called once Chars has been delivered.
	OnInput func()
}

// Watcher follows a session from start to exit, for event streams. Its
// methods are called from the session's goroutines, Output in order and
// Exited last; they must not block.
type Watcher interface {
	Output(chunk []byte)
	Exited(Exit)
}

// Exit is how a process ended.
type Exit struct {
	Code     int            // exit status, or 128+N for signal N
	Signal   syscall.Signal // 0 unless killed by a signal
	Duration time.Duration  // from start to exit
}

// Chunk is one call's view of a session: the output since the previous
// call and whether the process still runs.
type Chunk struct {
	Argv   []string // the session's command
	Output []byte
	// Omitted counts bytes dropped from the middle of Output, at byte
	// OmittedAt, because more than SessionBuffer arrived between calls.
	Omitted   int64
	OmittedAt int
	// ID is the session's id while it runs; 0 once it has exited.
	ID   procstore.ID
	Exit *Exit // set once the process has exited
	// Open is the number of live sessions after a start that stored one.
	Open int
	// Max is the session limit.
	Max int
	// Waiting reports that the call returned early because the terminal
	// waits for input.
	Waiting bool
	// Stopped is why the call stopped waiting early (its context's cause).
	Stopped error
	Wall    time.Duration
	// Sandboxed reports that the command runs inside execd's sandbox.
	Sandboxed bool
	// Note is ExecResult's, on the chunk of the call that started it.
	Note string
}

// session is a command kept across calls.
type session struct {
	o       *Orchestrator
	cmd     *exec.Cmd
	argv    []string
	pty     *ptyio.Pty // nil for a pipe session
	pipe    *os.File   // the read end of a pipe session
	buf     *procstore.HeadTail
	watch   Watcher
	started time.Time
	call    call   // for the audit trail
	label   string // what confines it (SandboxLabel)

	notify   chan struct{} // one pending wake-up: output or exit
	done     chan struct{} // closed once exited and its output is read
	detached atomic.Bool   // the pipe is left to background descendants

	mu         sync.Mutex
	lastOutput time.Time  // guarded by mu
	outBytes   uint64     // guarded by mu: output received so far
	observer   OutputFunc // guarded by mu: the current call's
	exit       Exit       // written before done is closed

	// Calls take turns: turn holds one token. A new call first asks the
	// one collecting to stop (preempt), so a ^C never waits for a poll.
	turn     chan struct{}
	preempt  chan struct{}
	reported bool // guarded by turn: the exit was returned; the id is gone
}

// Exited reports whether the process has exited and its output is read.
func (s *session) Exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// StartSession starts req.Argv and waits until it exits, the yield
// passes, or — with a terminal — it waits for input (SPEC §4.3, §4.4).
// A command still running then becomes a session in the store; when that
// evicts another session, the evicted one is killed (its terminal hung up,
// every group of its session signalled). When ctx ends first the command
// is killed the same way: nobody would learn its session id.
//
// Errors are those of Exec; no process was started then.
func (o *Orchestrator) StartSession(ctx context.Context, req SessionRequest) (*Chunk, error) {
	kind := "pipes"
	if req.TTY {
		kind = "tty"
	}
	c, err := o.newCall(req.CallID, req.Argv, req.Workdir, kind, req.Approval, req.Approver)
	if err != nil {
		return nil, err
	}
	g, err := o.authorize(ctx, c)
	if err != nil {
		return nil, err
	}
	chunk, err := o.startSession(ctx, req, c, g.sandboxed)
	if err != nil || chunk.Exit == nil || chunk.Stopped != nil {
		return chunk, err
	}
	if !o.retryUnsandboxed(ctx, c, g, chunk.Exit.Code, string(chunk.Output)) {
		return chunk, nil
	}
	return o.startSession(ctx, req, c, false)
}

// startSession starts an authorized session command.
func (o *Orchestrator) startSession(ctx context.Context, req SessionRequest, c call, sandboxed bool) (*Chunk, error) {
	start := time.Now()
	sandboxed, gitEnv, note := o.confine(c, sandboxed)
	use := useSnapshot
	if req.TTY {
		// The snapshot is taken on pipes: a profile may do otherwise on
		// a terminal ([ -t 1 ]), which it cannot show.
		use = noSnapshot
	}
	cmd, err := o.command(ctx, c, sandboxed, true, gitEnv, use)
	if err != nil {
		return nil, err
	}
	if sandboxed && o.Sandboxed() {
		o.taintRoots()
	}
	s, err := o.spawnSession(cmd, req, c, sandboxed)
	if err != nil {
		return nil, err
	}
	o.log.Info("session started", zap.String("call_id", req.CallID), zap.Int("pid", cmd.Process.Pid),
		zap.String("program", cmd.Path), zap.Bool("tty", s.pty != nil), zap.String("sandbox", s.label))
	s.setObserver(req.Output)
	defer s.setObserver(nil)
	var early func() bool // a new terminal session answers once it waits for input
	if s.pty != nil {
		early = func() bool { return true }
	}
	outcome := s.collect(ctx, start.Add(req.Yield), early)
	if outcome == cancelled {
		s.kill()
		select {
		case <-s.done:
		case <-time.After(killWait):
		}
	}
	chunk := s.chunk(start)
	chunk.Waiting, chunk.Note = outcome == waitingInput, note
	if outcome == cancelled {
		chunk.Stopped = context.Cause(ctx)
	}
	if chunk.Exit != nil || outcome == cancelled {
		return chunk, nil
	}
	id, victim, evicted, n := o.sessions.Insert(s)
	if evicted {
		o.log.Info("session evicted", zap.Int("pid", victim.cmd.Process.Pid), zap.Int("open", n))
		victim.kill()
	}
	chunk.ID, chunk.Open = id, n
	return chunk, nil
}

// WriteSession writes req.Chars to a session and collects its output
// until it exits, the yield passes, or — after non-empty input on a
// terminal — it waits for input again. An exit is reported once: the
// session is then gone. When ctx ends the call only stops waiting, and
// takes nothing: a client that cancelled it gets no reply, so the output
// (and the exit) stay in the session for the next call (SPEC §4.4).
//
// Errors: *UnknownSessionError; ErrStdinClosed for text to a session
// without a terminal (only \x03 and \x1c are accepted: SIGINT, SIGQUIT);
// a write that the terminal did not take before the yield ended.
func (o *Orchestrator) WriteSession(ctx context.Context, req WriteRequest) (*Chunk, error) {
	start := time.Now()
	s, ok := o.sessions.Get(req.ID)
	if !ok {
		return nil, &UnknownSessionError{ID: req.ID}
	}
	if err := s.takeTurn(ctx); err != nil {
		return nil, fmt.Errorf("waiting for the previous call on session %d: %w", req.ID, err)
	}
	defer func() { s.turn <- struct{}{} }()
	if s.reported { // a concurrent call reported its exit first
		return nil, &UnknownSessionError{ID: req.ID}
	}
	deadline := time.Now().Add(req.Yield) // the yield starts with this call's turn
	var early func() bool                 // after input, answer once it is read and more is awaited
	if len(req.Chars) > 0 && !s.Exited() {
		if s.pty != nil {
			early = s.consumed(len(req.Chars))
		}
		if err := s.input(req.Chars, deadline); err != nil {
			if !s.exitsWithin(DescendantGrace + 100*time.Millisecond) {
				return nil, err
			} // it exited as we wrote: report the exit instead
		} else if req.OnInput != nil {
			req.OnInput()
		}
	}
	s.setObserver(req.Output)
	defer s.setObserver(nil)
	outcome := s.collect(ctx, deadline, early)
	if outcome == cancelled {
		return &Chunk{Argv: s.argv, ID: req.ID, Max: s.o.sessions.Max(), Sandboxed: s.label != "none",
			Stopped: context.Cause(ctx), Wall: time.Since(start)}, nil
	}
	chunk := s.chunk(start)
	chunk.Waiting = outcome == waitingInput
	if chunk.Exit != nil {
		s.reported = true
		o.sessions.RemoveIf(req.ID, s, func(a, b *session) bool { return a == b })
	} else {
		chunk.ID = req.ID
	}
	return chunk, nil
}

// takeTurn asks the call collecting output, if any, to return now, and
// waits for the session's turn until ctx ends.
func (s *session) takeTurn(ctx context.Context) error {
	select {
	case s.preempt <- struct{}{}:
	default: // a request to stop is already pending
	}
	select {
	case <-s.turn:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	select { // our own request, if nobody was collecting
	case <-s.preempt:
	default:
	}
	return nil
}

// exitsWithin reports whether the process has exited, waiting up to d.
func (s *session) exitsWithin(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.done:
		return true
	case <-t.C:
		return false
	}
}

// startTerminal starts cmd on a new terminal: made inside the sandbox,
// in its own devpts, where the sandbox runs in namespaces (so no other
// terminal of the user's is in reach, SPEC §8.3), else here.
func (o *Orchestrator) startTerminal(cmd *exec.Cmd, sandboxed bool) (*ptyio.Pty, error) {
	if o.terminalInside(sandboxed) {
		size := ptyio.DefaultSize
		cmd.SysProcAttr.Setsid = true
		master, err := o.startWith(cmd, sandboxed, &sandbox.Terminal{Rows: size.Rows, Cols: size.Cols})
		if err != nil {
			return nil, o.startError(cmd, err)
		}
		p, err := ptyio.FromMaster(master)
		if err != nil {
			_ = o.reaper.Signal(cmd, syscall.SIGKILL)
			_, _ = o.reaper.Wait(cmd)
			return nil, &SpawnError{Program: cmd.Path, Err: err}
		}
		return p, nil
	}
	p, err := ptyio.Open(ptyio.DefaultSize)
	if err != nil {
		return nil, &SpawnError{Program: cmd.Path, Err: err}
	}
	p.Attach(cmd)
	err = o.start(cmd, sandboxed)
	p.Started()
	if err != nil {
		p.Close()
		return nil, o.startError(cmd, err)
	}
	return p, nil
}

// spawnSession starts cmd on a terminal or a merged pipe and starts its
// pump and waiter, which the orchestrator joins in Close.
func (o *Orchestrator) spawnSession(cmd *exec.Cmd, req SessionRequest, c call, sandboxed bool) (*session, error) {
	s := &session{o: o, cmd: cmd, argv: req.Argv, buf: procstore.NewHeadTail(SessionBuffer), watch: req.Watch,
		call: c, label: o.SandboxLabel(sandboxed),
		notify: make(chan struct{}, 1), done: make(chan struct{}),
		turn: make(chan struct{}, 1), preempt: make(chan struct{}, 1)}
	s.turn <- struct{}{}
	if req.TTY {
		s.started = time.Now()
		p, err := o.startTerminal(cmd, sandboxed)
		if err != nil {
			return nil, err
		}
		s.pty = p
	} else {
		r, w, err := outputPipe()
		if err != nil {
			return nil, &SpawnError{Program: cmd.Path, Err: err}
		}
		cmd.Stdout, cmd.Stderr = w, w // one pipe: output in arrival order
		s.started = time.Now()
		err = o.start(cmd, sandboxed)
		_ = w.Close()
		if err != nil {
			r.Close()
			return nil, o.startError(cmd, err)
		}
		s.pipe = r
	}
	if req.OnStart != nil {
		req.OnStart(s.label)
	}
	pumped := make(chan struct{})
	o.sessionsRunning.Add(2)
	go func() { // the pump: ends at EOF, when the terminal is closed, or when detached
		defer o.sessionsRunning.Done()
		defer close(pumped)
		s.pump()
	}()
	go func() { // the waiter: ends when the process has exited and its output is read
		defer o.sessionsRunning.Done()
		s.wait(pumped)
	}()
	return s, nil
}

func (s *session) pump() {
	b := make([]byte, sessionReadBytes)
	if s.pty != nil {
		_ = s.pty.ReadEach(b, s.output) // the probes count output until it is taken
		return
	}
	for {
		n, err := s.pipe.Read(b)
		if n > 0 {
			s.output(b[:n])
		}
		if err != nil {
			return
		}
	}
}

func (s *session) output(b []byte) {
	_, _ = s.buf.Write(b)
	s.mu.Lock()
	s.lastOutput = time.Now()
	s.outBytes += uint64(len(b))
	observe := s.observer
	s.mu.Unlock()
	if observe != nil {
		observe(Stdout, b)
	}
	if s.watch != nil {
		s.watch.Output(b)
	}
	s.wake()
}

func (s *session) wake() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// wait waits for the process, then for its output: a terminal reports
// EOF once the session is hung up; a pipe may be held by background
// descendants, which after DescendantGrace get it to themselves (it is
// drained so they keep running, SPEC §9.3).
func (s *session) wait(pumped <-chan struct{}) {
	ws, waitErr := s.o.reaper.Wait(s.cmd)
	t := time.NewTimer(DescendantGrace)
	select {
	case <-pumped:
	case <-t.C:
		if s.pty != nil {
			_ = s.pty.Close() // a descendant keeps the terminal: stop reading it
		} else {
			s.detached.Store(true)
			_ = s.pipe.SetReadDeadline(time.Now())
		}
		<-pumped
	}
	t.Stop()
	s.exit = Exit{Duration: time.Since(s.started)}
	s.exit.Code, s.exit.Signal, _ = decodeWait(ws, waitErr)
	s.o.log.Info("session exited", zap.Int("pid", s.cmd.Process.Pid), zap.Int("exit_code", s.exit.Code),
		zap.Duration("duration", s.exit.Duration))
	s.o.finished(s.call, s.label, s.exit.Code, s.exit.Duration)
	if s.watch != nil {
		s.watch.Exited(s.exit)
	}
	close(s.done)
	s.wake()
	switch {
	case s.pty != nil:
		_ = s.pty.Close()
	case s.detached.Load():
		s.o.discard(s.pipe)
	default:
		_ = s.pipe.Close()
	}
}

// decodeWait turns what Reaper.Wait returned into an exit code (128 +
// the signal for a command a signal ended) and the signal; ok is false
// (code -1) when the wait itself failed and there is no status.
func decodeWait(ws syscall.WaitStatus, err error) (code int, sig syscall.Signal, ok bool) {
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return -1, 0, false
	}
	if ws.Signaled() {
		return 128 + int(ws.Signal()), ws.Signal(), true
	}
	return ws.ExitStatus(), 0, true
}

func (s *session) setObserver(f OutputFunc) {
	s.mu.Lock()
	s.observer = f
	s.mu.Unlock()
}

// consumed is called before n bytes of input are written to the
// terminal. The function it returns reports evidence that the input has
// been read since (ptyio.Pty.Consumed).
func (s *session) consumed(n int) func() bool {
	mark := s.pty.MarkInput(s.cmd.Process.Pid, n)
	before := s.outputSoFar()
	return func() bool { return s.pty.Consumed(mark, s.outputSoFar() > before) }
}

func (s *session) outputSoFar() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.outBytes
}

func (s *session) lastOutputAt() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastOutput
}

// kill ends the session: its terminal is hung up, then every process
// group of its session is killed (an interactive shell gives each job a
// group of its own).
func (s *session) kill() {
	if s.pty != nil {
		_ = s.pty.Close()
	}
	if err := s.o.reaper.SignalSession(s.cmd, syscall.SIGKILL); err != nil {
		s.o.log.Warn("kill session", zap.Int("sid", s.cmd.Process.Pid), zap.Error(err))
	}
}

// outcome is why a call stopped collecting output.
type outcome int

const (
	yielded outcome = iota
	exited
	waitingInput
	cancelled
)

// collect waits until the process has exited, the deadline passes, ctx
// ends or, when early is set, a probe finds the terminal waiting for
// input (answered). The first probe runs firstProbe after the call; the
// next, after each output or failed probe, after a quarter of the time
// the call has run (so an answer comes at most a quarter late, in a
// number of probes that grows with the log of the time), at least
// firstProbe and at most the quiet window after output or
// maxProbeInterval after a failed probe.
func (s *session) collect(ctx context.Context, deadline time.Time, early func() bool) outcome {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var probe *probeTimer
	var probeC <-chan struct{} // nil: no probes
	since := time.Now()        // the quiet window counts from the input, at least
	backoff := func(limit time.Duration) time.Duration { return min(max(time.Since(since)/4, firstProbe), limit) }
	if early != nil {
		probe = newProbeTimer()
		defer probe.Stop()
		probeC = probe.C()
		probe.Reset(firstProbe)
	}
	for {
		select {
		case <-s.done:
			return exited
		case <-ctx.Done():
			return cancelled
		case <-timer.C:
			return yielded
		case <-s.preempt: // another call on this session wants its turn
			return yielded
		case <-s.notify:
			if early != nil { // look again once the output has paused
				probe.Reset(backoff(s.o.quiet))
			}
		case <-probeC:
			wait := s.answered(early)
			quiet := time.Since(since)
			if last := s.lastOutputAt(); last.After(since) {
				quiet = time.Since(last)
			}
			switch {
			case wait == ptyio.WaitingOnlyForInput, wait == ptyio.Waiting && quiet >= s.o.quiet:
				return waitingInput
			case wait == ptyio.Waiting: // it may be done: look again once the window has passed
				probe.Reset(s.o.quiet - quiet)
			default:
				probe.Reset(backoff(maxProbeInterval))
			}
		}
	}
}

// answered runs the probes in causal order: the input written for this
// call was read (early), then the foreground waits for input again, then
// none of its output is in transit. It returns ptyio.NotWaiting when one
// of them fails, and ptyio.Waiting rather than WaitingOnlyForInput while
// the terminal holds input no reader has taken: read counters also count
// other reads than the terminal's (SPEC §4.4).
func (s *session) answered(early func() bool) ptyio.Wait {
	if !early() {
		return ptyio.NotWaiting
	}
	taken := !s.pty.InputPending()
	wait := s.pty.ForegroundWait(s.cmd.Process.Pid)
	if wait == ptyio.NotWaiting || s.pty.OutputPending() {
		return ptyio.NotWaiting
	}
	if wait == ptyio.WaitingOnlyForInput && !taken {
		return ptyio.Waiting
	}
	return wait
}

// chunk drains the output collected so far. After the exit the whole
// remainder is taken.
func (s *session) chunk(start time.Time) *Chunk {
	c := &Chunk{Argv: s.argv, Max: s.o.sessions.Max(), Sandboxed: s.label != "none"}
	final := s.Exited()
	c.Output, c.OmittedAt, c.Omitted = s.buf.Drain(final)
	if final {
		e := s.exit
		c.Exit = &e
	}
	c.Wall = time.Since(start)
	return c
}

// input writes chars to the terminal, or turns ^C and ^\ into signals for
// a session without one.
func (s *session) input(chars []byte, deadline time.Time) error {
	if s.pty == nil {
		return s.signalChars(chars)
	}
	if s.pty.Canonical() {
		for line := range strings.SplitSeq(string(chars), "\n") {
			if len(line) > ptyio.MaxCanon-1 {
				return fmt.Errorf("an input line of %d bytes is longer than the %d bytes a terminal in line mode keeps; nothing was sent: send it in pieces or through a file",
					len(line), ptyio.MaxCanon-1)
			}
		}
	}
	if err := s.pty.SetWriteDeadline(deadline); err != nil {
		return fmt.Errorf("write to the terminal: %w", err)
	}
	defer func() { _ = s.pty.SetWriteDeadline(time.Time{}) }()
	n, err := s.pty.Write(chars)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("the terminal took only %d of %d bytes before the yield time ended: the program is not reading its input", n, len(chars))
	case err != nil:
		return fmt.Errorf("write to the terminal: %w", err)
	}
	return nil
}

// signalChars sends SIGINT for each \x03 and SIGQUIT for each \x1c to a
// session without a terminal; any other character is refused before
// anything is sent.
func (s *session) signalChars(chars []byte) error {
	if strings.Trim(string(chars), "\x03\x1c") != "" {
		return ErrStdinClosed
	}
	for _, c := range chars {
		sig := syscall.SIGINT
		if c == 0x1c {
			sig = syscall.SIGQUIT
		}
		if err := s.o.reaper.Signal(s.cmd, sig); err != nil {
			return fmt.Errorf("signal the session: %w", err)
		}
	}
	return nil
}

// HangUp closes the terminal of every open session, as a terminal window
// that closes: the kernel sends SIGHUP to each terminal's foreground and
// session leader. Interactive shells, which ignore SIGTERM, exit at once.
// Shutdown calls it before the reaper's SIGTERM.
func (o *Orchestrator) HangUp() {
	for _, s := range o.sessions.All() {
		if s.pty != nil {
			_ = s.pty.Close()
		}
	}
}

// SessionCount returns the number of live sessions.
func (o *Orchestrator) SessionCount() int { return o.sessions.Len() }

// withOverrides returns env with the KEY=VALUE entries of overrides
// replacing or adding to it.
func withOverrides(env, overrides []string) []string {
	out := make([]string, 0, len(env)+len(overrides))
	skip := map[string]bool{}
	for _, kv := range overrides {
		k, _, _ := strings.Cut(kv, "=")
		skip[k] = true
	}
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !skip[k] {
			out = append(out, kv)
		}
	}
	return append(out, overrides...)
}
