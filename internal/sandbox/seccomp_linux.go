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
	retAllow  = unix.SECCOMP_RET_ALLOW
	retEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// filterOptions select the variant of the filter a policy needs.
type filterOptions struct {
	network bool // sockets are allowed
	// unixSockets: with the network on, socket(AF_UNIX) too, which
	// reaches the user's own daemons (sandbox.allow_unix_sockets).
	unixSockets bool
	// namespaces: the helper runs in namespaces of its own, where nested
	// user namespaces are already off and the command has no capability
	// to make the other kinds.
	namespaces bool
}

func optionsOf(p *Policy) filterOptions {
	return filterOptions{network: p.Network, unixSockets: p.UnixSockets, namespaces: p.Namespaces}
}

// namespaceFlags are the clone and unshare flags that make a namespace.
// CLONE_NEWTIME (0x80) is one for unshare only: in clone's flags that bit
// belongs to the exit signal.
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// filter is the seccomp program (SPEC §8.3). Calls of another
// architecture (i386 int 0x80, x32) fail with EPERM. So, always, do
// ptrace and io_uring (which reaches sockets seccomp never sees), the
// kernel keyrings (shared with processes outside), open_by_handle_at,
// the kernel's attack surface that no build or tool needs (bpf,
// perf_event_open, userfaultfd, memfd_secret, kexec), personality other
// than a query or PER_LINUX, TIOCSTI, setting the set-user-ID or
// set-group-ID bit, and changing the resource limits, priority or
// scheduling of another process (execd itself is one: Landlock does not
// cover these). Without namespaces of the helper's own, making
// namespaces fails too (clone3, whose flags seccomp cannot read, with
// ENOSYS, so that C libraries fall back to clone). With the network off
// every socket call fails with EPERM too but two: a socketpair of
// AF_UNIX stream or seqpacket sockets, and sendto without an address,
// which is send(2) on such a pair. socket(AF_UNIX) is refused: a
// datagram socket could sendmsg to any host socket by path, and with
// connect and bind refused a program has no other use for one. With the
// network on, socket(AF_UNIX) and datagram socketpairs stay refused
// unless unixSockets: the network is not the user's own daemons.
func filter(o filterOptions) []bpf.Instruction {
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
	for _, nr := range alwaysDenied {
		p = append(p, deny(nr, retEPERM)...)
	}
	self := check{off: offArg0, vals: []uint32{0}} // pid 0: the caller
	p = append(p, allowOnly(unix.SYS_PRLIMIT64, self)...)
	for _, nr := range []uint32{unix.SYS_SCHED_SETAFFINITY, unix.SYS_SCHED_SETSCHEDULER, unix.SYS_SCHED_SETPARAM, unix.SYS_SCHED_SETATTR} {
		p = append(p, allowOnly(nr, self)...)
	}
	p = append(p,
		allowOnly(unix.SYS_SETPRIORITY, check{off: offArg0, vals: []uint32{unix.PRIO_PROCESS, unix.PRIO_PGRP}}, check{off: offArg1, vals: []uint32{0}})...)
	p = append(p,
		allowOnly(unix.SYS_IOPRIO_SET, check{off: offArg0, vals: []uint32{ioprioWhoProcess, ioprioWhoPgrp}}, check{off: offArg1, vals: []uint32{0}})...)
	for _, c := range chmodCalls {
		p = append(p, allowOnly(c.nr, check{off: offArg0 + 8*c.modeArg, mask: unix.S_ISUID | unix.S_ISGID, vals: []uint32{0}})...)
	}
	// personality's argument is an unsigned int: the low word is all.
	p = append(p, allowOnly(unix.SYS_PERSONALITY, check{off: offArg0, vals: []uint32{perLinux, perQuery}})...)
	p = append(p, refuseIf(unix.SYS_IOCTL, offArg1, unix.TIOCSTI)...)
	if !o.namespaces {
		p = append(p, allowOnly(unix.SYS_CLONE, check{off: offArg0, mask: namespaceFlags, vals: []uint32{0}})...)
		p = append(p, allowOnly(unix.SYS_UNSHARE, check{off: offArg0, mask: namespaceFlags | unix.CLONE_NEWTIME, vals: []uint32{0}})...)
		p = append(p, deny(unix.SYS_SETNS, retEPERM)...)
		p = append(p, deny(unix.SYS_CLONE3, retENOSYS)...)
	}
	if o.network && o.unixSockets {
		return append(p, bpf.RetConstant{Val: retAllow})
	}
	if o.network {
		p = append(p, refuseIf(unix.SYS_SOCKET, offArg0, unix.AF_UNIX)...)
	} else {
		for _, nr := range networkDenied {
			p = append(p, deny(nr, retEPERM)...)
		}
		p = append(p, allowOnly(unix.SYS_SENDTO, // the address is a pointer: both halves
			check{off: offArg4, vals: []uint32{0}}, check{off: offArg4 + 4, vals: []uint32{0}})...)
	}
	p = append(p, allowOnly(unix.SYS_SOCKETPAIR,
		check{off: offArg0, vals: []uint32{unix.AF_UNIX}},
		// The type without the flags SOCK_NONBLOCK and SOCK_CLOEXEC
		// (other bits, which the kernel refuses, fail the check). Not
		// SOCK_RAW: the kernel makes it SOCK_DGRAM.
		check{off: offArg1, mask: ^uint32(unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC), vals: []uint32{unix.SOCK_STREAM, unix.SOCK_SEQPACKET}})...)
	return append(p, bpf.RetConstant{Val: retAllow})
}

// personality's arguments that stay allowed: PER_LINUX, and the query
// 0xffffffff that changes nothing. Others turn off address space
// randomization (ADDR_NO_RANDOMIZE) or switch to other personalities.
const (
	perLinux = 0
	perQuery = 0xffffffff
)

// ioprio_set's "which" (linux/ioprio.h).
const (
	ioprioWhoProcess = 1
	ioprioWhoPgrp    = 2
)

// deny refuses system call nr with ret; other calls fall through with
// the number still loaded.
func deny(nr, ret uint32) []bpf.Instruction {
	return []bpf.Instruction{
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: nr, SkipTrue: 1},
		bpf.RetConstant{Val: ret},
	}
}

// refuseIf refuses system call nr with EPERM when the 32-bit argument
// word at off is val; other calls and values fall through with the
// number loaded again.
func refuseIf(nr, off, val uint32) []bpf.Instruction {
	return []bpf.Instruction{
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: nr, SkipTrue: 4},
		bpf.LoadAbsolute{Off: off, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: val, SkipTrue: 1},
		bpf.RetConstant{Val: retEPERM},
		bpf.LoadAbsolute{Off: offNR, Size: 4},
	}
}

// check passes when the 32-bit argument word at off, masked (if mask is
// not 0), is one of vals.
type check struct {
	off  uint32
	mask uint32
	vals []uint32
}

// allowOnly allows system call nr when every check passes and refuses it
// with EPERM otherwise; other calls fall through with the number still
// loaded.
func allowOnly(nr uint32, checks ...check) []bpf.Instruction {
	var body []bpf.Instruction
	var failing []int // jumps to patch to the EPERM return
	for _, c := range checks {
		body = append(body, bpf.LoadAbsolute{Off: c.off, Size: 4})
		if c.mask != 0 {
			body = append(body, bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: c.mask})
		}
		for i, v := range c.vals {
			// A match skips the other values, to the next check.
			body = append(body, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(len(c.vals) - 1 - i)})
		}
		failing = append(failing, len(body)-1) // no value matched
	}
	body = append(body, bpf.RetConstant{Val: retAllow}, bpf.RetConstant{Val: retEPERM})
	for _, j := range failing {
		jump := body[j].(bpf.JumpIf)
		jump.SkipFalse = uint8(len(body) - 1 - j - 1)
		body[j] = jump
	}
	return append([]bpf.Instruction{bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: nr, SkipTrue: uint8(len(body))}}, body...)
}

// installFilter installs the filter on every thread of the process
// (TSYNC: the Go runtime runs several). no_new_privs must be set.
func installFilter(o filterOptions) error {
	raw, err := bpf.Assemble(filter(o))
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
