package sandbox

import (
	"errors"
	"strings"
	"testing"
)

func TestParseMode(t *testing.T) {
	for _, m := range Modes {
		got, err := ParseMode(string(m))
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %q, %v", m, got, err)
		}
	}
	_, err := ParseMode("workspace_write")
	if err == nil || !strings.Contains(err.Error(), `"workspace_write"`) || !strings.Contains(err.Error(), "workspace-write") {
		t.Errorf("ParseMode of a bad name = %v; want an error naming it and the valid modes", err)
	}
}

func TestCheck(t *testing.T) {
	full := Support{OS: "linux", Landlock: 7, Seccomp: true, UserNS: true}
	tests := []struct {
		name string
		sup  Support
		mode Mode
		want []string // in the error; nil means no error
	}{
		{"full support", full, WorkspaceWrite, nil},
		{"no user namespaces is not fatal", Support{OS: "linux", Landlock: 1, Seccomp: true}, ReadOnly, nil},
		{"no Landlock", Support{OS: "linux", Seccomp: true}, WorkspaceWrite, []string{"workspace-write", "lacks Landlock", "danger-full-access"}},
		{"no seccomp", Support{OS: "linux", Landlock: 3, SeccompErr: "kernel without seccomp"}, ReadOnly, []string{"read-only", "lacks seccomp filters (kernel without seccomp)"}},
		{"neither", Support{OS: "linux"}, ReadOnly, []string{"Landlock", " and seccomp"}},
		{"macOS without sandbox-exec", Support{OS: "darwin"}, ReadOnly, []string{"sandbox-exec"}},
		{"macOS", Support{OS: "darwin", Seatbelt: true}, WorkspaceWrite, nil},
		{"other platforms", Support{OS: "plan9"}, WorkspaceWrite, []string{"no sandbox for plan9"}},
		{"danger-full-access needs nothing", Support{OS: "plan9"}, DangerFullAccess, nil},
		{"external-sandbox needs nothing", Support{OS: "linux"}, ExternalSandbox, nil},
	}
	for _, tt := range tests {
		err := tt.sup.Check(tt.mode)
		if tt.want == nil {
			if err != nil {
				t.Errorf("%s: Check(%s) = %v, want nil", tt.name, tt.mode, err)
			}
			continue
		}
		var ue *UnavailableError
		if !errors.As(err, &ue) || ue.Mode != tt.mode {
			t.Errorf("%s: Check(%s) = %v, want *UnavailableError", tt.name, tt.mode, err)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", tt.name, err, w)
			}
		}
	}
}

func TestUnavailableSuggestsExternalSandboxInContainers(t *testing.T) {
	e := &UnavailableError{Mode: WorkspaceWrite, Missing: "x", InContainer: true}
	if !strings.Contains(e.Error(), `"external-sandbox"`) {
		t.Errorf("message in a container %q does not suggest external-sandbox", e.Error())
	}
	e.InContainer = false
	if strings.Contains(e.Error(), "runs in a container") {
		t.Errorf("message outside a container %q claims a container", e.Error())
	}
}

func TestDescribeWarnsAboutProtectedPaths(t *testing.T) {
	d := Support{OS: "linux", Kernel: "6.1", Landlock: 3, Seccomp: true, UserNSErr: "operation not permitted"}.Describe()
	for _, w := range []string{"6.1", "ABI 3", "operation not permitted", "protected paths are not enforced"} {
		if !strings.Contains(d, w) {
			t.Errorf("Describe() = %q lacks %q", d, w)
		}
	}
}

// COMPAT-CASES §17.9 (54), with execd's own sandbox names.
func TestLooksDenied(t *testing.T) {
	tests := []struct {
		sandboxed bool
		code      int
		output    string
		want      bool
	}{
		{true, 1, "", false},
		{true, 1, "Operation not permitted\n", true},
		{true, 127, "bash: foo: command not found", false},
		{false, 1, "Operation not permitted", false},
		{true, 101, "cargo: failed: Read-only file system (os error 30)", true},
		{true, 0, "Operation not permitted", false},
		{true, 159, "", true},
		{true, 1, "touch: cannot touch '/etc/x': Permission denied", true},
		{true, 2, "ls: cannot access 'x': No such file or directory", false},
		{true, 126, "bash: ./x: Permission denied", true},
		{true, 1, "--- FAIL: TestX\nFAIL\tgithub.com/x/internal/sandbox\t0.1s", false},
		{true, 1, "seccomp filter: 3 tests failed; landlock: ok", false},
	}
	for _, tt := range tests {
		if got := LooksDenied(tt.sandboxed, tt.code, tt.output); got != tt.want {
			t.Errorf("LooksDenied(%v, %d, %q) = %v, want %v", tt.sandboxed, tt.code, tt.output, got, tt.want)
		}
	}
}
