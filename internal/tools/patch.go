package tools

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/execd/execd/internal/orchestrator"
	"github.com/execd/execd/internal/patch"
)

// applyPatchDescription is Codex's, which today's models were trained on.
const applyPatchDescription = "Use the `apply_patch` tool to edit files.\n" +
	"Your patch language is a stripped‑down, file‑oriented diff format designed to be easy to parse and safe to apply. You can think of it as a high‑level envelope:\n" +
	"\n" +
	"*** Begin Patch\n" +
	"[ one or more file sections ]\n" +
	"*** End Patch\n" +
	"\n" +
	"Within that envelope, you get a sequence of file operations.\n" +
	"You MUST include a header to specify the action you are taking.\n" +
	"Each operation starts with one of three headers:\n" +
	"\n" +
	"*** Add File: <path> - create a new file. Every following line is a + line (the initial contents).\n" +
	"*** Delete File: <path> - remove an existing file. Nothing follows.\n" +
	"*** Update File: <path> - patch an existing file in place (optionally with a rename).\n" +
	"\n" +
	"May be immediately followed by *** Move to: <new path> if you want to rename the file.\n" +
	"Then one or more “hunks”, each introduced by @@ (optionally followed by a hunk header).\n" +
	"Within a hunk each line starts with:\n" +
	"\n" +
	"For instructions on [context_before] and [context_after]:\n" +
	"- By default, show 3 lines of code immediately above and 3 lines immediately below each change. If a change is within 3 lines of a previous change, do NOT duplicate the first change’s [context_after] lines in the second change’s [context_before] lines.\n" +
	"- If 3 lines of context is insufficient to uniquely identify the snippet of code within the file, use the @@ operator to indicate the class or function to which the snippet belongs. For instance, we might have:\n" +
	"@@ class BaseClass\n" +
	"[3 lines of pre-context]\n" +
	"- [old_code]\n" +
	"+ [new_code]\n" +
	"[3 lines of post-context]\n" +
	"\n" +
	"- If a code block is repeated so many times in a class or function such that even a single `@@` statement and 3 lines of context cannot uniquely identify the snippet of code, you can use multiple `@@` statements to jump to the right context. For instance:\n" +
	"\n" +
	"@@ class BaseClass\n" +
	"@@ \t def method():\n" +
	"[3 lines of pre-context]\n" +
	"- [old_code]\n" +
	"+ [new_code]\n" +
	"[3 lines of post-context]\n" +
	"\n" +
	"The full grammar definition is below:\n" +
	"Patch := Begin { FileOp } End\n" +
	"Begin := \"*** Begin Patch\" NEWLINE\n" +
	"End := \"*** End Patch\" NEWLINE\n" +
	"FileOp := AddFile | DeleteFile | UpdateFile\n" +
	"AddFile := \"*** Add File: \" path NEWLINE { \"+\" line NEWLINE }\n" +
	"DeleteFile := \"*** Delete File: \" path NEWLINE\n" +
	"UpdateFile := \"*** Update File: \" path NEWLINE [ MoveTo ] { Hunk }\n" +
	"MoveTo := \"*** Move to: \" newPath NEWLINE\n" +
	"Hunk := \"@@\" [ header ] NEWLINE { HunkLine } [ \"*** End of File\" NEWLINE ]\n" +
	"HunkLine := (\" \" | \"-\" | \"+\") text NEWLINE\n" +
	"\n" +
	"A full patch can combine several operations:\n" +
	"\n" +
	"*** Begin Patch\n" +
	"*** Add File: hello.txt\n" +
	"+Hello world\n" +
	"*** Update File: src/app.py\n" +
	"*** Move to: src/main.py\n" +
	"@@ def greet():\n" +
	"-print(\"Hi\")\n" +
	"+print(\"Hello, world!\")\n" +
	"*** Delete File: obsolete.txt\n" +
	"*** End Patch\n" +
	"\n" +
	"It is important to remember:\n" +
	"\n" +
	"- You must include a header with your intended action (Add/Delete/Update)\n" +
	"- You must prefix new lines with `+` even when creating a new file\n" +
	"- File references can only be relative, NEVER ABSOLUTE.\n"

// patchOutputSchema describes patchStructured.
var patchOutputSchema = object(
	[]string{"exit_code", "output", "added", "modified", "deleted"},
	map[string]schema{
		"exit_code": {"type": "integer", "description": "0 when the patch was applied, 1 when it was not (then nothing changed)."},
		"output":    str("The summary of the changes, or why the patch was not applied."),
		"added":     strArray("Files added, as the patch names them."),
		"modified":  strArray("Files updated (by their new path when moved), as the patch names them."),
		"deleted":   strArray("Files deleted, as the patch names them."),
	})

func applyPatchDef() *toolDef {
	props := map[string]schema{
		"input": str("The entire contents of the apply_patch command (the *** Begin Patch ... *** End Patch envelope)."),
	}
	return &toolDef{
		Name:         "apply_patch",
		Description:  applyPatchDescription,
		InputSchema:  object([]string{"input"}, props).json(),
		OutputSchema: patchOutputSchema.json(),
		Annotations:  shellAnnotations,
	}
}

// patchStructured is the structuredContent of apply_patch (SPEC §4.5).
type patchStructured struct {
	ExitCode int      `json:"exit_code"`
	Output   string   `json:"output"`
	Added    []string `json:"added"`
	Modified []string `json:"modified"`
	Deleted  []string `json:"deleted"`
}

// runApplyPatch is the apply_patch tool (SPEC §4.5).
func (s *Server) runApplyPatch(ctx context.Context, c *toolCall) *callResult {
	a := parseArgs(c.name, c.args)
	a.require("input")
	input := a.str("input")
	if a.has("input") && input == "" {
		a.fail("input", "must not be empty")
	}
	if err := a.done(); err != nil {
		return errorResult(err)
	}
	res, err := s.applyPatch(ctx, c, orchestrator.PatchRequest{Patch: input})
	if err != nil {
		return errorResult(err)
	}
	code, text := patchOutcome(res)
	out := truncateOutput(text, s.opts.MaxOutputTokens)
	sum := res.Summary
	return &callResult{
		Content: []textContent{{Type: "text", Text: shellCommandText(code, res.Duration, out)}},
		StructuredContent: patchStructured{ExitCode: code, Output: out.Text,
			Added: nonNil(sum.Added), Modified: nonNil(sum.Modified), Deleted: nonNil(sum.Deleted)},
		IsError: code != 0,
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// patchOutcome is a tried patch's exit code and model-facing output: the
// summary, or the error of SPEC §6.5, each ending with a newline.
func patchOutcome(res *orchestrator.PatchResult) (int, string) {
	if res.Err != nil {
		return 1, res.Err.Error() + "\n"
	}
	return 0, res.Summary.String()
}

// applyPatch applies a patch for call c, sending its events when the
// client asked for them.
func (s *Server) applyPatch(ctx context.Context, c *toolCall, req orchestrator.PatchRequest) (*orchestrator.PatchResult, error) {
	req.CallID = c.id.String()
	req.Approver = approver{s}
	if s.eventsEnabled() {
		id, _ := c.id.MarshalJSON()
		ctx := context.WithoutCancel(ctx) // the end event goes out even if the call was cancelled
		req.OnApply = func(p *patch.Patch) {
			s.emit(ctx, "patch_apply_begin", eventParams{"call_id": id, "changes": patchChanges(p)})
		}
		req.OnApplied = func(ok bool) {
			s.emit(ctx, "patch_apply_end", eventParams{"call_id": id, "success": ok})
		}
	}
	return s.orch.ApplyPatch(ctx, req)
}

// patchChange is one file of a patch_apply_begin event.
type patchChange struct {
	Type     string `json:"type"` // add, delete or update
	MovePath string `json:"move_path,omitempty"`
}

// patchChanges maps each path of p, as written, to its change.
func patchChanges(p *patch.Patch) map[string]patchChange {
	changes := map[string]patchChange{}
	for _, h := range p.Hunks {
		switch h.Op {
		case patch.Add:
			changes[h.Path] = patchChange{Type: "add"}
		case patch.Delete:
			changes[h.Path] = patchChange{Type: "delete"}
		case patch.Update:
			changes[h.Path] = patchChange{Type: "update", MovePath: h.MoveTo}
		}
	}
	return changes
}

// intercepted is a shell call that was applied as a patch (SPEC §6.4).
type intercepted struct {
	code     int
	output   string // the outcome of the patch, then the hint to use the tool
	duration time.Duration
}

// errNotPatch: the call is an ordinary command.
var errNotPatch = errors.New("not a patch")

// interceptPatch applies argv (or, when script is set, the script) as a
// patch if it is one, with the call's workdir. It returns errNotPatch for
// an ordinary command, and patch.ErrImplicit for a bare patch; other
// errors are those of a call that started nothing.
func (s *Server) interceptPatch(ctx context.Context, c *toolCall, argv []string, script *string,
	workdir string, approval orchestrator.Approval) (*intercepted, error) {
	var inv patch.Invocation
	var ok bool
	var err error
	if script != nil {
		inv, ok, err = patch.RecognizeScript(*script)
	} else {
		inv, ok, err = patch.Recognize(argv)
	}
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, errNotPatch
	}
	if _, err := s.orch.ResolveWorkdir(workdir); err != nil {
		return nil, err
	}
	hint := fmt.Sprintf("Warning: apply_patch was requested via %s. Use the apply_patch tool instead of %s.\n", c.name, c.name)
	dir := workdir
	if inv.Dir != "" {
		dir = inv.Dir
		if !filepath.IsAbs(dir) && workdir != "" {
			dir = filepath.Join(workdir, dir)
		}
		if _, err := s.orch.ResolveWorkdir(dir); err != nil {
			// What the shell would have said: cd failed, nothing else ran.
			return &intercepted{code: 1, output: fmt.Sprintf("cd: %s: No such file or directory\n", inv.Dir) + hint}, nil
		}
	}
	res, err := s.applyPatch(ctx, c, orchestrator.PatchRequest{Patch: inv.Patch, Workdir: dir,
		Justification: approval.Justification})
	if err != nil {
		return nil, err
	}
	code, text := patchOutcome(res)
	return &intercepted{code: code, output: text + hint, duration: res.Duration}, nil
}

// execResultOf is an intercepted patch in the layout of shell or
// shell_command (SPEC §6.4), or the error result when err is set.
func (s *Server) execResultOf(ip *intercepted, err error, layout func(truncated) string) *callResult {
	if err != nil {
		return errorResult(err)
	}
	out := truncateOutput(ip.output, s.opts.MaxOutputTokens)
	return &callResult{
		Content: []textContent{{Type: "text", Text: layout(out)}},
		StructuredContent: execStructured{ExitCode: ip.code, WallTimeSeconds: math.Round(ip.duration.Seconds()*1000) / 1000,
			Output: out.Text, Truncated: out.Cut},
		IsError: ip.code != 0,
	}
}

// sessionResultOf is an intercepted patch in the layout of exec_command:
// a command that exited, never a session.
func sessionResultOf(ip *intercepted, err error, argv []string, maxTokens int) *callResult {
	if err != nil {
		return errorResult(err)
	}
	return sessionResult(&orchestrator.Chunk{Argv: argv, Output: []byte(ip.output), OmittedAt: len(ip.output),
		Exit: &orchestrator.Exit{Code: ip.code, Duration: ip.duration}, Wall: ip.duration}, maxTokens)
}
