package sandbox

import (
	"fmt"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// devices a shell needs to write (and ioctl, for terminals) in any mode.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}

// restrictFS applies Landlock (SPEC §8.3): read and execute everywhere;
// write beneath the writable roots, with the right to move files between
// their directories; the terminal devices with ioctl. With the network
// off TCP bind and connect are denied too (seccomp already refuses
// sockets: this is a second wall). Abstract UNIX sockets and signals are
// scoped to the sandbox (ABI 6). The best ABI this kernel has is used;
// below it, rights the kernel does not know are not enforced.
func restrictFS(p *Policy) error {
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
	if len(p.WritableRoots) > 0 {
		rules = append(rules, landlock.RWDirs(p.WritableRoots...).WithRefer().IgnoreIfMissing())
	}
	return cfg.BestEffort().Restrict(rules...)
}
