package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccomp_data offsets (linux/seccomp.h).
const (
	offNR   = 0
	offArch = 4
	offArg0 = 16 // args[i] at 16 + 8*i; the low 32 bits first (little endian)
	offArg1 = 24
	offArg4 = 48
)

// Return values.
const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
)

// filter is the seccomp program (SPEC §8.3). Always: calls of another
// architecture (i386 int 0x80, x32) fail with EPERM, as do ptrace and
// io_uring, which can reach sockets seccomp never sees. With the network
// off every socket call fails with EPERM but two: a socketpair of AF_UNIX
// stream or seqpacket sockets, and sendto without an address, which is
// send(2) on such a pair. socket(AF_UNIX) is refused too: a datagram
// socket could sendmsg to any host socket by path, and with connect and
// bind refused a program has no other use for one.
func filter(network bool) []bpf.Instruction {
	p := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: nativeArch, SkipTrue: 1},
		bpf.RetConstant{Val: retEPERM},
		bpf.LoadAbsolute{Off: offNR, Size: 4},
	}
	if x32Bit != 0 {
		p = append(p,
			bpf.JumpIf{Cond: bpf.JumpBitsNotSet, Val: x32Bit, SkipTrue: 1},
			bpf.RetConstant{Val: retEPERM})
	}
	deny := append([]uint32(nil), alwaysDenied...)
	if !network {
		deny = append(deny, networkDenied...)
	}
	for _, nr := range deny {
		p = append(p,
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: nr, SkipTrue: 1},
			bpf.RetConstant{Val: retEPERM})
	}
	if !network {
		p = append(p, socketpairRule()...)
		p = append(p, sendtoRule()...)
	}
	return append(p, bpf.RetConstant{Val: retAllow})
}

// socketpairRule decides socketpair(domain, type, ...) with the syscall
// number loaded: AF_UNIX, and not SOCK_DGRAM once the flag bits
// (SOCK_NONBLOCK, SOCK_CLOEXEC) are masked off. Other calls fall through
// with the number still loaded.
func socketpairRule() []bpf.Instruction {
	return []bpf.Instruction{
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: sysSocketpair, SkipTrue: 7},
		bpf.LoadAbsolute{Off: offArg0, Size: 4}, // int: the high half is ignored
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.AF_UNIX, SkipTrue: 3},
		bpf.LoadAbsolute{Off: offArg1, Size: 4},
		bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: unix.SOCK_NONBLOCK - 1}, // SOCK_TYPE_MASK
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.SOCK_DGRAM, SkipTrue: 1},
		bpf.RetConstant{Val: retEPERM},
		bpf.RetConstant{Val: retAllow},
	}
}

// sendtoRule allows sendto(fd, buf, len, flags, NULL, ...), which can only
// reach the peer of a connected socket, and refuses it with an address.
// Other calls fall through with the number still loaded.
func sendtoRule() []bpf.Instruction {
	return []bpf.Instruction{
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: sysSendto, SkipTrue: 6},
		bpf.LoadAbsolute{Off: offArg4, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: 0, SkipTrue: 2},
		bpf.LoadAbsolute{Off: offArg4 + 4, Size: 4}, // a pointer: both halves
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipTrue: 1},
		bpf.RetConstant{Val: retEPERM},
		bpf.RetConstant{Val: retAllow},
	}
}

// installFilter installs the filter on every thread of the process
// (TSYNC: the Go runtime runs several). no_new_privs must be set.
func installFilter(network bool) error {
	raw, err := bpf.Assemble(filter(network))
	if err != nil {
		return fmt.Errorf("assemble: %w", err)
	}
	prog := make([]unix.SockFilter, len(raw))
	for i, ins := range raw {
		prog[i] = unix.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if errno != 0 {
		return fmt.Errorf("seccomp: %w", errno)
	}
	return nil
}
