package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/execd/execd/internal/audit"
	"github.com/execd/execd/internal/policy"
	"github.com/execd/execd/internal/sandbox"
)

// scripted answers questions in order and records them.
type scripted struct {
	mu      sync.Mutex
	answers []Answer
	err     error // returned with Deny when answers run out
	asked   []Question
}

func (s *scripted) Approve(_ context.Context, q Question) (Answer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, q)
	if len(s.answers) == 0 {
		if s.err == nil {
			return Deny, errors.New("no scripted answer left")
		}
		return Deny, s.err
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	return a, nil
}

func (s *scripted) questions() []Question {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.asked)
}

func rulesOf(t *testing.T, src string) *policy.Rules {
	t.Helper()
	f, err := policy.ParseFile("test.rules", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return policy.NewRules(f)
}

func withPolicy(p policy.ApprovalPolicy, rules *policy.Rules) func(*Options) {
	return func(o *Options) { o.Policy, o.Rules = p, rules }
}

func TestApprovalAnswers(t *testing.T) {
	const rules = `prefix_rule(pattern=["touch"], decision="prompt", justification="touching files")`
	tests := []struct {
		name    string
		answers []Answer
		wantErr string // "" means it ran
	}{
		{"allow_once runs it", []Answer{AllowOnce}, ""},
		{"allow_session runs it", []Answer{AllowSession}, ""},
		{"deny", []Answer{Deny}, "exec command rejected by user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newTest(t, withPolicy(policy.OnRequest, rulesOf(t, rules)))
			ask := &scripted{answers: tt.answers}
			target := filepath.Join(o.Cwd(), "made")
			res, err := o.Exec(t.Context(), ExecRequest{Argv: []string{"touch", target}, Approver: ask})
			_, statErr := os.Stat(target)
			if tt.wantErr != "" {
				var de *DeniedError
				if !errors.As(err, &de) || err.Error() != tt.wantErr || statErr == nil {
					t.Fatalf("err %v (file: %v); want %q and nothing run", err, statErr, tt.wantErr)
				}
			} else if err != nil || res.ExitCode != 0 || statErr != nil {
				t.Fatalf("result %+v, %v (file: %v)", res, err, statErr)
			}
			qs := ask.questions()
			if len(qs) != 1 || qs[0].Reason != "`touch "+target+"` requires approval: touching files" || qs[0].Cwd != o.Cwd() {
				t.Fatalf("questions %+v", qs)
			}
		})
	}
}

func TestApprovalRefusals(t *testing.T) {
	tests := []struct {
		name   string
		policy policy.ApprovalPolicy
		rules  string
		argv   []string
		esc    bool
		want   string
	}{
		{"forbidden rule", policy.OnRequest, `prefix_rule(pattern=["rm"], decision="forbidden")`,
			[]string{"bash", "-lc", "rm -rf x"}, false, "`bash -lc 'rm -rf x'` rejected: policy forbids commands starting with `rm`"},
		{"forbidden with justification", policy.Untrusted, `prefix_rule(pattern=["rm"], decision="forbidden", justification="no deleting")`,
			[]string{"rm", "x"}, false, "`rm x` rejected: no deleting"},
		{"prompt under never", policy.Never, `prefix_rule(pattern=["touch"], decision="prompt")`,
			[]string{"touch", "x"}, false, policy.NeverConflict},
		{"escalation under untrusted", policy.Untrusted, ``,
			[]string{"ls"}, true, "sandbox_permissions require_escalated is only honoured under approval_policy on-request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newTest(t, withPolicy(tt.policy, rulesOf(t, tt.rules)))
			ask := &scripted{}
			_, err := o.Exec(t.Context(), ExecRequest{Argv: tt.argv, Approver: ask, Approval: Approval{Escalated: tt.esc}})
			var re *RefusedError
			if !errors.As(err, &re) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err %v, want a refusal %q", err, tt.want)
			}
			if qs := ask.questions(); len(qs) != 0 {
				t.Fatalf("a refusal asked %+v", qs)
			}
		})
	}
}

func TestApprovalWithoutAnswer(t *testing.T) {
	rules := rulesOf(t, `prefix_rule(pattern=["true"], decision="prompt")`)
	o := newTest(t, withPolicy(policy.OnRequest, rules))
	_, err := o.Exec(t.Context(), ExecRequest{Argv: []string{"true"}})
	if !errors.Is(err, ErrNoApprover) || !strings.HasPrefix(err.Error(), "exec command rejected: ") {
		t.Fatalf("no approver: %v", err)
	}
	gone := errors.New("the client went away")
	_, err = o.Exec(t.Context(), ExecRequest{Argv: []string{"true"}, Approver: &scripted{err: gone}})
	if !errors.Is(err, gone) {
		t.Fatalf("approver error: %v", err)
	}
	ctx, cancel := context.WithCancelCause(t.Context())
	stop := errors.New("call cancelled")
	cancel(stop)
	_, err = o.Exec(ctx, ExecRequest{Argv: []string{"true"}, Approver: &scripted{answers: []Answer{AllowOnce}}})
	if !errors.Is(err, stop) {
		t.Fatalf("cancelled while asking: %v, want the cause", err)
	}
}

func TestAllowSessionIsRemembered(t *testing.T) {
	rules := rulesOf(t, `prefix_rule(pattern=["true"], decision="prompt")`)
	o := newTest(t, withPolicy(policy.OnRequest, rules))
	other := filepath.Join(o.Cwd(), "sub")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	ask := &scripted{answers: []Answer{AllowSession, AllowOnce, AllowOnce, AllowOnce}}
	calls := []struct {
		argv    []string
		workdir string
		tty     *bool
	}{
		{[]string{"true"}, "", nil},
		{[]string{"true"}, "", nil},                      // remembered
		{[]string{"bash", "-lc", "true"}, "", nil},       // the same canonical command
		{[]string{"true"}, "sub", nil},                   // another cwd: asks
		{[]string{"true", "x"}, "", nil},                 // another command: asks
		{[]string{"bash", "-c", "true"}, "", new(false)}, // a session: asks
	}
	for _, c := range calls {
		var err error
		if c.tty != nil {
			_, err = o.StartSession(t.Context(), SessionRequest{Argv: c.argv, Workdir: c.workdir, TTY: *c.tty,
				Yield: waitLimit, Approver: ask})
		} else {
			_, err = o.Exec(t.Context(), ExecRequest{Argv: c.argv, Workdir: c.workdir, Approver: ask})
		}
		if err != nil {
			t.Fatalf("%v in %q: %v", c.argv, c.workdir, err)
		}
	}
	if n := len(ask.questions()); n != 4 {
		t.Fatalf("asked %d times, want 4: %+v", n, ask.questions())
	}
}

func TestAllowPrefixAmendsTheRules(t *testing.T) {
	amend := filepath.Join(t.TempDir(), "rules", "default.rules")
	if err := os.Mkdir(filepath.Dir(amend), 0o755); err != nil {
		t.Fatal(err)
	}
	o := newTest(t, func(opts *Options) {
		opts.Policy, opts.AmendFile = policy.Untrusted, amend
	})
	ask := &scripted{answers: []Answer{AllowPrefix}}
	argv := []string{"bash", "-lc", "mkdir -p a && ls"}
	if _, err := o.Exec(t.Context(), ExecRequest{Argv: argv, Approver: ask}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Exec(t.Context(), ExecRequest{Argv: []string{"mkdir", "-p", "a", "b"}, Approver: ask}); err != nil {
		t.Fatalf("the amended rule did not apply at once: %v", err)
	}
	qs := ask.questions()
	if len(qs) != 1 || !slices.Equal(qs[0].Prefix, []string{"mkdir", "-p", "a"}) {
		t.Fatalf("questions %+v, want one offering [mkdir -p a]", qs)
	}
	b, err := os.ReadFile(amend)
	if err != nil || string(b) != policy.AmendLine([]string{"mkdir", "-p", "a"})+"\n" {
		t.Fatalf("amend file %q, %v", b, err)
	}
}

func TestNoPrefixWithoutAmendFile(t *testing.T) {
	o := newTest(t, withPolicy(policy.Untrusted, nil))
	ask := &scripted{answers: []Answer{AllowPrefix}}
	_, err := o.Exec(t.Context(), ExecRequest{Argv: []string{"mkdir", "-p", "a"}, Approver: ask})
	var de *DeniedError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "did not offer") {
		t.Fatalf("allow_prefix without an offer: %v", err)
	}
	if qs := ask.questions(); len(qs) != 1 || qs[0].Prefix != nil {
		t.Fatalf("questions %+v: no prefix may be offered without rules.amend_file", qs)
	}
}

func TestAuditTrail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := audit.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = log.Close() })
	o := newTest(t, func(opts *Options) {
		opts.Policy, opts.Audit = policy.Untrusted, log
		opts.Rules = rulesOf(t, `prefix_rule(pattern=["false"], decision="forbidden")`)
	})
	ask := &scripted{answers: []Answer{AllowOnce}}
	if _, err := o.Exec(t.Context(), ExecRequest{CallID: "7", Argv: []string{"sh", "-c", "exit 3"}, Approver: ask}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Exec(t.Context(), ExecRequest{CallID: "8", Argv: []string{"false"}, Approver: ask}); err == nil {
		t.Fatal("forbidden command ran")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for line := range strings.Lines(string(b)) {
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if e["ts"] == "" || e["cwd"] != o.Cwd() {
			t.Errorf("entry %v lacks ts or cwd", e)
		}
		got = append(got, strings.Join([]string{e["kind"].(string), e["call_id"].(string), str(e["decision"]), str(e["exit_code"]), str(e["sandbox"])}, " "))
	}
	want := []string{"decision 7 allow_once  none", "exec 7  3 none", "decision 8 refuse  none"}
	if !slices.Equal(got, want) {
		t.Fatalf("audit entries\n%q\nwant\n%q", got, want)
	}
}

func str(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// TestDenialRetry: a write outside the workspace fails in the sandbox;
// on-failure asks to retry without it and the rerun succeeds; a call the
// user approved already retries without a second question; on-request
// never retries.
func TestDenialRetry(t *testing.T) {
	outside := t.TempDir()
	tests := []struct {
		name     string
		policy   policy.ApprovalPolicy
		rules    string
		answers  []Answer
		asked    int
		retryQ   bool // the last question is the retry's
		retried  bool
		wantExit int
	}{
		{"on-failure asks, allowed", policy.OnFailure, "", []Answer{AllowOnce}, 1, true, true, 0},
		{"on-failure asks, denied", policy.OnFailure, "", []Answer{Deny}, 1, true, false, 2},
		{"approved call does not ask again", policy.OnFailure, `prefix_rule(pattern=["sh"], decision="prompt")`, []Answer{AllowOnce}, 1, false, true, 0},
		{"untrusted: the approval covers the retry", policy.Untrusted, "", []Answer{AllowOnce}, 1, false, true, 0},
		{"on-request never retries", policy.OnRequest, "", nil, 0, false, false, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newTest(t, func(opts *Options) {
				opts.Sandbox = SandboxPolicy{Settings: sandbox.Settings{Mode: sandbox.WorkspaceWrite,
					ExcludeSlashTmp: true, ExcludeTmpdirEnvVar: true}, FailClosed: true}
				opts.Policy = tt.policy
				if tt.rules != "" {
					opts.Rules = rulesOf(t, tt.rules)
				}
			})
			if !o.Sandboxed() {
				t.Skipf("no sandbox on this kernel: %s", o.Support().Describe())
			}
			target := filepath.Join(outside, strings.ReplaceAll(tt.name, " ", "_"))
			ask := &scripted{answers: tt.answers}
			res, err := o.Exec(t.Context(), ExecRequest{Argv: []string{"sh", "-c", "echo x > " + target}, Approver: ask})
			if err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Stat(target)
			if res.ExitCode != tt.wantExit || (statErr == nil) != tt.retried || res.Sandboxed == tt.retried {
				t.Fatalf("exit %d, file written %v, sandboxed %v; want exit %d, retried %v (output %q)",
					res.ExitCode, statErr == nil, res.Sandboxed, tt.wantExit, tt.retried, res.Stderr.Data)
			}
			qs := ask.questions()
			if len(qs) != tt.asked {
				t.Fatalf("asked %d times, want %d: %+v", len(qs), tt.asked, qs)
			}
			if last := len(qs) - 1; last >= 0 && tt.retryQ != qs[last].Retry {
				t.Fatalf("last question %+v; want retry %v", qs[last], tt.retryQ)
			}
			if last := len(qs) - 1; tt.retryQ &&
				(qs[last].Sandbox != "none" || !strings.Contains(qs[last].Reason, "Read-only file system") || !strings.Contains(qs[last].Reason, "retry without sandbox")) {
				t.Fatalf("retry question %+v", qs[last])
			}
		})
	}
}

func TestEscalationRunsUnsandboxedOnceApproved(t *testing.T) {
	outside := t.TempDir()
	o := newTest(t, func(opts *Options) {
		opts.Sandbox = SandboxPolicy{Settings: sandbox.Settings{Mode: sandbox.WorkspaceWrite,
			ExcludeSlashTmp: true, ExcludeTmpdirEnvVar: true}, FailClosed: true}
	})
	if !o.Sandboxed() {
		t.Skipf("no sandbox on this kernel: %s", o.Support().Describe())
	}
	target := filepath.Join(outside, "f")
	ask := &scripted{answers: []Answer{AllowOnce}}
	res, err := o.Exec(t.Context(), ExecRequest{Argv: []string{"touch", target}, Approver: ask,
		Approval: Approval{Escalated: true, Justification: "needs to write outside"}})
	if err != nil || res.ExitCode != 0 || res.Sandboxed {
		t.Fatalf("result %+v, %v", res, err)
	}
	qs := ask.questions()
	if len(qs) != 1 || qs[0].Sandbox != "none" || qs[0].Justification != "needs to write outside" ||
		!strings.Contains(qs[0].Message(), "The model says: needs to write outside") {
		t.Fatalf("questions %+v", qs)
	}
}

// newConfined is an orchestrator in workspace-write where only its cwd is
// writable, or a skip on a kernel without the sandbox.
func newConfined(t *testing.T, p policy.ApprovalPolicy) *Orchestrator {
	t.Helper()
	o := newTest(t, func(opts *Options) {
		opts.Sandbox = SandboxPolicy{Settings: sandbox.Settings{Mode: sandbox.WorkspaceWrite,
			ExcludeSlashTmp: true, ExcludeTmpdirEnvVar: true}, FailClosed: true}
		opts.Policy = p
	})
	if !o.Sandboxed() {
		t.Skipf("no sandbox on this kernel: %s", o.Support().Describe())
	}
	return o
}

// An escalation that needs no question (a known-safe command) does not
// leave the sandbox: git status runs programs its repository names.
func TestEscalatedKnownSafeStaysSandboxed(t *testing.T) {
	o := newConfined(t, policy.OnRequest)
	ask := &scripted{}
	res, err := o.Exec(t.Context(), ExecRequest{Argv: []string{"ls"}, Approver: ask, Approval: Approval{Escalated: true}})
	if err != nil || !res.Sandboxed || len(ask.questions()) != 0 {
		t.Fatalf("result %+v, %v, questions %+v; want it run in the sandbox without asking", res, err, ask.questions())
	}
}

// allow_session given to a sandboxed run does not cover the rerun
// without the sandbox: that asks its own question (SPEC §7.5).
func TestSessionApprovalDoesNotCoverTheRetry(t *testing.T) {
	o := newConfined(t, policy.Untrusted)
	target := filepath.Join(t.TempDir(), "out")
	argv := []string{"sh", "-c", "echo x > " + target}
	ask := &scripted{answers: []Answer{AllowSession, Deny}}
	for i, want := range []bool{true, false} {
		_ = os.Remove(target)
		if _, err := o.Exec(t.Context(), ExecRequest{Argv: argv, Approver: ask}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(target); (err == nil) != want {
			t.Fatalf("call %d: written %v, want %v", i, err == nil, want)
		}
	}
	qs := ask.questions()
	if len(qs) != 2 || qs[0].Retry || !qs[0].RetryFollows || !qs[1].Retry {
		t.Fatalf("questions %+v; want the call's (saying a retry follows), then the retry's", qs)
	}
	if !strings.Contains(qs[0].Message(), "if the sandbox denies it, it runs again without the sandbox") {
		t.Fatalf("message %q does not say approving covers a rerun without the sandbox", qs[0].Message())
	}
}

func TestQuestionLinesCannotBeForged(t *testing.T) {
	q := Question{Command: []string{"rm", "-rf", "a\nb"}, Cwd: "/w\nSandbox: none", Reason: "r\x1b[2J",
		Justification: "fine\nSandbox: workspace-write", Sandbox: "none"}
	lines := strings.Split(q.Message(), "\n")
	if len(lines) != 6 || strings.Count(q.Message(), "Sandbox:") != 3 || strings.ContainsRune(q.Message(), 0x1b) {
		t.Fatalf("message %q: %d lines; want 6, with the model's text kept on its own lines and no escape", q.Message(), len(lines))
	}
	if lines[5] != "Sandbox: none (it runs with your full permissions)" {
		t.Fatalf("last line %q", lines[5])
	}
}

// Characters that do not show as themselves are shown as escapes in
// every field a person reads (SPEC §3.3): the text can neither reorder
// (bidi overrides), hide (zero-width, tags) nor drive a terminal.
func TestQuestionShowsHiddenCharacters(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain é ü 日本", "plain é ü 日本"},
		{"a\u202eb", `a\u202eb`},
		{"\u200b\u200c\u200d\u200e\u200f", `\u200b\u200c\u200d\u200e\u200f`},
		{"\u202a\u202b\u202c\u202d", `\u202a\u202b\u202c\u202d`},
		{"\u2066\u2067\u2068\u2069", `\u2066\u2067\u2068\u2069`},
		{"\ufeffx", `\ufeffx`},
		{"line\nnext\ttab\rcr", `line\nnext\ttab\rcr`},
		{"\x1b[2J\x00\x7f\u0085\u009b", `\u001b[2J\u0000\u007f\u0085\u009b`},
		{"\u2028\u2029", `\u2028\u2029`},
		{"tag\U000e0041", `tag\U000e0041`},
		{"soft\u00adhyphen \u061c", `soft\u00adhyphen \u061c`},
	}
	for _, tt := range tests {
		if got := visible(tt.in); got != tt.want {
			t.Errorf("visible(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	rlo := "\u202e"
	q := Question{Command: []string{"touch", "a" + rlo + "b"}, Cwd: "/w/" + rlo + "x", Reason: "rule says " + rlo,
		Justification: "safe" + rlo + "\u200b", Sandbox: "workspace-write", Prefix: []string{"touch", rlo}}
	p := Question{Command: []string{"apply_patch", "/w/" + rlo}, Cwd: "/w", Files: []string{"/w/" + rlo + "gpj.exe"},
		Reason: "outside " + rlo, Justification: rlo}
	for _, m := range []string{q.Message(), p.Message()} {
		if strings.ContainsFunc(m, hidden) && strings.ContainsFunc(strings.ReplaceAll(m, "\n", ""), hidden) {
			t.Errorf("message %q shows a hidden character as itself", m)
		}
		if !strings.Contains(m, `\u202e`) {
			t.Errorf("message %q does not show the override escaped", m)
		}
	}
}

// An allow_session answer for a command does not cover the same command
// run by a shell a sandboxed command could have planted first on PATH
// (SPEC §7.5): the canonical command of such a call is its whole argv.
func TestAllowSessionNotThroughAPlantedShell(t *testing.T) {
	o := newTest(t, func(opts *Options) {
		opts.Sandbox = SandboxPolicy{Settings: sandbox.Settings{Mode: sandbox.WorkspaceWrite, ExcludeSlashTmp: true,
			ExcludeTmpdirEnvVar: true}, FailClosed: true}
		opts.Policy = policy.OnRequest
	})
	if !o.Sandboxed() {
		t.Skipf("no sandbox on this kernel: %s", o.Support().Describe())
	}
	bin := filepath.Join(o.Cwd(), "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "bash"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := call{argv: []string{"bash", "-c", "ls -d ."}, cwd: o.Cwd()}
	plain := call{argv: []string{"ls", "-d", "."}, cwd: o.Cwd()}
	if o.sessionKey(c, true) != o.sessionKey(plain, true) {
		t.Fatal("a shell wrapper found outside the roots no longer shares its command's key")
	}
	o.env = append(slices.Clone(o.env), "PATH="+bin+":/usr/bin:/bin")
	if o.sessionKey(c, true) == o.sessionKey(plain, true) {
		t.Error("bash found first in a writable root shares the key of the command it wraps")
	}
}

// git's own programs called directly are git, for the repository check
// (SPEC §7.2).
func TestDashedGitIsGit(t *testing.T) {
	o := newTest(t, func(opts *Options) {
		opts.Sandbox = SandboxPolicy{Settings: sandbox.Settings{Mode: sandbox.WorkspaceWrite, ExcludeSlashTmp: true,
			ExcludeTmpdirEnvVar: true, ProtectedNames: []string{".git"}}, FailClosed: true}
	})
	if !o.Sandboxed() {
		t.Skipf("no sandbox on this kernel: %s", o.Support().Describe())
	}
	for _, d := range []string{".git/objects", ".git/refs"} {
		if err := os.MkdirAll(filepath.Join(o.Cwd(), "nested", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(o.Cwd(), "nested", ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(o.Cwd(), "nested")
	for _, argv := range [][]string{{"git", "status"}, {"/usr/lib/git-core/git-status"}, {"git-upload-pack", "."}} {
		if _, why := o.liftGit(call{argv: argv, cwd: dir}); !strings.Contains(why, "was not a protected repository") {
			t.Errorf("%q in a repository the sandbox made: %q; want it kept in the sandbox", argv, why)
		}
	}
}
