package test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execd/execd/internal/proctest"
)

// The SDK's default Connect probes server/discover (2026-07-28) first and
// must fall back to initialize when execd answers -32601.
func TestSDKDefaultConnectFallsBackToInitialize(t *testing.T) {
	cmd, _ := execdCmd(t, fullAccess)
	cs := connect(t, cmd, nil, nil)
	init := cs.InitializeResult()
	if init.ProtocolVersion != "2025-11-25" || init.ServerInfo.Name != "execd" || init.Capabilities.Tools == nil {
		t.Fatalf("initialize result: %+v", init)
	}
	if !strings.Contains(init.Instructions, "exec_command") || !strings.Contains(init.Instructions, "without a sandbox") {
		t.Errorf("instructions: %q", init.Instructions)
	}
	_, text, st := callTool(t, cs, "shell_command", map[string]any{"command": "echo hello"})
	if st == nil || st.Output != "hello\n" || !strings.HasSuffix(text, "Output:\nhello\n") {
		t.Errorf("shell_command: %q %+v", text, st)
	}
}

func TestSDKPinnedVersion(t *testing.T) {
	cs, _ := startSDK(t, fullAccess)
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-06-18" {
		t.Fatalf("negotiated %s, want 2025-06-18", v)
	}
	if err := cs.Ping(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

func TestSDKToolsList(t *testing.T) {
	for config, want := range map[string][]string{
		fullAccess: {"exec_command", "write_stdin", "apply_patch"},
		fullAccess + "[tools]\nshell_type = \"shell\"\n":         {"shell", "apply_patch"},
		fullAccess + "[tools]\nshell_type = \"shell_command\"\n": {"shell_command", "apply_patch"},
		fullAccess + "[tools]\napply_patch = false\n":            {"exec_command", "write_stdin"},
	} {
		cs, _ := startSDK(t, config)
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
			a := tool.Annotations
			if a == nil || a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint || a.OpenWorldHint == nil || !*a.OpenWorldHint {
				t.Errorf("%s annotations %+v", tool.Name, a)
			}
			in, _ := json.Marshal(tool.InputSchema)
			out, _ := json.Marshal(tool.OutputSchema)
			if !strings.Contains(string(in), `"additionalProperties":false`) || !strings.Contains(string(out), `"exit_code"`) {
				t.Errorf("%s schemas: %s / %s", tool.Name, in, out)
			}
		}
		if strings.Join(names, ",") != strings.Join(want, ",") || res.NextCursor != "" {
			t.Fatalf("tools %v, want %v", names, want)
		}
	}
}

func TestSDKShellTools(t *testing.T) {
	cs, work := startSDK(t, fullAccess)
	res, text, st := callTool(t, cs, "shell", map[string]any{"command": []string{"sh", "-c", "pwd; echo err >&2; exit 42"}})
	var shellText struct {
		Output   string `json:"output"`
		Metadata struct {
			ExitCode int `json:"exit_code"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(text), &shellText); err != nil {
		t.Fatalf("shell text %q: %v", text, err)
	}
	if !res.IsError || shellText.Metadata.ExitCode != 42 || shellText.Output != work+"\nerr\n" || st.ExitCode != 42 {
		t.Errorf("shell exit 42: isError %v text %q structured %+v", res.IsError, text, st)
	}
	res, text, st = callTool(t, cs, "shell_command", map[string]any{"command": "sleep 5", "timeout_ms": 300})
	if !res.IsError || !st.TimedOut || st.ExitCode != 124 || !strings.HasPrefix(text, "Exit code: 124\n") ||
		!strings.Contains(text, "Output:\ncommand timed out after ") {
		t.Errorf("timeout: %q %+v", text, st)
	}
	_, _, st = callTool(t, cs, "shell_command", map[string]any{"command": "head -c 50000000 /dev/zero | tr '\\0' x", "timeout_ms": 60000})
	if !st.Truncated || len(st.Output) > 40100 {
		t.Errorf("50 MB output: truncated %v, %d bytes for the model", st.Truncated, len(st.Output))
	}
	_, _, st = callTool(t, cs, "shell", map[string]any{"command": []string{"ls", "/proc/self/fd"}})
	if st.Output != "0\n1\n2\n3\n" {
		t.Errorf("descriptors a command inherits: %q", st.Output)
	}
	res, text, _ = callTool(t, cs, "shell_command", map[string]any{"command": "ls", "workdir": "nope"})
	if !res.IsError || res.StructuredContent != nil || !strings.Contains(text, "workdir nope: no such directory") {
		t.Errorf("bad workdir: %q", text)
	}
}

func TestSDKUnknownToolIsAProtocolError(t *testing.T) {
	cs, _ := startSDK(t, fullAccess)
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "rm_everything", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "rm_everything") {
		t.Fatalf("unknown tool: %v", err)
	}
}

func TestSDKRefusesWithoutLandlock(t *testing.T) {
	cmd, work := execdCmd(t, "") // defaults: workspace-write, fail_closed
	withoutLandlock(cmd)
	cs := connect(t, cmd, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	res, text, st := callTool(t, cs, "shell_command", map[string]any{"command": "touch ran"})
	if !res.IsError || st != nil || !strings.Contains(text, "this host lacks Landlock") {
		t.Errorf("refusal: isError %v %q", res.IsError, text)
	}
	if _, err := readFileIn(work, "ran"); err == nil {
		t.Error("the command ran although no sandbox is available")
	}
}

func TestSDKCancelKillsTheCommand(t *testing.T) {
	cs, _ := startSDK(t, fullAccess)
	const marker = "sleep 7101.5"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shell_command",
			Arguments: map[string]any{"command": marker + " & " + marker, "timeout_ms": 120000}})
		done <- err
	}()
	proctest.Running(t, marker, 2, waitLimit)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call returned %v", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("cancelled call did not return")
	}
	proctest.Gone(t, marker, waitLimit)
	if err := cs.Ping(context.Background(), nil); err != nil {
		t.Fatalf("ping after cancel: %v", err)
	}
}

// progressRecorder keeps the progress notifications a client gets.
type progressRecorder struct {
	mu  sync.Mutex
	got []*mcp.ProgressNotificationParams
}

// connect starts execd with config and a client that records progress.
func (p *progressRecorder) connect(t *testing.T, config string) *mcp.ClientSession {
	t.Helper()
	cmd, _ := execdCmd(t, config)
	return connect(t, cmd, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		p.mu.Lock()
		p.got = append(p.got, r.Params)
		p.mu.Unlock()
	}}, nil)
}

// notes returns the notifications received so far.
func (p *progressRecorder) notes() []*mcp.ProgressNotificationParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.got)
}

func TestSDKProgress(t *testing.T) {
	var rec progressRecorder
	cs := rec.connect(t, fullAccess)
	params := &mcp.CallToolParams{Name: "shell_command",
		Arguments: map[string]any{"command": "for i in 1 2 3 4 5; do echo step $i; sleep 0.15; done"}}
	params.SetProgressToken("p-1")
	if _, err := cs.CallTool(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	got := rec.notes()
	if len(got) == 0 {
		t.Fatal("no progress notifications")
	}
	prev := 0.0
	for _, p := range got {
		if p.ProgressToken != "p-1" || p.Progress <= prev || !strings.HasPrefix(p.Message, "step ") {
			t.Errorf("progress %+v after %v", p, prev)
		}
		prev = p.Progress
	}
}

func TestSDKConcurrentCallsDoNotBlockEachOther(t *testing.T) {
	cs, _ := startSDK(t, fullAccess)
	slow := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shell_command",
			Arguments: map[string]any{"command": "sleep 3"}})
		slow <- err
	}()
	// While the slow call runs, quick calls and pings complete.
	for range 5 {
		if _, _, st := callTool(t, cs, "shell", map[string]any{"command": []string{"echo", "quick"}}); st.Output != "quick\n" {
			t.Fatalf("quick call: %+v", st)
		}
		if err := cs.Ping(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-slow:
		t.Fatal("the slow call finished first: the quick calls were not concurrent with it")
	default:
	}
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
}
