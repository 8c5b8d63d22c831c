package sandbox

import (
	"fmt"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// devices a shell needs to write (and ioctl, for terminals) in any mode.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}

// restrictFS applies Landlock (SPEC §8.3): read and execute everywhere;
// write beneath the writable roots (by descriptor: the directories
// checked against what execd started with), with the right to move files
// between their directories; the devices above and the terminals of
// /dev/pts, with ioctl. The user's other terminals are among them: a
// program that allocates a terminal (script, Python's pty) opens its new
// /dev/pts entry, which Landlock checks even through TIOCGPTPEER, and
// does not exist yet when the rules are made; TIOCSTI, which would type
// into them, is refused by seccomp. With the network off TCP bind and
// connect are denied too (seccomp already refuses sockets: this is a second wall).
// Abstract UNIX sockets and signals are scoped to the sandbox (ABI 6).
// The best ABI this kernel has is used; below it, rights the kernel does
// not know are not enforced.
func restrictFS(p *Policy, roots []openRoot) error {
	// BestEffort quietly does nothing on a kernel without Landlock; the
	// helper fails closed whatever the daemon found at start.
	if abi, err := llsys.LandlockGetABIVersion(); err != nil || abi < 1 {
		return fmt.Errorf("no Landlock on this kernel: %v", err)
	}
	args := []any{landlock.V7.HandledAccessFS, landlock.V7.Scoped}
	if !p.Network {
		args = append(args, landlock.V7.HandledAccessNet) // no port is allowed
	}
	cfg, err := landlock.NewConfig(args...)
	if err != nil {
		return err
	}
	rules := []landlock.Rule{
		landlock.RODirs("/"),
		landlock.RWFiles(devices...).WithIoctlDev().IgnoreIfMissing(),
		landlock.RWDirs("/dev/pts").WithIoctlDev().IgnoreIfMissing(),
	}
	if len(roots) > 0 {
		paths := make([]string, len(roots))
		for i, r := range roots {
			paths[i] = fmt.Sprintf("/proc/self/fd/%d", r.fd) // opened again: the same directory
		}
		rules = append(rules, landlock.RWDirs(paths...).WithRefer())
	}
	return cfg.BestEffort().Restrict(rules...)
}
