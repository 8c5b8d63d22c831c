package orchestrator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/execd/execd/internal/audit"
	"github.com/execd/execd/internal/patch"
	"github.com/execd/execd/internal/policy"
	"github.com/execd/execd/internal/sandbox"
)

// PatchRequest is a patch to apply (SPEC §4.5, §6.4).
type PatchRequest struct {
	CallID string
	// Patch is the patch text (SPEC §6.1).
	Patch string
	// Workdir is where relative paths start, resolved like a command's
	// (ResolveWorkdir); "" means the turn directory.
	Workdir string
	// Justification is the model's, shown if the user is asked.
	Justification string
	Approver      Approver
	// OnApply, when set, is called with the patch once it may be written,
	// before it is; OnApplied after, with whether it was.
	OnApply   func(*patch.Patch)
	OnApplied func(ok bool)
}

// PatchResult is a patch that was tried.
type PatchResult struct {
	// Summary is what changed, when Err is nil.
	Summary patch.Summary
	// Err is why the patch was not applied: a *patch.ParseError or a
	// *patch.Error, whose text is the model-facing message of SPEC §6.5.
	// Nothing was changed.
	Err      error
	Duration time.Duration
}

// errPatchMoved is a patch whose files lead elsewhere once approved.
var errPatchMoved = &patch.Error{Msg: "The files of the patch changed while it waited for approval " +
	"(a symlink on the way now leads elsewhere); nothing was written. Apply the patch again."}

// ApplyPatch applies a patch with the approval rules of SPEC §7.6: every
// file in a writable root (not a protected path), or remembered by
// allow_session, goes ahead unasked except under untrusted; any other
// needs the user's approval, and approval_policy never refuses it.
// Where execd enforces a sandbox, a patch that goes ahead unasked is
// prepared and written by the applier, a sandboxed command, with exactly
// the rights of one; what the sandbox refuses it (another user's file in
// /tmp, say) is asked for like a write outside the roots. A patch the
// user approved is written by execd itself. Paths are checked as the
// kernel resolves them, symlinks included, and written without following
// links that appear later. Errors are those of a call that changed
// nothing without trying (*WorkdirError, *RefusedError, *DeniedError,
// *sandbox.SetupError, ctx's cause); a patch that cannot apply is a
// result.
func (o *Orchestrator) ApplyPatch(ctx context.Context, req PatchRequest) (*PatchResult, error) {
	start := time.Now()
	dir, err := o.ResolveWorkdir(req.Workdir)
	if err != nil {
		return nil, err
	}
	p, err := patch.Parse(req.Patch)
	if err != nil {
		return patchFailed(ctx, err, start)
	}
	// One patch at a time from here to its commit (but not while the user
	// thinks): two patches of one file must not both start from its old
	// content.
	o.patchMu.Lock()
	defer o.patchMu.Unlock()
	c := call{id: req.CallID, cwd: dir, kind: "patch", approval: Approval{Justification: req.Justification},
		approver: req.Approver}
	denied, confined := "", false
	switch {
	case o.Sandboxed():
		res, why, done, err := o.applyConfined(ctx, req, p, c, start)
		if done {
			return res, err
		}
		denied, confined = why, true
	case o.FailsClosed():
		denied = "the sandbox cannot be enforced on this host"
	}
	return o.applyAsExecd(ctx, req, p, c, denied, confined, start)
}

// patchFailed is the result of a patch that cannot apply, or ctx's cause
// when it stopped because the call ended.
func patchFailed(ctx context.Context, err error, start time.Time) (*PatchResult, error) {
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	return &PatchResult{Err: err, Duration: time.Since(start)}, nil
}

// applyConfined applies a patch through the applier, in the sandbox,
// when it needs no question. done is false when execd must take over:
// the patch needs approval (its targets lie outside what a sandboxed
// command may write, or untrusted asks for every patch), or the sandbox
// refused to read or write one of its files (why says how).
func (o *Orchestrator) applyConfined(ctx context.Context, req PatchRequest, p *patch.Patch, c call, start time.Time) (
	res *PatchResult, why string, done bool, err error) {
	a, err := o.startApplier(req.Patch, c.cwd)
	if err != nil {
		return nil, "", true, err
	}
	defer a.close()
	rep, err := a.report(ctx)
	switch {
	case err != nil:
		return nil, "", true, err
	case rep.Denied:
		return nil, rep.Error, false, nil
	case rep.Error != "":
		res, err := patchFailed(ctx, &patch.Error{Msg: rep.Error}, start)
		return res, "", true, err
	}
	c.argv = patchArgv(rep.Targets)
	if q, _, err := o.patchQuestion(c, rep.Targets, "", false); err != nil || q != nil {
		return nil, "", err != nil, err // asking is execd's to do, and writing then
	}
	if err := context.Cause(ctx); err != nil {
		return nil, "", true, err
	}
	if req.OnApply != nil {
		req.OnApply(p)
	}
	if err = a.commit(); err == nil {
		rep, err = a.report(ctx)
	}
	ok := err == nil && rep.Summary != nil
	if req.OnApplied != nil {
		req.OnApplied(ok)
	}
	switch {
	case err != nil:
		return nil, "", true, err
	case rep.Denied:
		return nil, rep.Error, false, nil // nothing was changed
	case !ok:
		perr := &patch.Error{Msg: rep.Error}
		o.patched(c, string(o.sandbox.Mode), perr, time.Since(start))
		res, err := patchFailed(ctx, perr, start)
		return res, "", true, err
	}
	d := time.Since(start)
	o.patched(c, string(o.sandbox.Mode), nil, d)
	return &PatchResult{Summary: *rep.Summary, Duration: d}, "", true, nil
}

// applyAsExecd prepares and writes a patch as execd itself, asking first
// when its targets are not all writable by a sandboxed command, under
// untrusted, or when the sandbox refused it (denied says why). confined:
// the applier, in the sandbox, found that the patch needs asking; execd,
// which may find its files elsewhere (/proc/self/cwd is its own
// directory), then asks for every target whatever it finds.
func (o *Orchestrator) applyAsExecd(ctx context.Context, req PatchRequest, p *patch.Patch, c call, denied string,
	confined bool, start time.Time) (*PatchResult, error) {
	pl, err := patch.Prepare(ctx, p, c.cwd)
	if err != nil {
		return patchFailed(ctx, err, start)
	}
	c.argv = patchArgv(pl.Targets())
	if confined && denied == "" && len(o.unwritable(pl.Targets())) == 0 {
		denied = "its files lead outside what sandboxed commands may write from where the sandbox looks, and elsewhere from execd"
	}
	q, keys, err := o.patchQuestion(c, pl.Targets(), denied, confined)
	if err != nil {
		return nil, err
	}
	if q != nil {
		o.patchMu.Unlock()
		err := o.askNow(ctx, c, *q, keys...)
		o.patchMu.Lock()
		if err != nil {
			return nil, err
		}
		// The answer took time: compute again from the files as they are
		// now, which must still be the ones approved.
		again, err := patch.Prepare(ctx, p, c.cwd)
		if err != nil {
			return patchFailed(ctx, err, start)
		}
		if !slices.Equal(again.Targets(), pl.Targets()) {
			return patchFailed(ctx, errPatchMoved, start)
		}
		pl = again
	}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	if req.OnApply != nil {
		req.OnApply(p)
	}
	err = pl.Commit(ctx)
	if req.OnApplied != nil {
		req.OnApplied(err == nil)
	}
	d := time.Since(start)
	o.patched(c, "none", err, d)
	if err != nil {
		return patchFailed(ctx, err, start)
	}
	return &PatchResult{Summary: pl.Summary(), Duration: d}, nil
}

// patchArgv is how a patch appears in questions and the audit file.
func patchArgv(targets []patch.Target) []string {
	argv := []string{"apply_patch"}
	for _, t := range targets {
		argv = append(argv, t.Real)
	}
	return argv
}

// patchQuestion decides whether a patch that writes targets may be
// applied (SPEC §7.6): a nil question and error when it may go ahead, a
// *RefusedError, or the question to ask with the allow_session keys the
// answer may remember. denied, when not "", is why the sandbox could not
// apply it; then, and with all, every target needs approval.
func (o *Orchestrator) patchQuestion(c call, targets []patch.Target, denied string, all bool) (*Question, []string, error) {
	pol := o.approvals.policy
	outside := o.unwritable(targets)
	need := outside // what an approval must cover
	if pol == policy.Untrusted || denied != "" || all {
		need = nil
		for _, t := range targets {
			need = append(need, t.Real)
		}
	}
	switch {
	case len(need) == 0:
		o.decided(c, o.SandboxLabel(true), "allow", "every file is in a writable root")
		return nil, nil, nil
	case denied != "" && pol == policy.Never:
		reason := fmt.Sprintf("patch rejected: the sandbox may not apply it (%s), and approval_policy never asks for approval", denied)
		o.decided(c, "none", "refuse", reason)
		return nil, nil, &RefusedError{Reason: reason}
	case len(outside) > 0 && pol == policy.Never:
		reason := fmt.Sprintf("patch rejected: it writes outside the workspace (%s), and approval_policy never asks for approval",
			strings.Join(outside, ", "))
		o.decided(c, "none", "refuse", reason)
		return nil, nil, &RefusedError{Reason: reason}
	}
	keys := make([]string, len(need))
	for i, p := range need {
		keys[i] = "patch\x00" + p
	}
	if o.remembered(keys) {
		o.decided(c, "none", "allow_session", "approved earlier in this session")
		return nil, nil, nil
	}
	reason := fmt.Sprintf("approval_policy %s asks before every change", pol)
	switch {
	case denied != "":
		reason = "the sandbox may not apply it: " + denied
	case len(outside) > 0:
		reason = "it writes outside the workspace: " + strings.Join(outside, ", ")
	}
	return &Question{CallID: c.id, Command: c.argv, Cwd: c.cwd, Reason: reason,
		Justification: c.approval.Justification, Sandbox: "none", Files: c.argv[1:]}, keys, nil
}

// remembered reports whether allow_session covers every key.
func (o *Orchestrator) remembered(keys []string) bool {
	a := o.approvals
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, k := range keys {
		if !a.session[k] {
			return false
		}
	}
	return true
}

// unwritable returns the real paths of targets that a sandboxed command
// could not write either: outside every writable root, or a protected
// path (SPEC §8.1, §8.2). Every path is writable without a sandbox mode
// that confines writes.
func (o *Orchestrator) unwritable(targets []patch.Target) []string {
	switch o.sandbox.Mode {
	case sandbox.DangerFullAccess, sandbox.ExternalSandbox:
		return nil
	}
	var roots, private []string
	for _, r := range o.roots {
		roots = append(roots, r.Path)
		if !r.Shared {
			private = append(private, r.Path)
		}
	}
	protected := sandbox.ProtectedPaths(private, o.sandbox.ProtectedNames, append(slices.Clone(o.protectedPaths), o.submodulePaths...))
	var out []string
	for _, t := range targets {
		if !slices.ContainsFunc(roots, func(r string) bool { return within(t.Real, r) }) ||
			slices.ContainsFunc(protected, func(p string) bool { return within(t.Real, p) }) {
			out = append(out, t.Real)
		}
	}
	return out
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// patched writes an applied (or failed) patch to the audit file, with
// what confined the write.
func (o *Orchestrator) patched(c call, sandbox string, err error, d time.Duration) {
	code := 0
	if err != nil {
		code = 1
	}
	ms := d.Milliseconds()
	o.approvals.audit.Record(audit.Entry{Kind: audit.KindPatch, CallID: c.id, Command: c.argv, Cwd: c.cwd,
		Sandbox: sandbox, ExitCode: &code, DurationMS: &ms})
}
