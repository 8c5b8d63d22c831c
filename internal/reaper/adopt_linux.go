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
