//go:build linux && (amd64 || arm64)

package sandbox

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// call is a system call as the filter sees it.
type call struct {
	name string
	arch uint32
	nr   uint32
	args [6]uint64
}

// decide runs the filter on c in x/net/bpf's VM. The VM loads words big
// endian and the kernel in the machine's order (little endian here), so
// each 32-bit half is stored big endian at the offset where the kernel
// finds it.
func decide(t *testing.T, prog []bpf.Instruction, c call) uint32 {
	t.Helper()
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[offNR:], c.nr)
	binary.BigEndian.PutUint32(data[offArch:], c.arch)
	for i, a := range c.args {
		binary.BigEndian.PutUint32(data[offArg0+8*i:], uint32(a))
		binary.BigEndian.PutUint32(data[offArg0+8*i+4:], uint32(a>>32))
	}
	ret, err := vm.Run(data)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	return uint32(ret)
}

func TestFilter(t *testing.T) {
	native := func(name string, nr uint32, args ...uint64) call {
		c := call{name: name, arch: nativeArch, nr: nr}
		copy(c.args[:], args)
		return c
	}
	const dgram, stream, seqpacket = unix.SOCK_DGRAM, unix.SOCK_STREAM, unix.SOCK_SEQPACKET
	tests := []struct {
		c             call
		netOff, netOn uint32
	}{
		{native("read", unix.SYS_READ), retAllow, retAllow},
		{native("write", unix.SYS_WRITE), retAllow, retAllow},
		{call{name: "i386 read (int 0x80)", arch: unix.AUDIT_ARCH_I386, nr: 3}, retEPERM, retEPERM},
		{call{name: "arm read", arch: unix.AUDIT_ARCH_ARM, nr: 3}, retEPERM, retEPERM},
		{native("ptrace", unix.SYS_PTRACE), retEPERM, retEPERM},
		{native("io_uring_setup", unix.SYS_IO_URING_SETUP), retEPERM, retEPERM},
		{native("io_uring_enter", unix.SYS_IO_URING_ENTER), retEPERM, retEPERM},
		{native("io_uring_register", unix.SYS_IO_URING_REGISTER), retEPERM, retEPERM},
		{native("socket(AF_INET)", unix.SYS_SOCKET, unix.AF_INET, stream), retEPERM, retAllow},
		{native("socket(AF_UNIX)", unix.SYS_SOCKET, unix.AF_UNIX, stream), retEPERM, retEPERM},
		{native("socket(AF_UNIX, SOCK_DGRAM)", unix.SYS_SOCKET, unix.AF_UNIX, dgram), retEPERM, retEPERM},
		{native("socket(AF_INET6)", unix.SYS_SOCKET, unix.AF_INET6, dgram), retEPERM, retAllow},
		{native("socket(AF_INET with AF_UNIX in the high half)", unix.SYS_SOCKET, unix.AF_INET|unix.AF_UNIX<<32, stream), retEPERM, retAllow},
		{native("connect", unix.SYS_CONNECT), retEPERM, retAllow},
		{native("bind", unix.SYS_BIND), retEPERM, retAllow},
		{native("listen", unix.SYS_LISTEN), retEPERM, retAllow},
		{native("accept", unix.SYS_ACCEPT), retEPERM, retAllow},
		{native("accept4", unix.SYS_ACCEPT4), retEPERM, retAllow},
		{native("sendmmsg", unix.SYS_SENDMMSG), retEPERM, retAllow},
		{native("recvmmsg", unix.SYS_RECVMMSG), retEPERM, retAllow},
		{native("getsockopt", unix.SYS_GETSOCKOPT), retEPERM, retAllow},
		{native("setsockopt", unix.SYS_SETSOCKOPT), retEPERM, retAllow},
		{native("getpeername", unix.SYS_GETPEERNAME), retEPERM, retAllow},
		{native("getsockname", unix.SYS_GETSOCKNAME), retEPERM, retAllow},
		{native("shutdown", unix.SYS_SHUTDOWN), retEPERM, retAllow},
		{native("sendto with an address", unix.SYS_SENDTO, 3, 0, 1, 0, 0x7ffd0000, 16), retEPERM, retAllow},
		{native("sendto with an address above 4 GiB", unix.SYS_SENDTO, 3, 0, 1, 0, 0x7ffd_0000_0000, 16), retEPERM, retAllow},
		{native("send (sendto without an address)", unix.SYS_SENDTO, 3, 0, 1, 0, 0, 0), retAllow, retAllow},
		{native("socketpair(AF_UNIX, SOCK_STREAM)", unix.SYS_SOCKETPAIR, unix.AF_UNIX, stream), retAllow, retAllow},
		{native("socketpair(AF_UNIX, SOCK_SEQPACKET|SOCK_CLOEXEC)", unix.SYS_SOCKETPAIR, unix.AF_UNIX, seqpacket|unix.SOCK_CLOEXEC), retAllow, retAllow},
		{native("socketpair(AF_UNIX, SOCK_DGRAM)", unix.SYS_SOCKETPAIR, unix.AF_UNIX, dgram), retEPERM, retEPERM},
		{native("socketpair(AF_UNIX, SOCK_DGRAM|SOCK_NONBLOCK)", unix.SYS_SOCKETPAIR, unix.AF_UNIX, dgram|unix.SOCK_NONBLOCK), retEPERM, retEPERM},
		{native("socketpair(AF_INET, SOCK_STREAM)", unix.SYS_SOCKETPAIR, unix.AF_INET, stream), retEPERM, retEPERM},
		{native("socketpair(AF_INET with AF_UNIX in the high half)", unix.SYS_SOCKETPAIR, unix.AF_INET|unix.AF_UNIX<<32, stream), retEPERM, retEPERM},
		{native("socketpair(AF_UNIX, SOCK_RAW), which is a datagram pair", unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_RAW), retEPERM, retEPERM},
		{native("socketpair(AF_UNIX, SOCK_RDM|SOCK_CLOEXEC)", unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_RDM|unix.SOCK_CLOEXEC), retEPERM, retEPERM},
		{native("recvfrom", unix.SYS_RECVFROM), retAllow, retAllow},
		{native("keyctl", unix.SYS_KEYCTL), retEPERM, retEPERM},
		{native("add_key", unix.SYS_ADD_KEY), retEPERM, retEPERM},
		{native("request_key", unix.SYS_REQUEST_KEY), retEPERM, retEPERM},
		{native("open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT), retEPERM, retEPERM},
		{native("prlimit64 of itself", unix.SYS_PRLIMIT64, 0, unix.RLIMIT_NOFILE), retAllow, retAllow},
		{native("prlimit64 of another process", unix.SYS_PRLIMIT64, 4321, unix.RLIMIT_AS), retEPERM, retEPERM},
		{native("sched_setaffinity of itself", unix.SYS_SCHED_SETAFFINITY, 0), retAllow, retAllow},
		{native("sched_setaffinity of another process", unix.SYS_SCHED_SETAFFINITY, 4321), retEPERM, retEPERM},
		{native("sched_setattr of another process", unix.SYS_SCHED_SETATTR, 4321), retEPERM, retEPERM},
		{native("setpriority of itself", unix.SYS_SETPRIORITY, unix.PRIO_PROCESS, 0, 10), retAllow, retAllow},
		{native("setpriority of its group", unix.SYS_SETPRIORITY, unix.PRIO_PGRP, 0, 10), retAllow, retAllow},
		{native("setpriority of another process", unix.SYS_SETPRIORITY, unix.PRIO_PROCESS, 4321, 10), retEPERM, retEPERM},
		{native("setpriority of the whole user", unix.SYS_SETPRIORITY, unix.PRIO_USER, 0, 10), retEPERM, retEPERM},
		{native("ioprio_set of itself", unix.SYS_IOPRIO_SET, 1, 0), retAllow, retAllow},
		{native("ioprio_set of the whole user", unix.SYS_IOPRIO_SET, 3, 0), retEPERM, retEPERM},
		{native("ioprio_set of another process", unix.SYS_IOPRIO_SET, 1, 4321), retEPERM, retEPERM},
		{native("fchmod 0755", unix.SYS_FCHMOD, 3, 0o755), retAllow, retAllow},
		{native("fchmod sticky", unix.SYS_FCHMOD, 3, 0o1777), retAllow, retAllow},
		{native("fchmod set-user-ID", unix.SYS_FCHMOD, 3, 0o4755), retEPERM, retEPERM},
		{native("fchmodat set-group-ID", unix.SYS_FCHMODAT, 3, 0x1000, 0o2755), retEPERM, retEPERM},
		{native("fchmodat2 set-user-ID", unix.SYS_FCHMODAT2, 3, 0x1000, 0o4700, 0), retEPERM, retEPERM},
		{native("fchmodat2 0644", unix.SYS_FCHMODAT2, 3, 0x1000, 0o644, 0), retAllow, retAllow},
		{native("ioctl TIOCSTI", unix.SYS_IOCTL, 0, unix.TIOCSTI), retEPERM, retEPERM},
		{native("ioctl TCGETS", unix.SYS_IOCTL, 0, unix.TCGETS), retAllow, retAllow},
		{native("sendmsg", unix.SYS_SENDMSG), retAllow, retAllow},
		{native("bpf", unix.SYS_BPF), retEPERM, retEPERM},
		{native("perf_event_open", unix.SYS_PERF_EVENT_OPEN), retEPERM, retEPERM},
		{native("userfaultfd", unix.SYS_USERFAULTFD), retEPERM, retEPERM},
		{native("memfd_secret", unix.SYS_MEMFD_SECRET), retEPERM, retEPERM},
		{native("kexec_load", unix.SYS_KEXEC_LOAD), retEPERM, retEPERM},
		{native("kexec_file_load", unix.SYS_KEXEC_FILE_LOAD), retEPERM, retEPERM},
		{native("personality query", unix.SYS_PERSONALITY, 0xffffffff), retAllow, retAllow},
		{native("personality PER_LINUX", unix.SYS_PERSONALITY, 0), retAllow, retAllow},
		{native("personality ADDR_NO_RANDOMIZE", unix.SYS_PERSONALITY, 0x0040000), retEPERM, retEPERM},
		{native("personality PER_LINUX32", unix.SYS_PERSONALITY, 0x0008), retEPERM, retEPERM},
		{native("memfd_create", unix.SYS_MEMFD_CREATE), retAllow, retAllow},
		// The helper's namespaces make these harmless (no capability,
		// no nested user namespace): see TestFilterWithoutNamespaces.
		{native("unshare(CLONE_NEWUSER)", unix.SYS_UNSHARE, unix.CLONE_NEWUSER), retAllow, retAllow},
		{native("clone3", unix.SYS_CLONE3), retAllow, retAllow},
	}
	for _, c := range chmodCalls { // chmod itself exists on amd64 only
		args := []uint64{3, 3, 3}
		args[c.modeArg] = 0o4755
		tests = append(tests, struct {
			c             call
			netOff, netOn uint32
		}{native(fmt.Sprintf("call %d set-user-ID", c.nr), c.nr, args...), retEPERM, retEPERM})
	}
	if x32Bit != 0 {
		tests = append(tests, struct {
			c             call
			netOff, netOn uint32
		}{native("x32 read", x32Bit|unix.SYS_READ), retEPERM, retEPERM})
	}
	off, on := filter(filterOptions{namespaces: true}), filter(filterOptions{network: true, namespaces: true})
	for _, tt := range tests {
		if got := decide(t, off, tt.c); got != tt.netOff {
			t.Errorf("network off: %s = %#x, want %#x", tt.c.name, got, tt.netOff)
		}
		if got := decide(t, on, tt.c); got != tt.netOn {
			t.Errorf("network on: %s = %#x, want %#x", tt.c.name, got, tt.netOn)
		}
	}
}

// allowed is the filter's policy written plainly (SPEC §8.3), to check
// the assembled program against: 0 (allowed) or the errno.
func allowed(o filterOptions, c call) unix.Errno {
	lo := func(i int) uint32 { return uint32(c.args[i]) }
	ok := func(b bool) unix.Errno {
		if b {
			return 0
		}
		return unix.EPERM
	}
	switch {
	case c.arch != nativeArch, x32Bit != 0 && c.nr&x32Bit != 0:
		return unix.EPERM
	case slices.Contains(alwaysDenied, c.nr):
		return unix.EPERM
	case c.nr == unix.SYS_PRLIMIT64, c.nr == unix.SYS_SCHED_SETAFFINITY, c.nr == unix.SYS_SCHED_SETSCHEDULER,
		c.nr == unix.SYS_SCHED_SETPARAM, c.nr == unix.SYS_SCHED_SETATTR:
		return ok(lo(0) == 0)
	case c.nr == unix.SYS_SETPRIORITY:
		return ok((lo(0) == unix.PRIO_PROCESS || lo(0) == unix.PRIO_PGRP) && lo(1) == 0)
	case c.nr == unix.SYS_IOPRIO_SET:
		return ok((lo(0) == ioprioWhoProcess || lo(0) == ioprioWhoPgrp) && lo(1) == 0)
	case c.nr == unix.SYS_PERSONALITY:
		return ok(lo(0) == 0 || lo(0) == 0xffffffff)
	case c.nr == unix.SYS_IOCTL:
		return ok(lo(1) != unix.TIOCSTI)
	}
	for _, ch := range chmodCalls {
		if c.nr == ch.nr {
			return ok(lo(int(ch.modeArg))&(unix.S_ISUID|unix.S_ISGID) == 0)
		}
	}
	if !o.namespaces {
		ns := uint32(unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
			unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET)
		switch c.nr {
		case unix.SYS_CLONE:
			return ok(lo(0)&ns == 0)
		case unix.SYS_UNSHARE:
			return ok(lo(0)&(ns|unix.CLONE_NEWTIME) == 0)
		case unix.SYS_SETNS:
			return unix.EPERM
		case unix.SYS_CLONE3:
			return unix.ENOSYS
		}
	}
	switch {
	case o.network && o.unixSockets:
		return 0
	case c.nr == unix.SYS_SOCKETPAIR:
		typ := lo(1) &^ (unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC)
		return ok(lo(0) == unix.AF_UNIX && (typ == unix.SOCK_STREAM || typ == unix.SOCK_SEQPACKET))
	case o.network:
		return ok(c.nr != unix.SYS_SOCKET || lo(0) != unix.AF_UNIX)
	case slices.Contains(networkDenied, c.nr):
		return unix.EPERM
	case c.nr == unix.SYS_SENDTO:
		return ok(c.args[4] == 0)
	}
	return 0
}

// ret is the filter's return value for an errno from allowed.
func ret(errno unix.Errno) uint32 {
	if errno == 0 {
		return retAllow
	}
	return unix.SECCOMP_RET_ERRNO | uint32(errno)
}

// Every variant of the filter agrees with allowed on the table's calls
// and on calls that make namespaces.
func TestFilterVariants(t *testing.T) {
	native := func(name string, nr uint32, args ...uint64) call {
		c := call{name: name, arch: nativeArch, nr: nr}
		copy(c.args[:], args)
		return c
	}
	calls := []call{
		native("unshare(CLONE_NEWUSER)", unix.SYS_UNSHARE, unix.CLONE_NEWUSER),
		native("unshare(CLONE_NEWNET|CLONE_NEWNS)", unix.SYS_UNSHARE, unix.CLONE_NEWNET|unix.CLONE_NEWNS),
		native("unshare(CLONE_NEWTIME)", unix.SYS_UNSHARE, unix.CLONE_NEWTIME),
		native("unshare(CLONE_FILES)", unix.SYS_UNSHARE, unix.CLONE_FILES),
		native("clone of a thread", unix.SYS_CLONE, unix.CLONE_VM|unix.CLONE_THREAD|unix.CLONE_SIGHAND|unix.CLONE_FS|unix.CLONE_FILES),
		native("clone of a process (fork) with SIGCHLD", unix.SYS_CLONE, uint64(unix.SIGCHLD)),
		native("clone with exit signal 0x80 bit", unix.SYS_CLONE, 0x80|uint64(unix.SIGCHLD)),
		native("clone(CLONE_NEWUSER)", unix.SYS_CLONE, unix.CLONE_NEWUSER|uint64(unix.SIGCHLD)),
		native("clone(CLONE_NEWPID)", unix.SYS_CLONE, unix.CLONE_NEWPID),
		native("clone3", unix.SYS_CLONE3, 0x7ffd0000, 88),
		native("setns", unix.SYS_SETNS, 3, 0),
		native("socket(AF_UNIX)", unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM),
		native("socket(AF_INET)", unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM),
		native("socketpair(AF_UNIX, SOCK_DGRAM)", unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_DGRAM),
		native("socketpair(AF_UNIX, SOCK_STREAM)", unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_STREAM),
		native("sendto with an address", unix.SYS_SENDTO, 3, 0, 1, 0, 0x7ffd0000, 16),
		native("connect", unix.SYS_CONNECT, 3, 0x7ffd0000, 110),
		native("read", unix.SYS_READ, 0),
	}
	for _, o := range filterVariants {
		prog := filter(o)
		for _, c := range calls {
			if got, want := decide(t, prog, c), ret(allowed(o, c)); got != want {
				t.Errorf("%+v: %s = %#x, want %#x", o, c.name, got, want)
			}
		}
	}
	// Spelled out, the three rules this test guards.
	noNS := filter(filterOptions{})
	if got := decide(t, noNS, native("", unix.SYS_UNSHARE, unix.CLONE_NEWUSER)); got != retEPERM {
		t.Errorf("without namespaces unshare(CLONE_NEWUSER) = %#x, want EPERM", got)
	}
	if got := decide(t, noNS, native("", unix.SYS_CLONE3)); got != retENOSYS {
		t.Errorf("without namespaces clone3 = %#x, want ENOSYS (so that libc falls back to clone)", got)
	}
	on := filter(filterOptions{network: true, namespaces: true})
	if got := decide(t, on, native("", unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM)); got != retEPERM {
		t.Errorf("network on: socket(AF_UNIX) = %#x, want EPERM unless allow_unix_sockets", got)
	}
	onUnix := filter(filterOptions{network: true, unixSockets: true, namespaces: true})
	if got := decide(t, onUnix, native("", unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM)); got != retAllow {
		t.Errorf("allow_unix_sockets: socket(AF_UNIX) = %#x, want allowed", got)
	}
}

// filterVariants are every combination of the options.
var filterVariants = func() []filterOptions {
	var out []filterOptions
	for i := range 8 {
		out = append(out, filterOptions{network: i&1 != 0, unixSockets: i&2 != 0, namespaces: i&4 != 0})
	}
	return out
}()

// FuzzFilter checks every variant of the assembled filter against
// allowed on any call.
func FuzzFilter(f *testing.F) {
	f.Add(uint8(0), uint32(unix.SYS_SOCKETPAIR), uint64(unix.AF_UNIX), uint64(unix.SOCK_STREAM), uint64(0), false)
	f.Add(uint8(0), uint32(unix.SYS_SENDTO), uint64(3), uint64(0), uint64(1<<32), false)
	f.Add(uint8(1), uint32(unix.SYS_SETPRIORITY), uint64(unix.PRIO_USER), uint64(0), uint64(0), false)
	f.Add(uint8(4), uint32(unix.SYS_FCHMODAT), uint64(3), uint64(0), uint64(0o4755), true)
	f.Add(uint8(0), uint32(unix.SYS_SOCKETPAIR), uint64(unix.AF_UNIX), uint64(unix.SOCK_STREAM|1<<20), uint64(0), false)
	f.Add(uint8(1), uint32(unix.SYS_SOCKET), uint64(unix.AF_UNIX), uint64(unix.SOCK_DGRAM), uint64(0), false)
	f.Add(uint8(0), uint32(unix.SYS_CLONE), uint64(unix.CLONE_NEWUSER), uint64(0), uint64(0), false)
	f.Add(uint8(3), uint32(unix.SYS_UNSHARE), uint64(unix.CLONE_NEWTIME), uint64(0), uint64(0), false)
	f.Add(uint8(5), uint32(unix.SYS_PERSONALITY), uint64(0xffffffff), uint64(0), uint64(0), false)
	progs := map[filterOptions][]bpf.Instruction{}
	for _, o := range filterVariants {
		progs[o] = filter(o)
	}
	f.Fuzz(func(t *testing.T, variant uint8, nr uint32, a, b, c uint64, foreign bool) {
		o := filterVariants[int(variant)%len(filterVariants)]
		cl := call{name: fmt.Sprintf("nr %d (%#x, %#x, %#x)", nr, a, b, c), arch: nativeArch, nr: nr,
			args: [6]uint64{a, b, c, a ^ c, c, b}}
		if foreign {
			cl.arch = unix.AUDIT_ARCH_I386
		}
		if got, want := decide(t, progs[o], cl), ret(allowed(o, cl)); got != want {
			t.Errorf("%+v: %s = %#x, want %#x", o, cl.name, got, want)
		}
	})
}
