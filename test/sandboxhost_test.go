package test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// nobody is the unprivileged uid and gid the sandbox tests also run as.
const nobody = 65534

// sandboxHost runs `execd sandbox` on this kernel as root or as an
// unprivileged user, from a directory of its own.
type sandboxHost struct {
	t      *testing.T
	nobody bool
	dir    string // config and HOME; under /tmp, so writable by default
	work   string // execd's --cwd, a writable root
	bin    string // execd, executable by the user
	probe  string // sandboxprobe, executable by the user
	// support is execd doctor's report, key → value.
	support map[string]string
	// env is added to execd's environment (a later duplicate wins).
	env []string
}

// asEachUser runs f as root and as nobody (the latter only when the tests
// run as root, which can switch to it with setpriv). It skips when this
// kernel cannot sandbox.
func asEachUser(t *testing.T, f func(t *testing.T, h *sandboxHost)) {
	for _, who := range []string{"root", "nobody"} {
		t.Run(who, func(t *testing.T) {
			h := newSandboxHost(t, who == "nobody")
			f(t, h)
		})
	}
}

func newSandboxHost(t *testing.T, asNobody bool) *sandboxHost {
	t.Helper()
	if asNobody {
		if os.Geteuid() != 0 {
			t.Skip("needs root to switch to an unprivileged uid; these tests already run unprivileged")
		}
		if _, err := exec.LookPath("setpriv"); err != nil {
			t.Fatal("setpriv is missing: make test installs util-linux")
		}
	}
	dir, err := os.MkdirTemp("", "execd-sbx-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	h := &sandboxHost{t: t, nobody: asNobody, dir: dir, work: filepath.Join(dir, "work"), bin: execdBin, probe: probeBin}
	for _, d := range []string{h.work, filepath.Join(dir, "home")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(h.path("config.toml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if asNobody {
		// The built binaries live in a directory only root may enter.
		h.bin, h.probe = h.path("execd"), h.path("sandboxprobe")
		copyFile(t, execdBin, h.bin)
		copyFile(t, probeBin, h.probe)
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		h.chown(dir, h.work, filepath.Join(dir, "home"))
	}
	h.support = h.doctor()
	if strings.Contains(h.support["sandbox"], "CANNOT BE ENFORCED") {
		t.Skipf("this kernel cannot sandbox: %s", h.support["sandbox"])
	}
	return h
}

// path is name inside the host's directory.
func (h *sandboxHost) path(name string) string { return filepath.Join(h.dir, name) }

// mkdir creates directories (and parents) that the user owns.
func (h *sandboxHost) mkdir(dirs ...string) {
	h.t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			h.t.Fatal(err)
		}
		h.chown(d)
	}
}

// writeFile writes a file that the user owns.
func (h *sandboxHost) writeFile(name, data string) {
	h.t.Helper()
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		h.t.Fatal(err)
	}
	h.chown(name)
}

func (h *sandboxHost) chown(paths ...string) {
	h.t.Helper()
	if !h.nobody {
		return
	}
	for _, p := range paths {
		if err := os.Lchown(p, nobody, nobody); err != nil {
			h.t.Fatal(err)
		}
	}
}

// absent reports each path that exists: a sandboxed command was let
// create it.
func (h *sandboxHost) absent(paths ...string) {
	h.t.Helper()
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			h.t.Errorf("%s exists: the sandbox let a command create it", p)
		}
	}
}

// needProtection skips a test of protected paths where they are not
// enforced (no user namespaces for this user): execd doctor says so.
func (h *sandboxHost) needProtection() {
	h.t.Helper()
	if h.support["user namespaces"] != "yes" {
		h.t.Skipf("protected paths are not enforced here: user namespaces %s", h.support["user namespaces"])
	}
}

// worktree makes a git worktree NAME of the repository main/ in the
// host's directory, the way git lays them out: NAME/.git names
// main/.git/worktrees/NAME, whose commondir names main/.git. It returns
// the worktree and main/.git.
func (h *sandboxHost) worktree(name string) (wt, common string) {
	h.t.Helper()
	wt, common = h.path(name), h.path("main/.git")
	gitdir := filepath.Join(common, "worktrees", name)
	h.mkdir(gitdir, filepath.Join(common, "hooks"), wt)
	h.writeFile(filepath.Join(gitdir, "HEAD"), "ref: refs/heads/main\n")
	h.writeFile(filepath.Join(gitdir, "commondir"), "../..\n")
	h.writeFile(filepath.Join(wt, ".git"), "gitdir: "+gitdir+"\n")
	h.chown(h.path("main"), common, filepath.Join(common, "worktrees")) // mkdir's parents
	return wt, common
}

// hostSh runs a bash script as the host's user, outside the sandbox, in
// dir, with the variables env, and returns its stdout without the final
// newline. git in it finds no configuration but the host's HOME.
func (h *sandboxHost) hostSh(dir, script string, env ...string) string {
	h.t.Helper()
	argv := []string{"bash", "-c", script}
	if h.nobody {
		argv = append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + h.path("home"), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}, env...)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			h.t.Fatalf("%s: %v: %s", script, err, ee.Stderr)
		}
		h.t.Fatalf("%s: %v", script, err)
	}
	return strings.TrimSuffix(string(out), "\n")
}

// serve starts execd serve as the user with config and the rules (in a
// rules file of the host's, listed in rules.files; none when empty) and
// connects a client that answers approvals with e (nil: a client that
// cannot be asked).
func (h *sandboxHost) serve(config, rules string, e *elicitor) *mcp.ClientSession {
	h.t.Helper()
	if rules != "" {
		f := h.path("test.rules")
		h.writeFile(f, rules)
		config += "\n[rules]\nfiles = [" + strconvQuote(f) + "]\n"
	}
	cmd := h.command(config, "serve")
	cmd.Stderr = &testLog{t: h.t}
	opts := &mcp.ClientOptions{}
	if e != nil {
		opts.ElicitationHandler = e.handle
	}
	return connect(h.t, cmd, opts, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
}

// outside runs argv as the host's user, outside any sandbox, and returns
// its output and exit code.
func (h *sandboxHost) outside(argv ...string) cliResult {
	h.t.Helper()
	if h.nobody {
		argv = append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	// nobody's login shell is nologin: programs that start one (tmux)
	// take $SHELL first.
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + h.path("home"), "SHELL=/bin/sh"}
	return runCmd(h.t, cmd)
}

// command returns execd ARGS... run as the user, with the host's config
// and cwd. The command name (args[0]) leads.
func (h *sandboxHost) command(config string, args ...string) *exec.Cmd {
	h.t.Helper()
	if err := os.WriteFile(h.path("config.toml"), []byte(config), 0o644); err != nil {
		h.t.Fatal(err)
	}
	argv := append([]string{h.bin, args[0], "--config", h.path("config.toml"), "--cwd", h.work}, args[1:]...)
	if h.nobody {
		argv = append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + h.path("home"), "XDG_CONFIG_HOME=" + h.path("home"), "LANG=C", noRaceExitSleep}
	cmd.Env = append(cmd.Env, h.env...)
	return cmd
}

// run runs execd ARGS... and returns its output and exit code.
func (h *sandboxHost) run(config string, args ...string) cliResult {
	h.t.Helper()
	return runCmd(h.t, h.command(config, args...))
}

// sh runs a bash script under `execd sandbox FLAGS... --`.
func (h *sandboxHost) sh(config, script string, flags ...string) cliResult {
	h.t.Helper()
	args := append(append([]string{"sandbox"}, flags...), "--", "bash", "-c", script)
	return h.run(config, args...)
}

// doctor runs execd doctor and returns its report.
func (h *sandboxHost) doctor() map[string]string {
	h.t.Helper()
	r := h.run("", "doctor")
	if r.code != 0 && r.code != 1 {
		h.t.Fatalf("execd doctor: %+v", r)
	}
	report := map[string]string{}
	for _, line := range strings.Split(r.stdout, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			report[k] = strings.TrimSpace(v)
		}
	}
	return report
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
