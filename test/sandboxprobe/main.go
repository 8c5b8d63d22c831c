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
//	sandboxprobe sendto-unix PATH     send a datagram to a socket by path, every way
//	sandboxprobe netlink              open a route netlink socket
//	sandboxprobe pidfd-getfd PID FD   take descriptor FD of process PID
//	sandboxprobe vm-read PID          read PID's memory (process_vm_readv)
//	sandboxprobe kill PID             send SIGTERM to PID
//	sandboxprobe umount PATH          unmount PATH
//	sandboxprobe prlimit PID          set PID's open file limit (to its value)
//	sandboxprobe renice PID           set PID's nice value to 19
//	sandboxprobe keyring              look up the user keyring
//	sandboxprobe chmod-suid PATH      set PATH's set-user-ID bit
//	sandboxprobe shm KEY              attach the System V shared memory of KEY
//	sandboxprobe tiocsti              push a character into the terminal's input
//	sandboxprobe bpf                  load a BPF map (bpf(BPF_MAP_CREATE))
//	sandboxprobe perf-event           open a software perf event
//	sandboxprobe userfaultfd          create a userfaultfd
//	sandboxprobe memfd-secret         create a secret memory area
//	sandboxprobe kexec                load a kexec image (none: the call is refused or fails)
//	sandboxprobe personality          turn off address space randomization
//	sandboxprobe personality-query    read the personality (must work)
//	sandboxprobe unshare-user         make a user namespace
//	sandboxprobe socketpair           make an AF_UNIX stream socketpair (must work)
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
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
	case "prlimit":
		var lim unix.Rlimit
		if err := unix.Prlimit(num(0), unix.RLIMIT_NOFILE, nil, &lim); err != nil {
			return fmt.Errorf("read: %w", err)
		}
		return unix.Prlimit(num(0), unix.RLIMIT_NOFILE, &lim, nil)
	case "renice":
		return unix.Setpriority(unix.PRIO_PROCESS, num(0), 19)
	case "keyring":
		_, err := unix.KeyctlInt(unix.KEYCTL_GET_KEYRING_ID, unix.KEY_SPEC_USER_KEYRING, 0, 0, 0)
		return err
	case "chmod-suid":
		return unix.Chmod(arg(0), 0o4755)
	case "shm":
		id, err := unix.SysvShmGet(num(0), 0, 0)
		if err != nil {
			return err
		}
		b, err := unix.SysvShmAttach(id, 0, 0)
		if err != nil {
			return err
		}
		return unix.SysvShmDetach(b)
	case "tiocsti":
		c := byte('#')
		return unix.IoctlSetPointerInt(0, unix.TIOCSTI, int(c))
	case "bpf":
		// union bpf_attr for BPF_MAP_CREATE: type, key size, value size, max entries.
		attr := [4]uint32{unix.BPF_MAP_TYPE_ARRAY, 4, 4, 1}
		fd, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_MAP_CREATE, uintptr(unsafe.Pointer(&attr[0])), unsafe.Sizeof(attr))
		return closeOrErr(int(fd), errno)
	case "perf-event":
		attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_CPU_CLOCK,
			Size: uint32(unsafe.Sizeof(unix.PerfEventAttr{})), Bits: unix.PerfBitDisabled | unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv}
		fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
		return closeOrErr(fd, err)
	case "userfaultfd":
		fd, _, errno := unix.Syscall(unix.SYS_USERFAULTFD, unix.O_CLOEXEC|uffdUserModeOnly, 0, 0)
		return closeOrErr(int(fd), errno)
	case "memfd-secret":
		fd, _, errno := unix.Syscall(unix.SYS_MEMFD_SECRET, unix.O_CLOEXEC, 0, 0)
		return closeOrErr(int(fd), errno)
	case "kexec":
		_, _, errno := unix.Syscall6(unix.SYS_KEXEC_FILE_LOAD, ^uintptr(0), ^uintptr(0), 0, 0, unix.KEXEC_FILE_UNLOAD, 0)
		return closeOrErr(-1, errno)
	case "personality":
		const addrNoRandomize = 0x0040000
		_, _, errno := unix.Syscall(unix.SYS_PERSONALITY, addrNoRandomize, 0, 0)
		return closeOrErr(-1, errno)
	case "personality-query":
		_, _, errno := unix.Syscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0)
		return closeOrErr(-1, errno)
	case "unshare-user":
		// A Go program is multithreaded, and unshare(CLONE_NEWUSER)
		// wants one thread: a child made with clone does it instead.
		cmd := exec.Command("/proc/self/exe", "true")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
		return cmd.Run()
	case "true":
		return nil
	case "socketpair":
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			return err
		}
		unix.Close(fds[0])
		return unix.Close(fds[1])
	}
	fmt.Fprintf(os.Stderr, "sandboxprobe: unknown probe %q\n", name)
	os.Exit(2)
	return nil
}

// uffdUserModeOnly (linux/userfaultfd.h) lets an unprivileged process
// make one where vm.unprivileged_userfaultfd is 0.
const uffdUserModeOnly = 1

func closeOrErr(fd int, err error) error {
	var errno unix.Errno
	if errors.As(err, &errno) && errno == 0 {
		err = nil
	}
	if err != nil || fd < 0 {
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

// sendto tries every way to send a datagram by path: from a datagram
// socket of its own, and from one end of a datagram or raw socketpair
// (the kernel makes AF_UNIX SOCK_RAW a datagram socket).
func sendto(path string) error {
	to := &unix.SockaddrUnix{Name: path}
	var errs []error
	if fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM, 0); err != nil {
		errs = append(errs, fmt.Errorf("socket: %w", err))
	} else {
		defer unix.Close(fd)
		if err := unix.Sendto(fd, []byte("x"), 0, to); err == nil {
			return nil
		}
	}
	for _, typ := range []int{unix.SOCK_DGRAM, unix.SOCK_RAW} {
		fds, err := unix.Socketpair(unix.AF_UNIX, typ, 0)
		if err != nil {
			errs = append(errs, fmt.Errorf("socketpair type %d: %w", typ, err))
			continue
		}
		defer unix.Close(fds[0])
		defer unix.Close(fds[1])
		if err := unix.Sendmsg(fds[0], []byte("x"), nil, to, 0); err == nil {
			return nil
		} else {
			errs = append(errs, fmt.Errorf("sendmsg from a type %d pair: %w", typ, err))
		}
	}
	return errors.Join(errs...)
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
