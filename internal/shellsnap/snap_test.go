package shellsnap

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// direct is a Runner that runs the shell as a child of the test, in a
// process group of its own that ctx's end kills.
func direct(ctx context.Context, argv, env []string, dir string) (Result, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	res := Result{Stdout: out.Bytes(), Stderr: errb.Bytes(), TimedOut: ctx.Err() != nil}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
	case err != nil && !res.TimedOut:
		return res, err
	}
	return res, nil
}

// shellPath returns the shell's path, skipping the test when it is not
// installed.
func shellPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed", name)
	}
	return p
}

// profiles are, for each kind, startup files that change PATH, export
// variables (with quotes and newlines), define functions (one lazy, as
// nvm's), aliases, options and the umask, and unset a variable.
var profiles = map[Kind]map[string]string{
	Bash: {".bash_profile": `export PATH="$HOME/bin:$PATH"
export GREETING='hello '"'"'world'"'"'
two lines'
greet() { echo "hi $1"; }
export -f greet
nvm() { unset -f nvm; . "$HOME/lazy.sh"; nvm "$@"; }
alias ll='ls -l'
alias q="echo 'quoted' \$HOME"
set -o pipefail
shopt -s extglob
umask 027
unset UNWANTED
. "$HOME/.bashrc"
`, ".bashrc": "export FROM_BASHRC=1\nshopt -s globstar\n"},
	Zsh: {".zshenv": "export FROM_ZSHENV=1\n", ".zprofile": `path=($HOME/bin $path)
export GREETING='hello '"'"'world'"'"'
two lines'
greet() { echo "hi $1"; }
nvm() { unfunction nvm; . "$HOME/lazy.sh"; nvm "$@"; }
alias ll='ls -l'
alias -g GG='| grep'
alias -s txt=cat
setopt extendedglob pipefail
fpath=($HOME/fn $fpath)
autoload -Uz myfn
umask 027
unset UNWANTED
`, ".zlogin": "export FROM_ZLOGIN=1\n"},
	Sh: {".profile": `PATH="$HOME/bin:$PATH"; export PATH
export GREETING='hello '"'"'world'"'"'
two lines'
alias ll='ls -l'
alias q="echo 'quoted'"
set -o noglob
umask 027
unset UNWANTED
`},
}

// probes print the state a script sees, for each kind.
var probes = map[Kind]string{
	Bash: `env -0 | LC_ALL=C sort -z | tr '\0' '\n'; echo ---; declare -f; echo ---; alias -p; echo ---; set +o; shopt -p; echo ---; umask; echo "$0 $# $-"; type greet | head -1`,
	Zsh:  `env -0 | LC_ALL=C sort -z | tr '\0' '\n'; echo ---; typeset -f; echo ---; alias -L; alias -sL; echo ---; for o in ${(ko)options}; do print $o=$options[$o]; done; echo ---; umask; echo $FPATH; echo "$0 $# $-"`,
	Sh:   `env -0 | LC_ALL=C sort -z | tr '\0' '\n'; echo ---; alias; echo ---; set +o; echo ---; umask; echo "$0 $#"`,
}

// home makes a home directory with files.
func home(t *testing.T, files map[string]string) string {
	t.Helper()
	h := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(h, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// testEnv is a small environment for shells with home h.
func testEnv(h string) []string {
	return []string{"HOME=" + h, "PATH=/usr/local/bin:/usr/bin:/bin", "UNWANTED=1", "LANG=C.UTF-8"}
}

func newCache(t *testing.T, opts Options) *Cache {
	t.Helper()
	opts.Dir = t.TempDir()
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func request(kind Kind, shell, h string, files ...string) Request {
	var paths []string
	for _, f := range files {
		paths = append(paths, filepath.Join(h, f))
	}
	return Request{Kind: kind, Shell: shell, Scope: "test", Env: testEnv(h), Dir: h,
		Files: func() []string { return paths }, Run: direct}
}

// run runs argv with env in dir and returns its output, failing on
// anything on stderr.
func run(t *testing.T, argv, env []string, dir string) string {
	t.Helper()
	res, err := direct(context.Background(), argv, env, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stderr) > 0 || res.ExitCode != 0 {
		t.Fatalf("%q: status %d, stderr %q", argv, res.ExitCode, res.Stderr)
	}
	return string(res.Stdout)
}

// TestEquivalence runs a probe as a login shell and with the snapshot and
// compares what it sees: variables, functions, aliases, options, umask,
// $0, $# and $-.
func TestEquivalence(t *testing.T) {
	for _, kind := range []Kind{Bash, Zsh, Sh} {
		t.Run(string(kind), func(t *testing.T) {
			shell := shellPath(t, map[Kind]string{Bash: "bash", Zsh: "zsh", Sh: "dash"}[kind])
			h := home(t, profiles[kind])
			var files []string
			for f := range profiles[kind] {
				files = append(files, f)
			}
			c := newCache(t, Options{})
			req := request(kind, shell, h, files...)
			snap, why := c.Get(context.Background(), req)
			if snap == nil {
				t.Fatalf("no snapshot: %s", why)
			}
			argv := []string{shell, "-lc", probes[kind]}
			want := run(t, argv, req.Env, h)
			sargv, senv := snap.Command(argv, req.Env)
			got := run(t, sargv, senv, h)
			if got != want {
				t.Errorf("with the snapshot:\n%s\nwant (-lc):\n%s", got, want)
			}
			for _, s := range []string{"GREETING=hello 'world'\ntwo lines", "ll=", "027"} {
				if !strings.Contains(got, s) {
					t.Errorf("the probe's output lacks %q:\n%s", s, got)
				}
			}
			if strings.Contains(got, "UNWANTED") {
				t.Errorf("UNWANTED, which the profile unsets, is set:\n%s", got)
			}
		})
	}
}

// TestScripts runs scripts whose quoting, exit status, traps and errors
// must come out as under -lc.
func TestScripts(t *testing.T) {
	scripts := []string{
		`echo "it's"; echo 'a"b'`,
		"echo one\necho two",
		"cat <<'EOF'\n$HOME 'x'\nEOF",
		"cat <<EOF\n$GREETING\nEOF",
		"exit 3",
		"false",
		`echo $$ >/dev/null; echo "$0" "$#"`,
		`trap 'echo bye' EXIT; echo hi`,
		`set -e; false; echo not reached`,
		`echo (`,
		`ll /dev/null`,
		`echo "$@" $1`,
		"# just a comment",
		"",
	}
	for _, kind := range []Kind{Bash, Zsh, Sh} {
		t.Run(string(kind), func(t *testing.T) {
			shell := shellPath(t, map[Kind]string{Bash: "bash", Zsh: "zsh", Sh: "dash"}[kind])
			h := home(t, profiles[kind])
			c := newCache(t, Options{})
			req := request(kind, shell, h)
			snap, why := c.Get(context.Background(), req)
			if snap == nil {
				t.Fatalf("no snapshot: %s", why)
			}
			for _, script := range scripts {
				argv := []string{shell, "-lc", script}
				want, err := direct(context.Background(), argv, req.Env, h)
				if err != nil {
					t.Fatal(err)
				}
				sargv, senv := snap.Command(argv, req.Env)
				got, err := direct(context.Background(), sargv, senv, h)
				if err != nil {
					t.Fatal(err)
				}
				// sh's eval names itself in its errors.
				gotErr := strings.ReplaceAll(string(got.Stderr), " eval:", "")
				if string(got.Stdout) != string(want.Stdout) || gotErr != string(want.Stderr) || got.ExitCode != want.ExitCode {
					t.Errorf("%q: got %d %q %q, want %d %q %q", script, got.ExitCode, got.Stdout, got.Stderr,
						want.ExitCode, want.Stdout, want.Stderr)
				}
			}
		})
	}
}

// counting wraps direct and counts the dumps it runs.
type counting struct{ dumps atomic.Int32 }

func (c *counting) run(ctx context.Context, argv, env []string, dir string) (Result, error) {
	if strings.Contains(argv[len(argv)-1], "-end") {
		c.dumps.Add(1)
	}
	return direct(ctx, argv, env, dir)
}

// get returns the snapshot of req, failing without one.
func get(t *testing.T, c *Cache, req Request) *Snapshot {
	t.Helper()
	snap, why := c.Get(context.Background(), req)
	if snap == nil {
		t.Fatalf("no snapshot: %s", why)
	}
	return snap
}

// probe runs script through snap as req's login shell and returns its
// stdout.
func probe(t *testing.T, snap *Snapshot, req Request, script string) string {
	t.Helper()
	argv, env := snap.Command([]string{req.Shell, "-lc", script}, req.Env)
	return run(t, argv, env, req.Dir)
}

func TestRefreshWhenAStartupFileChanges(t *testing.T) {
	bash := shellPath(t, "bash")
	h := home(t, map[string]string{".bash_profile": ". ~/.bashrc\n", ".bashrc": "export V=one\n"})
	var n counting
	c := newCache(t, Options{})
	req := request(Bash, bash, h, ".bash_profile", ".bashrc", ".bash_login")
	req.Run = n.run
	if got := probe(t, get(t, c, req), req, "echo $V"); got != "one\n" {
		t.Fatalf("V = %q, want one", got)
	}
	get(t, c, req)
	if n.dumps.Load() != 1 {
		t.Fatalf("%d snapshots taken of files that did not change, want 1", n.dumps.Load())
	}
	if err := os.WriteFile(filepath.Join(h, ".bashrc"), []byte("export V=three\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := probe(t, get(t, c, req), req, "echo $V"); got != "three\n" {
		t.Errorf("after .bashrc changed, V = %q, want three", got)
	}
	// A file that appears: bash reads .bash_profile first, so a new
	// .bash_login changes nothing it reads, but it is one of its files.
	if err := os.WriteFile(filepath.Join(h, ".bash_login"), []byte("export V=four\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	get(t, c, req)
	if n.dumps.Load() != 3 {
		t.Errorf("%d snapshots taken, want 3 (one for each change)", n.dumps.Load())
	}
}

func TestTTL(t *testing.T) {
	bash := shellPath(t, "bash")
	h := home(t, map[string]string{".bash_profile": "export V=1\n"})
	for _, tt := range []struct {
		ttl   time.Duration
		dumps int32
	}{{time.Nanosecond, 3}, {time.Hour, 1}} {
		var n counting
		c := newCache(t, Options{TTL: tt.ttl})
		req := request(Bash, bash, h, ".bash_profile")
		req.Run = n.run
		for range 3 {
			get(t, c, req)
		}
		if got := n.dumps.Load(); got != tt.dumps {
			t.Errorf("TTL %v: %d snapshots taken by 3 calls, want %d", tt.ttl, got, tt.dumps)
		}
	}
}

// TestFallback: profiles that cannot be snapshotted, and why.
func TestFallback(t *testing.T) {
	bash := shellPath(t, "bash")
	dash := shellPath(t, "dash")
	tests := []struct {
		name, shell, file, profile, why string
	}{
		{"fails", bash, ".bash_profile", "exit 1\n", "exited with status 1"},
		{"hangs", bash, ".bash_profile", "sleep 100\n", "did not finish within"},
		{"prints", bash, ".bash_profile", "echo Welcome\n", `prints to stdout ("Welcome")`},
		{"prints to stderr", bash, ".bash_profile", "echo oops >&2\n", `prints to stderr ("oops")`},
		{"prints at exit", bash, ".bash_profile", "trap 'echo bye' EXIT\n", `prints to stdout ("bye")`},
		{"changes directory", bash, ".bash_profile", "cd /\n", "changes the directory (to /)"},
		{"defines builtin", bash, ".bash_profile", "builtin() { command builtin \"$@\"; }\n", "defines a function named builtin"},
		{"sh functions", dash, ".profile", "nvm() { :; }\n", "defines shell functions (nvm), which sh cannot list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind := Bash
			if tt.shell == dash {
				kind = Sh
			}
			h := home(t, map[string]string{tt.file: tt.profile})
			c := newCache(t, Options{Timeout: 500 * time.Millisecond})
			snap, why := c.Get(context.Background(), request(kind, tt.shell, h, tt.file))
			if snap != nil || !strings.Contains(why, tt.why) {
				t.Errorf("Get = %v, %q; want none, %q", snap, why, tt.why)
			}
		})
	}
}

// TestFailureTakenOnce: a profile that cannot be snapshotted is not
// tried again for every call, and is logged once.
func TestFailureTakenOnce(t *testing.T) {
	bash := shellPath(t, "bash")
	h := home(t, map[string]string{".bash_profile": "echo hello\n"})
	core, logs := observer.New(zap.WarnLevel)
	var n counting
	c := newCache(t, Options{Logger: zap.New(core)})
	req := request(Bash, bash, h, ".bash_profile")
	req.Run = n.run
	for range 3 {
		if snap, _ := c.Get(context.Background(), req); snap != nil {
			t.Fatal("a snapshot of a profile that prints")
		}
	}
	// Changed, and still printing: taken again, not logged again.
	if err := os.WriteFile(filepath.Join(h, ".bash_profile"), []byte("echo hello again\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.Get(context.Background(), req)
	if n.dumps.Load() != 2 {
		t.Errorf("%d dumps, want 2", n.dumps.Load())
	}
	if logs.Len() != 2 {
		t.Errorf("%d warnings, want 2 (one for each reason): %v", logs.Len(), logs.All())
	}
}

// TestOneTakeForConcurrentCalls: calls that come while a snapshot is
// being taken wait for it.
func TestOneTakeForConcurrentCalls(t *testing.T) {
	bash := shellPath(t, "bash")
	h := home(t, map[string]string{".bash_profile": "export V=1\n"})
	var n counting
	c := newCache(t, Options{})
	req := request(Bash, bash, h, ".bash_profile")
	req.Run = n.run
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if snap, why := c.Get(context.Background(), req); snap == nil {
				t.Errorf("no snapshot: %s", why)
			}
		})
	}
	wg.Wait()
	if n.dumps.Load() != 1 {
		t.Errorf("%d snapshots taken for 8 concurrent calls, want 1", n.dumps.Load())
	}
}

// TestWaitIsBounded: a caller waits for a snapshot that hangs no longer
// than the bound, and a cancelled caller returns at once.
func TestWaitIsBounded(t *testing.T) {
	bash := shellPath(t, "bash")
	h := home(t, map[string]string{".bash_profile": "sleep 100\n"})
	c := newCache(t, Options{Timeout: 200 * time.Millisecond})
	req := request(Bash, bash, h, ".bash_profile")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if snap, why := c.Get(ctx, req); snap != nil || !strings.Contains(why, "call ended") {
		t.Errorf("cancelled Get = %v, %q", snap, why)
	}
	if snap, why := c.Get(context.Background(), req); snap != nil || !strings.Contains(why, "did not finish") {
		t.Errorf("Get = %v, %q; want none: the profile did not finish", snap, why)
	}
}

// TestSecretsAreNotCarried: the filter decides which exported variables
// the snapshot sets.
func TestSecretsAreNotCarried(t *testing.T) {
	bash := shellPath(t, "bash")
	h := home(t, map[string]string{".bash_profile": "export GITHUB_TOKEN=s3cret OTHER=fine\n"})
	c := newCache(t, Options{Keep: func(name, _ string) bool { return !strings.Contains(name, "TOKEN") }})
	req := request(Bash, bash, h, ".bash_profile")
	snap := get(t, c, req)
	if got := probe(t, snap, req, "echo ${GITHUB_TOKEN-unset} $OTHER"); got != "unset fine\n" {
		t.Errorf("probe = %q, want the secret unset and OTHER set", got)
	}
	b, err := os.ReadFile(snap.Path())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "s3cret") {
		t.Errorf("the snapshot holds the secret:\n%s", b)
	}
}

// TestFiles: snapshots are private files in the cache's directory, gone
// after Close; Get then takes none.
func TestFiles(t *testing.T) {
	for _, name := range []string{"bash", "zsh"} {
		shell := shellPath(t, name)
		h := home(t, map[string]string{".bash_profile": "export V=1\n", ".zprofile": "export V=1\n"})
		dir := filepath.Join(t.TempDir(), "snaps")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		c, err := New(Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		req := request(Kind(name), shell, h)
		snap := get(t, c, req)
		err = filepath.Walk(snap.Path(), func(p string, fi os.FileInfo, err error) error {
			switch {
			case err != nil:
				return err
			case !strings.HasPrefix(p, dir+"/"):
				t.Errorf("%s is outside %s", p, dir)
			case fi.IsDir() && fi.Mode().Perm() != 0o700, !fi.IsDir() && fi.Mode().Perm() != 0o600:
				t.Errorf("%s has mode %v", p, fi.Mode())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after Close, %s: %v", dir, err)
		}
		if snap, _ := c.Get(context.Background(), req); snap != nil {
			t.Error("Get after Close gave a snapshot")
		}
	}
}

func TestParseFindsPrintedText(t *testing.T) {
	tests := []struct {
		stdout, stderr string
		stream, text   string
	}{
		{"motd\nM\x00", "", "stdout", "motd"},
		{"motd", "", "stdout", "motd"},
		{"M\x00M-end\x00bye\n", "", "stdout", "bye"},
		{"M\x00", "warning: x\n", "stderr", "warning: x"},
	}
	for _, tt := range tests {
		_, err := Parse(Bash, "M", []byte(tt.stdout), []byte(tt.stderr))
		var pe *PrintedError
		if !errors.As(err, &pe) || pe.Stream != tt.stream || pe.Text != tt.text {
			t.Errorf("Parse(%q, %q) = %v; want %s printed %q", tt.stdout, tt.stderr, err, tt.stream, tt.text)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("M\x00opt\x00set -o errexit\n\x00pwd\x00/\n\x00umask\x000022\n\x00env\x00A=b\x00M-end\x00"), byte(0))
	f.Add([]byte("M\x00alias\x00a='x'\"'\"'y'\nb='1\n2'\n\x00envz\x00A=1\x00M-env0\x00pwd\x00/\x00umask\x00022\x00M-end\x00"), byte(2))
	f.Fuzz(func(t *testing.T, stdout []byte, k byte) {
		kind := []Kind{Bash, Zsh, Sh}[int(k)%3]
		st, err := Parse(kind, "M", stdout, nil)
		if err == nil {
			render(kind, st, []string{"A=1"}, func(string, string) bool { return true })
		}
	})
}

func TestShAliases(t *testing.T) {
	got, err := shAliases("a='x '\"'\"'y'\nb='1\n2'\nalias c='it'\\''s'\n")
	want := "alias 'a=x '\\''y'\nalias 'b=1\n2'\nalias 'c=it'\\''s'\n"
	if err != nil || got != want {
		t.Errorf("shAliases = %q, %v; want %q", got, err, want)
	}
}

// TestTransientFailureIsRetried: a shell that could not be run at all is
// tried again by the next call.
func TestTransientFailureIsRetried(t *testing.T) {
	bash := shellPath(t, "bash")
	h := home(t, map[string]string{".bash_profile": "export V=1\n"})
	c := newCache(t, Options{})
	req := request(Bash, bash, h, ".bash_profile")
	var fail atomic.Bool
	fail.Store(true)
	req.Run = func(ctx context.Context, argv, env []string, dir string) (Result, error) {
		if fail.Load() {
			return Result{}, errors.New("no such directory")
		}
		return direct(ctx, argv, env, dir)
	}
	if snap, why := c.Get(context.Background(), req); snap != nil || !strings.Contains(why, "no such directory") {
		t.Fatalf("Get = %v, %q", snap, why)
	}
	fail.Store(false)
	get(t, c, req)
}

// TestEntriesAreBounded: past maxEntries, the snapshot taken longest ago
// is forgotten.
func TestEntriesAreBounded(t *testing.T) {
	bash := shellPath(t, "bash")
	h := home(t, map[string]string{".bash_profile": "export V=1\n"})
	c := newCache(t, Options{})
	req := request(Bash, bash, h, ".bash_profile")
	var first *Snapshot
	for i := range maxEntries + 1 {
		req.Scope = strconv.Itoa(i)
		snap := get(t, c, req)
		if i == 0 {
			first = snap
		}
	}
	c.mu.Lock()
	n, old := len(c.entries), slices.Clone(c.old)
	c.mu.Unlock()
	if n != maxEntries || len(old) != 1 || old[0].path != first.path {
		t.Errorf("%d snapshots kept, %v to remove; want %d, the first one's", n, old, maxEntries)
	}
}

// TestRender: what a snapshot sets of the exported variables.
func TestRender(t *testing.T) {
	st := &state{umask: "0022", pwd: "/", env: map[string]string{
		"SAME": "1", "CHANGED": "new", "ADDED": "it's", "SECRET_TOKEN": "x", "PWD": "/elsewhere", "SHLVL": "9",
		"BASH_SILENCE_DEPRECATION_WARNING": "1"}}
	got := render(Bash, st, []string{"SAME=1", "CHANGED=old", "GONE=1", "PWD=/", "SHLVL=1", "BASH_FUNC_f%%=() { :; }"},
		func(name, _ string) bool { return !strings.Contains(name, "TOKEN") })
	for _, want := range []string{"unset BASH_ENV\n", "export ADDED='it'\\''s'\n", "export CHANGED='new'\n",
		"export BASH_SILENCE_DEPRECATION_WARNING='1'\n", "unset GONE\n", "umask 0022\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("the snapshot lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"SAME", "SECRET", "PWD", "SHLVL", "BASH_FUNC"} {
		if strings.Contains(got, not) {
			t.Errorf("the snapshot sets %s:\n%s", not, got)
		}
	}
}

// TestProfileFunctionsDoNotStandInForBuiltins: a profile that defines
// functions named as the builtins a snapshot calls (umask, export,
// alias, shopt, setopt, set, unset) after using them gets the state the
// builtins left, not what the functions would do, and a function used
// in the body of another sees the extglob it was defined with.
func TestProfileFunctionsDoNotStandInForBuiltins(t *testing.T) {
	profiles := map[Kind]string{
		Bash: `shopt -s extglob
umask 027
export V=1
alias ll='ls -l'
set -o pipefail
unset UNWANTED
isnum() { case $1 in +([0-9])) echo yes;; *) echo no;; esac; }
umask() { builtin umask 077; }
export() { :; }
alias() { :; }
shopt() { :; }
set() { :; }
unset() { :; }
declare() { :; }
`,
		Zsh: `setopt extendedglob pipefail
umask 027
export V=1
alias ll='ls -l'
unset UNWANTED
umask() { builtin umask 077 }
export() { : }
alias() { : }
setopt() { : }
unsetopt() { : }
unset() { : }
typeset() { : }
autoload() { : }
`,
	}
	probes := map[Kind]string{
		Bash: `builtin umask; builtin shopt -p extglob; builtin set -o | grep pipefail; echo "V=$V U=${UNWANTED-unset}"; builtin alias -p; isnum 42`,
		Zsh:  `builtin umask; [[ -o extendedglob ]] && echo extendedglob; [[ -o pipefail ]] && echo pipefail; echo "V=$V U=${UNWANTED-unset}"; builtin alias -L`,
	}
	for _, kind := range []Kind{Bash, Zsh} {
		t.Run(string(kind), func(t *testing.T) {
			shell := shellPath(t, string(kind))
			h := home(t, map[string]string{map[Kind]string{Bash: ".bash_profile", Zsh: ".zprofile"}[kind]: profiles[kind]})
			c := newCache(t, Options{})
			req := request(kind, shell, h)
			snap := get(t, c, req)
			want := run(t, []string{shell, "-lc", probes[kind]}, req.Env, h)
			if got := probe(t, snap, req, probes[kind]); got != want {
				t.Errorf("with the snapshot:\n%s\nwant (-lc):\n%s", got, want)
			}
			if !strings.Contains(want, "027\n") || !strings.Contains(want, "V=1 U=unset") {
				t.Errorf("the profile did not leave what the test expects:\n%s", want)
			}
		})
	}
}

// TestSizeIsBounded: a profile that leaves more than MaxSize of state is
// not snapshotted.
func TestSizeIsBounded(t *testing.T) {
	bash := shellPath(t, "bash")
	h := home(t, map[string]string{".bash_profile": `export BIG="$(head -c 600000 /dev/zero | tr '\0' x)"` + "\n"})
	c := newCache(t, Options{})
	snap, why := c.Get(context.Background(), request(Bash, bash, h, ".bash_profile"))
	if snap != nil || !strings.Contains(why, "more than 512 KiB") {
		t.Errorf("Get = %v, %q; want none: too large", snap, why)
	}
	if entries, _ := os.ReadDir(c.Dir()); len(entries) != 0 {
		t.Errorf("%s holds %d files", c.Dir(), len(entries))
	}
}

// TestSupersededAreBounded: snapshots replaced in quick succession (a
// profile that keeps changing) leave at most maxSuperseded files behind.
func TestSupersededAreBounded(t *testing.T) {
	bash := shellPath(t, "bash")
	h := home(t, map[string]string{".bash_profile": "export V=1\n"})
	c := newCache(t, Options{TTL: time.Nanosecond})
	req := request(Bash, bash, h, ".bash_profile")
	for range maxSuperseded + 8 {
		get(t, c, req)
	}
	entries, _ := os.ReadDir(c.Dir())
	if len(entries) > maxSuperseded+1 {
		t.Errorf("%d files after %d snapshots replaced each other, want at most %d", len(entries), maxSuperseded+8, maxSuperseded+1)
	}
}

// TestKeptByDirectory: a profile that reads a file of the directory it
// starts in (mise's or a .localenv) gets a snapshot for each directory.
func TestKeptByDirectory(t *testing.T) {
	bash := shellPath(t, "bash")
	h := home(t, map[string]string{".bash_profile": `[ -f "$PWD/.localenv" ] && . "$PWD/.localenv"; export V="${V-none}"` + "\n"})
	project := filepath.Join(h, "project")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, ".localenv"), []byte("V=project\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newCache(t, Options{})
	for _, tt := range []struct{ dir, want string }{{h, "none\n"}, {project, "project\n"}, {h, "none\n"}} {
		req := request(Bash, bash, h, ".bash_profile")
		req.Dir = tt.dir
		if got := probe(t, get(t, c, req), req, "echo $V"); got != tt.want {
			t.Errorf("in %s V = %q, want %q", tt.dir, got, tt.want)
		}
	}
}

// TestFIFOStartupFile: a FIFO put where a startup file may be (sh's
// files are read for their functions) neither hangs the take nor Close.
func TestFIFOStartupFile(t *testing.T) {
	dash := shellPath(t, "dash")
	h := home(t, map[string]string{".profile": "export V=1\n"})
	fifo := filepath.Join(h, ".shinit")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	c := newCache(t, Options{Timeout: time.Second})
	t.Cleanup(func() { // a take blocked on it gets its writer, so that Close returns
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	req := request(Sh, dash, h, ".profile", ".shinit")
	if snap, why := c.Get(context.Background(), req); snap == nil {
		t.Errorf("no snapshot: %s", why)
	}
}

// TestKeptByPhysicalDirectory: a workdir through a symlink that a
// command retargets gets the snapshot of the directory it leads to.
func TestKeptByPhysicalDirectory(t *testing.T) {
	bash := shellPath(t, "bash")
	h := home(t, map[string]string{".bash_profile": `[ -f .localenv ] && . ./.localenv; export V="${V-none}"` + "\n"})
	for _, d := range []string{"a", "b"} {
		if err := os.Mkdir(filepath.Join(h, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(h, d, ".localenv"), []byte("V="+d+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(h, "link")
	c := newCache(t, Options{})
	for _, target := range []string{"a", "b"} {
		os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		req := request(Bash, bash, h, ".bash_profile")
		req.Dir = link
		if got := probe(t, get(t, c, req), req, "echo $V"); got != target+"\n" {
			t.Errorf("through the link to %s V = %q, want %s", target, got, target)
		}
	}
}

// TestZshStubTextInAFunction: a function whose text holds what looks
// like an autoload stub (in a string) is carried as it is; a real stub
// is marked for autoloading again.
func TestZshStubTextInAFunction(t *testing.T) {
	zsh := shellPath(t, "zsh")
	h := home(t, map[string]string{".zprofile": "f() { print -r -- 'head\nx () {\n\t# undefined\n\tbuiltin autoload -X\n}\ntail' }\nautoload -Uz myfn\n"})
	c := newCache(t, Options{})
	req := request(Zsh, zsh, h)
	snap := get(t, c, req)
	script := "f; typeset -f myfn"
	want := run(t, []string{zsh, "-lc", script}, req.Env, h)
	if got := probe(t, snap, req, script); got != want {
		t.Errorf("with the snapshot:\n%s\nwant (-lc):\n%s", got, want)
	}
}
