package test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rawClient speaks newline-delimited JSON to an execd process directly.
// Every line execd writes must be a JSON-RPC 2.0 message: the reader fails
// the test otherwise, which checks stdout hygiene on every exchange.
type rawClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.Closer // closing it is a host that stopped reading
	lines  chan message
}

type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func startRaw(t *testing.T, config string, args ...string) *rawClient {
	t.Helper()
	return startRawWith(t, config, nil, args...)
}

// startRawWith is startRaw; wrap, if set, may change the command first
// (its stderr, say).
func startRawWith(t *testing.T, config string, wrap func(*exec.Cmd), args ...string) *rawClient {
	t.Helper()
	cmd, _ := execdCmd(t, config, args...)
	if wrap != nil {
		wrap(cmd)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &rawClient{t: t, cmd: cmd, stdin: stdin, stdout: stdout, lines: make(chan message, 20000)}
	go func() { // ends at execd's EOF
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 32<<20)
		for sc.Scan() {
			var m message
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.JSONRPC != "2.0" {
				t.Errorf("execd wrote a line that is not a JSON-RPC message: %q", sc.Text())
				continue
			}
			c.lines <- m
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(waitLimit):
			_ = cmd.Process.Kill()
			t.Error("execd did not exit after stdin closed")
		}
		if l, ok := cmd.Stderr.(*testLog); ok {
			l.mu.Lock()
			l.done = true
			l.mu.Unlock()
		}
	})
	return c
}

func (c *rawClient) send(lines ...string) {
	c.t.Helper()
	if _, err := io.WriteString(c.stdin, strings.Join(lines, "\n")+"\n"); err != nil {
		c.t.Fatalf("write to execd: %v", err)
	}
}

func (c *rawClient) recv() message {
	c.t.Helper()
	select {
	case m, ok := <-c.lines:
		if !ok {
			c.t.Fatal("execd closed stdout")
		}
		return m
	case <-time.After(waitLimit):
		c.t.Fatal("no message from execd")
	}
	return message{}
}

// recvID skips notifications until the response with the given id.
func (c *rawClient) recvID(id string) message {
	c.t.Helper()
	for {
		if m := c.recv(); string(m.ID) == id && m.Method == "" {
			return m
		}
	}
}

// initializeAs is the handshake of a client that names itself name.
func (c *rawClient) initializeAs(name string) {
	c.t.Helper()
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":%q,"version":"0"}}}`, name),
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if m := c.recvID(`"init"`); m.Error != nil {
		c.t.Fatalf("initialize: %+v", m.Error)
	}
}

func (c *rawClient) initialize() {
	c.t.Helper()
	c.initializeAs("raw")
}

func (c *rawClient) ping(id int) {
	c.t.Helper()
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id))
	if m := c.recvID(fmt.Sprint(id)); m.Error != nil || string(m.Result) != "{}" {
		c.t.Fatalf("ping %d: %+v", id, m)
	}
}

// resultText is the text content of a tools/call result.
func resultText(t *testing.T, m message) string {
	t.Helper()
	var r struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(m.Result, &r); err != nil || len(r.Content) != 1 {
		t.Fatalf("result %s: %v", m.Result, err)
	}
	return r.Content[0].Text
}

func toolCall(id, name string, args map[string]any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": name, "arguments": args}})
	return string(b)
}

func TestRawMalformedInputKeepsTheServerUp(t *testing.T) {
	c := startRaw(t, fullAccess)
	tests := []struct {
		line string
		code int64
	}{
		{`{this is not json`, -32700},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`, -32600},
		{`12345`, -32600},
		{`{"id":3,"method":"ping"}`, -32600},
		{`{"jsonrpc":"2.0","id":4,"method":"server/discover"}`, -32601},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope"}}`, -32602},
		{`{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"cursor":"x"}}`, -32602},
		{`{"jsonrpc":"2.0","id":7,"method":"logging/setLevel","params":{"level":"loud"}}`, -32602},
	}
	for i, tt := range tests {
		c.send(tt.line)
		if m := c.recv(); m.Error == nil || m.Error.Code != tt.code {
			t.Errorf("%s: got %+v, want error %d", tt.line, m, tt.code)
		}
		c.ping(100 + i)
	}
	c.send("", "   ") // blank lines are ignored
	c.initialize()
	c.ping(200)
}

func TestRawGarbageFlood(t *testing.T) {
	c := startRaw(t, fullAccess)
	go func() { // execd answers every line: write while reading
		var b strings.Builder
		for i := range 10000 {
			fmt.Fprintf(&b, "garbage line %d ][\n", i)
		}
		_, _ = io.WriteString(c.stdin, b.String())
	}()
	for i := range 10000 {
		if m := c.recv(); m.Error == nil || m.Error.Code != -32700 {
			t.Fatalf("garbage line %d: %+v", i, m)
		}
	}
	c.ping(1)
	c.initialize()
	c.send(toolCall("after-flood", "shell", map[string]any{"command": []string{"echo", "alive"}}))
	if m := c.recvID(`"after-flood"`); !strings.Contains(string(m.Result), `alive\n`) {
		t.Fatalf("tool call after the flood: %s", m.Result)
	}
}

// A command that writes to execd's own fd 1 reaches stderr, not the
// protocol stream (fd 1 is a copy of stderr; the protocol has its own fd),
// and that stays so after many garbage collections.
func TestRawStdoutCarriesOnlyFrames(t *testing.T) {
	c := startRaw(t, fullAccess, "--log-level", "debug")
	c.initialize()
	stray := toolCall("stray", "shell", map[string]any{"command": []string{"bash", "-c", "echo STRAY-WRITE > /proc/$PPID/fd/1; echo ok"}})
	c.send(stray)
	if m := c.recvID(`"stray"`); !strings.Contains(string(m.Result), `ok\n`) {
		t.Fatalf("result: %s", m.Result)
	}
	for i := range 400 { // enough garbage for many GC cycles
		c.send(toolCall(fmt.Sprint("gc-", i), "shell", map[string]any{"command": []string{"true"}}))
		c.recvID(fmt.Sprintf(`"gc-%d"`, i))
	}
	pid := c.cmd.Process.Pid
	fd1, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/1", pid))
	fd2, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/2", pid))
	if fd1 == "" || fd1 != fd2 {
		t.Errorf("after many GCs execd's fd 1 is %q, want stderr's %q", fd1, fd2)
	}
	c.send(strings.Replace(stray, `"stray"`, `"stray2"`, 1))
	c.recvID(`"stray2"`)
	c.ping(1) // the reader fails the test on any non-JSON line, STRAY-WRITE included
}

// Closing stdin, SIGTERM and SIGINT all stop execd with exit 0 and leave
// no process behind: not the command in flight, not background
// descendants in its group, not setsid'd or nohup'd ones. The reply of
// the call in flight is still sent.
func TestRawShutdownLeavesNothingBehind(t *testing.T) {
	signals := map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "SIGINT": syscall.SIGINT,
		"SIGHUP": syscall.SIGHUP, "SIGQUIT": syscall.SIGQUIT}
	for _, how := range []string{"stdin EOF", "SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"} {
		t.Run(how, func(t *testing.T) {
			base := map[string]float64{"stdin EOF": 7201, "SIGTERM": 7301, "SIGINT": 7401, "SIGHUP": 7451, "SIGQUIT": 7471}[how]
			marker := func(i int) string { return fmt.Sprintf("sleep %.1f", base+float64(i)/10) }
			c := startRaw(t, fullAccess)
			c.initialize()
			c.send(toolCall("bg", "shell_command", map[string]any{"command": marker(1) + " & setsid " + marker(2) +
				" & nohup " + marker(3) + " >/dev/null 2>&1 & echo started"}))
			if m := c.recvID(`"bg"`); !strings.Contains(string(m.Result), "started") {
				t.Fatalf("background call: %s", m.Result)
			}
			c.send(toolCall("running", "shell_command", map[string]any{"command": marker(4) + " & " + marker(5), "timeout_ms": 120000}))
			for i := 1; i <= 5; i++ {
				waitRunning(t, marker(i))
			}
			if how == "stdin EOF" {
				_ = c.stdin.Close()
			} else {
				_ = c.cmd.Process.Signal(signals[how])
			}
			if m := c.recvID(`"running"`); m.Error != nil && how == "stdin EOF" {
				t.Errorf("the call in flight got %+v, want its result", m.Error)
			}
			for range c.lines { // until execd closes stdout
			}
			if err := waitExit(c.cmd); err != nil {
				t.Fatalf("execd exit after %s: %v", how, err)
			}
			for i := 1; i <= 5; i++ {
				assertGone(t, marker(i))
			}
		})
	}
}

func waitExit(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(waitLimit):
		_ = cmd.Process.Kill()
		return fmt.Errorf("did not exit within %v", waitLimit)
	}
}
