package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/sourcegraph/jsonrpc2"
	"go.uber.org/zap"
)

// ErrNotServing is returned by calls made before [Conn.Serve].
var ErrNotServing = errors.New("rpc connection is not serving")

// HandlerFunc answers a request. It returns the result to send, or an
// error: an [*Error] is sent as is, any other error as CodeInternalError.
// A nil result is sent as {}. ctx is cancelled with cause [ErrCancelled]
// when the client cancels the request (its reply is then dropped) and with
// [ErrShutdown] by [Conn.Shutdown].
type HandlerFunc func(ctx context.Context, req *Request) (any, error)

// NotificationFunc handles a notification. It runs inline in the read
// loop, so it must not block: no other message is read while it runs.
type NotificationFunc func(ctx context.Context, params json.RawMessage)

// Options configures a [Conn]. The zero value is usable.
type Options struct {
	// Logger receives connection events; nil means no logging. Frames are
	// traced at debug level.
	Logger *zap.Logger
	// MaxLineBytes limits one message; 0 means DefaultMaxLineBytes.
	MaxLineBytes int
	// MaxInFlight limits the requests being handled at once; 0 means
	// DefaultMaxInFlight. At the limit the connection stops reading its
	// input until a request finishes (see [Conn.start]).
	MaxInFlight int
}

// DefaultMaxInFlight is rpc.max_in_flight's default (SPEC §3.1).
const DefaultMaxInFlight = 256

// Conn is one JSON-RPC connection over a newline-delimited stream.
type Conn struct {
	log      *zap.Logger
	stream   *lineStream
	handlers map[string]HandlerFunc      // written only before Serve
	notifs   map[string]NotificationFunc // written only before Serve

	jc     atomic.Pointer[jsonrpc2.Conn] // set by Serve
	base   context.Context               // parent of request contexts
	nextID atomic.Uint64                 // ids of our own calls

	maxInFlight int

	mu       sync.Mutex
	inflight map[jsonrpc2.ID]*inflight // guarded by mu
	pending  int                       // guarded by mu: requests started and not yet answered
	parked   int                       // guarded by mu: Calls waiting for the peer's answer
	closing  bool                      // guarded by mu: new requests are refused
	freed    *sync.Cond                // on mu: a request finished, a Call began, or closing
	running  sync.WaitGroup            // request goroutines
}

// inflight is a request whose handler is running.
type inflight struct {
	cancel    context.CancelCauseFunc
	cancelled bool // guarded by Conn.mu: cancelled by the client, send nothing
}

// NewConn returns a connection that reads messages from r and writes them
// to w. Register handlers, then call [Conn.Serve]. The connection closes w
// on [Conn.Shutdown]; r is never closed.
func NewConn(r io.Reader, w io.WriteCloser, opts Options) *Conn {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	maxLine := opts.MaxLineBytes
	if maxLine <= 0 {
		maxLine = DefaultMaxLineBytes
	}
	maxInFlight := opts.MaxInFlight
	if maxInFlight <= 0 {
		maxInFlight = DefaultMaxInFlight
	}
	c := &Conn{
		log:         log,
		stream:      newLineStream(r, w, maxLine, log),
		handlers:    map[string]HandlerFunc{},
		notifs:      map[string]NotificationFunc{},
		maxInFlight: maxInFlight,
		inflight:    map[jsonrpc2.ID]*inflight{},
	}
	c.freed = sync.NewCond(&c.mu)
	return c
}

// Handle registers the handler of a request method. Methods without a
// handler are answered with CodeMethodNotFound.
func (c *Conn) Handle(method string, h HandlerFunc) { c.handlers[method] = h }

// HandleNotification registers the handler of a notification method.
// Notifications without a handler are ignored.
func (c *Conn) HandleNotification(method string, h NotificationFunc) { c.notifs[method] = h }

// Serve starts reading and dispatching messages and blocks until the input
// ends (it returns nil), ctx is done (it returns the cause), or reading
// fails. Requests still running are not stopped: their replies are sent
// until [Conn.Shutdown]. Requests that arrive after Serve returned are
// refused.
func (c *Conn) Serve(ctx context.Context) error {
	c.base = context.WithoutCancel(ctx)
	stdLog, err := zap.NewStdLogAt(c.log.Named("jsonrpc2"), zap.WarnLevel)
	if err != nil {
		return fmt.Errorf("jsonrpc2 logger: %w", err)
	}
	jc := jsonrpc2.NewConn(c.base, c.stream, dispatcher{c},
		jsonrpc2.SetLogger(stdLog),
		jsonrpc2.OnRecv(c.trace("recv")),
		jsonrpc2.OnSend(c.trace("send")))
	c.jc.Store(jc)
	defer c.refuseNew()
	select {
	case <-c.stream.inputDone:
		if errors.Is(c.stream.inputErr, io.EOF) {
			return nil
		}
		return fmt.Errorf("read: %w", c.stream.inputErr)
	case <-c.stream.outputDone:
		return fmt.Errorf("%w: %w", ErrOutputClosed, c.stream.outputErr)
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-jc.DisconnectNotify():
		return errors.New("connection closed")
	}
}

func (c *Conn) refuseNew() {
	c.mu.Lock()
	c.closing = true
	c.freed.Broadcast()
	c.mu.Unlock()
}

// Shutdown cancels the requests still running with cause [ErrShutdown],
// waits for their replies until ctx is done, and closes the connection.
func (c *Conn) Shutdown(ctx context.Context) error {
	c.mu.Lock()
	c.closing = true
	c.freed.Broadcast()
	for _, f := range c.inflight {
		f.cancel(ErrShutdown)
	}
	c.mu.Unlock()

	done := make(chan struct{})
	go func() { // exits when the last handler returns
		c.running.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		c.log.Warn("closing with requests still running", zap.Error(context.Cause(ctx)))
	}
	if jc := c.jc.Load(); jc != nil {
		if err := jc.Close(); err != nil && !errors.Is(err, jsonrpc2.ErrClosed) {
			return err
		}
		return nil
	}
	return c.stream.Close()
}

// Notify sends a notification to the peer.
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	jc := c.jc.Load()
	if jc == nil {
		return ErrNotServing
	}
	return jc.Notify(ctx, method, params)
}

// Call sends a request to the peer with an id of our own ("execd-N") and
// waits for its response, which is decoded into result (may be nil). An
// error response comes back as an [*Error]. If ctx ends first, the peer is
// sent notifications/cancelled for the request and the cause of ctx is
// returned.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	jc := c.jc.Load()
	if jc == nil {
		return ErrNotServing
	}
	id := jsonrpc2.ID{Str: fmt.Sprintf("execd-%d", c.nextID.Add(1)), IsString: true}
	c.park(1)
	defer c.park(-1)
	w, err := jc.DispatchCall(ctx, method, params, jsonrpc2.PickID(id))
	if err != nil {
		return fmt.Errorf("send %s: %w", method, err)
	}
	err = w.Wait(ctx, result)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		cause := context.Cause(ctx)
		cancel := map[string]any{"requestId": id.Str, "reason": cause.Error()}
		if nerr := jc.Notify(context.WithoutCancel(ctx), CancelMethod, cancel); nerr != nil {
			c.log.Debug("send cancellation", zap.String("id", id.Str), zap.Error(nerr))
		}
		return fmt.Errorf("%s %s: %w", method, id.Str, cause)
	}
	var werr *jsonrpc2.Error
	if errors.As(err, &werr) {
		return &Error{Code: werr.Code, Message: werr.Message}
	}
	return err
}

// dispatcher adapts Conn to jsonrpc2.Handler. jsonrpc2 calls it inline in
// its read loop, so it only registers requests and starts them.
type dispatcher struct{ c *Conn }

func (d dispatcher) Handle(_ context.Context, jc *jsonrpc2.Conn, r *jsonrpc2.Request) {
	// jsonrpc2 reads before NewConn returns, so the first request can come
	// before Serve has stored jc; its handler may already Call the peer.
	d.c.jc.CompareAndSwap(nil, jc)
	if r.Notif {
		d.c.notification(r)
		return
	}
	d.c.start(jc, r)
}

// park counts a Call that waits for the peer's answer (d = 1) or no
// longer does (d = -1).
func (c *Conn) park(d int) {
	c.mu.Lock()
	c.parked += d
	c.freed.Broadcast()
	c.mu.Unlock()
}

// admissible reports whether one more request may start. A request whose
// handler waits on a Call to the peer (an approval) does not count against
// maxInFlight, since the peer's answer can only be read if reading goes on;
// twice maxInFlight is the hard ceiling. Called with mu held.
func (c *Conn) admissible() bool {
	n := c.pending
	return c.closing || (n-c.parked < c.maxInFlight && n < 2*c.maxInFlight)
}

// start registers the request in the in-flight table and runs it in a new
// goroutine. Registration happens here, before the read loop reads the
// next message, so a cancellation that follows always finds the request.
// At the in-flight limit it waits for a request to finish first: the read
// loop, and so the reading of the input, stops until then, which bounds
// what a client that sends faster than it reads can make execd hold.
func (c *Conn) start(jc *jsonrpc2.Conn, r *jsonrpc2.Request) {
	req := &Request{ID: ID{r.ID}, Method: r.Method, Params: rawParams(r.Params)}
	c.mu.Lock()
	for !c.admissible() {
		c.freed.Wait()
	}
	if c.closing {
		c.mu.Unlock()
		c.reply(jc, r.ID, nil, NewError(CodeInternalError, ErrShutdown.Error()))
		return
	}
	if _, dup := c.inflight[r.ID]; dup {
		c.mu.Unlock()
		c.reply(jc, r.ID, nil, Errorf(CodeInvalidRequest,
			"invalid request: id %s is already used by a request in progress", req.ID))
		return
	}
	ctx, cancel := context.WithCancelCause(c.base)
	f := &inflight{cancel: cancel}
	c.inflight[r.ID] = f
	c.pending++
	c.running.Add(1)
	c.mu.Unlock()

	go func() { // joined by Shutdown through c.running
		defer c.running.Done()
		result, err := c.invoke(ctx, req)
		defer c.answered()
		c.mu.Lock()
		delete(c.inflight, r.ID)
		cancelled := f.cancelled
		c.mu.Unlock()
		cancel(nil)
		if cancelled {
			c.log.Debug("request cancelled, no reply", zap.Stringer("id", req.ID), zap.String("method", req.Method))
			return
		}
		c.reply(jc, r.ID, result, err) // may wait for the peer to read
	}()
}

// answered frees the slot of a request once its reply is written (or
// dropped): a reply the peer is not reading still counts.
func (c *Conn) answered() {
	c.mu.Lock()
	c.pending--
	c.freed.Broadcast()
	c.mu.Unlock()
}

// invoke runs the handler of req. This is the one place that recovers from
// a panic: it is logged with its stack and answered as an internal error,
// and the connection keeps serving.
func (c *Conn) invoke(ctx context.Context, req *Request) (result any, err error) {
	h := c.handlers[req.Method]
	if h == nil {
		return nil, Errorf(CodeMethodNotFound, "method not found: %s", req.Method)
	}
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("handler panicked", zap.String("method", req.Method),
				zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
			result, err = nil, Errorf(CodeInternalError, "internal error in %s", req.Method)
		}
	}()
	return h(ctx, req)
}

func (c *Conn) reply(jc *jsonrpc2.Conn, id jsonrpc2.ID, result any, err error) {
	var sendErr error
	switch {
	case err != nil:
		var e *Error
		if !errors.As(err, &e) {
			e = NewError(CodeInternalError, err.Error())
		}
		werr := &jsonrpc2.Error{Code: e.Code, Message: e.Message}
		if e.Data != nil {
			werr.SetError(e.Data)
		}
		sendErr = jc.ReplyWithError(c.base, id, werr)
	case result == nil:
		sendErr = jc.Reply(c.base, id, json.RawMessage("{}"))
	default:
		sendErr = jc.Reply(c.base, id, result)
	}
	if sendErr != nil {
		c.log.Debug("reply not sent", zap.Stringer("id", ID{id}), zap.Error(sendErr))
	}
}

// notification runs a notification handler inline.
func (c *Conn) notification(r *jsonrpc2.Request) {
	params := rawParams(r.Params)
	if r.Method == CancelMethod {
		c.cancelRequest(params)
		return
	}
	h := c.notifs[r.Method]
	if h == nil {
		c.log.Debug("ignoring notification", zap.String("method", r.Method))
		return
	}
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("notification handler panicked", zap.String("method", r.Method),
				zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
		}
	}()
	h(c.base, params)
}

// cancelRequest handles notifications/cancelled: the request's context is
// cancelled and its reply suppressed. Unknown or finished ids are ignored.
func (c *Conn) cancelRequest(params json.RawMessage) {
	var p cancelParams
	if err := json.Unmarshal(params, &p); err != nil || p.RequestID == nil {
		c.log.Debug("ignoring malformed cancellation", zap.ByteString("params", params))
		return
	}
	var id ID
	if err := id.UnmarshalJSON(p.RequestID); err != nil {
		c.log.Debug("ignoring cancellation", zap.Error(err))
		return
	}
	c.mu.Lock()
	f := c.inflight[id.id]
	if f != nil {
		f.cancelled = true
		f.cancel(ErrCancelled)
	}
	c.mu.Unlock()
	c.log.Debug("cancellation", zap.Stringer("id", id), zap.Bool("found", f != nil), zap.String("reason", p.Reason))
}

// trace returns a frame tracer for jsonrpc2's hooks; it costs one level
// check per frame when debug logging is off.
func (c *Conn) trace(dir string) func(*jsonrpc2.Request, *jsonrpc2.Response) {
	return func(req *jsonrpc2.Request, resp *jsonrpc2.Response) {
		if !c.log.Core().Enabled(zap.DebugLevel) {
			return
		}
		fields := []zap.Field{zap.String("dir", dir)}
		if req != nil {
			fields = append(fields, zap.String("method", req.Method))
			if !req.Notif {
				fields = append(fields, zap.Stringer("id", ID{req.ID}))
			}
		}
		if resp != nil {
			fields = append(fields, zap.Stringer("id", ID{resp.ID}), zap.Bool("error", resp.Error != nil))
		}
		c.log.Debug("frame", fields...)
	}
}

func rawParams(p *json.RawMessage) json.RawMessage {
	if p == nil {
		return nil
	}
	return *p
}
