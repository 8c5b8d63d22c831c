package tools

import (
	"context"
	"encoding/json"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/execd/execd/internal/orchestrator"
	"github.com/execd/execd/internal/procstore"
)

// Event stream limits (SPEC §3.4).
const (
	eventsCapability = "execd/events"
	maxDeltaBytes    = 8 << 10
	maxDeltas        = 10000
)

// eventParams is the params of an execd/event notification: its type and
// the event's own fields.
type eventParams map[string]any

// eventsEnabled reports whether the client asked for execd/event
// notifications in initialize.
func (s *Server) eventsEnabled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.client.Experimental[eventsCapability]
	return ok
}

func (s *Server) emit(ctx context.Context, typ string, fields eventParams) {
	fields["type"] = typ
	_ = s.conn.Notify(ctx, "execd/event", fields) // best effort: a UI stream
}

// commandEvents streams one command's events: exec_begin, then
// exec_output_delta in chunks of at most 8 KiB on character boundaries
// (at most 10,000), then exec_end. It is the orchestrator.Watcher of a
// session and the OutputFunc of a one-shot.
type commandEvents struct {
	emit   func(typ string, fields eventParams)
	callID json.RawMessage

	mu      sync.Mutex
	pending map[orchestrator.Stream][]byte // guarded by mu: an incomplete character
	sent    int                            // guarded by mu
}

// events returns the event stream of call c, or nil if the client did not
// ask for events.
func (s *Server) events(ctx context.Context, c *toolCall) *commandEvents {
	if !s.eventsEnabled() {
		return nil
	}
	id, _ := c.id.MarshalJSON()
	// The events of a session outlive the call that started it.
	ctx = context.WithoutCancel(ctx)
	return &commandEvents{emit: func(typ string, f eventParams) { s.emit(ctx, typ, f) }, callID: id,
		pending: map[orchestrator.Stream][]byte{}}
}

func (e *commandEvents) begin(argv []string, cwd string, o *orchestrator.Orchestrator) {
	sandbox := string(o.SandboxMode())
	if !o.Sandboxed() {
		sandbox = "none"
	}
	e.emit("exec_begin", eventParams{"call_id": e.callID, "command": argv, "cwd": cwd, "sandbox": sandbox})
}

// observe is the OutputFunc of a one-shot.
func (e *commandEvents) observe(st orchestrator.Stream, chunk []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	b := append(e.pending[st], chunk...)
	for len(b) > 0 && e.sent < maxDeltas {
		n := min(len(b), maxDeltaBytes)
		for n > 0 && n < len(b) && !utf8.RuneStart(b[n]) {
			n-- // do not split a character
		}
		if n == len(b) {
			n -= incompleteTail(b) // keep a split character for the next chunk
		}
		if n <= 0 {
			break
		}
		e.sent++
		e.emit("exec_output_delta", eventParams{"call_id": e.callID, "stream": st.String(), "chunk": toValidUTF8(b[:n])})
		b = b[n:]
	}
	e.pending[st] = append([]byte(nil), b...)
}

// Output implements orchestrator.Watcher.
func (e *commandEvents) Output(chunk []byte) { e.observe(orchestrator.Stdout, chunk) }

// Exited implements orchestrator.Watcher.
func (e *commandEvents) Exited(x orchestrator.Exit) { e.end(x.Code, x.Duration, false) }

func (e *commandEvents) end(code int, d time.Duration, timedOut bool) {
	e.emit("exec_end", eventParams{"call_id": e.callID, "exit_code": code,
		"duration_ms": d.Milliseconds(), "timed_out": timedOut})
}

// incompleteTail is the length of an incomplete character at the end of b.
func incompleteTail(b []byte) int {
	for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
		if c := b[len(b)-i]; utf8.RuneStart(c) {
			if c >= utf8.RuneSelf && !utf8.FullRune(b[len(b)-i:]) {
				return i
			}
			return 0
		}
	}
	return 0
}

// terminalInteraction reports input typed into a session.
func (s *Server) terminalInteraction(ctx context.Context, id procstore.ID, chars string) {
	if s.eventsEnabled() {
		s.emit(context.WithoutCancel(ctx), "terminal_interaction", eventParams{"session_id": id, "chars": chars})
	}
}
