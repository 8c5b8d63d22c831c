package orchestrator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/execd/execd/internal/sandbox"
)

// snapshotting returns an orchestrator without a sandbox that takes
// snapshots in a directory of the test's, for a home with files.
func snapshotting(t *testing.T, files map[string]string) (*Orchestrator, string) {
	t.Helper()
	home := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(home, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o := newTest(t, func(opts *Options) {
		opts.BaseEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home}
		opts.Snapshots = &SnapshotOptions{Dirs: []string{t.TempDir()}}
	})
	return o, home
}

func countRuns(t *testing.T, home string) int {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(home, "runs"))
	return strings.Count(string(b), "\n")
}

func TestSnapshotStandsInForTheProfile(t *testing.T) {
	o, home := snapshotting(t, map[string]string{".bash_profile": "export V=1\necho x >> ~/runs\n"})
	for range 2 {
		res := run(t, o, ExecRequest{Argv: []string{"bash", "-lc", "echo $V"}})
		if got := string(res.Stdout.Data); got != "1\n" || res.ExitCode != 0 {
			t.Fatalf("bash -lc 'echo $V': %q, exit %d", got, res.ExitCode)
		}
	}
	if n := countRuns(t, home); n != 1 {
		t.Errorf("the profile ran %d times for 2 login shells, want once", n)
	}
	run(t, o, ExecRequest{Argv: []string{"bash", "-lc", "true"}, NoSnapshot: true})
	run(t, o, ExecRequest{Argv: []string{"bash", "-c", "true"}})
	run(t, o, ExecRequest{Argv: []string{"bash", "-l", "-c", "true"}}) // not the form execd rewrites
	if n := countRuns(t, home); n != 3 {
		t.Errorf("the profile ran %d times, want 3: with NoSnapshot, and for -l -c", n)
	}
	// A session's environment differs: a snapshot of its own.
	chunk, err := o.StartSession(t.Context(), SessionRequest{Argv: []string{"bash", "-lc", "echo $V $TERM"}, Yield: waitLimit})
	if err != nil || string(chunk.Output) != "1 dumb\n" {
		t.Fatalf("session: %v, %+v", err, chunk)
	}
	if n := countRuns(t, home); n != 4 {
		t.Errorf("the profile ran %d times, want 4", n)
	}
	// One with a terminal runs the profile, as it may do otherwise there.
	chunk, err = o.StartSession(t.Context(), SessionRequest{Argv: []string{"bash", "-lc", "echo $V"}, TTY: true, Yield: waitLimit})
	if err != nil || !strings.Contains(string(chunk.Output), "1") {
		t.Fatalf("terminal session: %v, %+v", err, chunk)
	}
	if n := countRuns(t, home); n != 5 {
		t.Errorf("the profile ran %d times, want 5: once for the terminal session", n)
	}
	path, why, _ := o.SnapshotStatus([]string{"bash", "-lc", "true"})
	if _, err := os.Stat(path); err != nil || why != "" {
		t.Errorf("SnapshotStatus = %q, %q: %v", path, why, err)
	}
}

func TestSnapshotsOff(t *testing.T) {
	o := newTest(t, nil)
	if _, why, _ := o.SnapshotStatus([]string{"bash", "-lc", "true"}); !strings.Contains(why, "shell.snapshot = false") {
		t.Errorf("without SnapshotOptions: %q", why)
	}
}

// TestSnapshotDirIsOutOfReach: the snapshots' directory is made in no
// writable root, and in no directory others may write.
func TestSnapshotDirIsOutOfReach(t *testing.T) {
	inRoot := t.TempDir() // under /tmp: a writable root
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil { // past the umask
		t.Fatal(err)
	}
	o := newTest(t, func(opts *Options) {
		opts.Sandbox = SandboxPolicy{Settings: sandbox.Settings{Mode: sandbox.WorkspaceWrite}, FailClosed: true}
		opts.Snapshots = &SnapshotOptions{Dirs: []string{inRoot, open, filepath.Join(inRoot, "missing")}}
	})
	if !o.Sandboxed() {
		t.Skipf("no sandbox on this kernel: %s", o.Support().Describe())
	}
	_, why, _ := o.SnapshotStatus([]string{"bash", "-lc", "true"})
	for _, want := range []string{inRoot + " (inside the writable root /tmp)", open + " (writable by others)", "missing (no such file or directory)"} {
		if !strings.Contains(why, want) {
			t.Errorf("why = %q; want it to say %q", why, want)
		}
	}
	entries, _ := os.ReadDir(inRoot)
	if len(entries) != 0 {
		t.Errorf("%s holds %v", inRoot, entries)
	}
}

func TestEnvPolicyKeeps(t *testing.T) {
	tests := []struct {
		p           EnvPolicy
		name, value string
		want        bool
	}{
		{EnvPolicy{}, "PATH", "/bin", true},
		{EnvPolicy{}, "GITHUB_TOKEN", "x", false},
		{EnvPolicy{}, "DATABASE_URL", "postgres://u:pw@db/x", false},
		{EnvPolicy{IgnoreDefaultExcludes: true}, "GITHUB_TOKEN", "x", true},
		{EnvPolicy{Exclude: []string{"AWS_*"}}, "AWS_REGION", "x", false},
		{EnvPolicy{IncludeOnly: []string{"PATH"}}, "NVM_DIR", "x", false},
		{EnvPolicy{IncludeOnly: []string{"PATH"}}, "PATH", "/bin", true},
		{EnvPolicy{Inherit: InheritNone}, "NVM_DIR", "x", true}, // not inherited: made by the profile
	}
	for _, tt := range tests {
		if got := tt.p.Keeps(tt.name, tt.value); got != tt.want {
			t.Errorf("%+v.Keeps(%s=%s) = %v, want %v", tt.p, tt.name, tt.value, got, tt.want)
		}
	}
}

func TestLoginFiles(t *testing.T) {
	o, home := snapshotting(t, map[string]string{
		".bash_profile": ". ~/.bashrc\nfor f in ~/.bashrc.d/*.sh; do . \"$f\"; done\n",
		".bashrc":       "export A=1\n",
	})
	if err := os.Mkdir(filepath.Join(home, ".bashrc.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".bashrc.d", "a.sh"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got := o.loginFiles("/bin/bash", home)
	for _, f := range []string{"/etc/profile", ".bash_profile", ".bash_login", ".profile", ".bashrc", ".bashrc.d", ".bashrc.d/a.sh"} {
		if !strings.HasPrefix(f, "/") {
			f = filepath.Join(home, f)
		}
		if !slices.Contains(got, f) {
			t.Errorf("loginFiles lacks %s: %q", f, got)
		}
	}
}

// TestCallEndedWhileASnapshotIsTakenStartsNothing: a call cancelled while
// it waits for a snapshot starts no command.
func TestCallEndedWhileASnapshotIsTakenStartsNothing(t *testing.T) {
	o, home := snapshotting(t, map[string]string{".bash_profile": "echo x >> ~/runs; sleep 100\n"})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := o.Exec(ctx, ExecRequest{Argv: []string{"bash", "-lc", "true"}})
		done <- err
	}()
	for deadline := time.Now().Add(waitLimit); countRuns(t, home) == 0; { // the snapshot's profile started
		if time.Now().After(deadline) {
			t.Fatal("the snapshot's profile did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Exec = %v, want the cancellation", err)
	}
	if n := countRuns(t, home); n != 1 {
		t.Errorf("the profile ran %d times, want once: for the snapshot, not for the cancelled call", n)
	}
}

// TestDeadExecdsSnapshotDirsAreRemoved: at start, the snapshot
// directories an execd killed by SIGKILL left are removed; a live one's
// stays.
func TestDeadExecdsSnapshotDirsAreRemoved(t *testing.T) {
	base := t.TempDir()
	// A PID no process has (this package's reaper reaps the children
	// of its tests: a child of ours cannot be waited for).
	gone := 4 << 20
	for !errors.Is(syscall.Kill(gone, 0), syscall.ESRCH) {
		gone--
	}
	dead := filepath.Join(base, "execd-snap-"+strconv.Itoa(gone)+"-123")
	live := filepath.Join(base, "execd-snap-"+strconv.Itoa(os.Getpid())+"-456")
	other := filepath.Join(base, "execd-snap-notapid")
	for _, d := range []string{dead, live, other} {
		if err := os.MkdirAll(filepath.Join(d, "1"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	newTest(t, func(opts *Options) { opts.Snapshots = &SnapshotOptions{Dirs: []string{base}} })
	if _, err := os.Stat(dead); err == nil {
		t.Errorf("%s, of a PID that is gone, is left", dead)
	}
	for _, d := range []string{live, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}

// TestSnapshotDirsShareNothing: snapshots are never kept in a directory
// others may write in, or below one (the user's other sandboxes, another
// execd's, write in /tmp): only the user's runtime directory and, for
// root, /run.
func TestSnapshotDirsShareNothing(t *testing.T) {
	inTmp := t.TempDir()
	dirs := defaultSnapshotDirs([]string{"XDG_RUNTIME_DIR=" + inTmp})
	for _, d := range dirs {
		if d == inTmp || d == os.TempDir() {
			t.Errorf("default snapshot directories %q hold %s, below the shared %s", dirs, d, os.TempDir())
		}
	}
	if got := sharedAbove(inTmp); got != os.TempDir() {
		t.Errorf("sharedAbove(%s) = %q, want %s", inTmp, got, os.TempDir())
	}
	o := newTest(t, func(opts *Options) { opts.Snapshots = &SnapshotOptions{Dirs: []string{os.TempDir()}} })
	if _, why, _ := o.SnapshotStatus([]string{"bash", "-lc", "true"}); !strings.Contains(why, os.TempDir()+" (writable by others)") {
		t.Errorf("the sticky %s was taken: %q", os.TempDir(), why)
	}
}
