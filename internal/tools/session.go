package tools

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/execd/execd/internal/orchestrator"
	"github.com/execd/execd/internal/policy"
	"github.com/execd/execd/internal/procstore"
	"github.com/execd/execd/internal/sandbox"
)

// Yield bounds (SPEC §4.3, §4.4, compat).
const (
	minYield          = 250 * time.Millisecond
	maxYield          = 30 * time.Second
	defaultStartYield = 10 * time.Second
	defaultWriteYield = 250 * time.Millisecond
	minPollYield      = 5 * time.Second
	// DefaultMaxPollTime is below the 60 s after which Codex and the TS
	// SDK give up on a call (SPEC §2).
	DefaultMaxPollTime = 30 * time.Second
	// warnBelowMax: the warning appears when this close to the limit.
	warnBelowMax = 4
)

// startYield is exec_command's wait: default 10 s, within [250 ms, 30 s].
// ms < 0 means absent.
func startYield(ms int64) time.Duration {
	if ms < 0 {
		return defaultStartYield
	}
	return clampMs(ms, minYield, maxYield)
}

// writeYield is write_stdin's wait: with input, default 250 ms within
// [250 ms, 30 s]; an empty poll within [5 s, maxPoll].
func writeYield(ms int64, poll bool, maxPoll time.Duration) time.Duration {
	if poll {
		if ms < 0 {
			return minPollYield
		}
		return clampMs(ms, minPollYield, max(maxPoll, minPollYield))
	}
	if ms < 0 {
		return defaultWriteYield
	}
	return clampMs(ms, minYield, maxYield)
}

func clampMs(ms int64, lo, hi time.Duration) time.Duration {
	if ms > int64(hi/time.Millisecond) {
		return hi
	}
	return max(lo, time.Duration(ms)*time.Millisecond)
}

// runExecCommand is the exec_command tool (SPEC §4.3).
func (s *Server) runExecCommand(ctx context.Context, c *toolCall) *callResult {
	a := parseArgs(c.name, c.args)
	script := s.cmdArg(a)
	workdir := a.str("workdir")
	shellName := a.str("shell")
	login := s.loginArg(a)
	tty := a.boolean("tty", false)
	yield := startYield(a.integer("yield_time_ms"))
	maxTokens := s.maxTokensArg(a)
	approval := s.approvalArgs(a)
	if err := a.done(); err != nil {
		return errorResult(err)
	}
	shell := s.orch.Shell()
	if ip, err := s.interceptPatch(ctx, c, nil, &script, workdir, approval); !errors.Is(err, errNotPatch) {
		return sessionResultOf(ip, err, shell.Argv(script, login), maxTokens)
	}
	if shellName != "" {
		var err error
		if shell, err = s.orch.ResolveShell(shellName, workdir); err != nil {
			return errorResult(&ArgError{Tool: c.name, Field: "shell", Msg: err.Error()})
		}
	}
	argv := shell.Argv(script, login)
	req := orchestrator.SessionRequest{CallID: c.id.String(), Argv: argv, Workdir: workdir, TTY: tty, Yield: yield,
		Approval: approval, Approver: approver{s}}
	if p := startProgress(ctx, s.conn, c.progress); p != nil {
		req.Output = p.observe
		defer p.stop()
	}
	if ev := s.events(ctx, c); ev != nil {
		cwd, _ := s.orch.ResolveWorkdir(workdir)
		req.OnStart = func(sandbox string) { ev.begin(argv, cwd, sandbox) }
		req.Watch = ev
	}
	chunk, err := s.orch.StartSession(ctx, req)
	if err != nil {
		return errorResult(err)
	}
	return sessionResult(chunk, maxTokens)
}

// runWriteStdin is the write_stdin tool (SPEC §4.4).
func (s *Server) runWriteStdin(ctx context.Context, c *toolCall) *callResult {
	a := parseArgs(c.name, c.args)
	id := s.sessionIDArg(a)
	chars := s.charsArg(a)
	yield := writeYield(a.integer("yield_time_ms"), chars == "", s.opts.MaxPollTime)
	maxTokens := s.maxTokensArg(a)
	if err := a.done(); err != nil {
		return errorResult(err)
	}
	req := orchestrator.WriteRequest{ID: id, Chars: []byte(chars), Yield: yield}
	if p := startProgress(ctx, s.conn, c.progress); p != nil {
		req.Output = p.observe
		defer p.stop()
	}
	if chars != "" {
		req.OnInput = s.terminalInteraction(ctx, id, chars)
	}
	chunk, err := s.orch.WriteSession(ctx, req)
	if err != nil {
		return errorResult(err)
	}
	return sessionResult(chunk, maxTokens)
}

// cmdArg reads cmd, or its alias command: a string, or an array of
// strings shell-quoted into one (SPEC §4.5b).
func (s *Server) cmdArg(a *args) string {
	if a.has("cmd") && a.has("command") {
		a.fail("command", "give cmd or its alias command, not both")
	}
	if !a.has("command") {
		a.require("cmd")
		script := a.str("cmd")
		if script == "" {
			a.fail("cmd", "must not be empty")
		}
		return script
	}
	a.raw("cmd")
	raw, _ := a.raw("command")
	if len(raw) > 0 && raw[0] == '[' {
		argv := a.strList("command")
		if len(argv) == 0 {
			a.fail("command", "must not be empty")
		}
		return policy.ShellJoin(argv)
	}
	script := a.str("command")
	if script == "" {
		a.fail("command", "must not be empty")
	}
	return script
}

// sessionIDArg reads session_id, or its alias process_id (an integer or
// a numeric string).
func (s *Server) sessionIDArg(a *args) procstore.ID {
	field := "session_id"
	switch {
	case a.has("session_id") && a.has("process_id"):
		a.fail("process_id", "give session_id or its alias process_id, not both")
	case a.has("process_id"):
		field = "process_id"
		a.raw("session_id")
	default:
		a.require("session_id")
		a.raw("process_id")
	}
	id := a.integer(field)
	if id > math.MaxInt32 {
		a.fail(field, "%d is not a session id", id)
	}
	return procstore.ID(id)
}

// charsArg reads chars, or its alias input.
func (s *Server) charsArg(a *args) string {
	if a.has("chars") && a.has("input") {
		a.fail("input", "give chars or its alias input, not both")
	}
	if a.has("input") {
		a.raw("chars")
		return a.str("input")
	}
	a.raw("input")
	return a.str("chars")
}

func (s *Server) maxTokensArg(a *args) int {
	n := a.integer("max_output_tokens")
	switch {
	case n < 0:
		return s.opts.MaxOutputTokens
	case n > math.MaxInt32:
		a.fail("max_output_tokens", "%d is too large", n)
	}
	return int(n)
}

// sessionStructured is the structuredContent of exec_command and
// write_stdin (SPEC §4.3, §4.5b).
type sessionStructured struct {
	WallTimeSeconds    float64 `json:"wall_time_seconds"`
	Output             string  `json:"output"`
	ExitCode           *int    `json:"exit_code,omitempty"`
	Signal             string  `json:"signal,omitempty"`
	SessionID          *int    `json:"session_id,omitempty"`
	ProcessID          string  `json:"process_id,omitempty"`
	OriginalTokenCount int     `json:"original_token_count"`
	ChunkID            string  `json:"chunk_id"`
	Truncated          bool    `json:"truncated"`
	Warning            string  `json:"warning,omitempty"`
	SandboxDenied      bool    `json:"sandbox_denied,omitempty"`
}

// sessionResult renders a chunk in the layout of SPEC §4.3. isError is
// false whatever the exit code.
func sessionResult(c *orchestrator.Chunk, maxTokens int) *callResult {
	// Replace invalid UTF-8 first, as for one-shots, keeping the gap's place.
	head, tail := toValidUTF8(c.Output[:c.OmittedAt]), toValidUTF8(c.Output[c.OmittedAt:])
	out := truncateSession(head+tail, len(head), c.Omitted, maxTokens)
	st := sessionStructured{
		WallTimeSeconds:    math.Round(c.Wall.Seconds()*1e4) / 1e4,
		Output:             out.Text,
		OriginalTokenCount: approxTokens(len(c.Output) + int(c.Omitted)),
		ChunkID:            fmt.Sprintf("%06x", rand.IntN(1<<24)),
		Truncated:          out.Cut || c.Omitted > 0,
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Command: %s\nChunk ID: %s\nWall time: %.4f seconds\n", policy.ShellJoin(c.Argv), st.ChunkID, c.Wall.Seconds())
	if c.Exit != nil {
		code := c.Exit.Code
		st.ExitCode = &code
		st.SandboxDenied = sandbox.LooksDenied(c.Sandboxed, code, string(c.Output))
		if c.Exit.Signal != 0 {
			st.Signal = unix.SignalName(c.Exit.Signal)
		}
		fmt.Fprintf(&b, "Process exited with code %d\n", code)
	} else {
		id := int(c.ID)
		st.SessionID, st.ProcessID = &id, strconv.Itoa(id)
		fmt.Fprintf(&b, "Process running with session ID %d\n", id)
	}
	fmt.Fprintf(&b, "Original token count: %d\n", st.OriginalTokenCount)
	if c.Open > 0 && c.Open >= c.Max-warnBelowMax {
		st.Warning = fmt.Sprintf("Warning: %d sessions are open (limit %d); finish or reuse old ones before the oldest are closed automatically.", c.Open, c.Max)
		b.WriteString(st.Warning + "\n")
	}
	if c.Note != "" {
		b.WriteString("Note: " + c.Note + "\n")
	}
	b.WriteString("Output:\n")
	b.WriteString(out.withHeader())
	return &callResult{Content: []textContent{{Type: "text", Text: b.String()}}, StructuredContent: st}
}

// truncateSession cuts a session's output for the model. When the
// session buffer already dropped bytes from the middle (at byte gapAt of
// text), the cut is made around that gap and one marker counts both.
func truncateSession(text string, gapAt int, omitted int64, maxTokens int) truncated {
	if omitted == 0 {
		return truncateOutput(text, maxTokens)
	}
	budget := max(maxTokens, 0) * bytesPerToken
	headEnd, tailStart := gapAt, gapAt // all of text fits: mark the gap only
	if len(text) > budget {
		headEnd = min(budget/2, gapAt)
		tailStart = max(len(text)-(budget-budget/2), gapAt)
	}
	for headEnd > 0 && !utf8.RuneStart(text[headEnd]) {
		headEnd--
	}
	for tailStart < len(text) && !utf8.RuneStart(text[tailStart]) {
		tailStart++
	}
	removed := int64(tailStart-headEnd) + omitted
	return truncated{
		Text:       text[:headEnd] + fmt.Sprintf("…%d tokens truncated…", approxTokens(int(removed))) + text[tailStart:],
		Cut:        true,
		TotalLines: countLines(text),
	}
}
