package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// int80 makes a 32-bit system call through int 0x80 and returns what the
// kernel put in eax.
func int80(nr, a1, a2, a3 uint32) int32

func i386Socket() error {
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
