// Package budget keeps execd serving where it shares a budget of tasks
// (processes and threads) with the commands it starts: a finite
// RLIMIT_NPROC, counted per user (root and holders of CAP_SYS_RESOURCE or
// CAP_SYS_ADMIN are exempt), or a pids.max on execd's cgroup or an
// ancestor (a container's pids limit, systemd's TasksMax). A runaway
// command can use up such a budget; the Go runtime aborts the whole
// process when it cannot create an OS thread it wants, and execd's death
// would orphan every command.
//
// [Keep], called once at start while the budget has room, makes the OS
// threads execd will want so that serving a call does not need a new one:
// the runtime keeps idle threads and reuses them before it creates any.
// [Explain] turns the error of a command that could not be started into
// one that names the limit.
package budget

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// Limit is a finite budget of tasks that execd shares with its commands.
type Limit struct {
	Name  string // "RLIMIT_NPROC" or "pids.max"
	Where string // "uid 1000", or the cgroup's directory
	Max   int64
	Used  int64 // tasks counted against it when it was read
	// AtMost marks Used as an upper bound (all tasks of the system, where
	// they are far fewer than the limit) rather than a count.
	AtMost bool
}

// Room is how many more tasks the limit allowed when it was read.
func (l Limit) Room() int64 { return max(l.Max-l.Used, 0) }

func (l Limit) String() string {
	used := fmt.Sprintf("%d in use", l.Used)
	if l.AtMost {
		used = "at most " + used
	}
	if l.Name == "RLIMIT_NPROC" {
		return fmt.Sprintf("RLIMIT_NPROC = %d for %s, %s", l.Max, l.Where, used)
	}
	return fmt.Sprintf("%s = %d in %s, %s", l.Name, l.Max, l.Where, used)
}

// Kept is what Keep found and did.
type Kept struct {
	Limits  []Limit // the finite budgets shared with commands, least room first
	Threads int     // execd's OS threads after Keep
	Added   int     // threads Keep created
	Err     error   // why the limits could not be read, or nil
	// Commands is the RLIMIT_NPROC that Cap gives commands (0: none):
	// execd's own, less the threads execd may still want (at least
	// threadMargin), so that commands cannot take those.
	Commands uint64
	Headroom int // the tasks of each budget commands leave to execd
}

func (k Kept) String() string {
	switch {
	case k.Err != nil:
		return "unknown: " + k.Err.Error()
	case len(k.Limits) == 0:
		return "none shared with commands (no finite RLIMIT_NPROC applies, no pids.max)"
	}
	s := make([]string, len(k.Limits))
	for i, l := range k.Limits {
		s[i] = l.String()
	}
	msg := fmt.Sprintf("%s; execd made its %d threads at start (%d added) so that serving needs no new one",
		strings.Join(s, "; "), k.Threads, k.Added)
	if k.Commands > 0 {
		msg += fmt.Sprintf("; commands get RLIMIT_NPROC = %d", k.Commands)
	}
	return msg
}

// threadMargin is the least number of tasks of an RLIMIT_NPROC that
// commands leave to execd: for threads beyond the ones Keep made, should
// the runtime want them after all.
const threadMargin = 4

// threadTarget is how many OS threads Keep has execd hold: as many as it
// used under 500 concurrent commands in `make bench` (12 on 2 CPUs: one
// per CPU, sysmon, and the few blocked in system calls at once).
func threadTarget() int { return runtime.GOMAXPROCS(0) + 12 }

var keepOnce sync.Once

// Keep finds the budgets execd shares with its commands and, where there
// is one, creates OS threads until execd has threadTarget, or as many as
// half of the least room allows. Only the first call does anything; later
// ones return a Kept with no Added.
func Keep() Kept {
	var k Kept
	first := false
	keepOnce.Do(func() { first = true })
	k.Limits, k.Err = Shared()
	k.Threads = threads()
	if !first || k.Err != nil || len(k.Limits) == 0 || k.Threads == 0 {
		return k
	}
	// Holding threadTarget-1 threads at once (sysmon has its own) leaves
	// execd with threadTarget; it creates at most that many, fewer where
	// idle ones exist already.
	hold := min(threadTarget()-1, int(k.Limits[0].Room()/2))
	if before := k.Threads; hold > 0 {
		// Before any command runs: then the room counted is there.
		// It costs about 0.7 ms of CPU per thread on this project's
		// test VMs, once.
		addThreads(hold)
		k.Threads = threads()
		k.Added = max(k.Threads-before, 0)
	}
	k.Headroom = max(threadMargin, threadTarget()-k.Threads)
	for _, l := range k.Limits {
		if l.Name == "RLIMIT_NPROC" {
			k.Commands = uint64(max(l.Max-int64(k.Headroom), 1))
		}
	}
	return k
}

// admitting serializes Admit's count and the fork it admits where a
// budget is nearly used up, so that parallel starts do not all take the
// last free task.
var admitting sync.Mutex

// Admit reports, before execd creates a command's process, whether that
// process would take one of the tasks execd keeps for its own threads
// (k.Headroom) of a budget; then it returns a *LimitError. Call release
// once the process is created (or not). It costs a read of pids.current
// per pids.max and, for RLIMIT_NPROC, of /proc/loadavg. Only near a limit
// (where the system as a whole runs as many tasks as the user may) does
// it count the user's tasks in /proc, one start at a time: parallel
// scans would each hold an OS thread in its reads, the very threads a
// full budget cannot give.
func (k Kept) Admit() (release func(), err error) {
	if len(k.Limits) == 0 {
		return func() {}, nil
	}
	bound := func(l Limit) int64 { return l.Max - int64(k.Headroom) }
	near := func(l Limit) bool {
		if l.Name == "RLIMIT_NPROC" {
			return systemTasks() >= bound(l) // the user's tasks are fewer
		}
		return reread(l, 0).Used >= bound(l)
	}
	if !slices.ContainsFunc(k.Limits, near) {
		return func() {}, nil
	}
	admitting.Lock()
	for _, l := range k.Limits {
		if l = reread(l, 0); l.Used >= bound(l) {
			admitting.Unlock()
			return nil, &LimitError{Limit: l, Headroom: k.Headroom, Err: syscall.EAGAIN}
		}
	}
	return admitting.Unlock, nil
}

// Cap gives the command pid, just started, the soft RLIMIT_NPROC of
// k.Commands, where there is one; the hard limit stays, so that a script
// may raise its own soft limit on purpose (a runaway does not). A command that forks
// before that (within microseconds of its exec) keeps execd's limit in
// that child; a runaway command is not that fast, a hostile one can only
// take the threads Keep left to the runtime. In a sandbox's user
// namespace the kernel checks the whole user's tasks against the limit
// execd had when it created the namespace: there the cap holds only for
// the tasks inside the namespace.
func (k Kept) Cap(pid int) error {
	if k.Commands == 0 {
		return nil
	}
	return capNproc(pid, k.Commands)
}

// addThreads makes the runtime have at least n OS threads besides sysmon
// and keep them idle: n goroutines each hold a thread (LockOSThread) at
// the same time, which takes idle threads first and creates the rest,
// then let it go and exit, which leaves the thread in the runtime's pool
// of idle threads, reused before any new one is created.
func addThreads(n int) {
	var held, done sync.WaitGroup
	release := make(chan struct{})
	for range n {
		held.Add(1)
		done.Go(func() {
			runtime.LockOSThread()
			held.Done()
			<-release
			runtime.UnlockOSThread()
		})
	}
	held.Wait()
	close(release)
	done.Wait()
}

// LimitError is a process that could not be created because a budget of
// tasks shared with execd is used up: the kernel refused it, or Admit did
// (Headroom > 0).
type LimitError struct {
	Limit    Limit
	Headroom int   // the tasks Admit keeps for execd's threads, or 0
	Err      error // wraps syscall.EAGAIN
}

func (e *LimitError) Error() string {
	whose := "execd's own threads count too"
	if e.Headroom > 0 {
		whose = fmt.Sprintf("execd keeps the last %d for its own threads", e.Headroom)
	}
	return fmt.Sprintf("the limit on processes is reached (%s; %s): wait for commands to end or raise the limit", e.Limit, whose)
}

func (e *LimitError) Unwrap() error { return e.Err }

// Explain returns err as a *LimitError naming the budgets in force when
// it is the kernel refusing a new process (EAGAIN) and a finite budget is
// found, else err unchanged.
func Explain(err error) error {
	if !errors.Is(err, syscall.EAGAIN) {
		return err
	}
	limits, lerr := Shared()
	if lerr != nil || len(limits) == 0 {
		return err
	}
	return &LimitError{Limit: limits[0], Err: err}
}
