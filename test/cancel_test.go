package test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var ticks = regexp.MustCompile(`tick\d+`)

// A poll the client cancels gets no reply, so what it had read stays in
// the session: the next call returns it, nothing lost or repeated (issue
// 14 item 2; SPEC §4.4). The TS SDK showed the loss: ticks 1–7 were gone.
func TestCancelledPollKeepsOutput(t *testing.T) {
	c := startRaw(t, fullAccess)
	c.initialize()
	c.send(toolCall("start", "exec_command", map[string]any{"login": false, "yield_time_ms": 250,
		"cmd": "for i in $(seq 1 12); do echo tick$i; sleep 0.2; done"}))
	first := resultText(t, c.recvID(`"start"`))
	id := regexp.MustCompile(`session ID (\d+)`).FindStringSubmatch(first)
	if id == nil {
		t.Fatalf("no session: %s", first)
	}
	got := ticks.FindAllString(first, -1)
	c.send(toolCall("poll1", "write_stdin", map[string]any{"session_id": json.Number(id[1]), "chars": "", "yield_time_ms": 30000}))
	// Cancel mid-poll, once the poll has read some ticks. Late, the test
	// would pass without the fix too; it cannot fail with it.
	time.Sleep(time.Second)
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"poll1","reason":"host timeout"}}`)
	for i := 2; ; i++ {
		pid := fmt.Sprintf("poll%d", i)
		c.send(toolCall(pid, "write_stdin", map[string]any{"session_id": json.Number(id[1]), "chars": "", "yield_time_ms": 30000}))
		var m message
		for m = c.recv(); string(m.ID) != `"`+pid+`"`; m = c.recv() {
			if string(m.ID) == `"poll1"` {
				t.Fatalf("the cancelled poll was answered: %s", m.Result)
			}
		}
		text := resultText(t, m)
		got = append(got, ticks.FindAllString(text, -1)...)
		if strings.Contains(text, "Process exited with code 0") {
			break
		}
		if i > 20 {
			t.Fatal("the session never exited")
		}
	}
	var want []string
	for i := 1; i <= 12; i++ {
		want = append(want, fmt.Sprintf("tick%d", i))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("ticks seen: %v", got)
	}
}

// A long poll of a silent session keeps a host that resets its timeout on
// progress waiting: a keep-alive every 5 s, still strictly increasing
// (SPEC §3.4).
func TestPollKeepAlive(t *testing.T) {
	var rec progressRecorder
	cs := rec.connect(t, fullAccess)
	id := start(t, cs, map[string]any{"cmd": "echo ready; sleep 60", "login": false, "yield_time_ms": 250})
	params := &mcp.CallToolParams{Name: "write_stdin",
		Arguments: map[string]any{"session_id": id, "chars": "", "yield_time_ms": 6000}}
	params.SetProgressToken(7)
	if _, err := cs.CallTool(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	got := rec.notes()
	if len(got) == 0 {
		t.Fatal("no keep-alive during a 6 s poll without output")
	}
	prev := 0.0
	for _, p := range got {
		if !strings.HasPrefix(p.Message, "still running, no new output for ") || p.Progress <= prev {
			t.Errorf("progress %+v after %v", p, prev)
		}
		prev = p.Progress
	}
}
