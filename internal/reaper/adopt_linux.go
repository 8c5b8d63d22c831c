package reaper

import (
	"bytes"
	"errors"
	"math"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/execd/execd/internal/procfs"
)

// becomeSubreaper makes orphaned descendants re-parent to this process
// (prctl(2) PR_SET_CHILD_SUBREAPER).
func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// closeInheritedOnExec sets FD_CLOEXEC on every descriptor above 2, with
// close_range(2) (Linux 5.11) or, failing that, one fcntl per open fd.
func closeInheritedOnExec() {
	if unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}

// childLister picks how children are listed: the per-thread children
// files where the kernel has them (CONFIG_PROC_CHILDREN, which distribution
// kernels enable but is off upstream by default), else a scan of every
// process's parent in /proc.
func childLister() func() []int {
	if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/children"); err == nil {
		return listChildren
	}
	return scanChildren
}

// listChildren returns the pids of this process's children. An orphan is
// re-parented to any thread of the subreaper, so every thread's list is
// read (/proc/PID/task/TID/children).
func listChildren() []int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil
	}
	var pids []int
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			continue // the thread exited meanwhile
		}
		for _, f := range bytes.Fields(b) {
			if pid, err := strconv.Atoi(string(f)); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// scanChildren returns the pids of this process's children by reading the
// parent of every process in /proc: slower than listChildren, for kernels
// without children files.
func scanChildren() []int {
	self := os.Getpid()
	var pids []int
	_ = procfs.Each(func(pid int, s procfs.Stat) {
		if s.PPID == self {
			pids = append(pids, pid)
		}
	})
	return pids
}

// sessionGroups returns the process groups of the live processes whose
// session id is sid.
func sessionGroups(sid int) []int {
	seen := map[int]bool{}
	var groups []int
	_ = procfs.Each(func(_ int, s procfs.Stat) {
		if s.Session == sid && !s.Zombie() && !seen[s.PGRP] {
			seen[s.PGRP] = true
			groups = append(groups, s.PGRP)
		}
	})
	return groups
}

// reapOrphan collects pid if it has exited and reports whether it did.
// It must only be called for children that no cmd.Wait owns.
func reapOrphan(pid int) bool {
	var ws unix.WaitStatus
	got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
	return got == pid || errors.Is(err, unix.ECHILD)
}

// maxFreezePasses bounds the scans of freeze; maxChaseRounds bounds each
// chase of the newest pids.
const (
	maxFreezePasses = 100
	maxChaseRounds  = 10000
)

// freezeAndKill stops (SIGSTOP) every descendant of this process but the
// guard, then kills them all (SIGKILL ends a stopped process), and
// returns how many it killed. A stopped process cannot fork (a fork
// interrupted by the signal is restarted after it), so once every live
// descendant is stopped none can appear. A process that forks a new
// session and exits faster than one scan of /proc reads it is caught by
// the chase: between scans, the pids allocated since (ns_last_pid) are
// read as they appear, and a child of this process (an orphan,
// re-parented to the subreaper) or of a stopped one is stopped at once —
// a read of one pid costs less than a fork, so the chase keeps up with
// any fork loop. Each process is held by a pidfd from the moment it is
// found to be a descendant, so a pid reused meanwhile is never signalled.
func (r *Reaper) freezeAndKill() int {
	f := freezer{self: os.Getpid(), skip: r.guard, stopped: map[int]int{}}
	for range maxFreezePasses {
		last := lastPID()
		found := false
		for _, d := range descendants(f.self, f.skip) {
			found = f.stop(d.pid, d.parent) || found
		}
		if f.chase(last) || found {
			continue
		}
		break
	}
	for pid, fd := range f.stopped {
		if fd < 0 {
			_ = unix.Kill(pid, unix.SIGKILL) // no pidfds (Linux < 5.3)
			continue
		}
		_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		_ = unix.Close(fd)
	}
	return len(f.stopped)
}

// freezer is the state of one freeze.
type freezer struct {
	self, skip int
	stopped    map[int]int // pid → its pidfd (-1 where there are none)
}

// stop stops pid, found to be a child of parent, unless it is stopped
// already, and reports whether it stopped it now. It takes a pidfd first
// and checks the parent again through it: if the pid was reused since it
// was read, the process the pidfd holds has another parent.
func (f *freezer) stop(pid, parent int) bool {
	if _, ok := f.stopped[pid]; ok || pid == f.skip {
		return false
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ENOSYS) {
		if unix.Kill(pid, unix.SIGSTOP) != nil {
			return false
		}
		f.stopped[pid] = -1
		return true
	}
	if err != nil {
		return false // gone
	}
	st, err := procfs.ReadStat(pid)
	if err != nil || st.PPID != parent || st.Zombie() || unix.PidfdSendSignal(fd, unix.SIGSTOP, nil, 0) != nil {
		_ = unix.Close(fd)
		return false
	}
	f.stopped[pid] = fd
	return true
}

// chase reads the pids allocated after from until no new one is, or the
// pid numbers wrap (the next full scan covers that), stopping the
// children of this process and of stopped processes among them. It
// reports whether it stopped any.
func (f *freezer) chase(from int) bool {
	found := false
	for range maxChaseRounds {
		to := lastPID()
		if to <= from {
			return found
		}
		for pid := from + 1; pid <= to; pid++ {
			st, err := procfs.ReadStat(pid)
			if err != nil || st.Zombie() {
				continue
			}
			if _, ok := f.stopped[st.PPID]; ok || st.PPID == f.self {
				found = f.stop(pid, st.PPID) || found
			}
		}
		from = to
	}
	return found
}

// lastPID returns the pid the kernel allocated last in this PID namespace
// (/proc/sys/kernel/ns_last_pid), or 0 if that cannot be read.
func lastPID() int {
	b, err := os.ReadFile("/proc/sys/kernel/ns_last_pid")
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(string(bytes.TrimSpace(b)))
	return n
}

// descendant is a process found below root, and its parent.
type descendant struct{ pid, parent int }

// descendants lists the live descendants of root, parents before their
// children, leaving out the subtree of skip, from one scan of /proc.
func descendants(root, skip int) []descendant {
	kids := map[int][]int{}
	_ = procfs.Each(func(pid int, s procfs.Stat) {
		if !s.Zombie() {
			kids[s.PPID] = append(kids[s.PPID], pid)
		}
	})
	var out []descendant
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, k := range kids[p] {
			if k != skip {
				out = append(out, descendant{k, p})
				queue = append(queue, k)
			}
		}
	}
	return out
}
