// Package sandbox confines commands (SPEC §8): it describes the modes,
// finds what the host can enforce ([Probe]), turns a command into an
// invocation of the sandbox helper ([Wrap]) or a launch by a resident
// launcher ([Launcher]), and is that helper ([HelperMain]) and launcher.
//
// # The helper
//
// On Linux execd re-executes itself as `/proc/self/exe __execd-sandbox-helper`
// with the command's stdio (pipes, or a PTY it leads as its controlling
// terminal) on fds 0-2, the [Policy] as JSON on fd 3 and a close-on-exec
// status pipe on fd 4. The helper opens the writable roots and checks
// that they are the directories execd started with; in its own user,
// mount and IPC (and network) namespaces it turns off nested user
// namespaces, makes every mount read-only but the roots, pins (mounts
// onto themselves, once each, parents first) the directories and
// symlinks leading to nested roots and to protected paths so that
// commands cannot rename or repoint them, and makes the protected paths
// read-only, all through descriptors checked against what it planned
// from; it changes to the working directory, sets
// no_new_privs, gives up every capability, applies Landlock and a seccomp
// filter to itself and execs the command: the pid, process group and
// terminal are the command's. If a step fails it writes a [SetupError] as
// JSON on fd 4 and exits; EOF with nothing read means the exec succeeded.
//
// # The launcher
//
// Where the host also has PID namespaces, the same setup runs once per
// sandbox policy in a resident launcher ([Launcher], [LauncherMain]), the
// init of a PID namespace, which then forks and execs each command from
// the thread it restricted, on request over a socket: a command costs a
// fork and an exec, and dies with execd. Before each launch execd checks
// that the launcher still protects what a helper would ([Launcher.Covers]).
//
// # Seccomp
//
// The filter is assembled here with golang.org/x/net/bpf rather than
// taken from a seccomp library: the helper is this binary, so every
// package initialiser runs at every launch (one library's syscall tables
// cost 0.38 ms each time), and the filter needs a foreign-architecture
// guard and masked argument checks anyway. It is 111 to 169 instructions
// (fewer with the network on or namespaces of the helper's own), run in
// order on every system call; make
// bench measures what that costs a syscall-bound command.
//
// The package holds no state and is safe for concurrent use.
package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"strings"
)

// Mode is a sandbox mode (SPEC §8.1).
type Mode string

// The sandbox modes.
const (
	ReadOnly         Mode = "read-only"
	WorkspaceWrite   Mode = "workspace-write"
	DangerFullAccess Mode = "danger-full-access"
	ExternalSandbox  Mode = "external-sandbox"
)

// Modes lists every mode in the order the documentation gives them.
var Modes = []Mode{ReadOnly, WorkspaceWrite, DangerFullAccess, ExternalSandbox}

// ParseMode returns the mode named s.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown sandbox mode %q (want one of %s)", s, modeList())
}

func modeList() string {
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = string(m)
	}
	return strings.Join(names, ", ")
}

// Enforced reports whether execd itself restricts commands in mode m.
func (m Mode) Enforced() bool { return m == ReadOnly || m == WorkspaceWrite }

// UnavailableError says that a mode cannot be enforced here and what the
// way out is.
type UnavailableError struct {
	Mode    Mode
	Missing string // what is missing, e.g. "this host lacks Landlock (...)"
	// InContainer reports that execd itself seems to run in a container,
	// which makes external-sandbox the suggested way out.
	InContainer bool
}

func (e *UnavailableError) Error() string {
	way := `Set sandbox.mode = "danger-full-access" to run without a sandbox at your own risk, ` +
		`or "external-sandbox" if execd runs inside a container or VM that confines it.`
	if e.InContainer {
		way = `execd runs in a container: if that container is your sandbox, set sandbox.mode = "external-sandbox"; ` +
			`otherwise set sandbox.mode = "danger-full-access" to run without a sandbox at your own risk.`
	}
	return fmt.Sprintf("sandbox mode %s cannot be enforced: %s, and sandbox.fail_closed refuses to run commands without it. %s",
		e.Mode, e.Missing, way)
}

// SetupError is a failure of the helper before the command ran.
type SetupError struct {
	Stage string // "policy", "mount", "chdir", "landlock", "seccomp", "exec", ...
	Err   error
}

func (e *SetupError) Error() string {
	return fmt.Sprintf("sandbox setup failed at %s: %v", e.Stage, e.Err)
}
func (e *SetupError) Unwrap() error { return e.Err }

// InContainer reports whether this process seems to run in a container:
// /.dockerenv or /run/.containerenv exists, or PID 1's cgroup names a
// container runtime.
func InContainer() bool {
	for _, f := range []string{"/.dockerenv", "/run/.containerenv"} {
		if _, err := os.Stat(f); err == nil {
			return true
		}
	}
	cg, err := os.ReadFile("/proc/1/cgroup")
	if err != nil {
		return false
	}
	for _, k := range []string{"docker", "kubepods", "containerd", "libpod", "lxc"} {
		if bytes.Contains(cg, []byte(k)) {
			return true
		}
	}
	return false
}
