package sandbox

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startTestLauncher starts a launcher for p, skipping where the host has
// no PID namespace, and stops it at the test's end.
func startTestLauncher(t testing.TB, p Policy) *Launcher {
	t.Helper()
	sup := hostSupport(t)
	if !sup.PIDNS {
		t.Skipf("no PID namespace here: %s %s", sup.UserNSErr, sup.PIDNSErr)
	}
	l, err := NewLauncher(p, sup)
	if err != nil {
		t.Fatal(err)
	}
	err = l.Cmd.Start()
	l.Started(err)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		l.Stop()
		done := make(chan error, 1)
		go func() { done <- l.Cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = l.Cmd.Process.Kill()
			t.Error("the launcher did not exit when stopped")
		}
	})
	if err := l.Ready(10 * time.Second); err != nil {
		_ = l.Cmd.Process.Kill()
		t.Fatal(err)
	}
	return l
}

// launched runs argv through l in dir and returns its output and status.
func launched(t testing.TB, l *Launcher, dir string, argv ...string) (string, syscall.WaitStatus, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, []string{"PATH=/usr/bin:/bin", "FOO=bar"}, w, w
	proc, _, err := l.Launch(cmd, nil)
	w.Close()
	if err != nil {
		return "", 0, err
	}
	out, _ := io.ReadAll(r)
	<-proc.Done()
	return string(out), proc.Status(), nil
}

// A launcher runs each command in its PID namespace, with its pid known
// outside, its environment and cwd, and reports its exit status; setup
// failures are the helper's.
func TestLauncherRunsCommands(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	l := startTestLauncher(t, Policy{Mode: WorkspaceWrite, Roots: roots(t, dir)})
	out, st, err := launched(t, l, dir, "/bin/sh", "-c",
		`echo "$(pwd) $FOO"; grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status; ps -e -o pid=,comm=; exit 3`)
	if err != nil {
		t.Fatal(err)
	}
	if want := dir + " bar\nNoNewPrivs:\t1\nSeccomp:\t2\n"; !strings.HasPrefix(out, want) || st.ExitStatus() != 3 {
		t.Errorf("output %q status %v, want %q... and exit 3", out, st, want)
	}
	// The launcher as PID 1, sh and ps: no process of the host's.
	if ps := strings.Fields(out[strings.Index(out, "Seccomp"):]); len(ps) != 2+3*2 || ps[2] != "1" || ps[7] != "ps" {
		t.Errorf("ps in the launcher's namespace: %q", ps)
	}
	for _, tt := range []struct {
		dir, prog, stage string
		errno            syscall.Errno
	}{
		{filepath.Join(dir, "gone"), "/bin/true", "chdir", syscall.ENOENT},
		{dir, filepath.Join(dir, "no-such-program"), "exec", syscall.ENOENT},
		{dir, "/etc/passwd", "exec", syscall.EACCES},
	} {
		_, _, err := launched(t, l, tt.dir, tt.prog)
		var se *SetupError
		if !errors.As(err, &se) || se.Stage != tt.stage || !errors.Is(err, tt.errno) {
			t.Errorf("%s in %s: err = %v, want a SetupError at %s with %v", tt.prog, tt.dir, err, tt.stage, tt.errno)
		}
	}
	if _, st, err := launched(t, l, dir, "/bin/sh", "-c", "kill -9 $$"); err != nil || !st.Signaled() || st.Signal() != syscall.SIGKILL {
		t.Errorf("a command killed by a signal: %v %v", st, err)
	}
}

// A command's pid, as execd sees it, is the command's: a signal to its
// group ends it.
func TestLauncherPidIsExecds(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	l := startTestLauncher(t, Policy{Mode: WorkspaceWrite, Roots: roots(t, dir)})
	cmd := exec.Command("/bin/sleep", "1000")
	cmd.Dir, cmd.Env = dir, []string{}
	proc, _, err := l.Launch(cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	comm, _ := os.ReadFile("/proc/" + strconv.Itoa(proc.Pid()) + "/comm")
	if strings.TrimSpace(string(comm)) != "sleep" {
		t.Errorf("pid %d is %q, not the command", proc.Pid(), comm)
	}
	if err := syscall.Kill(-proc.Pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-proc.Done():
		if st := proc.Status(); !st.Signaled() || st.Signal() != syscall.SIGTERM {
			t.Errorf("status %v, want SIGTERM", st)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the command's end was not reported")
	}
}

// Covers holds until a protected name appears in a root (or a root is
// replaced): then the launcher no longer protects what a launch would.
func TestLauncherCovers(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	p := Policy{Mode: WorkspaceWrite, Roots: roots(t, dir), ProtectedNames: []string{".git"}}
	l := startTestLauncher(t, p)
	if !l.Covers(&p) {
		t.Fatal("a fresh launcher does not cover its own policy")
	}
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if l.Covers(&p) {
		t.Error("a launcher set up without .git covers a launch that would protect it")
	}
	l2 := startTestLauncher(t, p)
	if !l2.Covers(&p) {
		t.Error("a launcher set up with .git does not cover it")
	}
	out, st, err := launched(t, l2, dir, "/bin/sh", "-c", "touch .git/x 2>&1")
	if err != nil || st.ExitStatus() == 0 || !strings.Contains(out, "Read-only") {
		t.Errorf("writing into the protected .git: %q %v %v", out, st, err)
	}
	l.Retire()
	select {
	case <-l.gone:
	case <-time.After(10 * time.Second):
		t.Error("a retired launcher with nothing running did not exit")
	}
	if _, _, err := launched(t, l, dir, "/bin/true"); !errors.Is(err, ErrLauncherGone) {
		t.Errorf("a launch on a retired launcher: %v", err)
	}
}
