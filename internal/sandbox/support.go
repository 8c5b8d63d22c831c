package sandbox

import (
	"fmt"
	"os/exec"
	"runtime"
	"strings"
)

// Support is what this host can enforce, found once at start by Probe.
type Support struct {
	OS     string
	Kernel string // kernel release, where known
	// Landlock is the Landlock ABI version; 0 means none.
	Landlock int
	// Seccomp reports whether seccomp filters can be installed.
	Seccomp    bool
	SeccompErr string // why not
	// UserNS reports whether the helper can run in new user, mount and
	// network namespaces: without them protected paths are not enforced
	// and the network is cut by seccomp alone.
	UserNS    bool
	UserNSErr string // why not
	// PIDNS reports whether sandboxed commands can also run in a PID
	// namespace with a /proc of its own, whose init is a resident
	// launcher (Launcher): they then die with execd, and start fast.
	PIDNS    bool
	PIDNSErr string // why not, where UserNS
	// Seatbelt reports that macOS sandbox-exec is available.
	Seatbelt bool
}

// Starter starts a command and waits for it; the orchestrator gives the
// probe its reaper, which owns every child.
type Starter func(*exec.Cmd) error

// Check reports whether mode can be enforced: nil, or an
// *UnavailableError naming what is missing. Unenforced modes
// (danger-full-access, external-sandbox) always can.
func (s Support) Check(mode Mode) error {
	if !mode.Enforced() {
		return nil
	}
	var missing string
	switch s.OS {
	case "linux":
		missing = s.linuxGaps()
	case "darwin":
		if !s.Seatbelt {
			missing = "sandbox-exec is not available"
		}
	default:
		missing = fmt.Sprintf("execd has no sandbox for %s", s.OS)
	}
	if missing == "" {
		return nil
	}
	return &UnavailableError{Mode: mode, Missing: missing, InContainer: InContainer()}
}

// linuxGaps names what Linux lacks for the sandbox, or "".
func (s Support) linuxGaps() string {
	var gaps []string
	if s.Landlock == 0 {
		gaps = append(gaps, "Landlock (Linux 5.13 or later with landlock in the lsm= boot list)")
	}
	if !s.Seccomp {
		g := "seccomp filters"
		if s.SeccompErr != "" {
			g += " (" + s.SeccompErr + ")"
		}
		gaps = append(gaps, g)
	}
	if len(gaps) == 0 {
		return ""
	}
	return "this host lacks " + strings.Join(gaps, " and ")
}

// Describe is a one-line summary for logs and doctor.
func (s Support) Describe() string {
	switch s.OS {
	case "linux":
		ns := "yes"
		switch {
		case !s.UserNS:
			ns = "no (" + s.UserNSErr + "): protected paths are not enforced"
		case !s.PIDNS:
			ns = "yes, without a PID namespace (" + s.PIDNSErr + "): each command has a helper of its own"
		}
		return fmt.Sprintf("kernel %s, Landlock ABI %d, seccomp %v, user namespaces %s", s.Kernel, s.Landlock, s.Seccomp, ns)
	case "darwin":
		return fmt.Sprintf("macOS sandbox-exec %v", s.Seatbelt)
	}
	return runtime.GOOS + ": no sandbox"
}
