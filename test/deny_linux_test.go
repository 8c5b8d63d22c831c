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

// denyEnv makes the test binary a wrapper that makes some system calls
// fail for the command in its arguments, as on a kernel without them:
// "landlock" (the three Landlock calls, ENOSYS) or "mount_setattr"
// (EPERM, as where mounting in a user namespace is not allowed). It lets
// the tests see what execd does on kernels unlike this one.
const denyEnv = "IT_DENY_SYSCALLS"

// withoutLandlock rewrites cmd to run under the wrapper, without Landlock.
func withoutLandlock(cmd *exec.Cmd) { withDenied(cmd, "landlock") }

// withoutMountSetattr rewrites cmd to run where mount_setattr is refused.
func withoutMountSetattr(cmd *exec.Cmd) { withDenied(cmd, "mount_setattr") }

func withDenied(cmd *exec.Cmd, what string) {
	cmd.Args = append([]string{os.Args[0]}, cmd.Args...)
	cmd.Path = os.Args[0]
	cmd.Env = append(cmd.Env, denyEnv+"="+what)
}

// denyMain is the wrapper; TestMain runs it when the variable is set.
func denyMain() {
	what := os.Getenv(denyEnv)
	os.Unsetenv(denyEnv)
	var prog []bpf.RawInstruction
	var err error
	switch what {
	case "landlock":
		prog, err = bpf.Assemble([]bpf.Instruction{
			bpf.LoadAbsolute{Off: 0, Size: 4}, // the syscall number
			bpf.JumpIf{Cond: bpf.JumpLessThan, Val: unix.SYS_LANDLOCK_CREATE_RULESET, SkipTrue: 2},
			bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: unix.SYS_LANDLOCK_RESTRICT_SELF, SkipTrue: 1},
			bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
			bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
		})
	case "mount_setattr":
		prog, err = bpf.Assemble([]bpf.Instruction{
			bpf.LoadAbsolute{Off: 0, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.SYS_MOUNT_SETATTR, SkipTrue: 1},
			bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
			bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
		})
	default:
		err = fmt.Errorf("unknown %s=%q", denyEnv, what)
	}
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
	fmt.Fprintln(os.Stderr, "deny wrapper:", err)
	os.Exit(125)
}
