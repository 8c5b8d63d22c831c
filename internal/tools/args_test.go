package tools

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestArgsDecoding(t *testing.T) {
	type got struct {
		cmd     []string
		workdir string
		timeout int64
		login   bool
		mode    string
	}
	decode := func(raw string) (got, error) {
		a := parseArgs("shell", json.RawMessage(raw))
		a.require("command")
		g := got{
			cmd:     a.strList("command"),
			workdir: a.str("workdir"),
			timeout: a.integer("timeout_ms"),
			login:   a.boolean("login", true),
			mode:    a.oneOf("sandbox_permissions", "use_default", "use_default", "require_escalated"),
		}
		return g, a.done()
	}
	tests := []struct {
		raw     string
		field   string // "" means success
		message string
	}{
		{`{"command":["ls"]}`, "", ""},
		{`{"command":["ls"],"workdir":null,"timeout_ms":null}`, "", ""},
		{`{"command":["ls"],"timeout_ms":1000.0}`, "", ""},
		{`{"command":["ls"],"timeout_ms":"2500"}`, "", ""},
		{`{}`, "command", "is required"},
		{`{"command":null}`, "command", "is required"},
		{`{"command":"ls"}`, "command", `expected an array of strings, got a string "ls"`},
		{`{"command":[1]}`, "command", "expected an array of strings"},
		{`{"command":["ls"],"workdir":5}`, "workdir", "expected a string, got a number 5"},
		{`{"command":["ls"],"timeout_ms":-1}`, "timeout_ms", "non-negative integer"},
		{`{"command":["ls"],"timeout_ms":1.5}`, "timeout_ms", "non-negative integer"},
		{`{"command":["ls"],"timeout_ms":"soon"}`, "timeout_ms", "non-negative integer"},
		{`{"command":["ls"],"login":"yes"}`, "login", "expected true or false"},
		{`{"command":["ls"],"sandbox_permissions":"root"}`, "sandbox_permissions", `"root" is not one of use_default, require_escalated`},
		{`{"command":["ls"],"bogus":1,"alpha":2}`, "alpha", "unknown field"},
		{`[1,2]`, "", "arguments must be a JSON object"},
		{`"ls"`, "", "arguments must be a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			_, err := decode(tt.raw)
			if tt.message == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var ae *ArgError
			if !errors.As(err, &ae) || ae.Field != tt.field || !strings.Contains(err.Error(), tt.message) {
				t.Fatalf("error = %v; want field %q with %q", err, tt.field, tt.message)
			}
			if !strings.HasPrefix(err.Error(), "invalid arguments for shell") {
				t.Errorf("message %q does not name the tool", err)
			}
		})
	}
	g, err := decode(`{"command":["ls","-l"],"workdir":"w","timeout_ms":"2500","login":false,"sandbox_permissions":"require_escalated"}`)
	if err != nil || strings.Join(g.cmd, " ") != "ls -l" || g.workdir != "w" || g.timeout != 2500 || g.login || g.mode != "require_escalated" {
		t.Fatalf("decoded %+v, %v", g, err)
	}
	g, _ = decode(`{"command":["ls"]}`)
	if g.timeout != -1 || !g.login || g.mode != "use_default" {
		t.Fatalf("defaults %+v", g)
	}
}

func TestUnknownFieldListsAccepted(t *testing.T) {
	a := parseArgs("shell_command", json.RawMessage(`{"command":"ls","cwd":"/"}`))
	a.str("command")
	a.str("workdir")
	err := a.done()
	if err == nil || !strings.Contains(err.Error(), "cwd: unknown field (shell_command accepts command, workdir)") {
		t.Fatalf("error = %v", err)
	}
}

// FuzzArgs: no input makes argument decoding panic, and a decoding that
// succeeds used every field it was given.
func FuzzArgs(f *testing.F) {
	for _, s := range []string{`{"command":["ls"]}`, `{"timeout_ms":"1e3"}`, `null`, `{"a":`, `{"login":tru}`, `[]`, `{"command":[null]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		a := parseArgs("fuzz", json.RawMessage(raw))
		a.strList("command")
		a.str("workdir")
		a.integer("timeout_ms")
		a.boolean("login", true)
		a.oneOf("mode", "x", "x", "y")
		if err := a.done(); err == nil {
			for f := range a.fields {
				if !a.used[f] {
					t.Fatalf("field %q accepted without being read", f)
				}
			}
		}
	})
}
