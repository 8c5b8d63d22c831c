package tools

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/execd/execd/internal/orchestrator"
	"github.com/execd/execd/internal/procstore"
)

func TestYieldClamps(t *testing.T) {
	tests := []struct {
		name string
		got  time.Duration
		want time.Duration
	}{
		{"start default", startYield(-1), 10 * time.Second},
		{"start below", startYield(10), 250 * time.Millisecond},
		{"start above", startYield(120000), 30 * time.Second},
		{"start within", startYield(1234), 1234 * time.Millisecond},
		{"write default", writeYield(-1, false, time.Minute), 250 * time.Millisecond},
		{"write below", writeYield(1, false, time.Minute), 250 * time.Millisecond},
		{"write above", writeYield(99999, false, time.Minute), 30 * time.Second},
		{"poll default", writeYield(-1, true, time.Minute), 5 * time.Second},
		{"poll below (compat 18)", writeYield(100, true, time.Minute), 5 * time.Second},
		{"poll above the ceiling", writeYield(600000, true, time.Minute), time.Minute},
		{"poll within", writeYield(20000, true, time.Minute), 20 * time.Second},
		{"poll with a tiny ceiling", writeYield(-1, true, time.Second), 5 * time.Second},
		{"huge value", startYield(1 << 62), 30 * time.Second},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

func TestTruncateSessionAroundTheBufferGap(t *testing.T) {
	head, tail := strings.Repeat("h", 100), strings.Repeat("t", 100)
	// Everything kept fits the budget: the marker shows only the gap.
	got := truncateSession(head+tail, 100, 400, 1000)
	if got.Text != head+"…100 tokens truncated…"+tail || !got.Cut {
		t.Errorf("fits: %q", got.Text)
	}
	// Budget 10 tokens = 40 bytes: 20 of head, 20 of tail, and the gap.
	got = truncateSession(head+tail, 100, 400, 10)
	if got.Text != strings.Repeat("h", 20)+"…140 tokens truncated…"+strings.Repeat("t", 20) {
		t.Errorf("cut: %q", got.Text)
	}
	// Without a gap it is the plain cut.
	if got := truncateSession("abcdef", 0, 0, 10); got.Text != "abcdef" || got.Cut {
		t.Errorf("no gap: %+v", got)
	}
}

var chunkLine = regexp.MustCompile(`(?m)^Chunk ID: [0-9a-f]{6}$`)
var wallLine = regexp.MustCompile(`(?m)^Wall time: \d+\.\d{4} seconds$`)

func sessionStruct(t *testing.T, _ toolResult, raw json.RawMessage) sessionStructured {
	t.Helper()
	var env struct {
		StructuredContent sessionStructured `json:"structuredContent"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	return env.StructuredContent
}

func (c *client) callRaw(name string, args any) (toolResult, json.RawMessage) {
	c.t.Helper()
	f := c.request("tools/call", map[string]any{"name": name, "arguments": args})
	if f.Error != nil {
		c.t.Fatalf("tools/call %s: %+v", name, f.Error)
	}
	var r toolResult
	if err := json.Unmarshal(f.Result, &r); err != nil {
		c.t.Fatal(err)
	}
	return r, f.Result
}

// COMPAT §17.2 case 13.
func TestExecCommandLayoutAndTruncation(t *testing.T) {
	c := startServer(t)
	r, raw := c.callRaw("exec_command", map[string]any{"cmd": "printf 'token one token two token three token four token five token six token seven'",
		"max_output_tokens": 6, "yield_time_ms": 500})
	text := r.Content[0].Text
	st := sessionStruct(t, r, raw)
	if !strings.HasPrefix(text, "Command: /bin/bash -lc ") || !chunkLine.MatchString(text) || !wallLine.MatchString(text) ||
		!strings.Contains(text, "\nProcess exited with code 0\n") || strings.Contains(text, "session ID") ||
		!strings.Contains(text, "tokens truncated") || r.IsError {
		t.Fatalf("text:\n%s", text)
	}
	if st.OriginalTokenCount <= 6 || st.ExitCode == nil || *st.ExitCode != 0 || st.SessionID != nil || !st.Truncated ||
		!strings.Contains(text, "Chunk ID: "+st.ChunkID) {
		t.Fatalf("structured %+v", st)
	}
	if !strings.Contains(text, "Original token count: ") || !strings.Contains(text, "Output:\nTotal output lines: 1\n\n") {
		t.Fatalf("header lines:\n%s", text)
	}
}

func TestSessionToolsRoundTrip(t *testing.T) {
	c := startServer(t, func(o *Options, oo *orchestrator.Options) { oo.Sessions = procstore.Options{Max: 5} })
	r, raw := c.callRaw("exec_command", map[string]any{"cmd": "bash --norc --noprofile -i", "tty": true, "yield_time_ms": 5000})
	st := sessionStruct(t, r, raw)
	if st.SessionID == nil || st.ProcessID == "" || st.ExitCode != nil || r.IsError {
		t.Fatalf("start: %s", r.Content[0].Text)
	}
	// 1 open session reaches max-4 with a limit of 5: the warning shows.
	if !strings.Contains(r.Content[0].Text, "\nWarning: 1 sessions are open (limit 5); finish or reuse old ones before the oldest are closed automatically.\nOutput:\n") ||
		st.Warning == "" {
		t.Errorf("no warning:\n%s", r.Content[0].Text)
	}
	id := *st.SessionID
	r, _ = c.callRaw("write_stdin", map[string]any{"process_id": st.ProcessID, "input": "export FOO=bar; echo $FOO-ok\n", "yield_time_ms": 5000})
	if !strings.Contains(r.Content[0].Text, "bar-ok") || !strings.Contains(r.Content[0].Text, "Process running with session ID") {
		t.Fatalf("write via aliases:\n%s", r.Content[0].Text)
	}
	r, raw = c.callRaw("write_stdin", map[string]any{"session_id": id, "chars": "exit 7\n", "yield_time_ms": 5000})
	if st = sessionStruct(t, r, raw); st.ExitCode == nil || *st.ExitCode != 7 || r.IsError {
		t.Fatalf("exit: %s", r.Content[0].Text)
	}
	r, _ = c.callRaw("write_stdin", map[string]any{"session_id": id})
	if !r.IsError || r.Content[0].Text != fmt.Sprintf("unknown session_id %d: the session has ended (its exit was reported) or execd restarted since it was started; start the command again with exec_command", id) {
		t.Fatalf("after the exit was reported: %s", r.Content[0].Text)
	}
}

func TestExecCommandAliasArray(t *testing.T) {
	c := startServer(t)
	r, raw := c.callRaw("exec_command", map[string]any{"command": []string{"echo", "it's", "a b"}})
	if st := sessionStruct(t, r, raw); st.Output != "it's a b\n" {
		t.Fatalf("array alias: %q\n%s", st.Output, r.Content[0].Text)
	}
}

func TestWriteToASessionWithoutTerminal(t *testing.T) {
	c := startServer(t)
	r, raw := c.callRaw("exec_command", map[string]any{"cmd": "sleep 30", "yield_time_ms": 250})
	st := sessionStruct(t, r, raw)
	r, _ = c.callRaw("write_stdin", map[string]any{"session_id": *st.SessionID, "chars": "hi\n"})
	if !r.IsError || !strings.Contains(r.Content[0].Text, "stdin is closed for this session; rerun exec_command with tty: true") {
		t.Fatalf("text without a terminal: %s", r.Content[0].Text)
	}
	r, raw = c.callRaw("write_stdin", map[string]any{"session_id": *st.SessionID, "chars": "\u0003", "yield_time_ms": 5000})
	if st := sessionStruct(t, r, raw); st.ExitCode == nil || *st.ExitCode != 130 || st.Signal != "SIGINT" {
		t.Fatalf("^C: %s", r.Content[0].Text)
	}
}

func TestEvents(t *testing.T) {
	c := startServer(t)
	c.request("initialize", map[string]any{"protocolVersion": "2025-11-25",
		"capabilities": map[string]any{"experimental": map[string]any{"execd/events": map[string]any{}}}})
	c.callTool("shell_command", map[string]any{"command": "echo événement"})
	types := map[string]map[string]any{}
	for len(c.notes) > 0 {
		n := <-c.notes
		if n.Method != "execd/event" {
			continue
		}
		var p map[string]any
		_ = json.Unmarshal(n.Params, &p)
		types[p["type"].(string)] = p
	}
	begin, delta, end := types["exec_begin"], types["exec_output_delta"], types["exec_end"]
	if begin == nil || delta == nil || end == nil {
		t.Fatalf("events: %v", types)
	}
	if delta["chunk"] != "événement\n" || delta["stream"] != "stdout" || end["exit_code"] != 0.0 || end["timed_out"] != false {
		t.Errorf("delta %v end %v", delta, end)
	}
	if begin["call_id"] != delta["call_id"] || begin["sandbox"] != "none" {
		t.Errorf("begin %v", begin)
	}
	r, raw := c.callRaw("exec_command", map[string]any{"cmd": "cat", "tty": true, "yield_time_ms": 2000})
	st := sessionStruct(t, r, raw)
	c.callRaw("write_stdin", map[string]any{"session_id": *st.SessionID, "chars": "typed\n", "yield_time_ms": 2000})
	found := false
	for len(c.notes) > 0 {
		n := <-c.notes
		var p map[string]any
		_ = json.Unmarshal(n.Params, &p)
		if p["type"] == "terminal_interaction" && p["chars"] == "typed\n" && p["session_id"] == float64(*st.SessionID) {
			found = true
		}
	}
	if !found {
		t.Error("no terminal_interaction event")
	}
	// Nothing is reported for calls that start nothing or deliver nothing.
	c.callRaw("exec_command", map[string]any{"cmd": "true", "workdir": "nope"})
	c.callRaw("write_stdin", map[string]any{"session_id": 4242, "chars": "lost\n"})
	for len(c.notes) > 0 {
		n := <-c.notes
		var p map[string]any
		_ = json.Unmarshal(n.Params, &p)
		if p["type"] == "exec_begin" || p["type"] == "terminal_interaction" {
			t.Errorf("event for a call that did nothing: %v", p)
		}
	}
}

// Review #2: deltas stay within 8 KiB after replacement, invalid runs do
// not stall the stream, the end flushes a pending byte, and nothing is
// kept once the cap is reached.
func TestDeltasWithInvalidBytes(t *testing.T) {
	var got []string
	e := &commandEvents{pending: map[orchestrator.Stream][]byte{}, emit: func(typ string, f eventParams) {
		if typ == "exec_output_delta" {
			got = append(got, f["chunk"].(string))
		}
	}}
	e.observe(orchestrator.Stdout, []byte(strings.Repeat("\x80", 20000)+"hello-after"))
	e.observe(orchestrator.Stdout, []byte("abc\xe2"))
	e.end(0, 0, false)
	all := strings.Join(got, "")
	for _, g := range got {
		if len(g) > maxDeltaBytes {
			t.Fatalf("delta of %d bytes", len(g))
		}
	}
	if !strings.Contains(all, "hello-after") || !strings.HasSuffix(all, "abc\uFFFD") || strings.Count(all, "\uFFFD") != 20001 {
		t.Fatalf("stream lost or kept bytes: %d deltas, tail %q", len(got), all[len(all)-20:])
	}
	e.sent = maxDeltas
	e.observe(orchestrator.Stdout, make([]byte, 1<<20))
	if len(e.pending[orchestrator.Stdout]) != 0 {
		t.Fatalf("%d bytes kept after the cap", len(e.pending[orchestrator.Stdout]))
	}
}

func TestDeltasAreBoundedAndKeepCharacters(t *testing.T) {
	var got []string
	e := &commandEvents{pending: map[orchestrator.Stream][]byte{}, emit: func(typ string, f eventParams) {
		if typ == "exec_output_delta" {
			got = append(got, f["chunk"].(string))
		}
	}}
	text := strings.Repeat("é", 5000) + "€" // 10,003 bytes
	b := []byte(text)
	e.observe(orchestrator.Stdout, b[:10001]) // ends inside €
	e.observe(orchestrator.Stdout, b[10001:])
	for _, g := range got {
		if len(g) > maxDeltaBytes || strings.ContainsRune(g, '\uFFFD') {
			t.Fatalf("delta of %d bytes, or a split character", len(g))
		}
	}
	if strings.Join(got, "") != text {
		t.Fatal("deltas lost or changed bytes")
	}
	// At most 10,000 deltas per command.
	got = nil
	e.sent = 0
	for range maxDeltas + 10 {
		e.observe(orchestrator.Stdout, []byte("x"))
	}
	if len(got) != maxDeltas {
		t.Fatalf("%d deltas, want the cap %d", len(got), maxDeltas)
	}
}

func TestSessionProgress(t *testing.T) {
	c := startServer(t)
	f := c.request("tools/call", map[string]any{
		"name":      "exec_command",
		"arguments": map[string]any{"cmd": "for i in 1 2 3 4; do echo step $i; sleep 0.15; done", "yield_time_ms": 5000},
		"_meta":     map[string]any{"progressToken": 7},
	})
	if f.Error != nil {
		t.Fatal(f.Error)
	}
	n := 0
	for len(c.notes) > 0 {
		if note := <-c.notes; note.Method == "notifications/progress" && strings.Contains(string(note.Params), `"progressToken":7`) {
			n++
		}
	}
	if n == 0 {
		t.Fatal("no progress for an exec_command that printed for 600 ms")
	}
}
