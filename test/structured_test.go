package test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Codex and Claude Code show the model structuredContent instead of the
// text, so under auto they get neither it nor outputSchema; everyone else
// gets both, and the key overrides the table (SPEC §4).
func TestStructuredContentPerClient(t *testing.T) {
	tests := []struct {
		client, mode string
		want         bool
	}{
		{"codex-mcp-client", "", false},
		{"claude-code", "", false},
		{"execd-it", "", true},
		{"Claude-Code", "", true}, // exact names only
		{"claude-code", "always", true},
		{"execd-it", "never", false},
	}
	for _, tt := range tests {
		t.Run(tt.client+"/"+tt.mode, func(t *testing.T) {
			config := fullAccess
			if tt.mode != "" {
				config += fmt.Sprintf("\n[tools]\nstructured_content = %q\n", tt.mode)
			}
			c := startRaw(t, config)
			c.initializeAs(tt.client)
			c.send(`{"jsonrpc":"2.0","id":"list","method":"tools/list"}`)
			var list struct {
				Tools []map[string]json.RawMessage `json:"tools"`
			}
			if err := json.Unmarshal(c.recvID(`"list"`).Result, &list); err != nil || len(list.Tools) == 0 {
				t.Fatalf("tools/list: %v %+v", err, list)
			}
			for _, tool := range list.Tools {
				if _, has := tool["outputSchema"]; has != tt.want {
					t.Errorf("tool %s: outputSchema present = %v, want %v", tool["name"], has, tt.want)
				}
			}
			c.send(toolCall("run", "exec_command", map[string]any{"cmd": "echo hello", "login": false}))
			m := c.recvID(`"run"`)
			var res map[string]json.RawMessage
			if err := json.Unmarshal(m.Result, &res); err != nil {
				t.Fatal(err)
			}
			if _, has := res["structuredContent"]; has != tt.want {
				t.Errorf("structuredContent present = %v, want %v: %s", has, tt.want, res["structuredContent"])
			}
			if text := resultText(t, m); !strings.Contains(text, "Process exited with code 0") || !strings.Contains(text, "Output:\nhello\n") {
				t.Errorf("text: %q", text)
			}
		})
	}
}

// Once stdin ends the client is gone or going: execd's shutdown writes
// replies but no log notification (issue 14 item 5; SPEC §3.1).
func TestNoLogNotificationAfterStdinEOF(t *testing.T) {
	c := startRaw(t, fullAccess)
	c.initialize()
	c.send(`{"jsonrpc":"2.0","id":"lvl","method":"logging/setLevel","params":{"level":"debug"}}`,
		toolCall("run", "shell", map[string]any{"command": []string{"echo", "hi"}}))
	for ran, logged := false, false; !ran || !logged; { // in any order
		m := c.recv()
		ran = ran || string(m.ID) == `"run"`
		logged = logged || m.Method == "notifications/message"
	}
	// A call in flight at EOF is stopped and answered (SPEC §3.1), which
	// logs.
	c.send(toolCall("slow", "shell", map[string]any{"command": []string{"sleep", "30"}}))
	c.ping(1) // the call was read
	_ = c.stdin.Close()
	// Entries logged before EOF may still come; these two are logged only
	// after it (sleep 30 ends by the shutdown's kill).
	for m := range c.lines {
		p := string(m.Params)
		if m.Method == "notifications/message" && (strings.Contains(p, "shutting down") ||
			strings.Contains(p, "command finished") && strings.Contains(p, `slow`)) {
			t.Errorf("log notification after stdin EOF: %s", m.Params)
		}
	}
}
