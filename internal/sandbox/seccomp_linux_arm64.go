package sandbox

import "golang.org/x/sys/unix"

const (
	nativeArch = unix.AUDIT_ARCH_AARCH64
	x32Bit     = 0 // no such ABI
)

var (
	alwaysDenied = []uint32{unix.SYS_PTRACE, unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
		unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN,
		unix.SYS_USERFAULTFD, unix.SYS_MEMFD_SECRET, unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD}
	networkDenied = []uint32{unix.SYS_SOCKET, unix.SYS_CONNECT, unix.SYS_BIND, unix.SYS_LISTEN, unix.SYS_ACCEPT,
		unix.SYS_ACCEPT4, unix.SYS_SENDMMSG, unix.SYS_RECVMMSG, unix.SYS_GETSOCKOPT,
		unix.SYS_SETSOCKOPT, unix.SYS_GETPEERNAME, unix.SYS_GETSOCKNAME, unix.SYS_SHUTDOWN}
	// chmodCalls are the calls that set a mode, with the mode's argument
	// (arm64 has no chmod).
	chmodCalls = []struct{ nr, modeArg uint32 }{{unix.SYS_FCHMOD, 1}, {unix.SYS_FCHMODAT, 2}, {unix.SYS_FCHMODAT2, 2}}
)
