// Package sandbox describes the sandbox modes of SPEC §8 and reports what
// this host and build can enforce.
//
// This build enforces no sandbox of its own: the Linux helper (Landlock,
// seccomp, namespaces) is not implemented yet, so [Check] reports
// read-only and workspace-write as unavailable, and the orchestrator
// refuses to run commands in them while fail_closed is set. The two modes
// that need nothing from execd, danger-full-access and external-sandbox,
// are available everywhere.
//
// The package is safe for concurrent use; it holds no state.
package sandbox

import (
	"bytes"
	"errors"
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
	Missing string // what is missing, e.g. "the Linux sandbox helper"
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

// ErrNotBuilt is the cause of every UnavailableError in this build.
var ErrNotBuilt = errors.New("the sandbox is not available on this build (the Landlock/seccomp helper is not implemented yet)")

// Check reports whether mode m can be enforced on this host: nil, or an
// *UnavailableError.
func Check(m Mode) error {
	if !m.Enforced() {
		return nil
	}
	return &UnavailableError{Mode: m, Missing: ErrNotBuilt.Error(), InContainer: InContainer()}
}

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
