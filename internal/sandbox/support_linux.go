package sandbox

import (
	"errors"
	"fmt"
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
	if v, ok := os.LookupEnv("GORACE"); ok {
		cmd.Env = append(cmd.Env, "GORACE="+v) // a -race build's settings (its exit delay)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	addNamespaces(cmd.SysProcAttr, false)
	cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWPID
	var stderr strings.Builder
	cmd.Stderr = &stderr
	var exit *exec.ExitError
	switch err := start(cmd); {
	case errors.As(err, &exit) && exit.ExitCode() == noPIDNamespace:
		s.UserNS = true
		s.PIDNSErr = strings.TrimSpace(stderr.String())
	case err != nil && stderr.Len() > 0:
		s.UserNSErr = strings.TrimSpace(stderr.String())
	case err != nil:
		s.UserNSErr = userNSError(err)
	default:
		s.UserNS, s.PIDNS = true, true
	}
	return s
}

// noPIDNamespace is the probe's exit code when everything works but a
// /proc of its PID namespace.
const noPIDNamespace = 2

// probeMain runs in the namespaces Probe made (as init of its PID
// namespace) and does what the helper and the launcher do to its mounts: creating a user namespace may be allowed where
// mounting in it is not (AppArmor's restriction of unprivileged user
// namespaces, say).
func probeMain() int {
	err := checkOwnMountNamespace()
	if err == nil {
		err = os.WriteFile("/proc/sys/user/max_user_namespaces", []byte("0\n"), 0)
	}
	if err == nil {
		err = unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
	}
	if err == nil {
		err = readOnlyTree(unix.AT_FDCWD, "/", 0)
	}
	if err == nil {
		var fd int
		if fd, err = unix.Open("/", unix.O_PATH|unix.O_CLOEXEC, 0); err == nil {
			err = pin(fd)
		}
	}
	if err == nil {
		err = privateTerminals()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "mounting in a user namespace fails: %v\n", err)
		return 1
	}
	// A /proc of a PID namespace can be mounted only where the kernel
	// finds one fully visible already (not in most containers, whose
	// /proc has entries covered).
	if err := mountProc(); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		return noPIDNamespace
	}
	return 0
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

// userNSError says why the probe could not start in new namespaces.
func userNSError(err error) string {
	switch {
	case errors.Is(err, unix.ENOSPC):
		return "user.max_user_namespaces is 0 or used up"
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return "unprivileged user namespaces are disabled (a sysctl such as kernel.unprivileged_userns_clone, or a security module)"
	}
	return err.Error()
}

// addNamespaces makes the helper start in new user, mount and IPC
// namespaces, and a new network namespace unless network is allowed, with the
// caller's uid and gid mapped to themselves. CAP_SYS_ADMIN,
// CAP_SYS_RESOURCE and CAP_DAC_READ_SEARCH in the new namespace are kept
// across the helper's exec as ambient capabilities, so that it can mount,
// turn off nested user namespaces and look paths up whatever modes a
// command gave the directories on the way, even when the caller is not
// root; the helper drops them before it execs the command.
func addNamespaces(a *syscall.SysProcAttr, network bool) {
	a.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC
	if !network {
		a.Cloneflags |= syscall.CLONE_NEWNET
	}
	uid, gid := os.Getuid(), os.Getgid()
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	a.GidMappingsEnableSetgroups = false
	a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SYS_RESOURCE, unix.CAP_DAC_READ_SEARCH}
}

func kernelRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "unknown"
	}
	return strings.TrimRight(string(u.Release[:]), "\x00")
}
