package sandbox

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Probe finds what this host supports. It starts this binary once in new
// namespaces (through start) to learn whether the helper can use them.
func Probe(start Starter) Support {
	s := Support{OS: "linux", Kernel: kernelRelease()}
	if abi, err := llsys.LandlockGetABIVersion(); err == nil {
		s.Landlock = abi
	}
	// PR_GET_SECCOMP answers on any kernel with seccomp; filters need
	// CONFIG_SECCOMP_FILTER, whose actions list then exists.
	s.Seccomp, s.SeccompErr = probeSeccomp()
	cmd := exec.Command("/proc/self/exe", ProbeArg)
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	addNamespaces(cmd.SysProcAttr, false)
	if err := start(cmd); err != nil {
		s.UserNSErr = err.Error()
	} else {
		s.UserNS = true
	}
	return s
}

// probeSeccomp reports whether the helper can install its filter.
// PR_GET_SECCOMP answers on any kernel with seccomp; filters need
// CONFIG_SECCOMP_FILTER, whose list of actions is then in /proc.
func probeSeccomp() (bool, string) {
	switch {
	case nativeArch == 0:
		return false, "no filter for " + runtime.GOARCH + " in this build"
	case unix.Prctl(unix.PR_GET_SECCOMP, 0, 0, 0, 0) != nil:
		return false, "kernel without seccomp"
	}
	if _, err := os.Stat("/proc/sys/kernel/seccomp/actions_avail"); err != nil {
		return false, "kernel without seccomp filters"
	}
	return true, ""
}

// addNamespaces makes the helper start in new user, mount and IPC
// namespaces, and a new network namespace unless network is allowed, with the
// caller's uid and gid mapped to themselves. CAP_SYS_ADMIN in the new
// namespace is kept across the helper's exec as an ambient capability,
// so it can mount even when the caller is not root; the helper drops it
// before it execs the command.
func addNamespaces(a *syscall.SysProcAttr, network bool) {
	a.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC
	if !network {
		a.Cloneflags |= syscall.CLONE_NEWNET
	}
	uid, gid := os.Getuid(), os.Getgid()
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	a.GidMappingsEnableSetgroups = false
	a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
}

func kernelRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "unknown"
	}
	return strings.TrimRight(string(u.Release[:]), "\x00")
}
