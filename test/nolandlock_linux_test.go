package test

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// denyLandlockEnv makes the test binary a wrapper that hides Landlock from
// the command in its arguments: the three Landlock calls fail with ENOSYS,
// as on a kernel without it. It lets the tests see execd fail closed on
// this kernel.
const denyLandlockEnv = "IT_DENY_LANDLOCK"

// withoutLandlock rewrites cmd to run under the wrapper.
func withoutLandlock(cmd *exec.Cmd) {
	cmd.Args = append([]string{os.Args[0]}, cmd.Args...)
	cmd.Path = os.Args[0]
	cmd.Env = append(cmd.Env, denyLandlockEnv+"=1")
}

// denyLandlockMain is the wrapper; TestMain runs it when the variable is
// set.
func denyLandlockMain() {
	os.Unsetenv(denyLandlockEnv)
	prog, err := bpf.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 0, Size: 4}, // the syscall number
		bpf.JumpIf{Cond: bpf.JumpLessThan, Val: unix.SYS_LANDLOCK_CREATE_RULESET, SkipTrue: 2},
		bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: unix.SYS_LANDLOCK_RESTRICT_SELF, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
	})
	if err != nil {
		fail(err)
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, ins := range prog {
		filter[i] = unix.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fail(err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		fail(errno)
	}
	fail(syscall.Exec(os.Args[1], os.Args[1:], os.Environ()))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "deny-landlock wrapper:", err)
	os.Exit(125)
}
