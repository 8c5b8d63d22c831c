package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	"github.com/execd/execd/internal/orchestrator"
	"github.com/execd/execd/internal/reaper"
	"github.com/execd/execd/internal/reaper/reapertest"
	"github.com/execd/execd/internal/rpc"
	"github.com/execd/execd/internal/sandbox"
)

// testReaper is the one Reaper of the test process.
var testReaper *reaper.Reaper

func TestMain(m *testing.M) {
	// Sandboxed commands and patches start this test binary as the
	// sandbox helper and the patch applier.
	if len(os.Args) > 1 && os.Args[1] == orchestrator.PatchApplierArg {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		code := orchestrator.ApplierMain(ctx, os.Stdin, os.Stdout)
		stop()
		os.Exit(code)
	}
	if code, ok := sandbox.Dispatch(); ok {
		os.Exit(code)
	}
	testReaper = reaper.New()
	os.Exit(reapertest.Run(m, testReaper))
}

const waitLimit = 10 * time.Second

type frame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *rpc.Error      `json:"error"`
}

// client drives a Server over pipes.
type client struct {
	t      *testing.T
	w      io.WriteCloser
	nextID atomic.Int64
	mu     sync.Mutex
	waits  map[string]chan frame
	notes  chan frame
}

type serverOpt func(*Options, *orchestrator.Options)

func startServer(t *testing.T, mods ...serverOpt) *client {
	t.Helper()
	log := zaptest.NewLogger(t)
	oopts := orchestrator.Options{Logger: log, Reaper: testReaper, Cwd: t.TempDir(),
		Sandbox: orchestrator.SandboxPolicy{Settings: sandbox.Settings{Mode: sandbox.DangerFullAccess}, FailClosed: true}}
	sopts := Options{Logger: log, Version: "test"}
	for _, m := range mods {
		m(&sopts, &oopts)
	}
	orch, err := orchestrator.New(oopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(orch.Close) // runs after the server's cleanup below
	sopts.Orchestrator = orch
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	conn := rpc.NewConn(inR, outW, rpc.Options{Logger: log.Named("rpc")})
	srv, err := New(conn, sopts)
	if err != nil {
		t.Fatal(err)
	}
	c := &client{t: t, w: inW, waits: map[string]chan frame{}, notes: make(chan frame, 1000)}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(context.Background())
	}()
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 32<<20)
		for sc.Scan() {
			var f frame
			if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
				t.Errorf("server wrote non-JSON: %q", sc.Text())
				continue
			}
			if f.Method != "" {
				c.notes <- f
				continue
			}
			c.mu.Lock()
			ch := c.waits[string(f.ID)]
			c.mu.Unlock()
			if ch != nil {
				ch <- f
			}
		}
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		<-served
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-readDone
	})
	return c
}

// request sends a request and waits for its response.
func (c *client) request(method string, params any) frame {
	c.t.Helper()
	id := fmt.Sprint(c.nextID.Add(1))
	ch := make(chan frame, 1)
	c.mu.Lock()
	c.waits[id] = ch
	c.mu.Unlock()
	msg := map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method}
	if params != nil {
		msg["params"] = params
	}
	b, _ := json.Marshal(msg)
	if _, err := c.w.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
	select {
	case f := <-ch:
		return f
	case <-time.After(waitLimit):
		c.t.Fatalf("no response to %s", method)
	}
	return frame{}
}

type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent *execStructured `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

func (c *client) callTool(name string, args any) toolResult {
	c.t.Helper()
	f := c.request("tools/call", map[string]any{"name": name, "arguments": args})
	if f.Error != nil {
		c.t.Fatalf("tools/call %s: %+v", name, f.Error)
	}
	var r toolResult
	if err := json.Unmarshal(f.Result, &r); err != nil {
		c.t.Fatal(err)
	}
	if len(r.Content) != 1 || r.Content[0].Type != "text" {
		c.t.Fatalf("result content %+v: want one text block", r.Content)
	}
	return r
}

func (r toolResult) text() string { return r.Content[0].Text }

func TestInitializeNegotiatesVersions(t *testing.T) {
	tests := map[string]string{
		"2025-11-25": "2025-11-25", "2025-06-18": "2025-06-18", "2025-03-26": "2025-03-26",
		"2024-11-05": "2025-11-25", "2026-07-28": "2025-11-25", "": "2025-11-25",
	}
	for requested, want := range tests {
		c := startServer(t)
		f := c.request("initialize", map[string]any{"protocolVersion": requested, "capabilities": map[string]any{},
			"clientInfo": map[string]string{"name": "t", "version": "1"}})
		var res initializeResult
		if err := json.Unmarshal(f.Result, &res); err != nil || f.Error != nil {
			t.Fatalf("initialize %q: %v %+v", requested, err, f.Error)
		}
		if res.ProtocolVersion != want || res.ServerInfo.Name != "execd" || res.Instructions == "" {
			t.Errorf("initialize %q = %+v; want version %s", requested, res, want)
		}
		if _, ok := res.Capabilities["tools"]; !ok {
			t.Errorf("capabilities %v lack tools", res.Capabilities)
		}
		if again := c.request("initialize", map[string]any{"protocolVersion": requested}); again.Error == nil {
			t.Errorf("second initialize accepted")
		}
	}
}

func TestPingAndUnknownMethods(t *testing.T) {
	c := startServer(t)
	if f := c.request("ping", nil); f.Error != nil || string(f.Result) != "{}" {
		t.Errorf("ping = %s %+v", f.Result, f.Error)
	}
	for _, m := range []string{"server/discover", "resources/list", "nonsense"} {
		if f := c.request(m, nil); f.Error == nil || f.Error.Code != rpc.CodeMethodNotFound {
			t.Errorf("%s = %+v, want -32601", m, f.Error)
		}
	}
}

func TestToolsListPerShellType(t *testing.T) {
	tests := map[ShellType][]string{
		ShellTypeShell:        {"shell", "apply_patch"},
		ShellTypeShellCommand: {"shell_command", "apply_patch"},
		ShellTypeUnifiedExec:  {"exec_command", "write_stdin", "apply_patch"},
		ShellTypeDisabled:     {"apply_patch"},
	}
	for st, want := range tests {
		c := startServer(t, func(o *Options, _ *orchestrator.Options) { o.ShellType = st })
		f := c.request("tools/list", map[string]any{})
		var res struct {
			Tools      []map[string]json.RawMessage `json:"tools"`
			NextCursor *string                      `json:"nextCursor"`
		}
		if err := json.Unmarshal(f.Result, &res); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range res.Tools {
			var name string
			_ = json.Unmarshal(tool["name"], &name)
			names = append(names, name)
			checkToolDef(t, name, tool)
		}
		if !slices.Equal(names, want) {
			t.Errorf("shell_type %s lists %v, want %v", st, names, want)
		}
		if res.NextCursor != nil {
			t.Errorf("nextCursor set")
		}
		if f := c.request("tools/list", map[string]any{"cursor": "abc"}); f.Error == nil || f.Error.Code != rpc.CodeInvalidParams {
			t.Errorf("unknown cursor: %+v", f.Error)
		}
	}
}

func checkToolDef(t *testing.T, name string, tool map[string]json.RawMessage) {
	t.Helper()
	var in, out map[string]any
	if json.Unmarshal(tool["inputSchema"], &in) != nil || json.Unmarshal(tool["outputSchema"], &out) != nil {
		t.Fatalf("%s: schemas missing", name)
	}
	if in["type"] != "object" || in["additionalProperties"] != false || out["type"] != "object" {
		t.Errorf("%s: schemas %v / %v", name, in, out)
	}
	if string(tool["annotations"]) != `{"readOnlyHint":false,"destructiveHint":true,"openWorldHint":true}` {
		t.Errorf("%s: annotations %s", name, tool["annotations"])
	}
	if len(tool["description"]) < 10 {
		t.Errorf("%s: no description", name)
	}
}

func TestToolsCallProtocolErrors(t *testing.T) {
	c := startServer(t)
	if f := c.request("tools/call", map[string]any{"name": "nope"}); f.Error == nil || f.Error.Code != rpc.CodeInvalidParams ||
		!strings.Contains(f.Error.Message, `"nope"`) {
		t.Errorf("unknown tool: %+v", f.Error)
	}
	if f := c.request("tools/call", map[string]any{}); f.Error == nil || f.Error.Code != rpc.CodeInvalidParams {
		t.Errorf("missing name: %+v", f.Error)
	}
	if f := c.request("tools/call", "string params"); f.Error == nil || f.Error.Code != rpc.CodeInvalidParams {
		t.Errorf("bad params: %+v", f.Error)
	}
}

func TestShellTool(t *testing.T) {
	c := startServer(t)
	r := c.callTool("shell", map[string]any{"command": []string{"bash", "-c", "echo out; echo err >&2"}})
	var text struct {
		Output   string `json:"output"`
		Metadata struct {
			ExitCode int `json:"exit_code"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(r.text()), &text); err != nil {
		t.Fatalf("shell text is not JSON: %q", r.text())
	}
	if text.Output != "out\nerr\n" || text.Metadata.ExitCode != 0 || r.IsError {
		t.Errorf("shell text %+v isError %v", text, r.IsError)
	}
	if st := r.StructuredContent; st == nil || st.Output != "out\nerr\n" || st.ExitCode != 0 || st.TimedOut || st.Truncated {
		t.Errorf("structured %+v", r.StructuredContent)
	}
	for _, alias := range []string{"container.exec", "local_shell"} {
		if r := c.callTool(alias, map[string]any{"command": []string{"sh", "-c", "exit 42"}}); !r.IsError ||
			!strings.Contains(r.text(), `"exit_code":42`) || r.StructuredContent.ExitCode != 42 {
			t.Errorf("%s exit 42: %s", alias, r.text())
		}
	}
	r = c.callTool("shell", map[string]any{"command": []string{"sleep", "5"}, "timeout": 200})
	if !r.IsError || !r.StructuredContent.TimedOut || r.StructuredContent.ExitCode != 124 ||
		!strings.Contains(r.text(), "command timed out after ") {
		t.Errorf("timeout via alias: %s %+v", r.text(), r.StructuredContent)
	}
	r = c.callTool("shell", map[string]any{"command": []string{"bash", "-c", "kill -INT $$"}})
	if r.StructuredContent.Signal != "SIGINT" || r.StructuredContent.ExitCode != 130 {
		t.Errorf("signal: %+v", r.StructuredContent)
	}
}

func TestShellCommandTool(t *testing.T) {
	c := startServer(t)
	r := c.callTool("shell_command", map[string]any{"command": "echo shell command"})
	if !strings.HasPrefix(r.text(), "Exit code: 0\nWall time: ") || !strings.HasSuffix(r.text(), " seconds\nOutput:\nshell command\n") || r.IsError {
		t.Errorf("text %q", r.text())
	}
	r = c.callTool("shell_command", map[string]any{"command": "sleep 5", "timeout_ms": 200})
	if !strings.HasPrefix(r.text(), "Exit code: 124\n") || !strings.Contains(r.text(), "Output:\ncommand timed out after ") {
		t.Errorf("timeout text %q", r.text())
	}
	login := `shopt -q login_shell && echo login || echo plain`
	if r := c.callTool("shell_command", map[string]any{"command": login}); r.StructuredContent.Output != "login\n" {
		t.Errorf("default login: %q", r.StructuredContent.Output)
	}
	if r := c.callTool("shell_command", map[string]any{"command": login, "login": false}); r.StructuredContent.Output != "plain\n" {
		t.Errorf("login false: %q", r.StructuredContent.Output)
	}
	r = c.callTool("shell_command", map[string]any{"command": "seq 1 20000", "timeout_ms": 5000})
	if !r.StructuredContent.Truncated || !strings.Contains(r.text(), "Total output lines: 20000\nOutput:\n1\n2\n") ||
		!strings.Contains(r.text(), "tokens truncated…") {
		t.Errorf("truncated output:\n%.200s", r.text())
	}
}

func TestLoginShellDisallowed(t *testing.T) {
	c := startServer(t, func(o *Options, _ *orchestrator.Options) { o.DisallowLoginShell = true })
	if r := c.callTool("shell_command", map[string]any{"command": "shopt -q login_shell && echo login || echo plain"}); r.StructuredContent.Output != "plain\n" {
		t.Errorf("omitted login must mean -c: %q", r.StructuredContent.Output)
	}
	if r := c.callTool("shell_command", map[string]any{"command": "true", "login": true}); !r.IsError || !strings.Contains(r.text(), "login:") {
		t.Errorf("explicit login: %q", r.text())
	}
}

func TestCallsThatStartNothing(t *testing.T) {
	c := startServer(t)
	tests := []struct {
		tool string
		args any
		want string
	}{
		{"shell", map[string]any{}, "invalid arguments for shell: command: is required"},
		{"shell", map[string]any{"command": []string{}}, "command: must be a non-empty array"},
		{"shell", map[string]any{"command": "ls"}, "command: expected an array of strings"},
		{"shell", map[string]any{"command": []string{"ls"}, "cwd": "/"}, "cwd: unknown field"},
		{"shell", map[string]any{"command": []string{"ls"}, "timeout": 1, "timeout_ms": 1}, "not both"},
		{"shell", map[string]any{"command": []string{"ls"}, "timeout_ms": 0}, "at least 1 millisecond"},
		{"shell", map[string]any{"command": []string{"true"}, "timeout_ms": 18446744073710}, "timeout_ms: 18446744073710 is too large"},
		{"shell", map[string]any{"command": []string{"true"}, "timeout_ms": 9223372036855}, "is too large"},
		{"shell_command", map[string]any{"command": ""}, "shell_command: command: must not be empty"},
		{"shell", map[string]any{"command": []string{"no-such-program-xyz"}}, "execution error: cannot start no-such-program-xyz"},
		{"shell_command", map[string]any{"command": "ls", "workdir": "missing"}, "workdir missing: no such directory"},
		{"shell_command", map[string]any{"command": "echo a\x00b"}, "command: holds a NUL byte"},
		{"shell_command", map[string]any{"command": "ls", "workdir": "/tmp\x00x"}, "workdir: holds a NUL byte"},
		{"shell", map[string]any{"command": []string{"echo", "a\x00b"}}, "command: element 1 holds a NUL byte"},
		{"exec_command", map[string]any{"cmd": "echo a\x00b"}, "cmd: holds a NUL byte"},
		{"exec_command", map[string]any{"cmd": "ls", "shell": "/bin/sh\x00"}, "shell: holds a NUL byte"},
		{"shell_command", map[string]any{"command": "ls", "prefix_rule": []string{}}, "prefix_rule: must name at least one word"},
		{"shell_command", map[string]any{"command": "ls", "sandbox_permissions": "sudo"}, `"sudo" is not one of`},
		{"exec_command", map[string]any{}, "exec_command: cmd: is required"},
		{"exec_command", map[string]any{"cmd": ""}, "cmd: must not be empty"},
		{"exec_command", map[string]any{"cmd": "ls", "command": "ls"}, "give cmd or its alias command, not both"},
		{"exec_command", map[string]any{"cmd": "ls", "shell": "no-such-shell"}, "shell: command not found"},
		{"exec_command", map[string]any{"cmd": "ls", "tty": "yes"}, "tty: expected true or false"},
		{"write_stdin", map[string]any{"session_id": 1}, "unknown session_id 1"},
		{"write_stdin", map[string]any{}, "write_stdin: session_id: is required"},
		{"write_stdin", map[string]any{"session_id": 1, "process_id": "1"}, "not both"},
		{"write_stdin", map[string]any{"session_id": 1, "chars": "a", "input": "b"}, "give chars or its alias input"},
		{"write_stdin", map[string]any{"process_id": "abc"}, "process_id: expected a non-negative integer"},
		{"apply_patch", map[string]any{}, "invalid arguments for apply_patch: input: is required"},
		{"apply_patch", map[string]any{"input": ""}, "input: must not be empty"},
		{"apply_patch", map[string]any{"input": "x", "workdir": "/"}, "workdir: unknown field"},
		{"shell", map[string]any{"command": []string{"*** Begin Patch\n*** Delete File: x\n*** End Patch"}},
			"patch detected without explicit call to apply_patch. Call the apply_patch tool"},
		{"shell_command", map[string]any{"command": "apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: x\n*** End Patch\nEOF",
			"workdir": "missing"}, "workdir missing: no such directory"},
	}
	for _, tt := range tests {
		r := c.callTool(tt.tool, tt.args)
		if !r.IsError || r.StructuredContent != nil || !strings.Contains(r.text(), tt.want) {
			t.Errorf("%s %v = %q (isError %v, structured %v); want error containing %q", tt.tool, tt.args, r.text(), r.IsError, r.StructuredContent, tt.want)
		}
	}
}

func TestRefusedWhenSandboxUnavailable(t *testing.T) {
	c := startServer(t, func(_ *Options, o *orchestrator.Options) {
		o.Sandbox = orchestrator.SandboxPolicy{Settings: sandbox.Settings{Mode: sandbox.WorkspaceWrite}, FailClosed: true}
		o.Support = &sandbox.Support{OS: "linux", Landlock: 7}
	})
	marker := t.TempDir() + "/ran"
	r := c.callTool("shell_command", map[string]any{"command": "touch " + marker})
	if !r.IsError || !strings.Contains(r.text(), "lacks seccomp filters") || !strings.Contains(r.text(), "danger-full-access") {
		t.Errorf("refusal: %q", r.text())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran unsandboxed")
	}
	f := c.request("initialize", map[string]any{"protocolVersion": "2025-11-25"})
	var res initializeResult
	_ = json.Unmarshal(f.Result, &res)
	if !strings.Contains(res.Instructions, "refused") {
		t.Errorf("instructions do not say commands are refused: %q", res.Instructions)
	}
}

func TestProgressNotifications(t *testing.T) {
	c := startServer(t)
	f := c.request("tools/call", map[string]any{
		"name":      "shell_command",
		"arguments": map[string]any{"command": "for i in 1 2 3 4 5 6; do echo line $i; sleep 0.1; done"},
		"_meta":     map[string]any{"progressToken": "tok-1"},
	})
	if f.Error != nil {
		t.Fatal(f.Error)
	}
	var last int64
	n := 0
	for len(c.notes) > 0 {
		note := <-c.notes
		if note.Method != "notifications/progress" {
			continue
		}
		var p struct {
			Token    string `json:"progressToken"`
			Progress int64  `json:"progress"`
			Message  string `json:"message"`
		}
		if err := json.Unmarshal(note.Params, &p); err != nil {
			t.Fatal(err)
		}
		if p.Token != "tok-1" || p.Progress <= last || !strings.HasPrefix(p.Message, "line ") {
			t.Errorf("progress %+v after %d", p, last)
		}
		last = p.Progress
		n++
	}
	if n == 0 {
		t.Fatal("no progress notification for a 600 ms command")
	}
	if last > int64(len("line 1\n")*6) {
		t.Errorf("progress %d exceeds the output size", last)
	}
}

func TestLogForwardingStartsWithSetLevel(t *testing.T) {
	fwd := NewLogForwarder()
	var logger *zap.Logger
	c := startServer(t, func(o *Options, oo *orchestrator.Options) {
		logger = zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), fwd))
		o.Logs, o.Logger, oo.Logger = fwd, logger, logger
	})
	logger.Info("before setLevel")
	if f := c.request("logging/setLevel", map[string]any{"level": "verbose"}); f.Error == nil || f.Error.Code != rpc.CodeInvalidParams {
		t.Fatalf("bad level: %+v", f.Error)
	}
	if f := c.request("logging/setLevel", map[string]any{"level": "warning"}); f.Error != nil {
		t.Fatal(f.Error)
	}
	logger.Info("below the level")
	logger.Warn("forward me", zap.String("k", "v"))
	select {
	case note := <-c.notes:
		var p struct {
			Level string         `json:"level"`
			Data  map[string]any `json:"data"`
		}
		_ = json.Unmarshal(note.Params, &p)
		if note.Method != "notifications/message" || p.Level != "warning" || p.Data["message"] != "forward me" || p.Data["k"] != "v" {
			t.Errorf("forwarded %s %s", note.Method, note.Params)
		}
	case <-time.After(waitLimit):
		t.Fatal("nothing forwarded")
	}
}

// stuckWriter passes writes until stuck is set, then blocks them until
// release is closed; Close does not release them, like a blocking fd.
type stuckWriter struct {
	stuck   atomic.Bool
	release chan struct{}
	blocked chan struct{} // closed when the first write blocks
	once    sync.Once
	mu      sync.Mutex
	buf     strings.Builder
}

func (w *stuckWriter) Write(p []byte) (int, error) {
	if w.stuck.Load() {
		w.once.Do(func() { close(w.blocked) })
		<-w.release
		return 0, io.ErrClosedPipe
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *stuckWriter) Close() error { return nil }

// The log forwarder stuck writing to a client that stopped reading must not
// keep execd from exiting.
func TestShutdownWithAStuckLogForwarder(t *testing.T) {
	fwd := NewLogForwarder()
	logger := zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), fwd))
	orch, err := orchestrator.New(orchestrator.Options{Logger: logger, Reaper: testReaper, Cwd: t.TempDir(),
		Sandbox: orchestrator.SandboxPolicy{Settings: sandbox.Settings{Mode: sandbox.DangerFullAccess}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(orch.Close)
	inR, inW := io.Pipe()
	out := &stuckWriter{release: make(chan struct{}), blocked: make(chan struct{})}
	srv, err := New(rpc.NewConn(inR, out, rpc.Options{}), Options{Orchestrator: orch, Logger: logger, Logs: fwd})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background()) }()
	_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"info"}}`+"\n")
	for deadline := time.Now().Add(waitLimit); !strings.Contains(out.String(), `"id":1`); {
		if time.Now().After(deadline) {
			t.Fatal("no reply to logging/setLevel")
		}
		time.Sleep(time.Millisecond)
	}
	out.stuck.Store(true) // the client stops reading
	logger.Info("this notification gets stuck")
	select {
	case <-out.blocked:
	case <-time.After(waitLimit):
		t.Fatal("the forwarder never wrote")
	}
	_ = inW.Close()
	<-served
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(ctx) }()
	select {
	case <-done:
	case <-time.After(waitLimit):
		t.Fatal("Shutdown hangs on the stuck log forwarder")
	}
	close(out.release)
	srv.loops.Wait()
}

func (w *stuckWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// A call that meets execd shutting down (its processes' reaper closed
// before the connection stops reading) is answered as the connection
// answers those that come after: JSON-RPC -32603, not a tool result
// (SPEC §3.2).
func TestCallDuringShutdown(t *testing.T) {
	// The test shuts the process's Reaper down (a second Reaper's shutdown
	// would kill the first one's processes): it runs in a child process.
	const child = "EXECD_TOOLS_TEST_CHILD"
	if os.Getenv(child) != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCallDuringShutdown$", "-test.v")
		cmd.Env = append(os.Environ(), child+"=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := testReaper.Start(cmd); err != nil {
			t.Fatal(err)
		}
		if _, err := testReaper.Wait(cmd); err != nil || !strings.Contains(out.String(), "--- PASS") {
			t.Fatalf("child: %v\n%s", err, out.String())
		}
		return
	}
	c := startServer(t)
	if err := testReaper.Shutdown(t.Context(), 0); err != nil { // as execd's shutdown does first
		t.Fatal(err)
	}
	for _, tool := range []string{"shell", "exec_command"} {
		args := map[string]any{"command": []string{"true"}}
		if tool == "exec_command" {
			args = map[string]any{"cmd": "true"}
		}
		f := c.request("tools/call", map[string]any{"name": tool, "arguments": args})
		if f.Error == nil || f.Error.Code != rpc.CodeInternalError || !strings.Contains(f.Error.Message, "shutting down") {
			t.Errorf("%s during shutdown: error %+v, result %s; want -32603", tool, f.Error, f.Result)
		}
	}
}
