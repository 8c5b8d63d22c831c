package test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Shell snapshots (SPEC §9.1): a login shell sources what the profile
// left instead of running it, with the same result.

// snapshotHost is a sandbox host (root) whose home holds files.
func snapshotHost(t *testing.T, files map[string]string) *sandboxHost {
	t.Helper()
	h := newSandboxHost(t, false)
	for name, text := range files {
		h.writeFile(filepath.Join(h.path("home"), name), text)
	}
	return h
}

// recordLog is execd's stderr: in the test log, and kept.
type recordLog struct {
	testLog
	mu  sync.Mutex
	all bytes.Buffer
}

func (l *recordLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.all.Write(p)
	l.mu.Unlock()
	return l.testLog.Write(p)
}

func (l *recordLog) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.all.String(), s)
}

// serveLogged is h.serve (no rules, no approvals) with execd's stderr
// kept.
func (h *sandboxHost) serveLogged(config string) (*mcp.ClientSession, *recordLog) {
	h.t.Helper()
	cmd := h.command(config, "serve")
	l := &recordLog{testLog: testLog{t: h.t}}
	cmd.Stderr = l
	h.t.Cleanup(l.stop) // after connect's: once execd exited
	return connect(h.t, cmd, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"}), l
}

// login runs script through exec_command as a login shell of shell and
// returns its output; it fails unless it exited 0.
func login(t *testing.T, cs *mcp.ClientSession, shell, script string) string {
	t.Helper()
	text, st, isErr := session(t, cs, "exec_command", map[string]any{"cmd": script, "shell": shell, "login": true, "yield_time_ms": 10000})
	if isErr || st.ExitCode == nil || *st.ExitCode != 0 {
		t.Fatalf("exec_command %q in %s: %s", script, shell, text)
	}
	return st.Output
}

// runs is how many times the profile that appends to ~/runs ran.
func (h *sandboxHost) runs() int {
	b, _ := os.ReadFile(filepath.Join(h.path("home"), "runs"))
	return strings.Count(string(b), "\n")
}

// equivalence is, for each shell, a profile that edits PATH, exports
// variables, defines functions (one lazy, as nvm's) and aliases, sets
// options and the umask; and a probe that prints what a script sees.
var equivalence = []struct {
	shell, files, probe string
	profile             map[string]string
}{
	{shell: "bash", profile: map[string]string{
		".bash_profile": `export PATH="$HOME/bin:$PATH" GREETING='it'"'"'s
two lines'
greet() { echo "hi $1"; }
export -f greet
nvm() { unset -f nvm; . "$NVM_DIR/nvm.sh"; nvm "$@"; }
export NVM_DIR="$HOME/.nvm"
alias ll='ls -l'
set -o pipefail
shopt -s extglob
umask 027
. ~/.bashrc
`, ".bashrc": "export FROM_BASHRC=1\necho x >> ~/runs\n"},
		probe: `env -0 | LC_ALL=C sort -z | tr '\0' '\n' | grep -Ev '^(PWD|OLDPWD|SHLVL|_)='; declare -f; alias -p; set +o; shopt -p; umask; echo "$0 $# $-"`},
	{shell: "zsh", profile: map[string]string{
		".zshenv": "export FROM_ZSHENV=1\n",
		".zprofile": `path=($HOME/bin $path)
export GREETING='it'"'"'s
two lines'
greet() { echo "hi $1"; }
nvm() { unfunction nvm; . "$NVM_DIR/nvm.sh"; nvm "$@"; }
export NVM_DIR="$HOME/.nvm"
alias ll='ls -l'
alias -g G='| grep'
setopt extendedglob pipefail
umask 027
echo x >> ~/runs
`},
		probe: `env -0 | LC_ALL=C sort -z | tr '\0' '\n' | grep -Ev '^(PWD|OLDPWD|SHLVL|_)='; typeset -f; alias -L; for o in ${(ko)options}; do print $o=$options[$o]; done; umask; echo "$0 $# $-"`},
	{shell: "sh", profile: map[string]string{
		".profile": `PATH="$HOME/bin:$PATH"; export PATH
export GREETING='it'"'"'s
two lines'
alias ll='ls -l'
set -o noglob
umask 027
echo x >> ~/runs
`},
		probe: `env -0 | LC_ALL=C sort -z | tr '\0' '\n' | grep -Ev '^(PWD|OLDPWD|SHLVL|_)='; alias; set +o; umask; echo "$0 $#"`},
}

// equivalenceHost finds shell (skipping the test where it is not
// installed) and serves a snapshot host whose home holds profile.
func equivalenceHost(t *testing.T, shell string, profile map[string]string) (string, *sandboxHost, *mcp.ClientSession) {
	t.Helper()
	path, err := exec.LookPath(shell)
	if err != nil {
		t.Skipf("%s is not installed (make test installs it)", shell)
	}
	h := snapshotHost(t, profile)
	cs, _ := h.serveLogged("")
	return path, h, cs
}

// TestSnapshotEquivalence: in the sandbox, a script run as a login shell
// through execd sees what `SHELL -lc` run directly sees, while the
// profile ran once, for the snapshot.
func TestSnapshotEquivalence(t *testing.T) {
	for _, tt := range equivalence {
		t.Run(tt.shell, func(t *testing.T) {
			shell, h, cs := equivalenceHost(t, tt.shell, tt.profile)
			var got string
			for range 3 {
				got = login(t, cs, shell, tt.probe)
			}
			if n := h.runs(); n != 1 {
				t.Errorf("the profile ran %d times for 3 calls, want once (for the snapshot)", n)
			}
			// The same login shell run directly, with the environment execd
			// gives a sandboxed session.
			direct := exec.Command(shell, "-lc", tt.probe)
			direct.Dir = h.work
			direct.Env = append(h.command("", "serve").Env, "EXECD_SANDBOX=linux", "EXECD_SANDBOX_NETWORK_DISABLED=1",
				"NO_COLOR=1", "TERM=dumb", "LANG=C.UTF-8", "LC_CTYPE=C.UTF-8", "LC_ALL=C.UTF-8", "COLORTERM=",
				"PAGER=cat", "GIT_PAGER=cat", "GH_PAGER=cat")
			out, err := direct.Output()
			if err != nil {
				t.Fatalf("%s -lc: %v", shell, err)
			}
			if want := string(out); got != want {
				t.Errorf("through execd:\n%s\nwant (%s -lc):\n%s", got, shell, want)
			}
			if !strings.Contains(got, "GREETING=it's\ntwo lines") || !strings.Contains(got, "ll=") || !strings.Contains(got, "027") {
				t.Errorf("the probe misses what the profile did:\n%s", got)
			}
		})
	}
}

// TestSnapshotRefresh: a changed startup file, and the TTL, take a new
// snapshot.
func TestSnapshotRefresh(t *testing.T) {
	h := snapshotHost(t, map[string]string{".bash_profile": ". ~/.bashrc\n", ".bashrc": "export V=one\necho x >> ~/runs\n"})
	cs, _ := h.serveLogged("")
	if got := login(t, cs, "bash", "echo $V"); got != "one\n" {
		t.Fatalf("V = %q, want one", got)
	}
	h.writeFile(filepath.Join(h.path("home"), ".bashrc"), "export V=two\necho x >> ~/runs\n")
	if got := login(t, cs, "bash", "echo $V"); got != "two\n" {
		t.Errorf("after ~/.bashrc changed, V = %q, want two", got)
	}
	login(t, cs, "bash", "echo $V")
	if n := h.runs(); n != 2 {
		t.Errorf("the profile ran %d times, want 2 (a snapshot before and after the change)", n)
	}

	h = snapshotHost(t, map[string]string{".bash_profile": "echo x >> ~/runs\n"})
	cs, _ = h.serveLogged("[shell]\nsnapshot_ttl = \"1ns\"\n")
	for range 3 {
		login(t, cs, "bash", "true")
	}
	if n := h.runs(); n != 3 {
		t.Errorf("with a TTL of 1ns the profile ran %d times for 3 calls, want 3", n)
	}
}

// TestSnapshotFallback: a profile that fails, hangs or prints, and
// snapshots turned off, run the real login shell, with its result; the
// reason is logged once.
func TestSnapshotFallback(t *testing.T) {
	const warning = "commands run the login shell itself"
	tests := []struct {
		name, config, profile string
		code                  int
		output, reason        string
	}{
		{name: "fails", profile: "echo x >> ~/runs; exit 1\n", code: 1, reason: "exited with status 1"},
		{name: "prints", profile: "echo x >> ~/runs; echo Welcome\n", output: "Welcome\nhi\n", reason: "prints to stdout"},
		// It hangs once, for the snapshot: the real login shells then pass.
		{name: "hangs", config: "[shell]\nsnapshot_timeout = \"2s\"\n",
			profile: "echo x >> ~/runs; [ -e ~/hung ] || { touch ~/hung; sleep 100; }\n", output: "hi\n", reason: "did not finish within 2s"},
		{name: "off", config: "[shell]\nsnapshot = false\n", profile: "echo x >> ~/runs\n", output: "hi\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := snapshotHost(t, map[string]string{".bash_profile": tt.profile})
			cs, log := h.serveLogged(tt.config)
			for range 2 {
				_, st, isErr := session(t, cs, "exec_command", map[string]any{"cmd": "echo hi", "shell": "bash", "yield_time_ms": 10000})
				if isErr || st.ExitCode == nil || *st.ExitCode != tt.code || st.Output != tt.output {
					t.Errorf("exec_command: %+v, want exit %d, output %q", st, tt.code, tt.output)
				}
			}
			want := 3 // the snapshot's, then both calls'
			if tt.reason == "" {
				want = 2
			}
			if n := h.runs(); n != want {
				t.Errorf("the profile ran %d times, want %d", n, want)
			}
			if tt.reason != "" && (log.count(warning) != 1 || log.count(tt.reason) != 1) {
				t.Errorf("%d warnings %q and %d %q in the log, want one", log.count(warning), warning, log.count(tt.reason), tt.reason)
			}
		})
	}
}

// TestSnapshotFileIsOutOfReach: the snapshot is a file of mode 0600 out
// of the writable roots, which a sandboxed command cannot write, and
// which is gone once execd exits.
func TestSnapshotFileIsOutOfReach(t *testing.T) {
	h := snapshotHost(t, map[string]string{".bash_profile": "export V=1\n"})
	cmd := h.command("", "serve")
	cmd.Stderr = &testLog{t: t}
	var once sync.Once
	var cs *mcp.ClientSession
	closeExecd := func() {
		once.Do(func() {
			if err := cs.Close(); err != nil {
				t.Errorf("execd exit: %v", err)
			}
		})
	}
	cs = connectExiting(t, cmd, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"}, func(error) { closeExecd() })
	// The shell started with BASH_ENV naming the snapshot, which unset it.
	snap := login(t, cs, "bash", `tr '\0' '\n' < /proc/$$/environ | sed -n 's/^BASH_ENV=//p'; echo "${BASH_ENV-unset}"`)
	path, rest, _ := strings.Cut(snap, "\n")
	if !filepath.IsAbs(path) || rest != "unset\n" {
		t.Fatalf("snapshot %q, then BASH_ENV %q", path, rest)
	}
	for _, root := range []string{"/tmp/", h.dir + "/"} {
		if strings.HasPrefix(path, root) {
			t.Errorf("the snapshot %s lies in the writable root %s", path, root)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the snapshot %s: %v, %v; want mode 0600", path, fi, err)
	}
	for _, attack := range []string{"echo 'echo pwned' >> " + path, "rm " + path, "mv " + path + " " + path + ".x",
		"echo 'echo pwned' > " + filepath.Dir(path) + "/9.sh", "chmod 666 " + path} {
		text, st, _ := session(t, cs, "exec_command", map[string]any{"cmd": attack, "login": false})
		if st.ExitCode == nil || *st.ExitCode == 0 {
			t.Errorf("%q in the sandbox: %s", attack, text)
		}
	}
	if got := login(t, cs, "bash", "echo $V"); got != "1\n" {
		t.Errorf("after the attacks V = %q, want 1", got)
	}
	closeExecd()
	if _, err := os.Lstat(filepath.Dir(path)); err == nil {
		t.Errorf("%s is left after execd exited", filepath.Dir(path))
	}
}

// TestSnapshotNotUsedOutsideTheSandbox: a call that an allow rule lifts
// out of the sandbox runs its real login shell, not the snapshot taken
// in the sandbox.
func TestSnapshotNotUsedOutsideTheSandbox(t *testing.T) {
	// The home directory out of the writable roots, so that allow rules
	// may lift login shells (SPEC §7.2); the profile counts the runs
	// outside the sandbox, where it may write.
	h := snapshotHost(t, map[string]string{".bash_profile": `export V=1; [ -n "$EXECD_SANDBOX" ] || echo x >> ~/runs` + "\n"})
	cs := h.serve(noTmp, `prefix_rule(pattern=["printenv"], decision="allow")`, nil)
	if got := login(t, cs, "bash", "printf '%s\\n' $V $EXECD_SANDBOX"); got != "1\nlinux\n" {
		t.Fatalf("sandboxed: %q", got)
	}
	for i := 1; i <= 2; i++ {
		if got := login(t, cs, "bash", "printenv V"); got != "1\n" {
			t.Fatalf("lifted by the rule: %q, want V=1", got)
		}
		if n := h.runs(); n != i {
			t.Errorf("after %d lifted calls the profile ran %d times outside the sandbox, want %d", i, n, i)
		}
	}
}

// TestSnapshotDoctor: execd doctor says whether a snapshot stands in for
// the user's profile, or why not, and what the profile costs.
func TestSnapshotDoctor(t *testing.T) {
	tests := []struct {
		profile, config, snapshot, cost string
	}{
		{"export V=1\n", "", "used, kept in a directory of each execd's own under ", "; with the snapshot "},
		{"echo Welcome\n", "", `NOT USED for `, `the profile prints to stdout ("Welcome")`},
		{"export V=1\n", "[shell]\nsnapshot = false\n", "none: shell snapshots are off (shell.snapshot = false)", "-c true"},
	}
	for _, tt := range tests {
		h := snapshotHost(t, map[string]string{".bash_profile": tt.profile})
		r := h.run(tt.config, "doctor")
		report := map[string]string{}
		for line := range strings.SplitSeq(r.stdout, "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				report[k] = strings.TrimSpace(v)
			}
		}
		if !strings.HasSuffix(report["shell"], "(bash)") {
			t.Skipf("the user's shell is %s: the test's profile is bash's", report["shell"])
		}
		got := report["shell snapshot"] + " | " + report["login profile"]
		if !strings.HasPrefix(got, tt.snapshot) || !strings.Contains(got, tt.cost) || !strings.Contains(got, "the profile costs about") {
			t.Errorf("profile %q, config %q: doctor says\n%s", tt.profile, tt.config, r.stdout)
		}
	}
}

// TestSnapshotScripts: scripts whose quoting, exit status, traps and
// errors must come out of the snapshot as out of `SHELL -lc`.
func TestSnapshotScripts(t *testing.T) {
	scripts := []string{
		`echo "it's" 'a"b' $$ >/dev/null; echo "$0" "$#"`,
		"cat <<'EOF'\n$HOME 'x'\nEOF\necho two",
		`trap 'echo bye' EXIT; echo hi; exit 3`,
		`set -e; false; echo not reached`,
		`echo (`,
		`ll -d /`,
	}
	for _, tt := range equivalence {
		t.Run(tt.shell, func(t *testing.T) {
			shell, h, cs := equivalenceHost(t, tt.shell, tt.profile)
			for _, script := range scripts {
				_, st, isErr := session(t, cs, "exec_command", map[string]any{"cmd": script, "shell": shell, "yield_time_ms": 10000})
				direct := exec.Command(shell, "-lc", script)
				direct.Dir = h.work
				direct.Env = append(h.command("", "serve").Env, "TERM=dumb", "LANG=C.UTF-8", "LC_ALL=C.UTF-8")
				want, err := direct.CombinedOutput()
				code := direct.ProcessState.ExitCode()
				if err != nil && code < 0 {
					t.Fatal(err)
				}
				got := strings.ReplaceAll(st.Output, " eval:", "") // sh's eval names itself
				if isErr || st.ExitCode == nil || *st.ExitCode != code || got != string(want) {
					t.Errorf("%q: got %+v; want exit %d, output %q", script, st, code, want)
				}
			}
			if n := h.runs(); n != 1+len(scripts) {
				t.Errorf("the profile ran %d times, want %d: once for the snapshot, and for each direct -lc", n, 1+len(scripts))
			}
		})
	}
}

// TestSnapshotConcurrentCalls: calls that come together wait for one
// snapshot rather than each taking one.
func TestSnapshotConcurrentCalls(t *testing.T) {
	h := snapshotHost(t, map[string]string{".bash_profile": "export V=1\necho x >> ~/runs\n"})
	cs, _ := h.serveLogged("")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { // not session: its t.Fatalf belongs to the test's goroutine
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "exec_command",
				Arguments: map[string]any{"cmd": "echo $V", "shell": "bash", "yield_time_ms": 10000}})
			if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "Output:\n1\n") {
				t.Errorf("exec_command: %v %+v", err, res)
			}
		})
	}
	wg.Wait()
	if n := h.runs(); n != 1 {
		t.Errorf("the profile ran %d times for 8 concurrent calls, want once", n)
	}
}

// TestNoSnapshotOfAShellInAWritableRoot: a shell a command could have
// written (a copy of bash in the workspace) runs its profile itself: a
// program posing as a shell could write a snapshot of any size for each
// name the model gives it.
func TestNoSnapshotOfAShellInAWritableRoot(t *testing.T) {
	h := snapshotHost(t, map[string]string{".bash_profile": "export V=1\necho x >> ~/runs\n"})
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	b, err := os.ReadFile(bash)
	if err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(h.dir, "bash")
	if err := os.WriteFile(mine, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cs := h.serve("", "", nil)
	for i := 1; i <= 2; i++ {
		if got := login(t, cs, mine, "echo $V"); got != "1\n" {
			t.Fatalf("V = %q, want 1", got)
		}
		if n := h.runs(); n != i {
			t.Errorf("after %d login shells of %s the profile ran %d times, want %d (no snapshot)", i, mine, n, i)
		}
	}
}
