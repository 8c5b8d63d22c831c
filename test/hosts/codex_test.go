//go:build hosts

package hosts

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// codexConfig is CODEX_HOME/config.toml: the scripted model as a custom
// provider of the Responses API, nothing that reaches the network (update
// check, analytics, the plugin marketplace's git sync, ChatGPT apps), no
// retries of a failed model request (they would only hide a fake's
// fault), and execd as README shows it, with the setting that lets Codex
// call its tools without asking (they are annotated destructive, so Codex
// would otherwise ask itself before execd asks: twice; `codex exec`
// refuses instead) unless approveMode is false.
func codexConfig(w *world, baseURL string, approveMode bool) string {
	mode := ""
	if approveMode {
		mode = "default_tools_approval_mode = \"approve\"\n"
	}
	return fmt.Sprintf(`model = "gpt-5.1-codex"
model_provider = "scripted"
check_for_update_on_startup = false

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
apps = false
shell_snapshot = false

[model_providers.scripted]
name = "scripted model"
base_url = "%s/v1"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[mcp_servers.execd]
command = %q
args = ["serve", "--config", %q]
%s`, baseURL, execdBin, w.ExecdConfig, mode)
}

// codexEnv is the environment of Codex in w, configured by config.
func codexEnv(t *testing.T, w *world, config string) []string {
	home := filepath.Join(w.Dir, "codex-home")
	w.write(t, "codex-home/config.toml", config)
	return w.env("CODEX_HOME=" + home)
}

// codexExec runs `codex exec` in w with the scripted model m and returns
// the tool results the model was sent, want of them.
func codexExec(t *testing.T, w *world, m *model, want int) []toolResult {
	t.Helper()
	cmd := w.command(codexBin, "exec", "--skip-git-repo-check", "--color", "never", "Use execd's tools.")
	cmd.Env = codexEnv(t, w, codexConfig(w, m.openAI(t), true))
	out := w.runHost(t, cmd)
	if !strings.Contains(out, "Done.") {
		t.Errorf("codex exec did not print the model's final message; stdout:\n%s", out)
	}
	results := m.Results(want)
	transcript(t, results)
	return results
}

// TestCodexExec drives `codex exec` (non-interactive: its approval policy
// is never, and it declines the questions MCP servers ask).
func TestCodexExec(t *testing.T) {
	runScenarios(t, codexExec, []func(t *testing.T) scenario{
		func(*testing.T) scenario { return oneShot },
		func(*testing.T) scenario { return ptySession },
		sandboxDenial,
		func(*testing.T) scenario {
			return approval("approval-declined", askBeforeTouch, func(t *testing.T, w *world, r toolResult) {
				wantExecdText(t, r, "exec command rejected by user")
				if approvedRan(t, w) {
					t.Errorf("the declined command ran")
				}
			})
		},
	})
}

// touchThroughAppServer has the model touch a file that execd asks about,
// through `codex app-server` (with default_tools_approval_mode = approve
// if approveMode), and returns the questions the client was asked.
func touchThroughAppServer(t *testing.T, approveMode bool) (*world, *model, []elicitation) {
	t.Helper()
	w := newWorld(t, "")
	askBeforeTouch(t, w)
	m := newModel(t, []move{call("exec_command", map[string]any{"cmd": "touch approved.txt"})})
	return w, m, codexAppServer(t, w, codexConfig(w, m.openAI(t), approveMode), m)
}

// TestCodexAppServer drives `codex app-server` over its JSON-RPC protocol
// as an IDE does: Codex forwards execd's approval question to the client
// (mcpServer/elicitation/request), and the client's answer reaches execd.
func TestCodexAppServer(t *testing.T) {
	t.Run("approval-answered", func(t *testing.T) {
		w, m, asked := touchThroughAppServer(t, true)
		if len(asked) != 1 {
			t.Fatalf("the client was asked %d questions, want execd's one: %v", len(asked), asked)
		}
		wantElicitation(t, asked[0].Message, asked[0].RequestedSchema)
		if asked[0].ServerName != "execd" {
			t.Errorf("the question came from %q, want execd", asked[0].ServerName)
		}
		results := m.Results(1)
		transcript(t, results)
		wantExecdText(t, results[0], "Process exited with code 0")
		if !approvedRan(t, w) {
			t.Errorf("the approved command did not run")
		}
	})
	// Without default_tools_approval_mode Codex asks the client itself
	// before calling a tool annotated destructive, then forwards execd's
	// question: the user is asked twice for one command (as in the TUI).
	t.Run("asked-twice-without-approve-mode", func(t *testing.T) {
		_, m, asked := touchThroughAppServer(t, false)
		if len(asked) != 2 {
			t.Fatalf("the client was asked %d questions, want 2 (Codex's, then execd's): %v", len(asked), asked)
		}
		if kind, _ := asked[0].Meta["codex_approval_kind"].(string); kind != "mcp_tool_call" {
			t.Errorf("first question: %q with _meta %v, want Codex's own (codex_approval_kind mcp_tool_call)", asked[0].Message, asked[0].Meta)
		}
		wantElicitation(t, asked[1].Message, asked[1].RequestedSchema)
		transcript(t, m.Results(1))
	})
}

// elicitation is the params of Codex's mcpServer/elicitation/request.
type elicitation struct {
	ServerName      string         `json:"serverName"`
	Mode            string         `json:"mode"`
	Message         string         `json:"message"`
	RequestedSchema map[string]any `json:"requestedSchema"`
	Meta            map[string]any `json:"_meta"`
}

// rpcMessage is any JSON-RPC message of the app-server protocol (which
// leaves out the "jsonrpc" member).
type rpcMessage struct {
	ID     *json.RawMessage `json:"id,omitempty"`
	Method string           `json:"method,omitempty"`
	Params json.RawMessage  `json:"params,omitempty"`
	Result json.RawMessage  `json:"result,omitempty"`
	Error  json.RawMessage  `json:"error,omitempty"`
}

// appClient is a client of `codex app-server`: one JSON message per line
// on its stdin and stdout.
type appClient struct {
	t    *testing.T
	mu   sync.Mutex // serializes writes
	in   io.WriteCloser
	msgs chan rpcMessage // closed by read at EOF
	stop chan struct{}   // closed when the test ends: read stops delivering
	next int
}

// read delivers the server's messages until its stdout ends or the test
// does.
func (c *appClient) read(out io.Reader) {
	defer close(c.msgs)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var msg rpcMessage
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			c.t.Errorf("app-server sent a line that is no JSON-RPC message: %v: %s", err, sc.Text())
			continue
		}
		select {
		case c.msgs <- msg:
		case <-c.stop:
			return
		}
	}
}

func (c *appClient) send(msg any) {
	b, err := json.Marshal(msg)
	if err != nil {
		panic(err) // our own plain values
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Errorf("write to app-server: %v", err)
	}
}

// call sends a request and returns its result, passing the messages that
// come before the response to handle.
func (c *appClient) call(method string, params any, handle func(rpcMessage)) json.RawMessage {
	c.t.Helper()
	c.next++
	id := c.next
	c.send(map[string]any{"id": id, "method": method, "params": params})
	for msg := range c.msgs {
		if msg.Method == "" && msg.ID != nil && string(*msg.ID) == fmt.Sprint(id) {
			if msg.Error != nil {
				c.t.Fatalf("app-server %s: %s", method, msg.Error)
			}
			return msg.Result
		}
		handle(msg)
	}
	c.t.Fatalf("app-server ended before answering %s", method)
	return nil
}

// codexAppServer runs one turn of `codex app-server` in w, configured by
// config, with the scripted model m: initialize, start a thread, start a
// turn, answer every MCP elicitation with allow_once, until the turn
// completes. It returns the questions the client was asked.
func codexAppServer(t *testing.T, w *world, config string, m *model) []elicitation {
	t.Helper()
	cmd := w.command(codexBin, "app-server")
	cmd.Env = codexEnv(t, w, config)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	cmd.Stdout = stdoutW
	wait := w.startHost(t, cmd)
	_ = stdoutW.Close() // app-server has its copy; EOF comes when it exits
	c := &appClient{t: t, in: stdin, msgs: make(chan rpcMessage, 64), stop: make(chan struct{})}
	t.Cleanup(func() { close(c.stop) })
	go c.read(stdout) // ends at EOF, when app-server exits (killed at hostLimit at the latest), or with the test
	var asked []elicitation
	completed := false
	handle := func(msg rpcMessage) {
		switch {
		case msg.Method == "mcpServer/elicitation/request" && msg.ID != nil:
			var e elicitation
			if err := json.Unmarshal(msg.Params, &e); err != nil {
				t.Errorf("elicitation params: %v", err)
			}
			asked = append(asked, e)
			c.send(map[string]any{"id": msg.ID, "result": map[string]any{"action": "accept", "content": map[string]any{"decision": "allow_once"}, "_meta": nil}})
		case msg.ID != nil && msg.Method != "":
			t.Errorf("app-server asked %s, which this client does not answer: %s", msg.Method, msg.Params)
			c.send(map[string]any{"id": msg.ID, "error": map[string]any{"code": -32601, "message": "not supported by the test client"}})
		case msg.Method == "turn/completed":
			completed = true
		case msg.Method == "error":
			t.Errorf("app-server error notification: %s", msg.Params)
		}
	}

	c.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "execd-hosts-test", "title": nil, "version": "0"},
		"capabilities": map[string]any{"experimentalApi": false, "requestAttestation": false}}, handle)
	c.send(map[string]any{"method": "initialized"})
	var thread struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := json.Unmarshal(c.call("thread/start", map[string]any{"cwd": w.Work}, handle), &thread); err != nil {
		t.Fatalf("thread/start: %v", err)
	}
	c.call("turn/start", map[string]any{"threadId": thread.Thread.ID,
		"input": []map[string]any{{"type": "text", "text": "Use execd's tools.", "text_elements": []any{}}}}, handle)
	for msg := range c.msgs {
		handle(msg)
		if completed {
			break
		}
	}
	if !completed {
		t.Errorf("app-server ended before the turn completed")
	}
	_ = stdin.Close() // EOF: app-server shuts down, and with it execd
	for range c.msgs {
	}
	wait()
	return asked
}
