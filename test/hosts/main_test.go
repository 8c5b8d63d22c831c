//go:build hosts

// Package hosts drives real agent hosts — the Codex CLI and Claude Code —
// with execd as their MCP server, in their non-interactive modes, against
// a scripted model: a small server on 127.0.0.1 that speaks the OpenAI
// Responses API to Codex and the Anthropic Messages API to Claude Code.
// The model calls execd's tools and the tests assert what each host sends
// back to it as the tool results, which is all a real model would see.
//
// The build tag keeps these tests out of `go test ./...`: they need the
// hosts, which `make test-hosts` installs from npm (pinned versions, into
// a cache folder) and names in HOSTS_CODEX and HOSTS_CLAUDE. Missing
// hosts fail the tests; they never skip. Nothing reaches the network: the
// hosts get a private HOME and configuration that turn off their update
// checks, telemetry and plugin syncs. HOSTS_TRANSCRIPT_DIR, when set,
// receives the tool results of each test, exactly as the model got them.
package hosts

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/execd/execd/internal/proctest"
)

// execdBin is the binary under test; codexBin and claudeBin are the hosts.
var execdBin, codexBin, claudeBin string

// noSandbox is, when execd cannot enforce its default sandbox on this
// kernel, what `execd doctor` says about it: every scenario runs commands
// in that sandbox, so the tests skip (STYLE §8), saying why.
var noSandbox string

// hostLimit only turns a hung host into a failure; it is no timing target.
const hostLimit = 5 * time.Minute

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	codexBin, claudeBin = os.Getenv("HOSTS_CODEX"), os.Getenv("HOSTS_CLAUDE")
	for name, bin := range map[string]string{"HOSTS_CODEX": codexBin, "HOSTS_CLAUDE": claudeBin} {
		if bin == "" {
			fmt.Fprintf(os.Stderr, "%s is not set: run `make test-hosts`, which installs the hosts and sets it\n", name)
			return 1
		}
		if _, err := os.Stat(bin); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			return 1
		}
	}
	dir, err := os.MkdirTemp("", "execd-hosts-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	execdBin = filepath.Join(dir, "execd")
	build := exec.Command("go", "build", "-trimpath", "-o", execdBin, "../../cmd/execd")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build execd: %v\n%s", err, out)
		return 1
	}
	doctor := exec.Command(execdBin, "doctor")
	doctor.Dir, doctor.Env = dir, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	if out, err := doctor.CombinedOutput(); err != nil {
		noSandbox = fmt.Sprintf("execd doctor: %v\n%s", err, out)
	}
	for _, bin := range []string{codexBin, claudeBin} {
		out, err := exec.Command(bin, "--version").CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s --version: %v\n%s", bin, err, out)
			return 1
		}
		fmt.Printf("host: %s\n", strings.TrimSpace(string(out)))
	}
	return m.Run()
}

// world is one test's private machine state: a HOME (with the XDG
// directories in it), the project directory the host runs in, which is
// execd's workspace, and execd's configuration file.
type world struct {
	Dir, Home, Work, ExecdConfig string
}

// newWorld makes a world with execd's configuration: the defaults (the
// workspace-write sandbox, approval policy on-request) plus extra.
func newWorld(t *testing.T, extra string) *world {
	t.Helper()
	if noSandbox != "" {
		t.Skipf("this kernel cannot enforce execd's sandbox:\n%s", noSandbox)
	}
	dir := t.TempDir()
	w := &world{Dir: dir, Home: filepath.Join(dir, "home"), Work: filepath.Join(dir, "work"), ExecdConfig: filepath.Join(dir, "execd.toml")}
	for _, d := range []string{w.Home, w.Work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w.write(t, "execd.toml", extra)
	return w
}

// write writes a file of the world, relative to its top directory.
func (w *world) write(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(w.Dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// env is the environment of a host: nothing of the caller's but PATH
// (which finds node, which the Codex package's launcher needs).
func (w *world) env(extra ...string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + w.Home,
		"XDG_CONFIG_HOME=" + filepath.Join(w.Home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(w.Home, ".cache"),
		"XDG_DATA_HOME=" + filepath.Join(w.Home, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(w.Home, ".local", "state"),
		"LANG=C.UTF-8",
		"TERM=dumb",
		"NO_COLOR=1",
	}
	if u := os.Getenv("USER"); u != "" {
		env = append(env, "USER="+u, "LOGNAME="+u)
	}
	return append(env, extra...)
}

// command is a host's command in the world: run in the project directory,
// in a process group of its own, with stdin /dev/null.
func (w *world) command(bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Dir = w.Work
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// runHost runs a host to its end and returns its stdout (see startHost).
func (w *world) runHost(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	w.startHost(t, cmd)()
	return stdout.String()
}

// startHost starts a host; its stderr goes to the test log. The returned
// wait waits for the host's end, then kills its process group and fails
// the test if it failed or if anything of the world is still running. A
// host still running after hostLimit is killed.
func (w *world) startHost(t *testing.T, cmd *exec.Cmd) (wait func()) {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	var timedOut atomic.Bool
	timer := time.AfterFunc(hostLimit, func() {
		timedOut.Store(true)
		killProcessGroup(cmd)
	})
	var waited bool
	t.Cleanup(func() {
		if !waited { // the test failed before it waited
			killProcessGroup(cmd)
			_ = cmd.Wait()
		}
	})
	name := filepath.Base(cmd.Path) + " " + strings.Join(cmd.Args[1:], " ")
	return func() {
		t.Helper()
		waited = true
		err := cmd.Wait()
		timer.Stop()
		killProcessGroup(cmd)
		if s := strings.TrimSpace(stderr.String()); s != "" {
			t.Logf("%s: stderr:\n%s", name, s)
		}
		if timedOut.Load() {
			t.Errorf("%s: killed after %v", name, hostLimit)
		} else if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		w.assertNothingLeft(t)
	}
}

// killProcessGroup kills what is left of a host's process group (a host
// that exited may leave children behind; execd is not among them once the
// host closed its stdin, and execd's commands are in its own containment).
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // ESRCH when the group is gone
	}
}

// leftoverLimit bounds the wait for execd to finish its shutdown once its
// host is gone (it gives commands 2 s after SIGTERM, SPEC §3.2).
const leftoverLimit = 30 * time.Second

// assertNothingLeft fails the test if a process of the world — one whose
// command line names its directory or whose working directory is in it,
// as for execd and every command it starts — outlives the host, and kills
// it.
func (w *world) assertNothingLeft(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(leftoverLimit)
	for {
		left := w.processes()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes outlived the host: %s", proctest.Describe(left))
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			return
		}
		time.Sleep(50 * time.Millisecond) // polling /proc: there is nothing to wait on for another process's end
	}
}

// processes lists the live processes of the world.
func (w *world) processes() []int {
	return proctest.FindFunc(func(pid int, cmdline string) bool {
		cwd, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
		return strings.Contains(cmdline, w.Dir) || cwd == w.Dir || strings.HasPrefix(cwd, w.Dir+"/")
	})
}

// transcript writes the tool results the model received to
// $HOSTS_TRANSCRIPT_DIR/<test>.txt, exactly: each as the host sent it
// (JSON) and as the text the model reads.
func transcript(t *testing.T, results []toolResult) {
	dir := os.Getenv("HOSTS_TRANSCRIPT_DIR")
	for i, r := range results {
		t.Logf("tool result %d as the model reads it:\n%s", i+1, r.Text)
	}
	if dir == "" {
		return
	}
	var b strings.Builder
	for i, r := range results {
		fmt.Fprintf(&b, "=== tool result %d, as sent (JSON)\n%s\n=== tool result %d, as read (text blocks joined)\n%s\n", i+1, r.Raw, i+1, r.Text)
	}
	name := strings.ReplaceAll(t.Name(), "/", "-") + ".txt"
	err := os.MkdirAll(dir, 0o755)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644)
	}
	if err != nil {
		t.Errorf("transcript: %v", err)
	}
}

// exists reports whether path exists, failing the test on errors other
// than its absence.
func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}
