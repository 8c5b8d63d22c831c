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

// begin reports a started command; sandbox is what confines it
// (orchestrator.SandboxLabel).
func (e *commandEvents) begin(argv []string, cwd, sandbox string) {
	e.emit("exec_begin", eventParams{"call_id": e.callID, "command": argv, "cwd": cwd, "sandbox": sandbox})
}

// observe is the OutputFunc of a one-shot. It keeps nothing beyond one
// incomplete character per stream, and nothing at all once the cap of
// deltas is reached, so memory stays bounded whatever the command prints.
func (e *commandEvents) observe(st orchestrator.Stream, chunk []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sent >= maxDeltas {
		return
	}
	e.flush(st, append(e.pending[st], chunk...), false)
}

// flush sends b as deltas of at most maxDeltaBytes after invalid bytes
// are replaced, never splitting a character. Unless final, an incomplete
// character at the end waits for the next chunk.
func (e *commandEvents) flush(st orchestrator.Stream, b []byte, final bool) {
	var out []byte
	for len(b) > 0 && e.sent < maxDeltas {
		r, size := utf8.DecodeRune(b)
		enc := b[:size]
		if r == utf8.RuneError && size <= 1 {
			if !final && !utf8.FullRune(b) {
				break // the rest of this character has not arrived yet
			}
			enc = []byte(string(utf8.RuneError))
		}
		if len(out)+len(enc) > maxDeltaBytes {
			e.send(st, out)
			out = nil
			continue
		}
		out = append(out, enc...)
		b = b[size:]
	}
	if len(out) > 0 && e.sent < maxDeltas {
		e.send(st, out)
	}
	if e.sent >= maxDeltas {
		b = nil
	}
	e.pending[st] = append(e.pending[st][:0], b...)
}

func (e *commandEvents) send(st orchestrator.Stream, chunk []byte) {
	e.sent++
	e.emit("exec_output_delta", eventParams{"call_id": e.callID, "stream": st.String(), "chunk": string(chunk)})
}

// Output implements orchestrator.Watcher.
func (e *commandEvents) Output(chunk []byte) { e.observe(orchestrator.Stdout, chunk) }

// Exited implements orchestrator.Watcher.
func (e *commandEvents) Exited(x orchestrator.Exit) { e.end(x.Code, x.Duration, false) }

// end sends what is still pending, then exec_end.
func (e *commandEvents) end(code int, d time.Duration, timedOut bool) {
	e.mu.Lock()
	for st, b := range e.pending {
		if len(b) > 0 {
			e.flush(st, b, true)
		}
	}
	e.mu.Unlock()
	e.emit("exec_end", eventParams{"call_id": e.callID, "exit_code": code,
		"duration_ms": d.Milliseconds(), "timed_out": timedOut})
}

// terminalInteraction returns the OnInput callback that reports input
// delivered to a session, or nil when the client asked for no events.
func (s *Server) terminalInteraction(ctx context.Context, id procstore.ID, chars string) func() {
	if !s.eventsEnabled() {
		return nil
	}
	return func() {
		s.emit(context.WithoutCancel(ctx), "terminal_interaction", eventParams{"session_id": id, "chars": chars})
	}
}
