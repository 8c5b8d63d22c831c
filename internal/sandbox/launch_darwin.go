package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"time"
)

const sandboxExec = "/usr/bin/sandbox-exec"

// Probe reports whether sandbox-exec is available.
func Probe(Starter) Support {
	_, err := os.Stat(sandboxExec)
	return Support{OS: "darwin", Seatbelt: err == nil}
}

// Launch needs no handshake on macOS: sandbox-exec applies the profile
// and execs the command itself.
type Launch struct{}

// Wrap runs cmd under sandbox-exec with the profile of p. Protected paths
// and the network are in the profile; there are no namespaces.
func Wrap(cmd *exec.Cmd, p Policy, _ Support) (*Launch, error) {
	roots := RootPaths(p.Roots)
	profile := SeatbeltProfile(roots, ProtectedPaths(roots, p.ProtectedNames, append(p.ProtectedPaths, p.SubmodulePaths...)), p.Network, p.UnixSockets)
	args := append([]string{"sandbox-exec", "-p", profile, "--", cmd.Path}, cmd.Args[1:]...)
	cmd.Path, cmd.Args = sandboxExec, args
	return &Launch{}, nil
}

// Started does nothing.
func (*Launch) Started(error) {}

// Await returns at once.
func (*Launch) Await(time.Duration) error { return nil }

// HelperMain is not used on macOS.
func HelperMain() int { return 125 }

// probeMain has nothing to probe here.
func probeMain() int { return 0 }

// Terminal is Linux's: Policy.Terminal is never set here.
func (*Launch) Terminal() (*os.File, error) { return nil, errors.ErrUnsupported }
