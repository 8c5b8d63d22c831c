//go:build !linux

package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Launcher is Linux's: Support.PIDNS is never set here.
type Launcher struct{ Cmd *exec.Cmd }

// Process is a command a Launcher started.
type Process struct{}

// Pid is never used here.
func (*Process) Pid() int { return 0 }

// Done is never used here.
func (*Process) Done() <-chan struct{} { return nil }

// Status is never used here.
func (*Process) Status() syscall.WaitStatus { return 0 }

// ErrLauncherGone is a launch on a launcher that exited or was retired.
var ErrLauncherGone = errors.New("the sandbox launcher is gone")

// NewLauncher fails: there are no launchers here.
func NewLauncher(Policy, Support) (*Launcher, error) { return nil, errors.ErrUnsupported }

// Started does nothing.
func (*Launcher) Started(error) {}

// Ready does nothing.
func (*Launcher) Ready(time.Duration) error { return errors.ErrUnsupported }

// Alive reports false.
func (*Launcher) Alive() bool { return false }

// Exited reports true.
func (*Launcher) Exited() bool { return true }

// Covers reports false.
func (*Launcher) Covers(*Policy) bool { return false }

// Retire does nothing.
func (*Launcher) Retire() {}

// Stop does nothing.
func (*Launcher) Stop() {}

// Launch fails.
func (*Launcher) Launch(*exec.Cmd, *Terminal) (*Process, *os.File, error) {
	return nil, nil, errors.ErrUnsupported
}

// LauncherMain is never used here.
func LauncherMain() int { return 125 }
