package test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

type cliResult struct {
	stdout, stderr string
	code           int
}

func runCLI(t *testing.T, config string, args ...string) cliResult {
	t.Helper()
	return runCLIWith(t, config, nil, args...)
}

// runCLIWith runs execd with its config and arguments; wrap, if set, may
// change the command first.
func runCLIWith(t *testing.T, config string, wrap func(*exec.Cmd), args ...string) cliResult {
	t.Helper()
	cmd, _ := execdCmd(t, config)
	// execdCmd puts --config and --cwd first; the command name must lead.
	cmd.Args = append([]string{cmd.Args[0]}, append(args[:1:1], append(cmd.Args[1:], args[1:]...)...)...)
	if wrap != nil {
		wrap(cmd)
	}
	return runCmd(t, cmd)
}

// runCmd runs cmd and returns its output and exit code.
func runCmd(t *testing.T, cmd *exec.Cmd) cliResult {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return cliResult{out.String(), errb.String(), code}
}

func TestRunCommand(t *testing.T) {
	tests := []struct {
		name   string
		config string
		args   []string
		code   int
		stdout string
		stderr string // substring
	}{
		{"output and exit code", fullAccess, []string{"run", "--", "sh", "-c", "echo out; echo err >&2; exit 7"}, 7, "out\n", "err\n"},
		{"flags end at the command", fullAccess, []string{"run", "sh", "-c", "echo $0", "-x"}, 0, "-x\n", ""},
		{"default sandbox", "", []string{"run", "--", "echo", "hello"}, 0, "hello\n", ""},
		{"not found", fullAccess, []string{"run", "--", "no-such-program-xyz"}, 127, "", "command not found"},
		{"timeout", fullAccess, []string{"run", "--timeout", "200ms", "--", "sleep", "5"}, 124, "", "timed out"},
		{"signal", fullAccess, []string{"run", "--", "sh", "-c", "kill -TERM $$"}, 143, "", ""},
		{"missing command", fullAccess, []string{"run"}, 2, "", "missing command"},
		{"negative timeout", fullAccess, []string{"run", "--timeout", "-1s", "--", "echo", "hi"}, 2, "", "--timeout -1s: want a duration of 0"},
		{"stdin is /dev/null", fullAccess, []string{"run", "--", "cat"}, 0, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, tt.config, tt.args...)
			if r.code != tt.code || r.stdout != tt.stdout || !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("execd %v: exit %d stdout %q stderr %q; want exit %d stdout %q stderr containing %q",
					tt.args, r.code, r.stdout, r.stderr, tt.code, tt.stdout, tt.stderr)
			}
		})
	}
}

// An output execd cannot write (a full disk: /dev/full) stops the
// command and is execd's failure, with the reason, never a silent 0.
func TestRunOutputFails(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	cmd, _ := execdCmd(t, fullAccess)
	cmd.Args = append([]string{cmd.Args[0], "run"}, append(cmd.Args[1:], "--", "sh", "-c", "echo hi; sleep 1; echo late")...)
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = full, &errb
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 125 || !strings.Contains(errb.String(), "cannot write the command's output") ||
		!strings.Contains(errb.String(), "no space left on device") {
		t.Errorf("execd run > /dev/full: %v, stderr %q; want exit 125 naming the write error", err, errb.String())
	}
}

// On a kernel without Landlock the default sandbox cannot be enforced:
// the command is refused, never run unsandboxed (SPEC §8.3).
func TestRunFailsClosedWithoutLandlock(t *testing.T) {
	r := runCLIWith(t, "", withoutLandlock, "run", "--", "echo", "hello")
	if r.code != 126 || r.stdout != "" || !strings.Contains(r.stderr, "cannot be enforced: this host lacks Landlock") ||
		!strings.Contains(r.stderr, "danger-full-access") {
		t.Errorf("without Landlock: %+v; want exit 126 and the refusal", r)
	}
	r = runCLIWith(t, "[sandbox]\nfail_closed = false\n", withoutLandlock, "run", "--", "echo", "hello")
	if r.code != 0 || r.stdout != "hello\n" {
		t.Errorf("without Landlock, fail_closed = false: %+v; want the command run", r)
	}
	r = runCLIWith(t, "", withoutLandlock, "doctor")
	if r.code != 1 || !strings.Contains(r.stdout, "landlock:          not available") || !strings.Contains(r.stdout, "CANNOT BE ENFORCED") {
		t.Errorf("doctor without Landlock: %+v; want exit 1 naming Landlock", r)
	}
}

// Where user namespaces exist but mounting in them is refused (AppArmor's
// restriction of unprivileged user namespaces, say), the probe finds out:
// doctor warns that protected paths are not enforced, and commands run
// under Landlock and seccomp alone instead of failing.
func TestWhereMountingInUserNamespacesIsRefused(t *testing.T) {
	r := runCLIWith(t, "", withoutMountSetattr, "doctor")
	if r.code != 0 || !strings.Contains(r.stdout, "user namespaces:   no (mounting in a user namespace fails") ||
		!strings.Contains(r.stdout, "NOT ENFORCED") || !strings.Contains(r.stdout, "metadata:          NOT PROTECTED") || !strings.Contains(r.stdout, "self-test:") {
		t.Errorf("doctor: %+v; want exit 0, user namespaces refused and protected paths unenforced", r)
	}
	r = runCLIWith(t, "", withoutMountSetattr, "sandbox", "--", "sh", "-c", "echo x > f && cat f && echo y > /etc/execd-it-x")
	if r.code == 0 || r.stdout != "x\n" || !strings.Contains(r.stderr, "Permission denied") {
		t.Errorf("sandbox: %+v; want the workspace writable and /etc not", r)
	}
}

func TestRunKillsBackgroundDescendantsAtExit(t *testing.T) {
	const marker = "sleep 7501.5"
	r := runCLI(t, fullAccess, "run", "--", "sh", "-c", marker+" & setsid "+marker+" & echo started")
	if r.code != 0 || r.stdout != "started\n" {
		t.Fatalf("run: %+v", r)
	}
	assertGone(t, marker)
}

func TestBadConfigExits2BeforeAnyOutput(t *testing.T) {
	tests := []struct {
		config string
		args   []string
		want   string
	}{
		{"[sandbox]\nmode = \"nope\"\n", []string{"serve"}, "sandbox.mode"},
		{"[sandbox]\nmod = \"x\"\n", []string{"serve"}, `unknown key "sandbox.mod"`},
		{fullAccess, []string{"serve", "--frobnicate"}, "unknown flag: --frobnicate"},
		{fullAccess, []string{"serve", "--sandbox", "bogus"}, "flag --sandbox"},
		{fullAccess, []string{"frobnicate"}, `unknown command "frobnicate"`},
		{fullAccess, []string{"sandbox", "--mode", "nope", "--", "true"}, `--mode: unknown sandbox mode "nope"`},
		{fullAccess, []string{"sandbox"}, "missing command"},
	}
	for _, tt := range tests {
		r := runCLI(t, tt.config, tt.args...)
		if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, tt.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("execd %v with %q: exit %d stdout %q stderr %q; want exit 2, one stderr line with %q",
				tt.args, tt.config, r.code, r.stdout, r.stderr, tt.want)
		}
	}
}

func TestVersionAndHelp(t *testing.T) {
	if r := runCLI(t, fullAccess, "version"); r.code != 0 || !strings.HasPrefix(r.stdout, "execd ") || !strings.Contains(r.stdout, "go1.") {
		t.Errorf("version: %+v", r)
	}
	for _, args := range [][]string{{"help"}, {"-h"}, {"run", "-h"}, {"serve", "--help"}} {
		if r := runCLI(t, fullAccess, args...); r.code != 0 || !strings.Contains(r.stdout, "Usage: execd") {
			t.Errorf("%v: %+v", args, r)
		}
	}
}

// `execd run ... | head -1`: when nobody reads execd's stdout any more the
// command is stopped (exit 141, as a shell reports SIGPIPE) and nothing
// is left running.
func TestRunStopsWhenItsOutputIsClosed(t *testing.T) {
	const marker = "sleep 7601.5"
	cmd, _ := execdCmd(t, fullAccess)
	cmd.Args = append([]string{cmd.Args[0], "run"}, append(cmd.Args[1:], "--", "bash", "-c", marker+" & seq 100000000")...)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	line, _ := bufio.NewReader(r).ReadString('\n')
	r.Close() // like head -1
	err = waitExit(cmd)
	var ee *exec.ExitError
	if line != "1\n" || !errors.As(err, &ee) || ee.ExitCode() != 141 {
		t.Fatalf("first line %q, exit %v; want 1 and exit 141", line, err)
	}
	assertGone(t, marker)
}

// Signals that would kill execd by default stop the command first.
func TestRunSignalsKillTheCommand(t *testing.T) {
	for i, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT} {
		// The marker must not appear in execd's own argv, or waitRunning
		// would find execd itself before it is ready.
		n := fmt.Sprintf("7602.%d", i+1)
		marker := "sleep " + n
		cmd, _ := execdCmd(t, fullAccess)
		cmd.Args = append([]string{cmd.Args[0], "run"}, append(cmd.Args[1:], "--", "bash", "-c", "sleep $0 & sleep $0", n)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitRunning(t, marker)
		_ = cmd.Process.Signal(sig)
		err := waitExit(cmd)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 {
			t.Errorf("%v: exit %v, want 130", sig, err)
		}
		assertGone(t, marker)
	}
}

// execd check prints the rules' verdict as codex execpolicy check does
// (SPEC §7.4), and a rules file that does not load is exit 1 naming it.
func TestCheckCommand(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "a.rules")
	if err := os.WriteFile(rules, []byte("prefix_rule(pattern=[\"git\"], decision=\"prompt\")\n"+
		"prefix_rule(pattern=[\"git\", [\"commit\", \"push\"]], decision=\"forbidden\", justification=\"not from here\")\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.rules")
	if err := os.WriteFile(bad, []byte("prefix_rule(pattern=[\"git\"])\nprefix_rule(pattern=[\"x\"], justification=\" \")\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Codex's dialect: for and if at the top level (SPEC §7.3).
	loop := filepath.Join(dir, "loop.rules")
	if err := os.WriteFile(loop, []byte("for vcs in [\"hg\", \"svn\"]:\n    if vcs == \"hg\":\n"+
		"        prefix_rule(pattern=[vcs, \"push\"], decision=\"forbidden\")\n    else:\n"+
		"        prefix_rule(pattern=[vcs, \"commit\"], decision=\"prompt\")\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{[]string{"check", "--rules", loop, "--", "hg", "push"}, 0,
			`{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["hg","push"],"decision":"forbidden"}}],"decision":"forbidden"}` + "\n", ""},
		{[]string{"check", "--rules", loop, "--", "svn", "commit"}, 0,
			`{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["svn","commit"],"decision":"prompt"}}],"decision":"prompt"}` + "\n", ""},
		{[]string{"check", "--rules", rules, "--", "git", "push", "origin"}, 0,
			`{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["git"],"decision":"prompt"}},{"prefixRuleMatch":{"matchedPrefix":["git","push"],"decision":"forbidden","justification":"not from here"}}],"decision":"forbidden"}` + "\n", ""},
		{[]string{"check", "--rules", rules, "ls", "-l"}, 0, `{"matchedRules":[]}` + "\n", ""},
		{[]string{"check", "--rules", rules, "--rules", bad, "--", "ls"}, 1, "", bad + ":2:12: invalid rule: justification cannot be empty"},
		{[]string{"check", "--rules", filepath.Join(dir, "missing.rules"), "--", "ls"}, 1, "", "missing.rules: no such file"},
		{[]string{"check", "--rules", rules}, 2, "", "missing command"},
	}
	for _, tt := range tests {
		r := runCLI(t, "", tt.args...)
		if r.code != tt.code || r.stdout != tt.stdout || !strings.Contains(r.stderr, tt.stderr) {
			t.Errorf("execd %s: exit %d, stdout %q, stderr %q; want %d, %q, %q", strings.Join(tt.args, " "), r.code, r.stdout, r.stderr, tt.code, tt.stdout, tt.stderr)
		}
	}
	// Without --rules: the configured rules files.
	r := runCLI(t, "[rules]\nfiles = ["+strconvQuote(rules)+"]\n", "check", "--", "git", "status")
	if r.code != 0 || r.stdout != `{"matchedRules":[{"prefixRuleMatch":{"matchedPrefix":["git"],"decision":"prompt"}}],"decision":"prompt"}`+"\n" {
		t.Errorf("check with the configured rules: exit %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, "[rules]\nfiles = ["+strconvQuote(bad)+"]\n", "check", "--", "git", "status")
	if r.code != 1 || !strings.Contains(r.stderr, bad+":2:12: invalid rule") {
		t.Errorf("check with a bad configured file: exit %d, %q", r.code, r.stderr)
	}
}
