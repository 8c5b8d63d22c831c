package sandbox

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	// Wrap starts /proc/self/exe, which is this test binary.
	if code, ok := Dispatch(); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// hostSupport probes this host, skipping the test when it cannot sandbox.
func hostSupport(t *testing.T) Support {
	t.Helper()
	s := Probe(func(cmd *exec.Cmd) error { return cmd.Run() })
	if err := s.Check(WorkspaceWrite); err != nil {
		t.Skipf("no sandbox on this kernel: %v", err)
	}
	return s
}

// runWrapped runs argv through the helper under p and returns its output,
// or the setup error.
func runWrapped(t *testing.T, sup Support, p Policy, dir string, argv ...string) (string, int, error) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, []string{"PATH=/usr/bin:/bin"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	l, err := Wrap(cmd, p, sup)
	if err != nil {
		t.Fatal(err)
	}
	err = cmd.Start()
	l.Started(err)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Await(10 * time.Second); err != nil {
		_ = cmd.Wait()
		return out.String(), -1, err
	}
	_ = cmd.Wait()
	return out.String(), cmd.ProcessState.ExitCode(), nil
}

// roots returns dirs as writable roots.
func roots(t *testing.T, dirs ...string) []Root {
	t.Helper()
	var out []Root
	for _, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		dev, ino := fileID(fi)
		out = append(out, Root{Path: d, Dev: dev, Ino: ino})
	}
	return out
}

func TestHelperExecsTheCommandItself(t *testing.T) {
	sup := hostSupport(t)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	cmd := exec.Command("/bin/sh", "-c", `echo "$$ $(pwd) $FOO"; grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status`)
	cmd.Dir, cmd.Env = dir, []string{"FOO=bar"}
	var out bytes.Buffer
	cmd.Stdout = &out
	l, err := Wrap(cmd, Policy{Mode: WorkspaceWrite, Roots: roots(t, dir)}, sup)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cmd.Args, " ") != "execd-sandbox "+HelperArg || len(cmd.Env) != 0 {
		t.Errorf("the helper's argv %q or env %q carries the policy", cmd.Args, cmd.Env)
	}
	err = cmd.Start()
	l.Started(err)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Await(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	want := strconv.Itoa(cmd.Process.Pid) + " " + dir + " bar\nNoNewPrivs:\t1\nSeccomp:\t2\n"
	if out.String() != want {
		t.Errorf("output %q, want %q (same pid, cwd and environment; no_new_privs; a filter)", out.String(), want)
	}
}

func TestHelperReportsSetupErrors(t *testing.T) {
	sup := hostSupport(t)
	dir := t.TempDir()
	tests := []struct {
		name, dir, prog string
		stage           string
		errno           syscall.Errno
	}{
		{"missing workdir", filepath.Join(dir, "gone"), "/bin/true", "chdir", syscall.ENOENT},
		{"missing program", dir, filepath.Join(dir, "no-such-program"), "exec", syscall.ENOENT},
		{"not executable", dir, "/etc/passwd", "exec", syscall.EACCES},
	}
	for _, tt := range tests {
		out, _, err := runWrapped(t, sup, Policy{Mode: ReadOnly}, tt.dir, tt.prog)
		var se *SetupError
		if !errors.As(err, &se) || se.Stage != tt.stage || !errors.Is(err, tt.errno) {
			t.Errorf("%s: err = %v, want a SetupError at %s with %v", tt.name, err, tt.stage, tt.errno)
		}
		if out != "" {
			t.Errorf("%s: the helper wrote %q to the command's output", tt.name, out)
		}
	}
}

func TestHelperRefusesARunWithoutAPolicy(t *testing.T) {
	cmd := exec.Command("/proc/self/exe", HelperArg)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != setupExitCode {
		t.Errorf("helper without descriptors: %v, want exit %d", err, setupExitCode)
	}
	if out.Len() != 0 {
		t.Errorf("helper without descriptors printed %q", out.String())
	}
}

func TestHelperEnforces(t *testing.T) {
	sup := hostSupport(t)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	outside, _ := filepath.EvalSymlinks(t.TempDir())
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	ws := Policy{Mode: WorkspaceWrite, Roots: roots(t, root), ProtectedNames: []string{".git"}}
	wsNet := ws
	wsNet.Network = true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	dial := "exec 3<>/dev/tcp/" + strings.Replace(ln.Addr().String(), ":", "/", 1)
	tests := []struct {
		name   string
		p      Policy
		script string
		ok     bool
	}{
		{"write in a root", ws, "echo x > in", true},
		{"write outside", ws, "echo x > " + outside + "/x", false},
		{"write a protected path", ws, "echo x > .git/config", !sup.UserNS},
		{"write /dev/null", Policy{Mode: ReadOnly}, "echo x > /dev/null", true},
		{"read-only write", Policy{Mode: ReadOnly}, "echo x > in2", false},
		{"TCP connect", ws, dial, false},
		{"TCP connect with the network on", wsNet, dial, true},
	}
	for _, tt := range tests {
		_, code, err := runWrapped(t, sup, tt.p, root, "/bin/bash", "-c", tt.script)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if (code == 0) != tt.ok {
			t.Errorf("%s: exit %d, want success %v", tt.name, code, tt.ok)
		}
	}
}
