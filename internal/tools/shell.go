package tools

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"golang.org/x/sys/unix"

	"github.com/execd/execd/internal/orchestrator"
	"github.com/execd/execd/internal/sandbox"
)

// runShell is the shell tool and its aliases (SPEC §4.1): an argv.
func (s *Server) runShell(ctx context.Context, c *toolCall) *callResult {
	a := parseArgs(c.name, c.args)
	a.require("command")
	argv := a.strList("command")
	workdir := a.str("workdir")
	timeout := s.timeoutArg(a, "timeout")
	approval := s.approvalArgs(a)
	if err := a.done(); err != nil {
		return errorResult(err)
	}
	if len(argv) == 0 || argv[0] == "" {
		return errorResult(&ArgError{Tool: c.name, Field: "command", Msg: "must be a non-empty array whose first element names the program"})
	}
	if ip, err := s.interceptPatch(ctx, c, argv, nil, workdir, approval); !errors.Is(err, errNotPatch) {
		return s.execResultOf(ip, err, func(out truncated) string { return shellText(out.withHeader(), ip.code, ip.duration) })
	}
	return s.oneShot(ctx, c, orchestrator.ExecRequest{Argv: argv, Workdir: workdir, Timeout: timeout, Approval: approval},
		func(res *orchestrator.ExecResult, out truncated) string {
			return shellText(out.withHeader(), res.ExitCode, res.Duration)
		})
}

// runShellCommand is the shell_command tool (SPEC §4.2): a script for
// the user's shell.
func (s *Server) runShellCommand(ctx context.Context, c *toolCall) *callResult {
	a := parseArgs(c.name, c.args)
	a.require("command")
	script := a.str("command")
	if script == "" {
		a.fail("command", "must not be empty")
	}
	workdir := a.str("workdir")
	timeout := s.timeoutArg(a, "")
	login := s.loginArg(a)
	approval := s.approvalArgs(a)
	if err := a.done(); err != nil {
		return errorResult(err)
	}
	if ip, err := s.interceptPatch(ctx, c, nil, &script, workdir, approval); !errors.Is(err, errNotPatch) {
		return s.execResultOf(ip, err, func(out truncated) string { return shellCommandText(ip.code, ip.duration, out) })
	}
	argv := s.orch.Shell().Argv(script, login)
	return s.oneShot(ctx, c, orchestrator.ExecRequest{Argv: argv, Workdir: workdir, Timeout: timeout, Approval: approval},
		func(res *orchestrator.ExecResult, out truncated) string {
			return shellCommandText(res.ExitCode, res.Duration, out)
		})
}

// oneShot runs a command and builds the result of a one-shot tool: layout
// gives the model-facing text; isError is set for a non-zero exit or a
// timeout (SPEC §4.1).
func (s *Server) oneShot(ctx context.Context, c *toolCall, req orchestrator.ExecRequest,
	layout func(*orchestrator.ExecResult, truncated) string) *callResult {
	res, err := s.exec(ctx, c, req)
	if err != nil {
		return errorResult(err)
	}
	out := truncateOutput(execOutput(res), s.opts.MaxOutputTokens)
	return &callResult{
		Content:           []textContent{{Type: "text", Text: layout(res, out)}},
		StructuredContent: structured(res, out),
		IsError:           res.ExitCode != 0 || res.TimedOut,
	}
}

// timeoutArg reads timeout_ms (and an alias, if given) as a duration;
// absent means the default.
func (s *Server) timeoutArg(a *args, alias string) time.Duration {
	ms := a.integer("timeout_ms")
	if alias != "" {
		if a.has("timeout") && a.has("timeout_ms") {
			a.fail("timeout", "give timeout_ms or its alias timeout, not both")
		}
		if alt := a.integer(alias); alt >= 0 {
			ms = alt
		}
	}
	switch {
	case ms < 0:
		return s.opts.DefaultTimeout
	case ms == 0:
		a.fail("timeout_ms", "must be at least 1 millisecond")
	case ms > MaxTimeoutMs:
		a.fail("timeout_ms", "%d is too large (at most %d, about 292 years)", ms, MaxTimeoutMs)
	}
	return time.Duration(ms) * time.Millisecond
}

// MaxTimeoutMs is the longest timeout a time.Duration holds.
const MaxTimeoutMs = math.MaxInt64 / int64(time.Millisecond)

// loginArg reads login: default true unless login shells are disallowed,
// in which case an explicit true is an error (tools.allow_login_shell).
func (s *Server) loginArg(a *args) bool {
	if !s.opts.DisallowLoginShell {
		return a.boolean("login", true)
	}
	if a.boolean("login", false) {
		a.fail("login", "login shells are disabled by this server's configuration (tools.allow_login_shell = false)")
	}
	return false
}

// approvalArgs reads the shared approval parameters (SPEC §4).
func (s *Server) approvalArgs(a *args) orchestrator.Approval {
	mode := a.oneOf("sandbox_permissions", "use_default", "use_default", "require_escalated")
	ap := orchestrator.Approval{
		Escalated:     mode == "require_escalated",
		Justification: a.str("justification"),
		Prefix:        a.strList("prefix_rule"),
	}
	if a.has("prefix_rule") && len(ap.Prefix) == 0 {
		a.fail("prefix_rule", "must name at least one word")
	}
	return ap
}

// exec runs a one-shot command, reporting progress and events when the
// call and the client asked for them.
func (s *Server) exec(ctx context.Context, c *toolCall, req orchestrator.ExecRequest) (*orchestrator.ExecResult, error) {
	req.CallID = c.id.String()
	req.Approver = approver{s}
	if p := startProgress(ctx, s.conn, c.progress); p != nil {
		req.Output = p.observe
		defer p.stop() // before the reply: no progress after the result
	}
	ev := s.events(ctx, c)
	if ev != nil {
		cwd, _ := s.orch.ResolveWorkdir(req.Workdir)
		req.OnStart = func(sandbox string) { ev.begin(req.Argv, cwd, sandbox) }
		req.OnExit = func(res *orchestrator.ExecResult) { ev.end(res.ExitCode, res.Duration, res.TimedOut) }
		req.Output = both(req.Output, ev.observe)
	}
	return s.orch.Exec(ctx, req)
}

// both calls a then b; either may be nil.
func both(a, b orchestrator.OutputFunc) orchestrator.OutputFunc {
	if a == nil {
		return b
	}
	return func(s orchestrator.Stream, chunk []byte) {
		a(s, chunk)
		b(s, chunk)
	}
}

// execOutput is the command's output as the model sees it before
// truncation: stdout then stderr, invalid UTF-8 replaced, after a timeout
// line when the timeout killed it (compat).
func execOutput(res *orchestrator.ExecResult) string {
	text := toValidUTF8(res.Stdout.Data) + toValidUTF8(res.Stderr.Data)
	if res.Note != "" {
		text = "Note: " + res.Note + "\n" + text
	}
	if res.TimedOut {
		text = fmt.Sprintf("command timed out after %d milliseconds\n", res.Duration.Milliseconds()) + text
	}
	return text
}

func structured(res *orchestrator.ExecResult, out truncated) execStructured {
	st := execStructured{
		// The whole capture, not the model's cut of it: the telltale line
		// may be what the cut dropped.
		SandboxDenied: !res.TimedOut &&
			sandbox.LooksDenied(res.Sandboxed, res.ExitCode, string(res.Stdout.Data)+string(res.Stderr.Data)),
		ExitCode:        res.ExitCode,
		WallTimeSeconds: math.Round(res.Duration.Seconds()*1000) / 1000,
		Output:          out.Text,
		TimedOut:        res.TimedOut,
		Truncated:       out.Cut || res.Stdout.Dropped() || res.Stderr.Dropped(),
	}
	if res.Signal != 0 {
		st.Signal = unix.SignalName(res.Signal)
	}
	return st
}
