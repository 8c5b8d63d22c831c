package tools

import (
	"encoding/json"
	"testing"
	"time"
)

func TestDurationFormats(t *testing.T) {
	tests := []struct {
		d           time.Duration
		short, json string
	}{
		{0, "0", "0.0"},
		{40 * time.Millisecond, "0", "0.0"},
		{50 * time.Millisecond, "0.1", "0.1"},
		{149 * time.Millisecond, "0.1", "0.1"},
		{2500 * time.Millisecond, "2.5", "2.5"},
		{2 * time.Second, "2", "2.0"},
		{10*time.Second + 30*time.Millisecond, "10", "10.0"},
		{123456 * time.Millisecond, "123.5", "123.5"},
	}
	for _, tt := range tests {
		if got := shortSeconds(tt.d); got != tt.short {
			t.Errorf("shortSeconds(%v) = %q, want %q", tt.d, got, tt.short)
		}
		if got := jsonSeconds(tt.d); got != tt.json {
			t.Errorf("jsonSeconds(%v) = %q, want %q", tt.d, got, tt.json)
		}
	}
}

// COMPAT §17.2 cases 10–12.
func TestLayouts(t *testing.T) {
	out := truncateOutput("shell command\n", 10000)
	if got, want := shellCommandText(0, 20*time.Millisecond, out), "Exit code: 0\nWall time: 0 seconds\nOutput:\nshell command\n"; got != want {
		t.Errorf("shell_command text:\n%q\nwant\n%q", got, want)
	}
	if got, want := shellText("", 42, 30*time.Millisecond), `{"output":"","metadata":{"exit_code":42,"duration_seconds":0.0}}`; got != want {
		t.Errorf("shell text = %s, want %s", got, want)
	}
	timedOut := truncateOutput("command timed out after 1003 milliseconds\n", 10000)
	if got, want := shellCommandText(124, 1003*time.Millisecond, timedOut),
		"Exit code: 124\nWall time: 1 seconds\nOutput:\ncommand timed out after 1003 milliseconds\n"; got != want {
		t.Errorf("timed out text:\n%q\nwant\n%q", got, want)
	}
	// The JSON layout is valid JSON whatever the output holds, and keeps
	// characters a browser would escape.
	text := shellText("a<b>&\"c\"\n\t\x00\u2028", 1, 1500*time.Millisecond)
	var v struct {
		Output   string `json:"output"`
		Metadata struct {
			ExitCode        int     `json:"exit_code"`
			DurationSeconds float64 `json:"duration_seconds"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("shell text is not JSON: %v\n%s", err, text)
	}
	if v.Output != "a<b>&\"c\"\n\t\x00\u2028" || v.Metadata.ExitCode != 1 || v.Metadata.DurationSeconds != 1.5 {
		t.Errorf("decoded %+v", v)
	}
	if want := `{"output":"a<b>&`; text[:len(want)] != want {
		t.Errorf("HTML characters were escaped: %s", text)
	}
}
