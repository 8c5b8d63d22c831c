package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/execd/execd/internal/orchestrator"
	"github.com/execd/execd/internal/policy"
)

// DefaultApprovalTimeout is approval.timeout's default.
const DefaultApprovalTimeout = 5 * time.Minute

// errApprovalTimeout ends an approval request nobody answered.
var errApprovalTimeout = errors.New("approval.timeout passed")

type elicitParams struct {
	Message         string       `json:"message"`
	RequestedSchema elicitSchema `json:"requestedSchema"`
}

type elicitSchema struct {
	Type       string                    `json:"type"`
	Properties map[string]elicitProperty `json:"properties"`
	Required   []string                  `json:"required"`
}

// elicitProperty is a single-select enum: titled by oneOf since
// 2025-11-25, by enumNames before.
type elicitProperty struct {
	Type        string        `json:"type"`
	Title       string        `json:"title,omitempty"`
	Description string        `json:"description,omitempty"`
	Enum        []string      `json:"enum,omitempty"`
	EnumNames   []string      `json:"enumNames,omitempty"`
	OneOf       []titledValue `json:"oneOf,omitempty"`
}

type titledValue struct {
	Const string `json:"const"`
	Title string `json:"title"`
}

// decisionProperty offers choices with the titles a person reads, in the
// form the negotiated protocol version knows.
func decisionProperty(protocol string, choices, titles []string, explain string) elicitProperty {
	p := elicitProperty{Type: "string", Title: "Decision", Description: explain}
	if protocol < "2025-11-25" {
		p.Enum, p.EnumNames = choices, titles
		return p
	}
	for i, c := range choices {
		p.OneOf = append(p.OneOf, titledValue{Const: c, Title: titles[i]})
	}
	return p
}

type elicitResult struct {
	Action  string          `json:"action"`
	Content json.RawMessage `json:"content,omitempty"`
}

// approver asks the client through elicitation/create (SPEC §3.3). It is
// the Server's, used by every call of the connection.
type approver struct{ s *Server }

// Approve sends q to the client and waits for the answer, at most
// approval.timeout. A client that cannot be asked gets the answer of
// approval.without_client_support.
func (a approver) Approve(ctx context.Context, q orchestrator.Question) (orchestrator.Answer, error) {
	s := a.s
	if err := s.canElicit(); err != nil {
		if s.opts.AllowWithoutClientSupport {
			s.log.Info("approval granted without asking (approval.without_client_support = allow)",
				zap.String("call_id", q.CallID), zap.NamedError("why", err))
			return orchestrator.AllowOnce, nil
		}
		return orchestrator.Deny, fmt.Errorf("%w, and approval.without_client_support is deny", err)
	}
	choices := []string{"allow_once", "allow_session", "deny"}
	titles := []string{"Allow once", "Allow for this session", "Deny"}
	explain := "allow_once runs it this time; allow_session also allows the same command again on this connection; deny does not run it"
	if q.Prefix != nil {
		choices = slices.Insert(choices, 2, "allow_prefix")
		titles = slices.Insert(titles, 2, "Always allow commands starting with `"+policy.ShellJoin(q.Prefix)+"`")
		explain += "; allow_prefix runs it and allows every command starting with the prefix from now on"
	}
	params := elicitParams{
		Message: q.Message(),
		RequestedSchema: elicitSchema{
			Type:       "object",
			Properties: map[string]elicitProperty{"decision": decisionProperty(s.protocolVersion(), choices, titles, explain)},
			Required:   []string{"decision"},
		},
	}
	wait, cancel := context.WithTimeoutCause(ctx, s.opts.ApprovalTimeout, errApprovalTimeout)
	defer cancel()
	var res elicitResult
	err := s.conn.Call(wait, "elicitation/create", params, &res)
	switch {
	case err == nil:
		return answerOf(res, choices)
	case ctx.Err() != nil:
		return orchestrator.Deny, context.Cause(ctx)
	case errors.Is(context.Cause(wait), errApprovalTimeout):
		return orchestrator.Deny, fmt.Errorf("nobody answered the approval request within %s (approval.timeout)", s.opts.ApprovalTimeout)
	}
	return orchestrator.Deny, fmt.Errorf("the approval request failed: %w", err)
}

// canElicit reports why the client cannot be asked, or nil.
func (s *Server) canElicit() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.client.Elicitation == nil:
		return errors.New("it needs approval, but this client did not declare the elicitation capability, so it cannot be asked")
	case !s.ready:
		return errors.New("it needs approval, but the client has not sent notifications/initialized yet, so it cannot be asked")
	}
	var modes struct {
		Form *struct{} `json:"form"`
		URL  *struct{} `json:"url"`
	}
	// {} means form only; a client that declares only url has no forms.
	if json.Unmarshal(s.client.Elicitation, &modes) == nil && modes.Form == nil && modes.URL != nil {
		return errors.New("it needs approval, but this client declared only URL elicitation, not forms, so it cannot be asked")
	}
	return nil
}

// answerOf reads the client's answer: accept with a decision among
// choices (accept without content is allow_once), decline, or cancel.
func answerOf(res elicitResult, choices []string) (orchestrator.Answer, error) {
	switch res.Action {
	case "accept":
	case "decline":
		return orchestrator.Deny, nil
	case "cancel":
		return orchestrator.Deny, errors.New("the user dismissed the approval request")
	default:
		return orchestrator.Deny, fmt.Errorf("the approval answer has action %q, not accept, decline or cancel", res.Action)
	}
	if len(res.Content) == 0 || string(res.Content) == "null" {
		return orchestrator.AllowOnce, nil // accept without content (SPEC §3.3)
	}
	var content map[string]json.RawMessage
	if err := json.Unmarshal(res.Content, &content); err != nil {
		return orchestrator.Deny, fmt.Errorf("the approval answer's content is not an object: %s", truncateForError(res.Content))
	}
	raw, ok := content["decision"]
	if !ok || string(raw) == "null" {
		return orchestrator.Deny, errors.New("the approval answer has content but no decision")
	}
	var decision string
	if err := json.Unmarshal(raw, &decision); err != nil {
		return orchestrator.Deny, fmt.Errorf("the approval answer's decision is not a string: %s", truncateForError(raw))
	}
	for _, c := range choices {
		if c == decision {
			ans, _ := orchestrator.ParseAnswer(c)
			return ans, nil
		}
	}
	return orchestrator.Deny, fmt.Errorf("the approval answer's decision %q is not one of those offered", decision)
}

// truncateForError shows at most 100 bytes of a client's value.
func truncateForError(b []byte) string {
	if len(b) > 100 {
		return string(b[:100]) + "…"
	}
	return string(b)
}
