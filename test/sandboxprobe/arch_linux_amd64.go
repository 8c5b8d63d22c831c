package main

import (
	"errors"
	"fmt"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// int80 makes a 32-bit system call through int 0x80 and returns what the
// kernel put in eax.
func int80(nr, a1, a2, a3 uint32) int32

// errNoI386Entry: the kernel has no 32-bit entry (built without IA32
// emulation, or booted with ia32_emulation=0): int 0x80 faults, inside
// a sandbox or not.
var errNoI386Entry = errors.New("no i386 system call entry: int 0x80 faults")

func i386Socket() (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			err = errNoI386Entry
		}
	}()
	const sysSocket386 = 359
	r := int80(sysSocket386, unix.AF_INET, unix.SOCK_STREAM, 0)
	if r < 0 {
		return unix.Errno(-r)
	}
	return unix.Close(int(r))
}

func x32Socket() error {
	const x32Bit = 0x40000000
	fd, _, errno := unix.Syscall(x32Bit|unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0)
	if errno != 0 {
		return fmt.Errorf("x32 socket: %w", errno)
	}
	return unix.Close(int(fd))
}
