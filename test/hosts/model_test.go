//go:build hosts

package hosts

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// toolCall is a call the scripted model makes to one of execd's tools,
// named as execd names it (exec_command, write_stdin).
type toolCall struct {
	Tool string
	Args map[string]any
}

// A move is the model's answer to a request of the host's agent loop,
// given the tool results the request carries, in order: the next tool
// call, or nil to end the turn with a final message. An error ends the
// turn too, and fails the test.
type move func(results []toolResult) (*toolCall, error)

// toolResult is what the host sent back to the model as the result of
// one tool call.
type toolResult struct {
	// Text is the text the model reads: the text blocks of the result
	// joined by newlines.
	Text string
	// Raw is the result exactly as the host sent it in the request body.
	Raw json.RawMessage
}

// model plays a scripted model to a host. Each request of the agent loop
// gets the move whose index is the number of tool results in it, so a
// request the host retries gets the same answer, and no bookkeeping
// depends on the order in which requests arrive.
type model struct {
	t     *testing.T
	moves []move

	mu      sync.Mutex
	results []toolResult // guarded by mu: those of the longest request seen
	offered bool         // guarded by mu: a request offered execd's tools
}

func newModel(t *testing.T, moves []move) *model {
	return &model{t: t, moves: moves}
}

// answer records the results of a request and returns the move for it.
func (m *model) answer(results []toolResult) (*toolCall, string) {
	m.mu.Lock()
	if len(results) >= len(m.results) {
		m.results = results
	}
	m.mu.Unlock()
	if len(results) >= len(m.moves) {
		return nil, "Done."
	}
	call, err := m.moves[len(results)](results)
	if err != nil {
		m.t.Errorf("scripted model, after %d tool results: %v", len(results), err)
		return nil, "I cannot go on: " + err.Error()
	}
	if call == nil {
		return nil, "Done."
	}
	return call, ""
}

// offer records whether a request of the agent loop offered execd's
// tools; a host that did not start execd offers none.
func (m *model) offer(ok bool) {
	m.mu.Lock()
	m.offered = m.offered || ok
	m.mu.Unlock()
}

// Results returns the tool results the model was sent, and fails the test
// unless there are want of them and execd's tools were offered.
func (m *model) Results(want int) []toolResult {
	m.t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.offered {
		m.t.Fatalf("the host never offered execd's tools to the model")
	}
	if len(m.results) != want {
		m.t.Fatalf("the model was sent %d tool results, want %d: %q", len(m.results), want, texts(m.results))
	}
	return m.results
}

func texts(results []toolResult) []string {
	var out []string
	for _, r := range results {
		out = append(out, r.Text)
	}
	return out
}

// serve starts an HTTP server on 127.0.0.1 with handler and closes it
// when the test ends.
func serve(t *testing.T, handler http.HandlerFunc) string {
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return srv.URL
}

// sse writes server-sent events, one JSON object each, named by their
// "type" field as both APIs do.
type sse struct {
	w http.ResponseWriter
}

func startSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sse{w}
}

func (s sse) event(data map[string]any) {
	b, err := json.Marshal(data)
	if err != nil {
		panic(err) // our own maps of plain values
	}
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", data["type"], b)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// readJSON decodes a request body, failing the test on what the fake
// cannot read (a compressed body, say) so that it is not mistaken for a
// host's fault.
func readJSON(t *testing.T, r *http.Request, v any) bool {
	if enc := r.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
		t.Errorf("%s %s: body with Content-Encoding %q, which the fake model cannot read", r.Method, r.URL.Path, enc)
		return false
	}
	b, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		t.Errorf("%s %s: %v", r.Method, r.URL.Path, err)
		return false
	}
	return true
}

// blockTexts joins the text of a tool result's content, which either API
// sends as a string or as a list of typed blocks.
func blockTexts(raw json.RawMessage, textType string) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &blocks) // anything else reads as no text
	var parts []string
	for _, b := range blocks {
		if b.Type == textType {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// openAI serves the OpenAI Responses API as Codex uses it (POST
// /v1/responses, streamed), playing m. Codex offers an MCP server's tools
// as a namespace "mcp__<server>" and expects calls to name it.
func (m *model) openAI(t *testing.T) string {
	var n atomic.Int64 // requests, for ids
	return serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
			t.Logf("fake OpenAI API: %s %s answered 404", r.Method, r.URL.Path)
			http.NotFound(w, r)
			return
		}
		var req struct {
			Input []json.RawMessage `json:"input"`
			Tools []struct {
				Type  string `json:"type"`
				Name  string `json:"name"`
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			} `json:"tools"`
		}
		if !readJSON(t, r, &req) {
			http.Error(w, "unreadable request", http.StatusBadRequest)
			return
		}
		var results []toolResult
		for _, raw := range req.Input {
			var item struct {
				Type   string          `json:"type"`
				Output json.RawMessage `json:"output"`
			}
			if json.Unmarshal(raw, &item) == nil && item.Type == "function_call_output" {
				results = append(results, toolResult{Text: blockTexts(item.Output, "input_text"), Raw: item.Output})
			}
		}
		offered := false
		for _, tool := range req.Tools {
			if tool.Type == "namespace" && tool.Name == "mcp__execd" {
				for _, sub := range tool.Tools {
					offered = offered || sub.Name == "exec_command"
				}
			}
		}
		id := n.Add(1)
		var call *toolCall
		final := "Done."
		if offered {
			m.offer(true)
			call, final = m.answer(results)
		}
		s := startSSE(w)
		s.event(map[string]any{"type": "response.created", "response": map[string]any{"id": fmt.Sprint("resp_", id)}})
		var item map[string]any
		if call != nil {
			args, err := json.Marshal(call.Args)
			if err != nil {
				panic(err)
			}
			item = map[string]any{"type": "function_call", "id": fmt.Sprint("fc_", id), "call_id": fmt.Sprint("call_", id),
				"namespace": "mcp__execd", "name": call.Tool, "arguments": string(args)}
		} else {
			item = map[string]any{"type": "message", "role": "assistant", "id": fmt.Sprint("msg_", id),
				"content": []map[string]any{{"type": "output_text", "text": final}}}
		}
		s.event(map[string]any{"type": "response.output_item.done", "item": item})
		s.event(map[string]any{"type": "response.completed", "response": map[string]any{"id": fmt.Sprint("resp_", id),
			"usage": map[string]any{"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}})
	})
}

// anthropic serves the Anthropic Messages API as Claude Code uses it
// (POST /v1/messages, streamed, plus token counting), playing m. Claude
// Code names an MCP server's tools "mcp__<server>__<tool>". Requests
// without tools come from Claude Code's side tasks and get a short text.
func (m *model) anthropic(t *testing.T) string {
	var n atomic.Int64 // requests, for ids
	return serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/v1/messages/count_tokens"):
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"input_tokens":1}`)
			return
		case r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/v1/messages"):
			t.Logf("fake Anthropic API: %s %s answered 404", r.Method, r.URL.Path)
			http.NotFound(w, r)
			return
		}
		var req struct {
			Model    string `json:"model"`
			Stream   bool   `json:"stream"`
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if !readJSON(t, r, &req) {
			http.Error(w, "unreadable request", http.StatusBadRequest)
			return
		}
		var results []toolResult
		for _, msg := range req.Messages {
			var blocks []struct {
				Type    string          `json:"type"`
				Content json.RawMessage `json:"content"`
			}
			if msg.Role != "user" || json.Unmarshal(msg.Content, &blocks) != nil {
				continue
			}
			for _, b := range blocks {
				if b.Type == "tool_result" {
					results = append(results, toolResult{Text: blockTexts(b.Content, "text"), Raw: b.Content})
				}
			}
		}
		offered := false
		for _, tool := range req.Tools {
			offered = offered || tool.Name == "mcp__execd__exec_command"
		}
		id := n.Add(1)
		var call *toolCall
		final := "Done."
		if len(req.Tools) > 0 {
			m.offer(offered)
			if offered {
				call, final = m.answer(results)
			}
		}
		msgID := fmt.Sprint("msg_", id)
		usage := map[string]any{"input_tokens": 1, "output_tokens": 1}
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"id": msgID, "type": "message", "role": "assistant", "model": req.Model,
				"content": []map[string]any{{"type": "text", "text": final}}, "stop_reason": "end_turn", "stop_sequence": nil, "usage": usage})
			return
		}
		s := startSSE(w)
		s.event(map[string]any{"type": "message_start", "message": map[string]any{"id": msgID, "type": "message", "role": "assistant",
			"model": req.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}})
		stop := "end_turn"
		if call != nil {
			args, err := json.Marshal(call.Args)
			if err != nil {
				panic(err)
			}
			stop = "tool_use"
			s.event(map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "tool_use",
				"id": fmt.Sprint("toolu_", id), "name": "mcp__execd__" + call.Tool, "input": map[string]any{}}})
			s.event(map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(args)}})
		} else {
			s.event(map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
			s.event(map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": final}})
		}
		s.event(map[string]any{"type": "content_block_stop", "index": 0})
		s.event(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 1}})
		s.event(map[string]any{"type": "message_stop"})
	})
}
