package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// DescendantGrace is how long a one-shot call waits, after its command
// exited, for descendants that still hold the output pipes (SPEC §9.3).
const DescendantGrace = 250 * time.Millisecond

// ExitTimedOut is the exit code of a command killed by its timeout
// (SPEC §9.2, compat).
const ExitTimedOut = 124

// ErrShuttingDown is returned instead of starting a command once shutdown
// has begun.
var ErrShuttingDown = errors.New("execd is shutting down; no new commands are started")

// ExecRequest is a one-shot command.
type ExecRequest struct {
	// CallID identifies the tool call in logs; may be empty.
	CallID string
	Argv   []string
	// Workdir is resolved against the turn directory; "" means the turn
	// directory.
	Workdir string
	// Timeout kills the command's process group; 0 means no timeout.
	Timeout time.Duration
	// Output, if set, sees the output as it arrives.
	Output OutputFunc
	// OnStart, if set, is called once the process has started, before any
	// of its output is seen, with what confines it (SandboxLabel).
	OnStart func(sandbox string)
	// OnExit, if set, is called with the result of each process that
	// started, once it is complete (a retry without the sandbox is a
	// second process).
	OnExit func(*ExecResult)
	// Approval is what the model asked for; Approver asks the user when
	// the policy says so (nil: nobody can be asked, so such calls are
	// denied).
	Approval Approval
	Approver Approver
	// NoSnapshot runs a login shell's profile even where a snapshot could
	// stand in for it (execd doctor measures what the profile costs).
	NoSnapshot bool
	// SelfTest marks execd doctor's own commands (its self-test, and the
	// login shells that show what the profile costs): their launch, and
	// the snapshot one takes, do not count as one that could make a
	// repository (taintRoots).
	SelfTest bool
}

// ExecResult is the outcome of a command that was started.
type ExecResult struct {
	// ExitCode is the exit status, 128+N when killed by signal N, and
	// ExitTimedOut when the timeout killed it.
	ExitCode int
	// Signal is the signal that ended the command (0 if it exited or timed
	// out).
	Signal syscall.Signal
	// TimedOut reports that the timeout killed the command.
	TimedOut bool
	// Stopped is why execd stopped the command before it finished (the
	// cause of the request's context), or nil.
	Stopped  error
	Stdout   Capture
	Stderr   Capture
	Duration time.Duration
	// Sandboxed reports that the command ran inside execd's sandbox.
	Sandboxed bool
	// Note says why a command lifted out of the sandbox ran in it after
	// all (confine), for the model; "" otherwise.
	Note string
}

// SpawnError reports a command that could not be started.
type SpawnError struct {
	Program string
	Err     error
}

func (e *SpawnError) Error() string { return fmt.Sprintf("cannot start %s: %v", e.Program, e.Err) }
func (e *SpawnError) Unwrap() error { return e.Err }

// Exec runs a one-shot command with stdin /dev/null and its output on two
// pipes, once the exec policy lets it (asking req.Approver when it says
// so, SPEC §7.2), and returns when it has exited and its output is read,
// or DescendantGrace after exit if background descendants keep the pipes
// open: they are left running, and what they write from then on is read
// and discarded (so they do not die of SIGPIPE) until they close the pipes
// or [Orchestrator.Close]. When ctx ends first the command's process group
// is killed and the result records the cause in Stopped. A command that
// fails in the sandbox with a denial runs again without it when the
// policy allows that (on-failure, untrusted); the result is the second
// run's.
//
// Errors: *WorkdirError, *RefusedError, *DeniedError,
// *sandbox.UnavailableError, *sandbox.SetupError, *SpawnError,
// ErrShuttingDown, or ctx's cause while waiting for approval; no process
// was started then.
func (o *Orchestrator) Exec(ctx context.Context, req ExecRequest) (*ExecResult, error) {
	c, err := o.newCall(req.CallID, req.Argv, req.Workdir, "", req.Approval, req.Approver)
	if err != nil {
		return nil, err
	}
	g, err := o.authorize(ctx, c)
	if err != nil {
		return nil, err
	}
	res, err := o.execOnce(ctx, req, c, g.sandboxed)
	if err != nil || res.TimedOut || res.Stopped != nil {
		return res, err
	}
	output := string(res.Stdout.Data) + string(res.Stderr.Data)
	if !o.retryUnsandboxed(ctx, c, g, res.ExitCode, output) {
		return res, nil
	}
	return o.execOnce(ctx, req, c, false)
}

// DefaultMaxConcurrent is exec.max_concurrent's default.
const DefaultMaxConcurrent = 128

// execOnce runs an authorized one-shot command once one of the
// MaxConcurrent places is free: calls wait for one in the order they
// came, until ctx ends.
func (o *Orchestrator) execOnce(ctx context.Context, req ExecRequest, c call, sandboxed bool) (*ExecResult, error) {
	if err := o.running.Acquire(ctx, 1); err != nil {
		return nil, fmt.Errorf("waiting for one of the exec.max_concurrent commands to finish: %w", context.Cause(ctx))
	}
	defer o.running.Release(1)
	sandboxed, gitEnv, note := o.confine(c, sandboxed)
	use := useSnapshot
	switch {
	case req.NoSnapshot:
		use = noSnapshot
	case req.SelfTest:
		use = selfTestSnapshot
	}
	cmd, err := o.command(ctx, c, sandboxed, false, gitEnv, use)
	if err != nil {
		return nil, err
	}
	label := o.SandboxLabel(sandboxed)
	if label != "none" && !req.SelfTest {
		o.taintRoots()
	}
	var onStart func()
	if req.OnStart != nil {
		onStart = func() { req.OnStart(label) }
	}
	run, err := o.startPiped(cmd, sandboxed, req.Output, onStart)
	if err != nil {
		return nil, err
	}
	log := o.log.With(zap.String("call_id", req.CallID), zap.Int("pid", cmd.Process.Pid))
	log.Info("command started", zap.String("program", cmd.Path), zap.String("dir", cmd.Dir), zap.String("sandbox", label))
	res := run.wait(ctx, o, req.Timeout)
	res.Sandboxed, res.Note = label != "none", note
	log.Info("command finished", zap.Int("exit_code", res.ExitCode), zap.Duration("duration", res.Duration),
		zap.Bool("timed_out", res.TimedOut), zap.NamedError("stopped", res.Stopped))
	o.finished(c, label, res.ExitCode, res.Duration)
	if req.OnExit != nil {
		req.OnExit(res)
	}
	return res, nil
}

// newCall checks a call's argv and resolves its directory.
func (o *Orchestrator) newCall(id string, argv []string, workdir, kind string, ap Approval, approver Approver) (call, error) {
	if len(argv) == 0 {
		return call{}, &SpawnError{Program: `""`, Err: errors.New("empty command")}
	}
	dir, err := o.ResolveWorkdir(workdir)
	if err != nil {
		return call{}, err
	}
	return call{id: id, argv: argv, cwd: dir, kind: kind, approval: ap, approver: approver}, nil
}

// command checks that the sandbox can confine a sandboxed run of c,
// resolves its program in its directory and gives it the environment of
// its run (a session's when session) with extra added. This is where a
// login shell, its call authorized, is given the snapshot of its profile
// (withSnapshot, as use allows): the argv the policy, the audit and the
// model see stays the call's.
func (o *Orchestrator) command(ctx context.Context, c call, sandboxed, session bool, extra []string, use snapshotUse) (*exec.Cmd, error) {
	if sandboxed && o.FailsClosed() {
		return nil, o.sandboxErr
	}
	path, err := lookPath(c.argv[0], o.commandPath(), c.cwd)
	if err != nil {
		return nil, &SpawnError{Program: c.argv[0], Err: err}
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        c.argv,
		Env:         slices.Concat(o.environ(sandboxed, session), extra),
		Dir:         c.cwd,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	o.withSnapshot(ctx, cmd, sandboxed, use, extra)
	if ctx.Err() != nil { // it ended while a snapshot was taken: start nothing
		return nil, fmt.Errorf("waiting for the snapshot of the login profile: %w", context.Cause(ctx))
	}
	return cmd, nil
}

// pipedRun is a started one-shot command and its output pumps.
type pipedRun struct {
	cmd        *exec.Cmd
	start      time.Time
	outR, errR *os.File
	out, err   capture
	pumpsDone  chan struct{} // each pump sends once when it stops capturing
	detached   atomic.Bool   // set by drain: stop capturing, keep discarding
}

func (o *Orchestrator) startPiped(cmd *exec.Cmd, sandboxed bool, observe OutputFunc, onStart func()) (*pipedRun, error) {
	outR, outW, err := outputPipe()
	if err != nil {
		return nil, &SpawnError{Program: cmd.Path, Err: err}
	}
	errR, errW, err := outputPipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, &SpawnError{Program: cmd.Path, Err: err}
	}
	cmd.Stdout, cmd.Stderr = outW, errW // stdin stays nil: os/exec opens /dev/null
	r := &pipedRun{cmd: cmd, outR: outR, errR: errR, pumpsDone: make(chan struct{}, 2),
		out: capture{limit: CaptureLimit}, err: capture{limit: CaptureLimit}}
	r.start = time.Now()
	err = o.start(cmd, sandboxed)
	_ = outW.Close() // the child has its own copies; ours would hide EOF
	_ = errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, o.startError(cmd, err)
	}
	if onStart != nil {
		onStart()
	}
	for _, p := range []struct {
		f *os.File
		c *capture
		s Stream
	}{{outR, &r.out, Stdout}, {errR, &r.err, Stderr}} {
		// Joined by drain while capturing, then by Orchestrator.Close.
		go func() {
			more := p.c.pump(p.f, p.s, observe, &r.detached)
			r.pumpsDone <- struct{}{}
			if more {
				o.discard(p.f)
			} else {
				_ = p.f.Close()
			}
		}()
	}
	return r, nil
}

// wait waits for the command, killing its group on timeout or when ctx
// ends, then collects the output. The kills run as timer and context
// callbacks, so the waiting itself needs no goroutine of its own.
func (r *pipedRun) wait(ctx context.Context, o *Orchestrator, timeout time.Duration) *ExecResult {
	res := &ExecResult{}
	pid := r.cmd.Process.Pid
	kill := func() {
		if err := o.reaper.Signal(r.cmd, syscall.SIGKILL); err != nil {
			o.log.Warn("kill process group", zap.Int("pgid", pid), zap.Error(err))
		}
	}
	var timer *time.Timer
	if timeout > 0 {
		timer = time.AfterFunc(timeout, kill)
	}
	stopCancel := context.AfterFunc(ctx, kill)
	ws, waitErr := o.reaper.Wait(r.cmd)
	// A callback that already ran (or is running) killed the command, or
	// fired as it exited on its own; either way it ran out its time.
	if timer != nil && !timer.Stop() {
		res.TimedOut = true
	}
	if !stopCancel() && !res.TimedOut {
		res.Stopped = context.Cause(ctx)
	}
	r.drain(DescendantGrace)
	res.Duration = time.Since(r.start)
	res.Stdout, res.Stderr = r.out.result(), r.err.result()
	code, sig, ok := decodeWait(ws, waitErr)
	switch {
	case !ok: // Wait itself failed; should not happen
		o.log.Error("wait for command", zap.Error(waitErr))
		res.ExitCode = -1
	case res.TimedOut:
		res.ExitCode = ExitTimedOut
	default:
		res.ExitCode, res.Signal = code, sig
	}
	return res
}

// drain waits for the pumps to reach EOF; after grace, when only
// background descendants can still hold the pipes, it makes them stop
// capturing (they go on discarding) so the result can be built.
func (r *pipedRun) drain(grace time.Duration) {
	t := time.NewTimer(grace)
	defer t.Stop()
	for pending := 2; pending > 0; {
		select {
		case <-r.pumpsDone:
			pending--
		case <-t.C:
			r.detached.Store(true)
			now := time.Now()
			_ = r.outR.SetReadDeadline(now) // interrupts the pump's read
			_ = r.errR.SetReadDeadline(now)
		}
	}
}

// discard reads and drops what background descendants still write to a
// command's pipe until they close it or Close is called, then closes it.
func (o *Orchestrator) discard(f *os.File) {
	o.leftoverMu.Lock()
	if o.closed {
		o.leftoverMu.Unlock()
		_ = f.Close()
		return
	}
	o.leftovers.Add(1)
	o.leftoverFiles[f] = struct{}{}
	o.leftoverMu.Unlock()
	defer o.leftovers.Done()

	_ = f.SetReadDeadline(time.Time{})
	buf := make([]byte, 4<<10) // not the pooled 64 KiB: this may last hours
	for {
		if _, err := f.Read(buf); err != nil {
			break
		}
	}
	o.leftoverMu.Lock()
	delete(o.leftoverFiles, f)
	o.leftoverMu.Unlock()
	_ = f.Close()
}

// Close kills the sessions still open, stops reading the output of
// background descendants left by finished commands (those are not
// signalled: the reaper's Shutdown does that), and waits for every
// goroutine the orchestrator started. Call it at shutdown, after the last
// call has returned.
func (o *Orchestrator) Close() {
	o.leftoverMu.Lock()
	o.closed = true
	for f := range o.leftoverFiles {
		_ = f.Close() // interrupts its reader
	}
	o.leftoverMu.Unlock()
	for _, s := range o.sessions.RemoveAll() {
		s.kill()
	}
	o.sessionsRunning.Wait()
	o.leftovers.Wait()
	if o.snaps != nil {
		o.snaps.Close() // before the launchers: a snapshot being taken may use one
	}
	o.launchers.stop()
}
