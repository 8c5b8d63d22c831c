// Package reaper owns every process execd starts and everything those
// processes leave behind, so that nothing outlives execd.
//
// # Contract
//
//   - Every child of the process is started with [Reaper.Start] and waited
//     with [Reaper.Wait]; a process has at most one Reaper. Start refuses a
//     command that would not lead its own process group (SysProcAttr.Setsid,
//     or Setpgid with Pgid 0), so the group can be signalled as a whole.
//   - On Linux the process becomes a child subreaper: descendants orphaned by
//     their parent (`cmd &`, `setsid cmd &`, `nohup cmd &`, daemons) are
//     re-parented to it instead of init. The Reaper reaps those orphans
//     when they exit and never touches the children that Wait is
//     responsible for. It looks for orphans when Wait returns and, while
//     any command or orphan is alive, every [OrphanPoll], so an orphan that
//     exits stays a zombie for at most about that long. It installs no
//     signal handler.
//     Elsewhere orphans cannot be found; only the process groups that
//     Start created are tracked.
//   - On Linux, Wait holds no OS thread while the command runs: the
//     pidfd os/exec keeps for the child is watched by one epoll set on
//     the runtime's poller, and cmd.Wait is called once it has exited.
//   - [New] marks every descriptor above 2 that the process inherited
//     close-on-exec, so a child gets only its own stdin, stdout, stderr and
//     whatever its Cmd passes explicitly (SPEC §9.2); Go's own descriptors
//     are close-on-exec already, inherited ones are not.
//   - [New] has execd make, while there is room, the OS threads it will
//     want where it shares a budget of tasks with its commands
//     (RLIMIT_NPROC, pids.max), and Start names that budget when the
//     kernel refuses a new process (see package budget).
//   - [Reaper.Shutdown] signals every tracked group and every adopted
//     orphan, SIGTERM first and SIGKILL after a grace period, until no
//     descendant is left.
//
// The Reaper never kills a group on its own initiative before Shutdown: a
// background process the user asked for keeps running (SPEC §9.3).
//
// A Reaper is safe for concurrent use.
package reaper

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/execd/execd/internal/budget"
)

// ErrClosed is returned by Start once Shutdown has begun.
var ErrClosed = errors.New("reaper: shutting down, no new processes")

// ErrNoGroup is returned by Start for a command that would stay in the
// caller's process group.
var ErrNoGroup = errors.New("reaper: command must lead its own process group (set SysProcAttr.Setsid or Setpgid)")

// pollInterval paces Shutdown while it waits for processes to go.
const pollInterval = 10 * time.Millisecond

// OrphanPoll is how often adopted orphans are checked while any is alive.
const OrphanPoll = time.Second

// scanSpacing is the least time between two orphan scans triggered by
// Wait, so a busy daemon scans a few times a second, not once per command.
const scanSpacing = 100 * time.Millisecond

// Reaper tracks the processes execd started. Create it with [New] and stop
// it with [Reaper.Close] after [Reaper.Shutdown].
type Reaper struct {
	adopts   bool         // orphans are re-parented to this process (Linux)
	cg       *cgroup      // the cgroup every command starts in, or nil
	cgErr    error        // why there is none
	budget   budget.Kept  // the task budgets shared with commands, and execd's threads
	guard    int          // the cgroup guard's pid: not a command, never signalled
	children func() []int // lists this process's children

	// The maps hold the command behind each pid, so that an entry is only
	// ever removed or signalled for the command that made it, even if the
	// pid is reused as soon as the command is reaped.
	// starting is read-held by each Start from fork to registration and
	// write-held by the decisions about orphans, so that they never take
	// a new child for an orphan; Starts run in parallel.
	starting sync.RWMutex

	mu        sync.Mutex
	direct    map[int]*exec.Cmd    // guarded by mu: started and not yet waited, by pid
	groups    map[int]*exec.Cmd    // guarded by mu: process groups Start created, by pgid
	remote    map[*exec.Cmd]Remote // guarded by mu: commands StartRemote started, not yet waited
	residents map[int]func()       // guarded by mu: how to stop each StartResident child, by pid
	closing   bool                 // guarded by mu

	exits *exits         // tells Wait when a command exited (nil: Wait blocks)
	kick  chan struct{}  // a child was started or waited for: rescan
	stop  chan struct{}  // closed by Close
	loop  sync.WaitGroup // the orphan loop
}

// New returns a Reaper, marks inherited descriptors close-on-exec and,
// where the platform allows, makes the process a child subreaper and
// creates the cgroup its commands start in. Call it once per process
// (a second call panics), early, before starting any child.
func New() *Reaper {
	return newReaper(newCgroup())
}

// created makes a second Reaper in one process a bug caught at once:
// its shutdown would kill the first one's processes and guard.
var created atomic.Bool

// newReaper is New with the cgroup (or why there is none) given.
func newReaper(cg *cgroup, cgErr error) *Reaper {
	if created.Swap(true) {
		panic("reaper: a second Reaper in one process")
	}
	closeInheritedOnExec()
	r := &Reaper{
		budget:    budget.Keep(),
		adopts:    becomeSubreaper() == nil,
		cg:        cg,
		cgErr:     cgErr,
		children:  childLister(),
		direct:    map[int]*exec.Cmd{},
		groups:    map[int]*exec.Cmd{},
		remote:    map[*exec.Cmd]Remote{},
		residents: map[int]func(){},
		exits:     newExits(),
		kick:      make(chan struct{}, 1),
		stop:      make(chan struct{}),
	}
	if cg != nil {
		r.guard = cg.guard.Process.Pid
	}
	if r.adopts {
		r.loop.Go(r.reapLoop)
	}
	return r
}

// Containment says how this Reaper makes sure nothing outlives the
// process (SPEC §3.2), for logs and doctor.
func (r *Reaper) Containment() string {
	switch {
	case r.cg != nil:
		return "cgroup " + r.cg.path + ": every command starts in it and cgroup.kill ends them all, also if execd is killed (a guard process does it then)"
	case r.adopts:
		return "process scan: orphans are adopted (subreaper) and frozen (SIGSTOP) before they are killed at shutdown; nothing is killed if execd itself is killed (no cgroup: " + r.cgErr.Error() + ")"
	default:
		return "process groups only: what leaves its group is not found (no subreaper, no cgroup)"
	}
}

// Budget says which budgets of tasks execd shares with its commands and
// how it keeps threads for itself (SPEC §3.2), for logs and doctor.
func (r *Reaper) Budget() string { return r.budget.String() }

// Adopts reports whether orphaned descendants are re-parented to this
// process and therefore found by Shutdown.
func (r *Reaper) Adopts() bool { return r.adopts }

// Start starts cmd and records its process group. The command must lead a
// new group (see [ErrNoGroup]). After a successful Start the caller must
// call [Reaper.Wait].
func (r *Reaper) Start(cmd *exec.Cmd) error {
	if a := cmd.SysProcAttr; a == nil || !(a.Setsid || (a.Setpgid && a.Pgid == 0)) {
		return ErrNoGroup
	}
	// starting is held from fork to registration, so the orphan scan,
	// which decides under its write lock, never mistakes a new child for
	// an orphan and reaps it from under cmd.Wait; and Shutdown, which
	// signals under it too, finds every child.
	r.starting.RLock()
	defer r.starting.RUnlock()
	r.cg.place(cmd)
	pid, err := r.admit(func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	})
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.direct[pid] = cmd
	r.groups[pid] = cmd
	r.mu.Unlock()
	r.rescan() // orphans are looked for while commands run
	return nil
}

// admit runs start, which makes a process and returns its pid, unless
// Shutdown has begun or the task budget keeps the last tasks for execd;
// it names the budget when the kernel refuses the process, and caps the
// new process's RLIMIT_NPROC. The caller holds starting.
func (r *Reaper) admit(start func() (int, error)) (int, error) {
	r.mu.Lock()
	closing := r.closing
	r.mu.Unlock()
	if closing {
		return 0, ErrClosed
	}
	release, err := r.budget.Admit()
	if err != nil {
		return 0, err
	}
	pid, err := start()
	release()
	if err != nil {
		return 0, budget.Explain(err)
	}
	_ = r.budget.Cap(pid) // fails only if the process is gone already
	return pid, nil
}

// Run starts cmd and waits for it, like cmd.Run.
func (r *Reaper) Run(cmd *exec.Cmd) error {
	if err := r.Start(cmd); err != nil {
		return err
	}
	_, err := r.Wait(cmd)
	return err
}

// StartResident is Start for a long-lived helper of execd's own (the
// sandbox launcher) that leads its own group: at Shutdown the Reaper
// calls stop instead of sending it SIGTERM, and sends SIGKILL after the
// grace period as to everything else.
func (r *Reaper) StartResident(cmd *exec.Cmd, stop func()) error {
	if err := r.Start(cmd); err != nil {
		return err
	}
	r.mu.Lock()
	r.residents[cmd.Process.Pid] = stop
	r.mu.Unlock()
	return nil
}

// Remote is a command that another process (the sandbox launcher, a
// child of execd's) started for execd: it is not execd's child, so its
// end is reported rather than waited for.
type Remote interface {
	Pid() int                   // in execd's PID namespace
	Done() <-chan struct{}      // closed once it has ended
	Status() syscall.WaitStatus // its wait status, once Done
}

// StartRemote runs start, which has another process start cmd's program
// for execd (leading a new session), and tracks the command's process
// group as Start does; it sets cmd.Process. After a successful
// StartRemote the caller must call [Reaper.Wait].
func (r *Reaper) StartRemote(cmd *exec.Cmd, start func() (Remote, error)) error {
	r.starting.RLock()
	defer r.starting.RUnlock()
	var rp Remote
	pid, err := r.admit(func() (int, error) {
		var err error
		if rp, err = start(); err != nil {
			return 0, err
		}
		return rp.Pid(), nil
	})
	if err != nil {
		return err
	}
	if cmd.Process, err = os.FindProcess(pid); err != nil {
		return err // not on Unix
	}
	r.mu.Lock()
	r.groups[pid] = cmd
	r.remote[cmd] = rp
	r.mu.Unlock()
	return nil
}

// Wait waits for a command started with Start or StartRemote and returns
// its wait status; the error is cmd.Wait's (an *exec.ExitError for a
// non-zero status) for Start's, nil for StartRemote's. The group stays
// tracked while it has members. On Linux the wait holds no OS thread: the
// goroutine parks until the runtime's poller sees the exit.
func (r *Reaper) Wait(cmd *exec.Cmd) (syscall.WaitStatus, error) {
	r.mu.Lock()
	rp := r.remote[cmd]
	r.mu.Unlock()
	if rp != nil {
		<-rp.Done()
		r.mu.Lock()
		delete(r.remote, cmd)
		// Its number is free from now on: a group left empty is forgotten
		// at once, so that Signal cannot reach a new owner of the number.
		if pid := rp.Pid(); r.groups[pid] == cmd && unix.Kill(-pid, 0) != nil {
			delete(r.groups, pid)
		}
		r.mu.Unlock()
		r.rescan()
		return rp.Status(), nil
	}
	if exited := r.exits.watch(cmd); exited != nil {
		<-exited
	}
	err := cmd.Wait()
	r.mu.Lock()
	if pid := cmd.Process.Pid; r.direct[pid] == cmd { // not a new command with the reused pid
		delete(r.direct, pid)
		delete(r.residents, pid)
	}
	r.mu.Unlock()
	r.rescan() // its descendants may just have become orphans
	var ws syscall.WaitStatus
	if cmd.ProcessState != nil {
		ws, _ = cmd.ProcessState.Sys().(syscall.WaitStatus)
	} else if err == nil {
		err = errors.New("reaper: no status") // cannot be: Wait returns one or an error
	}
	return ws, err
}

func (r *Reaper) rescan() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Signal sends sig to the process group that Start created for cmd. A
// group that no longer exists, or whose number now belongs to another
// command, is left alone and is not an error.
func (r *Reaper) Signal(cmd *exec.Cmd, sig syscall.Signal) error {
	pid := cmd.Process.Pid
	r.mu.Lock() // held across the kill: Start cannot reuse the number meanwhile
	defer r.mu.Unlock()
	if r.groups[pid] != cmd {
		return nil
	}
	if err := unix.Kill(-pid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		return err
	}
	return nil
}

// SignalSession sends sig to every process group in the session that
// Start created for cmd: an interactive shell puts each of its jobs in a
// group of its own. The leader's own group is signalled only if it still
// belongs to cmd (see Signal); the other groups are found by their
// session id, a number the kernel does not reuse while any process of the
// session lives, so they are signalled even after the leader was reaped.
func (r *Reaper) SignalSession(cmd *exec.Cmd, sig syscall.Signal) error {
	pid := cmd.Process.Pid
	groups := sessionGroups(pid) // outside the lock: it reads /proc
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.groups[pid] == cmd {
		groups = append(groups, pid)
	}
	var first error
	for _, pgid := range groups {
		if pgid <= 1 || pgid == unix.Getpgrp() {
			continue
		}
		if err := unix.Kill(-pgid, sig); err != nil && !errors.Is(err, unix.ESRCH) && first == nil {
			first = err
		}
	}
	return first
}

// Shutdown refuses new processes, sends SIGTERM to every tracked group and
// every adopted orphan (and its group), sends SIGKILL to whatever is left
// after grace (or at once when none is), with the cgroup's cgroup.kill and
// a freeze of every descendant, and returns when no descendant is left or
// ctx is done.
// Processes that Wait is responsible for are signalled but left to Wait
// to reap.
func (r *Reaper) Shutdown(ctx context.Context, grace time.Duration) error {
	r.mu.Lock()
	r.closing = true
	r.mu.Unlock()

	deadline := time.Now().Add(grace)
	sig := unix.SIGTERM
	sent := map[int]bool{} // targets already sent sig: -pgid for groups, pid for processes
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		alive := r.signalAll(sig, sent)
		if !alive && sig == unix.SIGKILL {
			return nil
		}
		// Whether the last went at SIGTERM or not, a SIGKILL round ends
		// it: it stops and kills what no scan saw alive (a fork loop).
		if !alive || sig == unix.SIGTERM && time.Now().After(deadline) {
			sig, sent = unix.SIGKILL, map[int]bool{}
			continue
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-tick.C:
		}
	}
}

// signalAll sends sig once to every live target and reports whether any
// descendant is left.
func (r *Reaper) signalAll(sig unix.Signal, sent map[int]bool) (alive bool) {
	children := r.children()
	self := unix.Getpgrp()
	var stops []func() // called once unlocked
	send := func(target int) {
		if target == -self || target == -1 || target == 0 || target == 1 || sent[target] {
			return
		}
		sent[target] = true
		if stop := r.residents[-target]; stop != nil && sig == unix.SIGTERM {
			stops = append(stops, stop) // it ends what it holds, on its own terms
			return
		}
		_ = unix.Kill(target, sig) // ESRCH: gone meanwhile, which is the goal
	}
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	r.starting.Lock()
	defer r.starting.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	for pgid := range r.groups {
		if unix.Kill(-pgid, 0) != nil {
			delete(r.groups, pgid)
			continue
		}
		alive = true
		send(-pgid)
	}
	if sig == unix.SIGKILL {
		if r.cg != nil {
			// Every command and what it started is in the cgroup.
			_ = r.cg.kill()
			alive = alive || r.cg.populated()
		} else {
			alive = r.freezeAndKill() > 0 || alive
		}
	}
	for _, pid := range children {
		if pid == r.guard || r.direct[pid] == nil && reapOrphan(pid) {
			continue
		}
		alive = true
		pgid, err := unix.Getpgid(pid)
		if err == nil {
			send(-pgid)
		}
		if pgid != pid {
			send(pid)
		}
	}
	return alive
}

// Close stops reaping orphans. Call it after Shutdown.
func (r *Reaper) Close() {
	select {
	case <-r.stop:
		return
	default:
	}
	close(r.stop)
	r.loop.Wait()
	r.exits.close()
	if r.cg != nil {
		r.cg.close()
	}
}

// reapLoop reaps orphans after each Start and Wait and, while commands or
// orphans are alive, every OrphanPoll. It exits when Close is called.
func (r *Reaper) reapLoop() {
	var ticker *time.Ticker
	var tick <-chan time.Time
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
	var last time.Time
	for {
		select {
		case <-r.stop:
			return
		case <-r.kick:
			if wait := scanSpacing - time.Since(last); wait > 0 {
				select { // later kicks coalesce into this scan
				case <-r.stop:
					return
				case <-time.After(wait):
				}
			}
		case <-tick:
		}
		last = time.Now()
		alive := r.reapOrphans() // orphans and commands still running
		switch {
		case alive > 0 && ticker == nil:
			ticker = time.NewTicker(OrphanPoll)
			tick = ticker.C
		case alive == 0 && ticker != nil:
			ticker.Stop()
			ticker, tick = nil, nil
		}
	}
}

// reapOrphans collects adopted orphans that exited, forgets groups that
// have no member left, and returns the number of orphans and commands
// still alive.
func (r *Reaper) reapOrphans() (alive int) {
	children := r.children()
	r.starting.Lock()
	defer r.starting.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, pid := range children {
		if pid != r.guard && r.direct[pid] == nil && !reapOrphan(pid) {
			alive++
		}
	}
	for pgid := range r.groups {
		if r.direct[pgid] == nil && unix.Kill(-pgid, 0) != nil {
			delete(r.groups, pgid)
		}
	}
	return alive + len(r.direct)
}
