package orchestrator

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/execd/execd/internal/proctest"
	"github.com/execd/execd/internal/sandbox"
)

// newSandboxed returns an orchestrator that enforces s on this host, or
// skips the test on a kernel without the sandbox.
func newSandboxed(t *testing.T, s sandbox.Settings) *Orchestrator {
	t.Helper()
	o := newTest(t, func(opts *Options) { opts.Sandbox = SandboxPolicy{Settings: s, FailClosed: true} })
	if !o.Sandboxed() {
		t.Skipf("no sandbox on this kernel: %s", o.Support().Describe())
	}
	return o
}

func TestSandboxedExecKeepsTheProcessContract(t *testing.T) {
	o := newSandboxed(t, sandbox.Settings{Mode: sandbox.WorkspaceWrite})
	res := run(t, o, ExecRequest{Argv: sh(`read -r _ _ _ _ pgrp sid _ < /proc/self/stat; echo "$$ $pgrp $sid"; ` +
		`readlink /proc/self/fd/0; ls /proc/self/fd | tr '\n' ' '; echo; pwd; env | grep ^EXECD_ | sort`)})
	lines := strings.Split(string(res.Stdout.Data), "\n")
	if len(lines) < 6 || res.ExitCode != 0 {
		t.Fatalf("result %+v", res)
	}
	if f := strings.Fields(lines[0]); len(f) != 3 || f[0] != f[1] || f[0] != f[2] {
		t.Errorf("pid, pgrp, session = %q; want the command leading its own session", lines[0])
	}
	want := []string{"/dev/null", "0 1 2 3 ", o.Cwd(), "EXECD_SANDBOX=linux", "EXECD_SANDBOX_NETWORK_DISABLED=1"}
	if got := lines[1:6]; !slices.Equal(got, want) {
		t.Errorf("stdin, descriptors (ls has 3), cwd, markers = %q, want %q", got, want)
	}
}

func TestSandboxedExecConfinesWrites(t *testing.T) {
	outside := t.TempDir()
	tests := []struct {
		name   string
		s      sandbox.Settings
		target func(cwd string) string
		ok     bool
	}{
		{"cwd", sandbox.Settings{Mode: sandbox.WorkspaceWrite}, func(cwd string) string { return cwd }, true},
		{"elsewhere", sandbox.Settings{Mode: sandbox.WorkspaceWrite, ExcludeSlashTmp: true, ExcludeTmpdirEnvVar: true},
			func(string) string { return outside }, false},
		{"an extra root", sandbox.Settings{Mode: sandbox.WorkspaceWrite, WritableRoots: []string{outside}, ExcludeSlashTmp: true},
			func(string) string { return outside }, true},
		{"/tmp", sandbox.Settings{Mode: sandbox.WorkspaceWrite}, func(string) string { return "/tmp" }, true},
		{"/tmp excluded", sandbox.Settings{Mode: sandbox.WorkspaceWrite, ExcludeSlashTmp: true, ExcludeTmpdirEnvVar: true},
			func(string) string { return "/tmp" }, false},
		{"read-only cwd", sandbox.Settings{Mode: sandbox.ReadOnly}, func(cwd string) string { return cwd }, false},
	}
	for _, tt := range tests {
		o := newSandboxed(t, tt.s)
		dir := tt.target(o.Cwd())
		file := filepath.Join(dir, "execd-confine-"+strings.NewReplacer(" ", "-", "/", "").Replace(tt.name))
		res := run(t, o, ExecRequest{Argv: []string{"touch", file}})
		_, statErr := os.Stat(file)
		_ = os.Remove(file)
		if (res.ExitCode == 0) != tt.ok || (statErr == nil) != tt.ok {
			t.Errorf("%s: touch %s exited %d (%s), file exists %v; want allowed %v", tt.name, file, res.ExitCode, res.Stderr.Data, statErr == nil, tt.ok)
		}
		if !tt.ok && !sandbox.LooksDenied(true, res.ExitCode, string(res.Stderr.Data)) {
			t.Errorf("%s: the refusal %q does not look like a sandbox denial", tt.name, res.Stderr.Data)
		}
	}
}

func TestSandboxedTerminalSession(t *testing.T) {
	o := newSandboxed(t, sandbox.Settings{Mode: sandbox.WorkspaceWrite})
	c := startSession(t, o, SessionRequest{Argv: interactiveBash, TTY: true, Yield: 10 * time.Second})
	c = write(t, o, c.ID, "tty; echo via-tty > /dev/tty; echo $EXECD_SANDBOX\n", 10*time.Second)
	out := string(c.Output)
	if !strings.Contains(out, "/dev/pts/") || !strings.Contains(out, "via-tty\r\n") || !strings.Contains(out, "linux\r\n") {
		t.Fatalf("output %q; want a terminal, writable, in the sandbox", out)
	}
	if !c.Waiting {
		t.Error("the idle sandboxed shell was not seen waiting for input")
	}
	if c = write(t, o, c.ID, "exit 7\n", 10*time.Second); c.Exit == nil || c.Exit.Code != 7 {
		t.Errorf("exit 7: %+v", c.Exit)
	}
}

func TestSandboxedTimeoutKillsTheGroup(t *testing.T) {
	o := newSandboxed(t, sandbox.Settings{Mode: sandbox.WorkspaceWrite})
	const marker = "sleep 811.7"
	res := run(t, o, ExecRequest{Argv: sh(marker + " & " + marker), Timeout: 300 * time.Millisecond})
	if !res.TimedOut {
		t.Fatalf("timeout: %+v", res)
	}
	proctest.Gone(t, marker, waitLimit)
}

func TestSandboxSetupErrorsNameTheStage(t *testing.T) {
	o := newSandboxed(t, sandbox.Settings{Mode: sandbox.ReadOnly})
	// The helper cannot change into a directory removed after the
	// orchestrator checked it: simulate it with one it may not search.
	dir := filepath.Join(t.TempDir(), "gone")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd, err := o.command(t.Context(), call{argv: []string{"true"}, cwd: dir}, true, false, nil, noSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	err = o.start(cmd, true)
	var se *sandbox.SetupError
	if !errors.As(err, &se) || se.Stage != "chdir" || !strings.Contains(err.Error(), "sandbox setup failed at chdir") {
		t.Fatalf("start in a removed directory: %v", err)
	}
}
