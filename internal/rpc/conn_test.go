package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// waitLimit bounds every wait in these tests; it only turns a deadlock into
// a failure and is never a performance assertion.
const waitLimit = 10 * time.Second

// peer is the client side of a Conn under test.
type peer struct {
	t        *testing.T
	conn     *Conn
	toServer *io.PipeWriter
	lines    chan string
	served   chan error
	cancel   context.CancelFunc
}

type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *Error          `json:"error"`
}

func newPeer(t *testing.T, opts Options, register func(*Conn)) *peer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	if opts.Logger == nil {
		opts.Logger = zaptest.NewLogger(t)
	}
	c := NewConn(inR, outW, opts)
	c.Handle("ping", func(context.Context, *Request) (any, error) { return struct{}{}, nil })
	if register != nil {
		register(c)
	}
	ctx, cancel := context.WithCancel(t.Context())
	p := &peer{t: t, conn: c, toServer: inW, lines: make(chan string, 64), served: make(chan error, 1), cancel: cancel}
	go func() { p.served <- c.Serve(ctx) }()
	go func() { // ends when the server closes its output
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 32<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	t.Cleanup(func() {
		cancel()
		_ = inW.Close()
		sctx, done := context.WithTimeout(context.Background(), waitLimit)
		defer done()
		_ = c.Shutdown(sctx)
		for range p.lines { // drain until the output closes
		}
	})
	return p
}

func (p *peer) send(lines ...string) {
	p.t.Helper()
	if _, err := io.WriteString(p.toServer, strings.Join(lines, "\n")+"\n"); err != nil {
		p.t.Fatalf("write: %v", err)
	}
}

func (p *peer) recv() message {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			p.t.Fatal("server closed its output")
		}
		var m message
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			p.t.Fatalf("server wrote a line that is not JSON: %q: %v", line, err)
		}
		if m.JSONRPC != "2.0" {
			p.t.Fatalf("server wrote a message without jsonrpc 2.0: %q", line)
		}
		return m
	case <-time.After(waitLimit):
		p.t.Fatal("no message from the server")
	}
	return message{}
}

// expectPing sends a ping with the given id and expects its reply next.
func (p *peer) expectPing(id int) {
	p.t.Helper()
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id))
	m := p.recv()
	if string(m.ID) != fmt.Sprint(id) || m.Error != nil || string(m.Result) != "{}" {
		p.t.Fatalf("ping %d: got id=%s result=%s error=%v", id, m.ID, m.Result, m.Error)
	}
}

func TestMalformedLinesAreAnsweredAndServingContinues(t *testing.T) {
	tests := []struct {
		name, line string
		code       int64
		id         string // raw id expected in the reply
	}{
		{"not json", `{not json`, CodeParseError, "null"},
		{"truncated", `{"jsonrpc":"2.0","id":1,"method":"pi`, CodeParseError, "null"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, CodeInvalidRequest, "null"},
		{"empty batch", `[]`, CodeInvalidRequest, "null"},
		{"number", `42`, CodeInvalidRequest, "null"},
		{"string", `"ping"`, CodeInvalidRequest, "null"},
		{"null", `null`, CodeInvalidRequest, "null"},
		{"no jsonrpc", `{"id":7,"method":"ping"}`, CodeInvalidRequest, "7"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":7,"method":"ping"}`, CodeInvalidRequest, "7"},
		{"neither method nor result", `{"jsonrpc":"2.0","id":7}`, CodeInvalidRequest, "7"},
		{"method not a string", `{"jsonrpc":"2.0","id":7,"method":5}`, CodeInvalidRequest, "7"},
		{"method and result", `{"jsonrpc":"2.0","id":7,"method":"ping","result":{}}`, CodeInvalidRequest, "7"},
		{"negative id", `{"jsonrpc":"2.0","id":-1,"method":"ping"}`, CodeInvalidRequest, "null"},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, CodeInvalidRequest, "null"},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, CodeInvalidRequest, "null"},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, CodeInvalidRequest, "null"},
		{"id over 2^63", `{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}`, CodeInvalidRequest, "null"},
		{"unknown method", `{"jsonrpc":"2.0","id":"x","method":"server/discover"}`, CodeMethodNotFound, `"x"`},
	}
	p := newPeer(t, Options{}, nil)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.t = t
			p.send(tt.line)
			m := p.recv()
			if m.Error == nil || m.Error.Code != tt.code || string(m.ID) != tt.id {
				t.Fatalf("reply to %s = id %s error %+v; want id %s code %d", tt.line, m.ID, m.Error, tt.id, tt.code)
			}
			if m.Error.Message == "" {
				t.Error("error without a message")
			}
			p.expectPing(1000 + i)
		})
	}
}

func TestBlankLinesCRLFAndLastLineWithoutNewline(t *testing.T) {
	p := newPeer(t, Options{}, nil)
	p.send("", "   ", "\t")
	p.expectPing(1)
	if _, err := io.WriteString(p.toServer, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\r\n"); err != nil {
		t.Fatal(err)
	}
	if m := p.recv(); string(m.ID) != "2" || m.Error != nil {
		t.Fatalf("CRLF ping: %+v", m)
	}
	if _, err := io.WriteString(p.toServer, `{"jsonrpc":"2.0","id":3,"method":"ping"}`); err != nil {
		t.Fatal(err)
	}
	_ = p.toServer.Close()
	if m := p.recv(); string(m.ID) != "3" || m.Error != nil {
		t.Fatalf("last line without newline: %+v", m)
	}
	if err := waitErr(t, p.served); err != nil {
		t.Fatalf("Serve at end of input = %v, want nil", err)
	}
}

func TestLineLimit(t *testing.T) {
	p := newPeer(t, Options{MaxLineBytes: 100}, nil)
	long := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 200) + `"}}`
	p.send(long)
	if m := p.recv(); m.Error == nil || m.Error.Code != CodeInvalidRequest || !strings.Contains(m.Error.Message, "100 bytes") {
		t.Fatalf("over-long line: %+v", m.Error)
	}
	p.expectPing(2)
	// A line longer than the reader's buffer, within the limit, is read whole.
	p2 := newPeer(t, Options{}, func(c *Conn) {
		c.Handle("echo", func(_ context.Context, r *Request) (any, error) { return r.Params, nil })
	})
	pad := strings.Repeat("y", 3*readBufferBytes)
	p2.send(`{"jsonrpc":"2.0","id":1,"method":"echo","params":{"pad":"` + pad + `"}}`)
	if m := p2.recv(); !strings.Contains(string(m.Result), pad) {
		t.Fatalf("long line: result of %d bytes", len(m.Result))
	}
}

func TestGarbageFloodKeepsServing(t *testing.T) {
	p := newPeer(t, Options{}, nil)
	go func() { // the server answers every line, so read while writing
		var b strings.Builder
		for i := range 10000 {
			fmt.Fprintf(&b, "garbage %d {\n", i)
		}
		_, _ = io.WriteString(p.toServer, b.String())
	}()
	for i := range 10000 {
		if m := p.recv(); m.Error == nil || m.Error.Code != CodeParseError {
			t.Fatalf("garbage line %d: %+v", i, m)
		}
	}
	p.expectPing(1)
}

func TestSlowRequestDoesNotBlockOthers(t *testing.T) {
	release := make(chan struct{})
	p := newPeer(t, Options{}, func(c *Conn) {
		c.Handle("slow", func(ctx context.Context, _ *Request) (any, error) {
			<-release
			return map[string]string{"done": "yes"}, nil
		})
	})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"slow"}`)
	p.expectPing(2)
	close(release)
	if m := p.recv(); string(m.ID) != "1" || !strings.Contains(string(m.Result), "yes") {
		t.Fatalf("slow reply: %+v", m)
	}
}

func TestCancellationFindsEveryRequest(t *testing.T) {
	var mu sync.Mutex
	causes := map[string]error{}
	p := newPeer(t, Options{}, func(c *Conn) {
		c.Handle("wait", func(ctx context.Context, r *Request) (any, error) {
			<-ctx.Done()
			mu.Lock()
			causes[r.ID.String()] = context.Cause(ctx)
			mu.Unlock()
			return "late", nil
		})
	})
	// Request and cancellation in one write: the cancellation is read
	// right after the request, before its goroutine may have run.
	const n = 200
	for i := range n {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"r%d","method":"wait"}`, i),
			fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r%d","reason":"test"}}`, i))
	}
	p.expectPing(1) // no reply to any cancelled request may come before or after
	deadline := time.Now().Add(waitLimit)
	for {
		mu.Lock()
		got := len(causes)
		mu.Unlock()
		if got == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d handlers saw their cancellation", got, n)
		}
		time.Sleep(time.Millisecond)
	}
	for id, cause := range causes {
		if !errors.Is(cause, ErrCancelled) {
			t.Errorf("request %s: cause %v, want ErrCancelled", id, cause)
		}
	}
	p.expectPing(2)
	// Unknown and malformed cancellations are ignored.
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":999}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":"nonsense"}`)
	p.expectPing(3)
}

func TestDuplicateInFlightID(t *testing.T) {
	release := make(chan struct{})
	p := newPeer(t, Options{}, func(c *Conn) {
		c.Handle("slow", func(context.Context, *Request) (any, error) { <-release; return "first", nil })
	})
	p.send(`{"jsonrpc":"2.0","id":5,"method":"slow"}`, `{"jsonrpc":"2.0","id":5,"method":"slow"}`)
	if m := p.recv(); m.Error == nil || m.Error.Code != CodeInvalidRequest {
		t.Fatalf("duplicate id: %+v", m)
	}
	close(release)
	if m := p.recv(); string(m.Result) != `"first"` {
		t.Fatalf("first request: %+v", m)
	}
}

func TestPanicIsAnsweredAndServingContinues(t *testing.T) {
	p := newPeer(t, Options{}, func(c *Conn) {
		c.Handle("boom", func(context.Context, *Request) (any, error) { panic("kaboom") })
		c.HandleNotification("boom", func(context.Context, json.RawMessage) { panic("kaboom") })
	})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"boom"}`)
	if m := p.recv(); m.Error == nil || m.Error.Code != CodeInternalError {
		t.Fatalf("panic reply: %+v", m)
	}
	p.send(`{"jsonrpc":"2.0","method":"boom"}`)
	p.expectPing(2)
}

func TestHandlerErrors(t *testing.T) {
	p := newPeer(t, Options{}, func(c *Conn) {
		c.Handle("bad", func(context.Context, *Request) (any, error) {
			return nil, &Error{Code: CodeInvalidParams, Message: "cursor: unknown", Data: map[string]int{"n": 1}}
		})
		c.Handle("fail", func(context.Context, *Request) (any, error) { return nil, errors.New("disk on fire") })
		c.Handle("nil", func(context.Context, *Request) (any, error) { return nil, nil })
	})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"bad"}`)
	if m := p.recv(); m.Error == nil || m.Error.Code != CodeInvalidParams || m.Error.Message != "cursor: unknown" {
		t.Fatalf("rpc error: %+v", m.Error)
	}
	p.send(`{"jsonrpc":"2.0","id":2,"method":"fail"}`)
	if m := p.recv(); m.Error == nil || m.Error.Code != CodeInternalError || m.Error.Message != "disk on fire" {
		t.Fatalf("plain error: %+v", m.Error)
	}
	p.send(`{"jsonrpc":"2.0","id":3,"method":"nil"}`)
	if m := p.recv(); string(m.Result) != "{}" {
		t.Fatalf("nil result = %s, want {}", m.Result)
	}
}

func TestCallToPeer(t *testing.T) {
	p := newPeer(t, Options{}, nil)
	waitServing(t, p.conn)
	type answer struct {
		Action string `json:"action"`
	}
	got := make(chan error, 1)
	var res answer
	go func() {
		got <- p.conn.Call(t.Context(), "elicitation/create", map[string]string{"message": "ok?"}, &res)
	}()
	req := p.recv()
	if req.Method != "elicitation/create" || string(req.ID) != `"execd-1"` {
		t.Fatalf("outgoing request: %+v", req)
	}
	p.expectPing(1) // the server keeps serving while its call waits
	p.send(`{"jsonrpc":"2.0","id":"execd-1","result":{"action":"accept"}}`)
	if err := waitErr(t, got); err != nil || res.Action != "accept" {
		t.Fatalf("Call = %v, %+v", err, res)
	}

	// An error response comes back as *Error.
	go func() { got <- p.conn.Call(t.Context(), "elicitation/create", nil, nil) }()
	req = p.recv()
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"no elicitation"}}`, req.ID))
	var rerr *Error
	if err := waitErr(t, got); !errors.As(err, &rerr) || rerr.Code != CodeInvalidParams {
		t.Fatalf("Call error = %v", err)
	}
}

func TestCancelledCallNotifiesPeer(t *testing.T) {
	p := newPeer(t, Options{}, nil)
	waitServing(t, p.conn)
	ctx, cancel := context.WithCancelCause(t.Context())
	got := make(chan error, 1)
	go func() { got <- p.conn.Call(ctx, "elicitation/create", nil, nil) }()
	req := p.recv()
	stop := errors.New("tool call cancelled")
	cancel(stop)
	if err := waitErr(t, got); !errors.Is(err, stop) {
		t.Fatalf("Call after cancel = %v, want %v", err, stop)
	}
	n := p.recv()
	var params struct {
		RequestID json.RawMessage `json:"requestId"`
		Reason    string          `json:"reason"`
	}
	if err := json.Unmarshal(n.Params, &params); err != nil {
		t.Fatal(err)
	}
	if n.Method != CancelMethod || string(params.RequestID) != string(req.ID) || params.Reason != stop.Error() {
		t.Fatalf("cancellation sent: %+v %+v", n, params)
	}
	// A late response to the cancelled call is harmless.
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, req.ID))
	p.expectPing(1)
}

func TestRequestsOutliveEndOfInputUntilShutdown(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	p := newPeer(t, Options{}, func(c *Conn) {
		c.Handle("slow", func(context.Context, *Request) (any, error) {
			close(started)
			<-release
			return "finished", nil
		})
	})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"slow"}`)
	<-started
	_ = p.toServer.Close()
	if err := waitErr(t, p.served); err != nil {
		t.Fatalf("Serve = %v, want nil at end of input", err)
	}
	close(release)
	if m := p.recv(); string(m.Result) != `"finished"` {
		t.Fatalf("reply after end of input: %+v", m)
	}
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	if err := p.conn.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-p.lines; ok {
		t.Fatal("output still open after Shutdown")
	}
}

func TestShutdownCancelsRunningAndRefusesNew(t *testing.T) {
	started := make(chan struct{})
	p := newPeer(t, Options{}, func(c *Conn) {
		c.Handle("wait", func(ctx context.Context, _ *Request) (any, error) {
			close(started)
			<-ctx.Done()
			return nil, context.Cause(ctx)
		})
	})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"wait"}`)
	<-started
	p.cancel() // like SIGTERM: Serve returns, input stays open
	if err := waitErr(t, p.served); !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve = %v", err)
	}
	p.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if m := p.recv(); string(m.ID) != "2" || m.Error == nil {
		t.Fatalf("request after Serve returned: %+v", m)
	}
	go func() { _ = p.conn.Shutdown(context.Background()) }()
	if m := p.recv(); string(m.ID) != "1" || m.Error == nil || !strings.Contains(m.Error.Message, "shutting down") {
		t.Fatalf("running request at shutdown: %+v", m)
	}
}

func TestNotifyBeforeServe(t *testing.T) {
	c := NewConn(strings.NewReader(""), nopWriteCloser{io.Discard}, Options{})
	if err := c.Notify(t.Context(), "x", nil); !errors.Is(err, ErrNotServing) {
		t.Fatalf("Notify = %v", err)
	}
	if err := c.Call(t.Context(), "x", nil, nil); !errors.Is(err, ErrNotServing) {
		t.Fatalf("Call = %v", err)
	}
}

func TestErrorIs(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", NewError(CodeMethodNotFound, "nope"))
	if !errors.Is(err, NewError(CodeMethodNotFound, "")) || errors.Is(err, NewError(CodeInvalidParams, "")) {
		t.Fatal("Error.Is compares codes")
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func waitErr(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(waitLimit):
		t.Fatal("timed out")
	}
	return nil
}

func waitServing(t *testing.T, c *Conn) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for c.jc.Load() == nil {
		if time.Now().After(deadline) {
			t.Fatal("Serve did not start")
		}
		time.Sleep(time.Millisecond)
	}
}

// blockingWriter blocks every Write until closed, like a pipe whose reader
// stopped reading without closing it.
type blockingWriter struct {
	once   sync.Once
	closed chan struct{}
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	<-w.closed
	return 0, io.ErrClosedPipe
}

func (w *blockingWriter) Close() error {
	w.once.Do(func() { close(w.closed) })
	return nil
}

// A client that closes stdin but never reads stdout must not keep execd
// from exiting: Shutdown is bounded even while a reply is stuck in Write.
func TestShutdownWhileAWriteIsBlocked(t *testing.T) {
	inR, inW := io.Pipe()
	out := &blockingWriter{closed: make(chan struct{})}
	c := NewConn(inR, out, Options{Logger: zaptest.NewLogger(t)})
	c.Handle("ping", func(context.Context, *Request) (any, error) { return struct{}{}, nil })
	served := make(chan error, 1)
	go func() { served <- c.Serve(t.Context()) }()
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	_ = inW.Close()
	if err := waitErr(t, served); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Shutdown(ctx) }()
	if err := waitErr(t, done); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	c.running.Wait() // the stuck reply fails once the output is closed
}

// A malformed response is never answered; when its id is one of our calls
// that call ends with an error at once instead of waiting for its timeout.
func TestMalformedResponses(t *testing.T) {
	p := newPeer(t, Options{}, nil)
	waitServing(t, p.conn)
	for i, bad := range []string{
		`{"jsonrpc":"2.0","id":%s,"error":"boom"}`,
		`{"jsonrpc":"2.0","id":%s,"result":{},"error":{"code":1,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":%s,"error":{"code":"one"}}`,
	} {
		got := make(chan error, 1)
		go func() { got <- p.conn.Call(t.Context(), "elicitation/create", nil, nil) }()
		req := p.recv()
		p.send(fmt.Sprintf(bad, req.ID))
		var rerr *Error
		if err := waitErr(t, got); !errors.As(err, &rerr) || rerr.Code != CodeInternalError ||
			!strings.Contains(rerr.Message, "malformed response") {
			t.Errorf("case %d: Call = %v, want an internal error about the malformed response", i, err)
		}
		p.expectPing(10 + i) // nothing was written in reply to the response
	}
	p.send(`{"jsonrpc":"2.0","error":{"code":1,"message":"no id"}}`, `{"jsonrpc":"2.0","id":5,"error":null}`)
	p.expectPing(20)
}

// Only JSON's own whitespace is ignored around a message.
func TestOnlyJSONWhitespaceIsTrimmed(t *testing.T) {
	p := newPeer(t, Options{}, nil)
	for i, line := range []string{"\u00a0", "\u00a0{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\v"} {
		p.send(line)
		if m := p.recv(); m.Error == nil || m.Error.Code != CodeParseError {
			t.Errorf("line %q: %+v, want a parse error", line, m)
		}
		p.expectPing(30 + i)
	}
	p.send(" \t {\"jsonrpc\":\"2.0\",\"id\":40,\"method\":\"ping\"} \t ")
	if m := p.recv(); string(m.ID) != "40" || m.Error != nil {
		t.Errorf("message padded with JSON whitespace: %+v", m)
	}
}

func TestInFlightLimitStopsReading(t *testing.T) {
	started := make(chan string, 8)
	release := map[string]chan struct{}{`1`: make(chan struct{}), `2`: make(chan struct{}), `3`: make(chan struct{})}
	p := newPeer(t, Options{MaxInFlight: 2}, func(c *Conn) {
		c.Handle("slow", func(ctx context.Context, req *Request) (any, error) {
			started <- req.ID.String()
			<-release[req.ID.String()]
			return map[string]string{"done": req.ID.String()}, nil
		})
	})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"slow"}`, `{"jsonrpc":"2.0","id":2,"method":"slow"}`)
	for range 2 {
		<-started
	}
	// At the limit the third request is not started and the ping behind
	// it is not read, let alone answered.
	p.send(`{"jsonrpc":"2.0","id":3,"method":"slow"}`, `{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	time.Sleep(100 * time.Millisecond) // a wrong server would start 3 and answer 4 meanwhile
	select {
	case id := <-started:
		t.Fatalf("request %s started beyond the limit", id)
	case line := <-p.lines:
		t.Fatalf("answered beyond the limit: %s", line)
	default:
	}
	close(release[`2`])
	if m := p.recv(); string(m.ID) != "2" {
		t.Fatalf("first reply: %+v", m)
	}
	if id := <-started; id != "3" {
		t.Fatalf("started %s, want 3", id)
	}
	// 1 and 3 fill the slots again: the ping waits for one of them.
	close(release[`1`])
	if m := p.recv(); string(m.ID) != "1" {
		t.Fatalf("second reply: %+v", m)
	}
	if m := p.recv(); string(m.ID) != "4" || m.Error != nil {
		t.Fatalf("ping after a slot freed: %+v", m)
	}
	close(release[`3`])
	if m := p.recv(); string(m.ID) != "3" {
		t.Fatalf("last reply: %+v", m)
	}
}

// A request whose handler waits for the peer's answer must not stop the
// reading of that answer, even at the limit.
func TestInFlightLimitReadsAnswersToCalls(t *testing.T) {
	p := newPeer(t, Options{MaxInFlight: 1}, func(c *Conn) {
		c.Handle("ask", func(ctx context.Context, _ *Request) (any, error) {
			var res struct {
				Action string `json:"action"`
			}
			err := c.Call(ctx, "elicitation/create", map[string]string{"message": "ok?"}, &res)
			return res, err
		})
	})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"ask"}`)
	req := p.recv()
	if req.Method != "elicitation/create" {
		t.Fatalf("outgoing request: %+v", req)
	}
	p.expectPing(2)
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept"}}`, req.ID))
	if m := p.recv(); string(m.ID) != "1" || !strings.Contains(string(m.Result), "accept") {
		t.Fatalf("ask reply: %+v", m)
	}
}
