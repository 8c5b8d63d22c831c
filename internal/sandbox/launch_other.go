//go:build !linux && !darwin

package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"time"
)

// Probe reports that this platform has no sandbox.
func Probe(Starter) Support { return Support{OS: runtime.GOOS} }

// Launch is not available here.
type Launch struct{}

// Wrap fails: there is no sandbox on this platform.
func Wrap(*exec.Cmd, Policy, Support) (*Launch, error) {
	return nil, errors.ErrUnsupported
}

// Started does nothing.
func (*Launch) Started(error) {}

// Await does nothing.
func (*Launch) Await(time.Duration) error { return nil }

// HelperMain is never used here.
func HelperMain() int { return 125 }

// probeMain has nothing to probe here.
func probeMain() int { return 0 }

// Terminal is Linux's: Policy.Terminal is never set here.
func (*Launch) Terminal() (*os.File, error) { return nil, errors.ErrUnsupported }
