//go:build hosts

package hosts

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A scenario is what the scripted model does with execd through a host,
// and what it must have been sent back.
type scenario struct {
	name string
	// setup, if set, prepares the world before the host starts.
	setup func(t *testing.T, w *world)
	moves []move
	// check gets the tool results the model was sent, one per move.
	check func(t *testing.T, w *world, results []toolResult)
}

// runScenarios runs each scenario in a world of its own through host,
// which runs the host against the scripted model and returns the want
// tool results the model was sent.
func runScenarios(t *testing.T, host func(t *testing.T, w *world, m *model, want int) []toolResult, scs []func(t *testing.T) scenario) {
	for _, sc := range scs {
		s := sc(t)
		t.Run(s.name, func(t *testing.T) {
			w := newWorld(t, "")
			if s.setup != nil {
				s.setup(t, w)
			}
			m := newModel(t, s.moves)
			s.check(t, w, host(t, w, m, len(s.moves)))
		})
	}
}

// call is a move that makes the same tool call whatever came before.
func call(tool string, args map[string]any) move {
	return func([]toolResult) (*toolCall, error) { return &toolCall{Tool: tool, Args: args}, nil }
}

var (
	sessionIDText = regexp.MustCompile(`Process running with session ID (\d+)`)
	sessionIDJSON = regexp.MustCompile(`"session_id"\s*:\s*(\d+)`)
)

// sessionID reads the session id out of the first tool result, as a
// model would: from execd's text, or from its structuredContent where a
// host shows the model that instead.
func sessionID(results []toolResult) (int, error) {
	for _, re := range []*regexp.Regexp{sessionIDText, sessionIDJSON} {
		if m := re.FindStringSubmatch(results[0].Text); m != nil {
			return strconv.Atoi(m[1])
		}
	}
	return 0, fmt.Errorf("no session id in the result of exec_command: %q", results[0].Text)
}

// writeStdin is a move that writes chars to the session the first call
// started. The yield is long because it costs nothing: execd answers as
// soon as the shell waits for input again, or exits (SPEC §4.4).
func writeStdin(chars string) move {
	return func(results []toolResult) (*toolCall, error) {
		id, err := sessionID(results)
		if err != nil {
			return nil, err
		}
		return &toolCall{Tool: "write_stdin", Args: map[string]any{"session_id": id, "chars": chars, "yield_time_ms": 10000}}, nil
	}
}

// wantExecdText fails the test unless the model got execd's text layout
// (SPEC §4.3) containing every one of wants. Where execd also sends
// structuredContent, hosts show the model that JSON instead (execd then
// leaves it out for the hosts it knows: tools.structured_content).
func wantExecdText(t *testing.T, r toolResult, wants ...string) {
	t.Helper()
	if strings.Contains(r.Text, `"wall_time_seconds"`) {
		t.Errorf("the model got execd's structuredContent as JSON, not its text:\n%s", r.Text)
		return
	}
	for _, want := range wants {
		if !strings.Contains(r.Text, want) {
			t.Errorf("the model's tool result lacks %q:\n%s", want, r.Text)
		}
	}
}

// oneShot runs a command that exits within its yield.
var oneShot = scenario{
	name:  "one-shot",
	moves: []move{call("exec_command", map[string]any{"cmd": "echo hello"})},
	check: func(t *testing.T, _ *world, results []toolResult) {
		wantExecdText(t, results[0], "Chunk ID: ", "Process exited with code 0", "Output:\nhello")
	},
}

// ptySession starts an interactive shell on a terminal, types a command
// into it in the next model turn, with the session id the model read
// from the first result, and ends it in a third.
var ptySession = scenario{
	name: "pty-session",
	moves: []move{
		call("exec_command", map[string]any{"cmd": "bash", "tty": true, "yield_time_ms": 500}),
		writeStdin("echo hi\n"),
		writeStdin("exit\n"),
	},
	check: func(t *testing.T, _ *world, results []toolResult) {
		wantExecdText(t, results[0], "Process running with session ID ", "Output:")
		wantExecdText(t, results[1], "Process running with session ID ", "Output:")
		if !slices.Contains(lines(results[1].Text), "hi") {
			t.Errorf("no line \"hi\" in the result of write_stdin:\n%s", results[1].Text)
		}
		wantExecdText(t, results[2], "Process exited with code 0")
	},
}

// sandboxDenial writes outside the workspace and the sandbox's writable
// roots: the command fails and the model is told.
func sandboxDenial(t *testing.T) scenario {
	outside, err := os.MkdirTemp("/var/tmp", "execd-hosts-") // not /tmp: the sandbox lets commands write there
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	target := filepath.Join(outside, "denied")
	return scenario{
		name:  "sandbox-denial",
		moves: []move{call("exec_command", map[string]any{"cmd": "touch " + target})},
		check: func(t *testing.T, _ *world, results []toolResult) {
			wantExecdText(t, results[0], "Process exited with code 1", "touch: cannot touch '"+target+"'")
			if r := results[0].Text; !strings.Contains(r, "Read-only file system") && !strings.Contains(r, "Permission denied") {
				t.Errorf("the result does not say why the write failed:\n%s", r)
			}
			if exists(t, target) {
				t.Errorf("the sandbox let the command create %s", target)
			}
		},
	}
}

// askRules makes execd ask before any touch (SPEC §7.3).
const askRules = `prefix_rule(pattern=["touch"], decision="prompt")` + "\n"

// askBeforeTouch configures execd with askRules.
func askBeforeTouch(t *testing.T, w *world) {
	rules := w.write(t, "ask.rules", askRules)
	w.write(t, "execd.toml", fmt.Sprintf("[rules]\nfiles = [%q]\namend_file = %q\n", rules, filepath.Join(w.Dir, "amend.rules")))
}

// approval runs a command execd asks the user about, after setup (which
// includes askBeforeTouch).
func approval(name string, setup func(t *testing.T, w *world), check func(t *testing.T, w *world, r toolResult)) scenario {
	return scenario{
		name:  name,
		setup: setup,
		moves: []move{call("exec_command", map[string]any{"cmd": "touch approved.txt"})},
		check: func(t *testing.T, w *world, results []toolResult) { check(t, w, results[0]) },
	}
}

// approvedRan reports whether the command of approval ran.
func approvedRan(t *testing.T, w *world) bool {
	return exists(t, filepath.Join(w.Work, "approved.txt"))
}

// wantElicitation checks an approval question execd asked through a host.
func wantElicitation(t *testing.T, message string, schema map[string]any) {
	t.Helper()
	for _, want := range []string{"Allow this command to run?", "touch approved.txt", "Sandbox: workspace-write"} {
		if !strings.Contains(message, want) {
			t.Errorf("the approval question lacks %q:\n%s", want, message)
		}
	}
	if choices := decisions(schema); !slices.Contains(choices, "allow_once") || !slices.Contains(choices, "deny") {
		t.Errorf("the approval question offers %q, want allow_once and deny among them: %v", choices, schema)
	}
}

// decisions lists the values an approval question's schema offers for
// its decision: a titled enum (oneOf of const and title, MCP 2025-11-25)
// or, for clients of earlier versions, a plain enum (SPEC §3.3).
func decisions(schema map[string]any) []string {
	props, _ := schema["properties"].(map[string]any)
	decision, _ := props["decision"].(map[string]any)
	var out []string
	if enum, ok := decision["enum"].([]any); ok {
		for _, v := range enum {
			s, _ := v.(string)
			out = append(out, s)
		}
	}
	if oneOf, ok := decision["oneOf"].([]any); ok {
		for _, v := range oneOf {
			choice, _ := v.(map[string]any)
			s, _ := choice["const"].(string)
			out = append(out, s)
		}
	}
	return out
}

// lines splits text into lines without their line ends (a terminal ends
// them with \r\n).
func lines(text string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		out = append(out, strings.TrimRight(sc.Text(), "\r"))
	}
	return out
}
