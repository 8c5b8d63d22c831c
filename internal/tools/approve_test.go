package tools

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/execd/execd/internal/orchestrator"
)

func TestAnswerOf(t *testing.T) {
	choices := []string{"allow_once", "allow_session", "deny"}
	tests := []struct {
		res     string
		want    orchestrator.Answer
		errText string // "" means no error
	}{
		{`{"action":"accept","content":{"decision":"allow_session"}}`, orchestrator.AllowSession, ""},
		{`{"action":"accept","content":{"decision":"deny"}}`, orchestrator.Deny, ""},
		{`{"action":"accept"}`, orchestrator.AllowOnce, ""},
		{`{"action":"accept","content":null}`, orchestrator.AllowOnce, ""},
		{`{"action":"accept","content":{}}`, orchestrator.Deny, "has content but no decision"},
		{`{"action":"accept","content":{"decision":null}}`, orchestrator.Deny, "has content but no decision"},
		{`{"action":"accept","content":{"decision":42}}`, orchestrator.Deny, "decision is not a string: 42"},
		{`{"action":"accept","content":[1]}`, orchestrator.Deny, "content is not an object"},
		{`{"action":"accept","content":{"decision":"allow_prefix"}}`, orchestrator.Deny, `decision "allow_prefix" is not one of those offered`},
		{`{"action":"decline"}`, orchestrator.Deny, ""},
		{`{"action":"cancel"}`, orchestrator.Deny, "dismissed"},
		{`{"action":"maybe"}`, orchestrator.Deny, `action "maybe"`},
	}
	for _, tt := range tests {
		var res elicitResult
		if err := json.Unmarshal([]byte(tt.res), &res); err != nil {
			t.Fatal(err)
		}
		got, err := answerOf(res, choices)
		if got != tt.want || (tt.errText == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.errText)) {
			t.Errorf("%s: %v, %v; want %v, error containing %q", tt.res, got, err, tt.want, tt.errText)
		}
	}
}
