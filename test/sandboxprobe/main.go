//go:build linux

// Command sandboxprobe tries one thing a sandboxed command must not be
// able to do, for the escape tests in test/. It prints "ok" and exits 0
// when the attempt succeeded, or prints the error and exits 1.
//
//	sandboxprobe i386-socket          socket(AF_INET) through int 0x80 (amd64)
//	sandboxprobe x32-socket           socket(AF_INET) as an x32 call (amd64)
//	sandboxprobe io-uring             io_uring_setup
//	sandboxprobe connect-unix PATH    connect to a pathname stream socket
//	sandboxprobe connect-abstract NAME connect to an abstract stream socket
//	sandboxprobe sendto-unix PATH     send a datagram to a socket by path
//	sandboxprobe netlink              open a route netlink socket
//	sandboxprobe pidfd-getfd PID FD   take descriptor FD of process PID
//	sandboxprobe vm-read PID          read PID's memory (process_vm_readv)
//	sandboxprobe kill PID             send SIGTERM to PID
//	sandboxprobe umount PATH          unmount PATH
package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: sandboxprobe PROBE [ARG...]")
		os.Exit(2)
	}
	err := probe(os.Args[1], os.Args[2:])
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("ok")
}

func probe(name string, args []string) error {
	arg := func(i int) string {
		if i >= len(args) {
			fmt.Fprintf(os.Stderr, "sandboxprobe %s: missing argument %d\n", name, i+1)
			os.Exit(2)
		}
		return args[i]
	}
	num := func(i int) int {
		n, err := strconv.Atoi(arg(i))
		if err != nil {
			fmt.Fprintf(os.Stderr, "sandboxprobe %s: %v\n", name, err)
			os.Exit(2)
		}
		return n
	}
	switch name {
	case "i386-socket":
		return i386Socket()
	case "x32-socket":
		return x32Socket()
	case "io-uring":
		var params [120]byte
		fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
		return closeOrErr(int(fd), errno)
	case "connect-unix":
		return connect(&unix.SockaddrUnix{Name: arg(0)})
	case "connect-abstract":
		return connect(&unix.SockaddrUnix{Name: "@" + arg(0)})
	case "sendto-unix":
		return sendto(arg(0))
	case "netlink":
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE)
		return closeOrErr(fd, err)
	case "pidfd-getfd":
		return pidfdGetfd(num(0), num(1))
	case "vm-read":
		return vmRead(num(0))
	case "kill":
		return unix.Kill(num(0), unix.SIGTERM)
	case "umount":
		return unix.Unmount(arg(0), unix.MNT_DETACH)
	}
	fmt.Fprintf(os.Stderr, "sandboxprobe: unknown probe %q\n", name)
	os.Exit(2)
	return nil
}

func closeOrErr(fd int, err error) error {
	var errno unix.Errno
	if errors.As(err, &errno) && errno == 0 {
		err = nil
	}
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

func connect(sa *unix.SockaddrUnix) error {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	return unix.Connect(fd, sa)
}

// sendto tries both ways to send a datagram by path: from a socket of its
// own and from one end of a datagram socketpair.
func sendto(path string) error {
	if fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM, 0); err == nil {
		defer unix.Close(fd)
		return unix.Sendto(fd, []byte("x"), 0, &unix.SockaddrUnix{Name: path})
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
	if err != nil {
		return fmt.Errorf("socket and socketpair: %w", err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	return unix.Sendto(fds[0], []byte("x"), 0, &unix.SockaddrUnix{Name: path})
}

func pidfdGetfd(pid, target int) error {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return fmt.Errorf("pidfd_open: %w", err)
	}
	defer unix.Close(pidfd)
	fd, err := unix.PidfdGetfd(pidfd, target, 0)
	return closeOrErr(fd, err)
}

func vmRead(pid int) error {
	// Any address will do: permission is checked before the memory.
	buf := make([]byte, 8)
	local := []unix.Iovec{{Base: &buf[0], Len: 8}}
	remote := []unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(&buf[0])), Len: 8}}
	_, err := unix.ProcessVMReadv(pid, local, remote, 0)
	return err
}
