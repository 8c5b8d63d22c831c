package sandbox

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// dropCapabilities leaves the command no capability, even when it runs as
// root: the ambient and inheritable sets are cleared and every capability
// leaves the bounding set, so exec cannot grant any. Landlock and seccomp
// do not stop what capabilities allow beyond files and sockets (loading
// a kernel module, say). A process that lacks CAP_SETPCAP cannot shrink
// its bounding set; that is fine unless it runs as root, whose exec
// would get the set back, and then the helper fails.
func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	for c := 0; ; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		switch {
		case errors.Is(err, unix.EINVAL):
			return clearInheritable() // past the last capability
		case errors.Is(err, unix.EPERM) && os.Geteuid() != 0:
			return clearInheritable() // unprivileged: exec grants nothing under no_new_privs
		case err != nil:
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
}

func clearInheritable() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clear inheritable capabilities: %w", err)
	}
	return nil
}
