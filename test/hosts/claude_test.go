//go:build hosts

package hosts

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// claudePrint runs `claude -p` in w with the scripted model m and returns
// the tool results the model was sent, want of them. execd comes from an
// --mcp-config file (and only from it), its tools are allowed with
// --allowedTools; Claude Code's side traffic (updates, telemetry, error
// reports) is off. ENABLE_TOOL_SEARCH=false offers MCP tools to the model
// at once instead of behind a tool search, which a scripted model does
// not perform.
func claudePrint(t *testing.T, w *world, m *model, want int) []toolResult {
	t.Helper()
	servers := map[string]any{"mcpServers": map[string]any{"execd": map[string]any{
		"command": execdBin, "args": []string{"serve", "--config", w.ExecdConfig}}}}
	b, err := json.Marshal(servers)
	if err != nil {
		t.Fatal(err)
	}
	mcp := w.write(t, "mcp.json", string(b))
	cmd := w.command(claudeBin, "-p", "Use execd's tools.", "--mcp-config", mcp, "--strict-mcp-config", "--allowedTools", "mcp__execd")
	cmd.Env = w.env("ANTHROPIC_BASE_URL="+m.anthropic(t), "ANTHROPIC_API_KEY=sk-ant-scripted-model",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "ENABLE_TOOL_SEARCH=false")
	out := w.runHost(t, cmd)
	if !strings.Contains(out, "Done.") {
		t.Errorf("claude -p did not print the model's final message; stdout:\n%s", out)
	}
	results := m.Results(want)
	transcript(t, results)
	return results
}

// answerHook is an Elicitation hook for Claude Code that keeps the
// question it gets (JSON on stdin) in elicitation.json beside itself and
// allows the command once.
const answerHook = `#!/bin/sh
cat >"$(dirname "$0")/elicitation.json"
echo '{"hookSpecificOutput":{"hookEventName":"Elicitation","action":"accept","content":{"decision":"allow_once"}}}'
`

// withAnswerHook configures Claude Code (user settings in w's HOME) to
// answer execd's questions with answerHook.
func withAnswerHook(t *testing.T, w *world) {
	hook := w.write(t, "hook/answer", answerHook)
	settings := map[string]any{"hooks": map[string]any{"Elicitation": []any{map[string]any{
		"matcher": "execd", "hooks": []any{map[string]any{"type": "command", "command": hook}}}}}}
	b, err := json.Marshal(settings)
	if err != nil {
		t.Fatal(err)
	}
	w.write(t, "home/.claude/settings.json", string(b))
}

// TestClaudePrint drives `claude -p` (non-interactive: it cancels the
// questions MCP servers ask, unless an Elicitation hook answers them).
func TestClaudePrint(t *testing.T) {
	runScenarios(t, claudePrint, []func(t *testing.T) scenario{
		func(*testing.T) scenario { return oneShot },
		func(*testing.T) scenario { return ptySession },
		sandboxDenial,
		func(*testing.T) scenario {
			return approval("approval-cancelled", askBeforeTouch, func(t *testing.T, w *world, r toolResult) {
				wantExecdText(t, r, "exec command rejected: the user dismissed the approval request")
				if approvedRan(t, w) {
					t.Errorf("the cancelled command ran")
				}
			})
		},
		func(*testing.T) scenario {
			setup := func(t *testing.T, w *world) {
				askBeforeTouch(t, w)
				withAnswerHook(t, w)
			}
			return approval("approval-hook", setup, func(t *testing.T, w *world, r toolResult) {
				wantHookInput(t, filepath.Join(w.Dir, "hook", "elicitation.json"))
				wantExecdText(t, r, "Process exited with code 0")
				if !approvedRan(t, w) {
					t.Errorf("the command the hook approved did not run")
				}
			})
		},
	})
}

// wantHookInput checks what Claude Code gave the Elicitation hook.
func wantHookInput(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the Elicitation hook did not run: %v", err)
	}
	var in struct {
		Event           string         `json:"hook_event_name"`
		Server          string         `json:"mcp_server_name"`
		Mode            string         `json:"mode"`
		Message         string         `json:"message"`
		RequestedSchema map[string]any `json:"requested_schema"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatalf("hook input: %v: %s", err, b)
	}
	if in.Event != "Elicitation" || in.Server != "execd" || in.Mode != "form" {
		t.Errorf("hook input: event %q, server %q, mode %q; want Elicitation, execd, form", in.Event, in.Server, in.Mode)
	}
	wantElicitation(t, in.Message, in.RequestedSchema)
}
