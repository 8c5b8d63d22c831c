package reaper

import (
	"bytes"
	"errors"
	"math"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
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

// listChildren returns the pids of this process's children. An orphan is
// re-parented to any thread of the subreaper, so every thread's list is
// read (/proc/PID/task/TID/children, Linux ≥ 3.5 with CONFIG_PROC_CHILDREN).
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

// reapOrphan collects pid if it has exited and reports whether it did.
// It must only be called for children that no cmd.Wait owns.
func reapOrphan(pid int) bool {
	var ws unix.WaitStatus
	got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
	return got == pid || errors.Is(err, unix.ECHILD)
}
