//go:build !linux

package reaper

import (
	"errors"
	"syscall"
)

// becomeSubreaper is unsupported here: orphans go to init and only the
// process groups execd created can be signalled.
func becomeSubreaper() error { return errors.ErrUnsupported }

// closeInheritedOnExec marks descriptors 3..1023 close-on-exec; there is
// no close_range or /proc/self/fd to find them all.
func closeInheritedOnExec() {
	for fd := 3; fd < 1024; fd++ {
		syscall.CloseOnExec(fd)
	}
}

// sessionGroups cannot list a session's groups here: only the leader's
// own group is signalled.
func sessionGroups(int) []int { return nil }

func childLister() func() []int { return func() []int { return nil } }

func reapOrphan(int) bool { return true }

func (r *Reaper) freezeAndKill() int { return 0 }
