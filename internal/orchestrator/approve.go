package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"

	"go.uber.org/zap"

	"github.com/execd/execd/internal/audit"
	"github.com/execd/execd/internal/policy"
	"github.com/execd/execd/internal/sandbox"
)

// Approval is what the model asked for alongside a command (SPEC §4,
// shared parameters).
type Approval struct {
	// Escalated is sandbox_permissions = require_escalated: run outside
	// the sandbox, once the user approves.
	Escalated     bool
	Justification string
	// Prefix is the model's prefix_rule proposal, if any.
	Prefix []string
}

// Question asks the user whether a command may run.
type Question struct {
	CallID  string
	Command []string // the call's argv
	Cwd     string
	// Reason says why the question is asked.
	Reason string
	// Justification is the model's, if it gave one.
	Justification string
	// Sandbox is what the command would run under: a mode, or "none".
	Sandbox string
	// Prefix is offered for allow_prefix; nil when none is.
	Prefix []string
	// Retry: the command failed in the sandbox; run it again without?
	Retry bool
	// RetryFollows: approving also approves running it again without
	// the sandbox if the sandbox denies it (on-failure, untrusted).
	RetryFollows bool
	// Files, for a patch (Command is then apply_patch): the real paths
	// it writes or removes. execd writes them itself, unconfined.
	Files []string
}

// Message is the question as text for a person (SPEC §3.3): the command,
// where it runs, why it is asked and what it would run under.
func (q Question) Message() string {
	if q.Files != nil {
		return q.patchMessage()
	}
	var b strings.Builder
	if q.Retry {
		b.WriteString("This command failed in the sandbox. Run it again WITHOUT the sandbox?\n")
	} else {
		b.WriteString("Allow this command to run?\n")
	}
	fmt.Fprintf(&b, "Command: %s\nDirectory: %s\n", policy.ShellJoin(q.Command), visible(q.Cwd))
	if q.Reason != "" {
		fmt.Fprintf(&b, "Reason: %s\n", visible(q.Reason))
	}
	if q.Justification != "" {
		fmt.Fprintf(&b, "The model says: %s\n", visible(q.Justification))
	}
	switch {
	case q.Sandbox == "none":
		b.WriteString("Sandbox: none (it runs with your full permissions)\n")
	case q.RetryFollows:
		fmt.Fprintf(&b, "Sandbox: %s (if the sandbox denies it, it runs again without the sandbox)\n", q.Sandbox)
	default:
		fmt.Fprintf(&b, "Sandbox: %s\n", q.Sandbox)
	}
	if q.Prefix != nil {
		fmt.Fprintf(&b, "allow_prefix would allow every command starting with `%s` from now on, without the sandbox.\n",
			policy.ShellJoin(q.Prefix))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// patchMessage is the question of a patch (SPEC §7.6).
func (q Question) patchMessage() string {
	var b strings.Builder
	b.WriteString("Allow this patch to be applied?\nFiles:\n")
	for _, f := range q.Files {
		fmt.Fprintf(&b, "  %s\n", visible(f))
	}
	fmt.Fprintf(&b, "Directory: %s\n", visible(q.Cwd))
	if q.Reason != "" {
		fmt.Fprintf(&b, "Reason: %s\n", visible(q.Reason))
	}
	if q.Justification != "" {
		fmt.Fprintf(&b, "The model says: %s\n", visible(q.Justification))
	}
	b.WriteString("execd writes these files itself, with your permissions (no sandbox).")
	return b.String()
}

// Answer is the user's decision (SPEC §3.3).
type Answer int

// The answers.
const (
	Deny         Answer = iota
	AllowOnce           // this call only
	AllowSession        // this call and the same command again (SPEC §7.5)
	AllowPrefix         // this call, and the offered prefix from now on
)

// visible shows text the model, a rule or a command controls as it is
// (SPEC §3.3): control characters (C0, DEL, C1), Unicode format characters
// (bidirectional overrides and isolates, zero-width characters, the
// byte-order mark, tag characters) and line and paragraph separators are
// written as escapes (\n, \t, \r, \u202e), so the text stays on its line
// and cannot reorder, hide or forge what the person reads, nor drive a
// terminal. The command itself is quoted by policy.ShellJoin, which
// escapes the same characters in bash's $'…' form.
func visible(s string) string {
	if !strings.ContainsFunc(s, hidden) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case hidden(r) && r > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, r)
		case hidden(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// hidden reports whether r does not show as itself: a control, format or
// separator character.
func hidden(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) ||
		(r >= 0xa0 && unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp))
}

var answerNames = [...]string{Deny: "deny", AllowOnce: "allow_once", AllowSession: "allow_session", AllowPrefix: "allow_prefix"}

func (a Answer) String() string {
	if a < 0 || int(a) >= len(answerNames) {
		return fmt.Sprintf("Answer(%d)", int(a))
	}
	return answerNames[a]
}

// ParseAnswer reads a decision as the wire names it.
func ParseAnswer(s string) (Answer, bool) {
	for a, n := range answerNames {
		if n == s {
			return Answer(a), true
		}
	}
	return Deny, false
}

// Approver asks the user. Approve returns Deny with a non-nil error when
// nobody answered (no way to ask, cancelled, timed out); the error says
// why. It must return when ctx ends.
type Approver interface {
	Approve(ctx context.Context, q Question) (Answer, error)
}

// RefusedError is a call the policy refuses without asking (SPEC §7.2).
// Its text is the compat refusal sentence.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return e.Reason }

// DeniedError is a call that was not approved.
type DeniedError struct {
	// Err is why nobody approved it; nil when the user said no.
	Err error
}

func (e *DeniedError) Error() string {
	if e.Err == nil {
		return "exec command rejected by user"
	}
	return "exec command rejected: " + e.Err.Error()
}

func (e *DeniedError) Unwrap() error { return e.Err }

// ErrNoApprover is the reason a call that needs approval is denied when
// nobody can be asked.
var ErrNoApprover = errors.New("it needs approval and there is no one to ask")

// approvals holds the approval state of the connection: the policy, the
// rules (amended at run time) and the allow_session memory.
type approvals struct {
	policy    policy.ApprovalPolicy
	rules     *policy.Rules
	amendFile string
	audit     *audit.Log
	skip      bool // Options.SkipPolicy

	mu      sync.Mutex
	session map[string]bool // guarded by mu: allow_session keys (SPEC §7.5)
}

func newApprovals(opts Options) *approvals {
	a := &approvals{policy: opts.Policy, rules: opts.Rules, amendFile: opts.AmendFile, audit: opts.Audit,
		skip: opts.SkipPolicy, session: map[string]bool{}}
	if a.policy == "" {
		a.policy = policy.OnRequest
	}
	if a.rules == nil {
		a.rules = policy.NewRules()
	}
	return a
}

// ApprovalPolicy returns when calls ask the user.
func (o *Orchestrator) ApprovalPolicy() policy.ApprovalPolicy { return o.approvals.policy }

// call is one tool call on its way through the policy.
type call struct {
	id       string
	argv     []string
	cwd      string
	kind     string // "" for a one-shot; "tty" or "pipes" for a session
	approval Approval
	approver Approver
}

// grant is how an authorized call runs.
type grant struct {
	sandboxed bool // inside execd's sandbox (when it enforces one)
	// approved: the user approved this call, so a retry without the
	// sandbox needs no second question.
	approved bool
}

// authorize decides whether c runs, asking the user when the policy says
// so (SPEC §7.2). Errors: *RefusedError, *DeniedError, or ctx's cause.
func (o *Orchestrator) authorize(ctx context.Context, c call) (grant, error) {
	a := o.approvals
	if a.skip {
		return grant{sandboxed: true}, nil
	}
	r := policy.Require(a.rules, policy.Request{
		Argv: c.argv, Policy: a.policy, Sandboxed: o.confines(),
		Escalated: c.approval.Escalated, Prefix: c.approval.Prefix,
		Planted:  o.plantedFor(c),
		Terminal: c.kind == "tty",
	})
	// Only an approval or allow rules lift the sandbox: a known-safe
	// command asked to escalate runs in it (git status runs hooks and
	// fsmonitor programs of the repository it reads).
	g := grant{sandboxed: !c.approval.Escalated}
	if r.Outcome == policy.Run {
		g.sandboxed = !r.Unsandboxed
	}
	label := o.SandboxLabel(g.sandboxed)
	switch {
	case r.Outcome == policy.Refuse:
		o.decided(c, label, "refuse", r.Reason)
		return grant{}, &RefusedError{Reason: r.Reason}
	case g.sandboxed && o.FailsClosed():
		// Refused anyway: do not ask for nothing.
		o.decided(c, string(o.sandbox.Mode), "refuse", o.sandboxErr.Error())
		return grant{}, o.sandboxErr
	case r.Outcome == policy.Run:
		reason := ""
		if r.Unsandboxed {
			reason = "allow rules match every command"
		}
		o.decided(c, label, "allow", reason)
		return g, nil
	}
	q := Question{
		CallID: c.id, Command: c.argv, Cwd: c.cwd,
		Reason: o.askReason(r, c), Justification: c.approval.Justification,
		Sandbox: label, RetryFollows: g.sandboxed && o.retries(),
	}
	if a.amendFile != "" {
		q.Prefix = r.Amendment
	}
	remembered, err := o.ask(ctx, c, q, o.sessionKey(c, !g.sandboxed))
	if err != nil {
		return grant{}, err
	}
	// An answer remembered from an earlier question covers the run it
	// was given for, not a retry without the sandbox (§7.5).
	g.approved = !remembered
	return g, nil
}

// retries reports whether a sandbox denial may be retried without the
// sandbox (SPEC §7.2).
func (o *Orchestrator) retries() bool {
	p := o.approvals.policy
	return !o.approvals.skip && o.Sandboxed() && (p == policy.OnFailure || p == policy.Untrusted)
}

// ask asks q unless allow_session already answered it (remembered), and
// acts on the answer. It returns nil when the call may run.
func (o *Orchestrator) ask(ctx context.Context, c call, q Question, key string) (remembered bool, err error) {
	a := o.approvals
	a.mu.Lock()
	remembered = a.session[key]
	a.mu.Unlock()
	if remembered {
		o.decided(c, q.Sandbox, "allow_session", "approved earlier in this session")
		return true, nil
	}
	return false, o.askNow(ctx, c, q, key)
}

// askNow asks q and acts on the answer; allow_session remembers keys.
func (o *Orchestrator) askNow(ctx context.Context, c call, q Question, keys ...string) error {
	a := o.approvals
	ans, err := Deny, ErrNoApprover
	if c.approver != nil {
		ans, err = c.approver.Approve(ctx, q)
	}
	if ctx.Err() != nil {
		o.decided(c, q.Sandbox, "deny", "the call was cancelled while waiting for approval")
		return context.Cause(ctx)
	}
	switch {
	case err != nil:
		o.decided(c, q.Sandbox, "deny", err.Error())
		return &DeniedError{Err: err}
	case ans == AllowPrefix && q.Prefix == nil:
		err := errors.New("the answer was allow_prefix, which this question did not offer")
		o.decided(c, q.Sandbox, "deny", err.Error())
		return &DeniedError{Err: err}
	case ans == Deny:
		o.decided(c, q.Sandbox, "deny", "the user denied it")
		return &DeniedError{}
	case ans == AllowSession:
		a.mu.Lock()
		for _, k := range keys {
			a.session[k] = true
		}
		a.mu.Unlock()
	case ans == AllowPrefix:
		o.amend(q.Prefix)
	}
	o.decided(c, q.Sandbox, ans.String(), q.Reason)
	return nil
}

// amend appends an allow rule for prefix to the amend file and applies it
// at once. A rule that cannot be written still applies to this
// connection; the failure is logged.
func (o *Orchestrator) amend(prefix []string) {
	a := o.approvals
	rule, err := policy.Amend(a.amendFile, prefix)
	if err != nil {
		o.log.Error("allow_prefix: the rule is used now but was not saved", zap.Strings("prefix", prefix), zap.Error(err))
		rule = &policy.Rule{Decision: policy.Allow}
		for _, t := range prefix {
			rule.Pattern = append(rule.Pattern, []string{t})
		}
	} else {
		o.log.Info("allow_prefix: rule added", zap.Strings("prefix", prefix), zap.String("file", a.amendFile))
	}
	a.rules.Add(rule)
}

// askReason says why a call needs approval.
func (o *Orchestrator) askReason(r policy.Requirement, c call) string {
	switch {
	case r.Reason != "":
		return r.Reason
	case c.approval.Escalated:
		return "the model asks to run it outside the sandbox"
	}
	for _, cmd := range append(policy.Commands(c.argv), policy.ScriptCommands(c.argv)...) {
		if policy.Dangerous(cmd) {
			return fmt.Sprintf("`%s` can destroy data that cannot be recovered", policy.ShellJoin(cmd))
		}
	}
	return fmt.Sprintf("it is not known to be read-only (approval_policy %s)", o.approvals.policy)
}

// retryUnsandboxed decides whether a call that failed in the sandbox with
// what looks like a denial runs again without it (SPEC §7.2: on-failure
// and untrusted ask; a call the user already approved does not ask again).
func (o *Orchestrator) retryUnsandboxed(ctx context.Context, c call, g grant, exitCode int, output string) bool {
	if !g.sandboxed || !o.retries() || !sandbox.LooksDenied(true, exitCode, output) || ctx.Err() != nil {
		return false
	}
	if g.approved {
		o.decided(c, "none", "allow_once", "retry without the sandbox, approved with the call")
		return true
	}
	q := Question{
		CallID: c.id, Command: c.argv, Cwd: c.cwd, Retry: true,
		Reason:        "retry without sandbox: " + denialLine(output),
		Justification: c.approval.Justification, Sandbox: "none",
	}
	_, err := o.ask(ctx, c, q, o.sessionKey(c, true))
	if err != nil {
		o.log.Info("no retry without the sandbox", zap.String("call_id", c.id), zap.Error(err))
	}
	return err == nil
}

// denialLine is the first line of output that looks like the denial, to
// show the user.
func denialLine(output string) string {
	for line := range strings.Lines(output) {
		if sandbox.LooksDenied(true, 1, line) {
			line = strings.TrimSpace(line)
			if len(line) > 200 {
				line = line[:200] + "…"
			}
			return line
		}
	}
	return "the command failed"
}

// sessionKey is what allow_session remembers (SPEC §7.5): the canonical
// command (the single plain command inside a shell wrapper, else the
// argv), the cwd, whether it runs outside the sandbox, and for sessions
// whether it has a terminal. A shell a sandboxed command could have
// planted is no wrapper: its argv is the key.
func (o *Orchestrator) sessionKey(c call, unsandboxed bool) string {
	cmd := c.argv
	if cmds, ok := policy.PlainCommands(c.argv); ok && len(cmds) == 1 && !o.plantedFor(c)(c.argv[0]) {
		cmd = cmds[0]
	}
	b, _ := json.Marshal(struct {
		Cmd         []string
		Cwd, Kind   string
		Unsandboxed bool
	}{cmd, c.cwd, c.kind, unsandboxed})
	return string(b)
}

// decided writes a decision to the log and the audit file.
func (o *Orchestrator) decided(c call, sandbox, decision, reason string) {
	o.log.Info("approval decision", zap.String("call_id", c.id), zap.String("decision", decision),
		zap.String("reason", reason), zap.String("sandbox", sandbox))
	o.approvals.audit.Record(audit.Entry{Kind: audit.KindDecision, CallID: c.id, Command: c.argv, Cwd: c.cwd,
		Sandbox: sandbox, Decision: decision, Reason: reason})
}

// finished writes a finished command to the audit file.
func (o *Orchestrator) finished(c call, sandbox string, exitCode int, d time.Duration) {
	ms := d.Milliseconds()
	o.approvals.audit.Record(audit.Entry{Kind: audit.KindExec, CallID: c.id, Command: c.argv, Cwd: c.cwd,
		Sandbox: sandbox, ExitCode: &exitCode, DurationMS: &ms})
}

// confines reports whether a sandboxed run is confined, as the policy
// sees it: the mode is enforced, or it would be refused (fail_closed).
func (o *Orchestrator) confines() bool {
	return o.sandbox.Mode.Enforced() && (o.sandboxErr == nil || o.sandbox.FailClosed)
}

// SandboxLabel names what a run is confined by: the mode when execd
// enforces it, else "none".
func (o *Orchestrator) SandboxLabel(sandboxed bool) string {
	if sandboxed && o.Sandboxed() {
		return string(o.sandbox.Mode)
	}
	return "none"
}
