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
func hostSupport(t testing.TB) Support {
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
	return runWrappedAs(t, nil, sup, p, dir, argv...)
}

// runWrappedAs is runWrapped as the user cred (nil: this process's).
func runWrappedAs(t *testing.T, cred *syscall.Credential, sup Support, p Policy, dir string, argv ...string) (string, int, error) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, []string{"PATH=/usr/bin:/bin"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
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
func roots(t testing.TB, dirs ...string) []Root {
	t.Helper()
	var out []Root
	for _, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		dev, ino := FileID(fi)
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

// Where the helper has no namespaces of its own (no user namespaces for
// this user, or a security module that refuses mounting in them), a
// command could still make a user namespace of its own and with it every
// capability over fresh mount and network namespaces: the filter refuses
// it (SPEC §8.3). Run for real, as root and as nobody.
func TestHelperWithoutNamespacesRefusesThem(t *testing.T) {
	sup := hostSupport(t)
	if !sup.UserNS {
		t.Skip("user namespaces are off here: nothing for the filter to add")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare(1) is missing")
	}
	noNS := sup
	noNS.UserNS = false
	dir, err := os.MkdirTemp("", "execd-nons-") // t.TempDir's parent is root's alone
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	users := map[string]*syscall.Credential{"self": nil}
	if os.Geteuid() == 0 {
		users["nobody"] = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	for who, cred := range users {
		for _, script := range []string{"unshare -U true", "unshare -Ur true", "unshare -n true"} {
			out, code, err := runWrappedAs(t, cred, noNS, Policy{Mode: WorkspaceWrite, Roots: roots(t, dir)}, dir, "/bin/sh", "-c", script)
			if err != nil {
				t.Fatalf("%s: %s: %v", who, script, err)
			}
			if code == 0 || !strings.Contains(out, "Operation not permitted") {
				t.Errorf("%s: %s without the helper's namespaces: exit %d, %q; want it refused", who, script, code, out)
			}
		}
		// Threads and processes still start, through clone when clone3
		// says ENOSYS.
		out, code, err := runWrappedAs(t, cred, noNS, Policy{Mode: WorkspaceWrite, Roots: roots(t, dir)}, dir,
			"/bin/sh", "-c", "python3 -c 'import threading, subprocess; t = threading.Thread(target=print, args=(\"thread\",), kwargs={\"flush\": True}); t.start(); t.join(); subprocess.run([\"echo\", \"child\"])' 2>&1 || echo python3 missing")
		if err != nil || code != 0 || (out != "thread\nchild\n" && !strings.Contains(out, "python3 missing")) {
			t.Errorf("%s: threads and children: exit %d, %q, %v", who, code, out, err)
		}
	}
}
