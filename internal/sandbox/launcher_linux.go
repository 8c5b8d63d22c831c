package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/execd/execd/internal/procfs"
	"golang.org/x/sys/unix"
)

// Launcher is execd's handle on a resident launcher (LauncherMain): one
// long-lived process per sandbox policy, set up once, that forks and
// execs each command on request, so a sandboxed command costs a fork and
// an exec rather than a runtime start and a sandbox setup. It is the init
// of the commands' PID namespace: they die with it, and it dies with
// execd.
//
// Use: NewLauncher, start Cmd with the reaper, Started, Ready; then
// Launch per command while Covers holds for the policy, and Retire when
// it no longer does.
type Launcher struct {
	// Cmd is the launcher's process, to be started by the caller.
	Cmd *exec.Cmd

	policy, statusR, statusW, ctlTheirs *os.File // the launcher's setup, until Ready
	ctl                                 *os.File // our end of the control socket, on the poller
	roots                               []Root
	entries                             map[string]plannedEntry // what it protects, by path

	coverMu  sync.Mutex
	covered  *coverage // guarded by coverMu: the last plan Covers found covered; read only once set
	replayed int       // guarded by coverMu: checks still answered, for tests

	launchMu sync.Mutex    // one launch at a time
	replies  chan reply    // the launcher's answers to launches
	gone     chan struct{} // closed once the launcher's socket is closed: it has exited

	mu      sync.Mutex
	procs   map[int]*Process // guarded by mu: commands running, by pid in the launcher's namespace
	retired bool             // guarded by mu
}

type reply struct {
	m   message
	fds []int
}

// Process is a command a launcher started: not execd's child, so its end
// is reported by the launcher.
type Process struct {
	pid    int
	done   chan struct{}
	status syscall.WaitStatus
}

// Pid is the command's pid in execd's PID namespace.
func (p *Process) Pid() int { return p.pid }

// Done is closed once the command has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Status is the command's wait status, once Done is closed. A command
// whose launcher died was killed with it: SIGKILL.
func (p *Process) Status() syscall.WaitStatus { return p.status }

// ErrLauncherGone is a launch on a launcher that exited or was retired.
var ErrLauncherGone = errors.New("the sandbox launcher is gone")

// NewLauncher prepares a launcher for p (its command fields are
// ignored). sup must have user and PID namespaces.
func NewLauncher(p Policy, sup Support) (*Launcher, error) {
	if !sup.UserNS || !sup.PIDNS {
		return nil, errors.New("a sandbox launcher needs user and PID namespaces")
	}
	p.Path, p.Argv, p.Dir, p.Env, p.Terminal = "", nil, "", nil, nil
	p.Namespaces = true
	policy, err := policyFile(&p)
	if err != nil {
		return nil, err
	}
	l := &Launcher{policy: policy, roots: p.Roots, replies: make(chan reply, 1), gone: make(chan struct{}), procs: map[int]*Process{}}
	if l.statusR, l.statusW, err = os.Pipe(); err != nil {
		l.Started(err)
		return nil, fmt.Errorf("status pipe: %w", err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		err = unix.SetNonblock(fds[0], true)
	}
	if err != nil {
		l.Started(err)
		return nil, fmt.Errorf("control socket: %w", err)
	}
	l.ctl, l.ctlTheirs = os.NewFile(uintptr(fds[0]), "execd-launcher"), os.NewFile(uintptr(fds[1]), "execd-launcher-control")
	cmd := &exec.Cmd{
		Path: "/proc/self/exe",
		Args: []string{"execd-sandbox", LauncherArg},
		// One P: it forks on one thread and waits on another, and every
		// thread it has counts against the user's process budget.
		Env:        []string{"GOMAXPROCS=1"},
		ExtraFiles: []*os.File{policy, l.statusW, l.ctlTheirs}, // fds 3, 4, 5
		// Pdeathsig: the kernel kills the launcher, and so its namespace,
		// when the thread that started it ends; execd's threads live as
		// long as execd (it never exits a locked goroutine).
		SysProcAttr: &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL},
	}
	if v, ok := os.LookupEnv("GORACE"); ok {
		cmd.Env = append(cmd.Env, "GORACE="+v)
	}
	addNamespaces(cmd.SysProcAttr, p.Network)
	cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWPID
	l.Cmd = cmd
	return l, nil
}

// Started closes our copies of the launcher's descriptors; call it with
// what starting Cmd returned. After a failed start it closes everything.
func (l *Launcher) Started(err error) {
	for _, f := range []*os.File{l.policy, l.statusW, l.ctlTheirs} {
		if f != nil {
			_ = f.Close()
		}
	}
	if err != nil {
		for _, f := range []*os.File{l.statusR, l.ctl} {
			if f != nil {
				_ = f.Close()
			}
		}
	}
}

// Ready waits until the launcher is set up (nil) or reported why it
// could not be (*SetupError). On error the caller kills Cmd.
func (l *Launcher) Ready(timeout time.Duration) error {
	defer l.statusR.Close()
	_ = l.statusR.SetReadDeadline(time.Now().Add(timeout))
	b, err := io.ReadAll(l.statusR)
	if err == nil {
		var ready struct {
			Entries *[]plannedEntry `json:"entries"`
		}
		if json.Unmarshal(b, &ready) == nil && ready.Entries != nil {
			l.entries = map[string]plannedEntry{}
			for _, e := range *ready.Entries {
				l.entries[e.Path] = e
			}
			go l.read()
			return nil
		}
	}
	_ = l.ctl.Close()
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &SetupError{Stage: "start", Err: fmt.Errorf("the sandbox launcher was not ready within %v", timeout)}
	case err != nil:
		return &SetupError{Stage: "start", Err: err}
	case len(b) == 0:
		return &SetupError{Stage: "start", Err: errors.New("the sandbox launcher exited before it was ready")}
	}
	var w wireError
	if json.Unmarshal(b, &w) != nil {
		return &SetupError{Stage: "start", Err: fmt.Errorf("unreadable report from the sandbox launcher: %q", b)}
	}
	return &SetupError{Stage: w.Stage, Err: &reported{msg: w.Message, errno: syscall.Errno(w.Errno)}}
}

// Alive reports whether the launcher takes launches: it runs and was not
// retired.
func (l *Launcher) Alive() bool {
	select {
	case <-l.gone:
		return false
	default:
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.retired
}

// Exited reports whether the launcher has exited (its socket closed).
func (l *Launcher) Exited() bool {
	select {
	case <-l.gone:
		return true
	default:
		return false
	}
}

// Covers reports whether the launcher still enforces what a launch of p
// would (p differing from the launcher's only in its command): the roots
// are the directories they were, and every entry a launch would pin or
// make read-only now is protected in the launcher's namespace as the same
// file. A plan that a refused lookup made blind is never covered.
//
// When the last plan that found the launcher covering p still gets the
// same answer to each of its lookups, the plan would be the same: Covers
// holds without planning. Otherwise it plans again, which costs the
// lookups of one plan (SPEC §8.3).
func (l *Launcher) Covers(p *Policy) bool {
	for _, r := range l.roots {
		var st unix.Stat_t
		if unix.Lstat(r.Path, &st) != nil || sameIDs(&st, r.Dev, r.Ino) != nil {
			return false
		}
	}
	// The replay and the plan run unlocked: launches in parallel check
	// in parallel (a coverage is read only once made).
	l.coverMu.Lock()
	c := l.covered
	l.coverMu.Unlock()
	if c != nil && c.plans(p) && c.lookups.still() {
		l.coverMu.Lock()
		l.replayed++
		l.coverMu.Unlock()
		return true
	}
	all := make([]openRoot, len(p.Roots))
	for i, r := range p.Roots {
		all[i] = openRoot{Root: r, fd: -1}
	}
	outer, inner := splitNested(all)
	lk := newLookups()
	pl, err := planProtection(p, outer, all, inner, lk)
	if err != nil || pl.blind {
		return false
	}
	for path, e := range pl.entries {
		have, ok := l.entries[path]
		if !ok || have.Dev != e.dev || have.Ino != e.ino || e.readOnly && !have.ReadOnly {
			return false
		}
	}
	c = &coverage{
		roots: slices.Clone(p.Roots), names: slices.Clone(p.ProtectedNames),
		paths: slices.Clone(p.ProtectedPaths), submodules: slices.Clone(p.SubmodulePaths),
		lookups: lk,
	}
	l.coverMu.Lock()
	l.covered = c
	l.coverMu.Unlock()
	return true
}

// coverage is a plan that found a launcher covering a policy: what of the
// policy it was made from (copied: the caller may reuse its slices), and
// the lookups it made.
type coverage struct {
	roots                    []Root
	names, paths, submodules []string
	lookups                  *lookups
}

// plans reports whether p has what the plan was made from: the same
// roots, protected names, protected paths and submodule paths.
func (c *coverage) plans(p *Policy) bool {
	return slices.Equal(c.roots, p.Roots) && slices.Equal(c.names, p.ProtectedNames) &&
		slices.Equal(c.paths, p.ProtectedPaths) && slices.Equal(c.submodules, p.SubmodulePaths)
}

// replays returns how many checks Covers answered without planning.
func (l *Launcher) replays() int {
	l.coverMu.Lock()
	defer l.coverMu.Unlock()
	return l.replayed
}

// Retire takes no more launches; the launcher exits once every process
// in its namespace has ended (a background process a command left keeps
// it, as it would keep execd's process group, until shutdown).
func (l *Launcher) Retire() {
	l.mu.Lock()
	l.retired = true
	l.mu.Unlock()
	_ = l.send(message{Kind: msgRetire}, nil)
}

// Stop has the launcher SIGTERM every process in its namespace and exit
// once none is left, or after 2 s, which kills what is left (shutdown;
// the reaper's SIGKILL of the launcher after its grace would too).
func (l *Launcher) Stop() {
	l.Retire()
	_ = l.send(message{Kind: msgStop}, nil)
}

// Launch starts cmd (Path, Args, Env, Dir; Stdin, Stdout and Stderr nil
// or *os.File) in the launcher's sandbox, on a new terminal of the
// launcher's devpts when term is set, whose master it then returns. The
// command leads a new session. Errors: ErrLauncherGone, a *SetupError.
func (l *Launcher) Launch(cmd *exec.Cmd, term *Terminal) (*Process, *os.File, error) {
	req := launchRequest{Path: cmd.Path, Argv: cmd.Args, Dir: cmd.Dir, Env: cmd.Env, Terminal: term}
	if req.Env == nil {
		req.Env = os.Environ()
	}
	var stdio []int
	if term == nil {
		for i, s := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
			switch f := s.(type) {
			case nil:
			case *os.File:
				req.Stdio[i] = true
				stdio = append(stdio, int(f.Fd()))
			default:
				return nil, nil, fmt.Errorf("launch: stdio %d is a %T, not a file", i, s)
			}
		}
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, nil, err
	}
	memfd, err := unix.MemfdCreate("execd-launch", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, nil, fmt.Errorf("memfd: %w", err)
	}
	defer unix.Close(memfd)
	if _, err := unix.Write(memfd, b); err != nil {
		return nil, nil, fmt.Errorf("memfd: %w", err)
	}
	l.launchMu.Lock()
	defer l.launchMu.Unlock()
	if !l.Alive() {
		return nil, nil, ErrLauncherGone
	}
	err = l.send(message{Kind: msgLaunch}, append([]int{memfd}, stdio...))
	for _, s := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		if f, ok := s.(*os.File); ok {
			runtime.KeepAlive(f)
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrLauncherGone, err)
	}
	var r reply
	select {
	case r = <-l.replies:
	case <-l.gone:
		return nil, nil, ErrLauncherGone
	case <-time.After(launchTimeout):
		_ = l.Cmd.Process.Kill() // wedged: its commands die with it, the next launch starts another
		return nil, nil, &SetupError{Stage: "start", Err: fmt.Errorf("the sandbox launcher did not answer within %v", launchTimeout)}
	}
	return l.started(r, term != nil)
}

// launchTimeout bounds one launch.
const launchTimeout = 10 * time.Second

// started takes the launcher's reply to a launch.
func (l *Launcher) started(r reply, term bool) (*Process, *os.File, error) {
	if r.m.Kind != msgStarted {
		closeAll(r.fds)
		w := r.m.Err
		if w == nil {
			w = &wireError{Stage: "start", Message: "unexpected reply " + r.m.Kind}
		}
		return nil, nil, &SetupError{Stage: w.Stage, Err: &reported{msg: w.Message, errno: syscall.Errno(w.Errno)}}
	}
	if want := map[bool]int{false: 1, true: 2}[term]; len(r.fds) != want {
		closeAll(r.fds)
		return nil, nil, &SetupError{Stage: "start", Err: fmt.Errorf("the sandbox launcher sent %d descriptors", len(r.fds))}
	}
	pid, err := procfs.PidfdPid(r.fds[0])
	_ = unix.Close(r.fds[0])
	var master *os.File
	if term {
		master = os.NewFile(uintptr(r.fds[1]), "/dev/ptmx")
	}
	p := &Process{pid: pid, done: make(chan struct{})}
	l.mu.Lock()
	l.procs[r.m.Pid] = p
	l.mu.Unlock()
	// Only now may the launcher reap it (its exit report comes after).
	_ = l.send(message{Kind: msgAck, Pid: r.m.Pid}, nil)
	if err != nil || pid <= 0 {
		// Cannot be: it is not reaped before the ack. Without its pid it
		// cannot be signalled; it dies with the launcher at the latest.
		if master != nil {
			_ = master.Close()
		}
		return nil, nil, &SetupError{Stage: "start", Err: fmt.Errorf("the command's pid: %v (pid %d)", err, pid)}
	}
	return p, master, nil
}

// send sends one message, with fds.
func (l *Launcher) send(m message, fds []int) error {
	b, oob := m.packet(fds)
	rc, err := l.ctl.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Write(func(fd uintptr) bool {
		serr = unix.Sendmsg(int(fd), b, oob, nil, unix.MSG_NOSIGNAL)
		return !errors.Is(serr, unix.EAGAIN)
	})
	return errors.Join(err, serr)
}

// read takes the launcher's messages until its socket closes: launch
// replies go to the launch waiting, exits to their Process. When the
// launcher is gone its commands are too (they died with its namespace).
func (l *Launcher) read() {
	defer func() {
		close(l.gone)
		_ = l.ctl.Close()
		l.mu.Lock()
		defer l.mu.Unlock()
		for pid, p := range l.procs {
			delete(l.procs, pid)
			p.status = syscall.WaitStatus(syscall.SIGKILL)
			close(p.done)
		}
	}()
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(2*4))
	for {
		n, fds, err := recvPacket(l.ctl, buf, oob)
		if err != nil || n == 0 {
			closeAll(fds)
			return
		}
		var m message
		if json.Unmarshal(buf[:n], &m) != nil {
			closeAll(fds)
			continue
		}
		switch m.Kind {
		case msgExited:
			closeAll(fds)
			l.mu.Lock()
			if p := l.procs[m.Pid]; p != nil {
				delete(l.procs, m.Pid)
				p.status = syscall.WaitStatus(m.Status)
				close(p.done)
			}
			l.mu.Unlock()
		default:
			select {
			case l.replies <- reply{m, fds}:
			default:
				closeAll(fds) // nobody waits for it (a launch that gave up)
			}
		}
	}
}
