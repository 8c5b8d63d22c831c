package ptyio

import (
	"os"

	"golang.org/x/sys/unix"
)

// peer opens the terminal of master (TIOCGPTPEER, Linux 4.13), which
// works wherever its devpts is mounted, or not mounted here at all.
func peer(master *os.File) (*os.File, error) {
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, master.Fd(), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if errno != 0 {
		return nil, os.NewSyscallError("TIOCGPTPEER", errno)
	}
	return os.NewFile(r, "pty"), nil
}
