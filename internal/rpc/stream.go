package rpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"go.uber.org/zap"
)

// DefaultMaxLineBytes is the longest line the stream accepts (SPEC §3.1).
const DefaultMaxLineBytes = 16 << 20

// readBufferBytes is the size of the line reader's buffer; longer lines are
// assembled from several reads.
const readBufferBytes = 64 << 10

// errLineTooLong reports a line over the limit; it was read and discarded.
var errLineTooLong = errors.New("line too long")

// lineStream is a jsonrpc2.ObjectStream over newline-delimited JSON that
// answers malformed lines itself instead of failing the connection (DEPS.md
// §C: jsonrpc2 closes the whole connection on the first bad line).
//
// At the end of input ReadObject reports it on inputDone and then blocks
// until Close, so that the connection stays open for the replies of
// requests still running: nothing the client asked for is lost because it
// closed its end first.
type lineStream struct {
	r       *bufio.Reader
	maxLine int
	log     *zap.Logger

	wmu sync.Mutex // serializes writes: the Conn's frames and our own replies
	w   io.WriteCloser

	inputDone chan struct{} // closed when the input ends; inputErr is then set
	inputErr  error
	endOnce   sync.Once
	// outputDone is closed when a write fails (the host closed its end:
	// EPIPE); outputErr is then set.
	outputDone chan struct{}
	outputErr  error
	outOnce    sync.Once
	closed     chan struct{} // closed by Close
	closeOnce  sync.Once
}

func newLineStream(r io.Reader, w io.WriteCloser, maxLine int, log *zap.Logger) *lineStream {
	return &lineStream{
		r:          bufio.NewReaderSize(r, readBufferBytes),
		maxLine:    maxLine,
		log:        log,
		w:          w,
		inputDone:  make(chan struct{}),
		outputDone: make(chan struct{}),
		closed:     make(chan struct{}),
	}
}

// ReadObject decodes the next well-formed message into v (a jsonrpc2
// message). Malformed lines are answered and skipped.
func (s *lineStream) ReadObject(v any) error {
	for {
		line, err := s.readLine()
		if errors.Is(err, errLineTooLong) {
			s.writeReply(nil, CodeInvalidRequest,
				fmt.Sprintf("message too large: lines are limited to %d bytes", s.maxLine))
			continue
		}
		if err != nil {
			s.endOnce.Do(func() {
				s.inputErr = err
				close(s.inputDone)
			})
			<-s.closed
			return err
		}
		line = trimJSONSpace(line)
		if len(line) == 0 {
			continue
		}
		msg, ok := s.check(line)
		if !ok {
			continue
		}
		if err := json.Unmarshal(msg, v); err != nil {
			// check accepted it, so the library's own decoding disagrees.
			// Answer a request rather than disconnect; turn a response into
			// an error for the call waiting on it.
			if resolved := s.malformedResponse(msg, err.Error()); resolved != nil {
				if json.Unmarshal(resolved, v) == nil {
					return nil
				}
				continue
			}
			s.writeReply(idOf(msg), CodeInvalidRequest, "invalid message: "+err.Error())
			continue
		}
		return nil
	}
}

// trimJSONSpace removes the whitespace JSON allows around a value (space,
// tab, CR, LF) and nothing else: other Unicode spaces make a line invalid.
func trimJSONSpace(b []byte) []byte {
	return bytes.Trim(b, " \t\r\n")
}

// readLine returns the next line without its "\n" or "\r\n". The slice is
// valid until the next call. A last line without a newline is returned
// before io.EOF.
func (s *lineStream) readLine() ([]byte, error) {
	frag, err := s.r.ReadSlice('\n')
	if err == nil { // the common case: the line fits the buffer, no copy
		if line := trimEOL(frag); len(line) <= s.maxLine {
			return line, nil
		}
		return nil, errLineTooLong
	}
	var line []byte
	tooLong := false
	for {
		if !tooLong && len(line)+len(frag) > s.maxLine+2 { // +2: "\r\n"
			tooLong, line = true, nil
		}
		if !tooLong {
			line = append(line, frag...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
		frag, err = s.r.ReadSlice('\n')
	}
	switch {
	case err != nil && !errors.Is(err, io.EOF):
		return nil, err
	case tooLong:
		return nil, errLineTooLong
	case err != nil && len(line) == 0:
		return nil, io.EOF
	}
	line = trimEOL(line)
	if len(line) > s.maxLine {
		return nil, errLineTooLong
	}
	return line, nil
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// envelope holds the members that decide what kind of message a line is.
// A member that is present with the value null decodes as "null", an
// absent one as nil.
type envelope struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// check returns the message to give jsonrpc2 for line, a trimmed
// non-empty line, and reports whether there is one. A well-formed message
// is returned as is; a malformed response to one of our calls becomes an
// error response for that call (see malformedResponse). Anything else is
// answered (or, for a response, logged) here and reported false. One
// decoding pass both validates the syntax and classifies the message.
func (s *lineStream) check(trimmed []byte) ([]byte, bool) {
	if first := trimmed[0]; first != '{' {
		if !json.Valid(trimmed) {
			s.writeReply(nil, CodeParseError, "parse error: "+syntaxDetail(trimmed))
		} else if first == '[' {
			s.writeReply(nil, CodeInvalidRequest,
				"invalid request: batches are not supported; send one JSON-RPC message object per line")
		} else {
			s.writeReply(nil, CodeInvalidRequest,
				"invalid request: expected a JSON-RPC message object, got "+jsonKind(first))
		}
		return nil, false
	}
	var env envelope
	if err := json.Unmarshal(trimmed, &env); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			s.writeReply(nil, CodeParseError, "parse error: "+syntaxDetail(trimmed))
		} else {
			s.writeReply(nil, CodeInvalidRequest, "invalid request: "+err.Error())
		}
		return nil, false
	}
	problem := env.problem()
	if problem == "" {
		return trimmed, true
	}
	if resolved := s.malformedResponse(trimmed, problem); resolved != nil {
		return resolved, true
	}
	if env.isResponse() {
		return nil, false // logged by malformedResponse; JSON-RPC forbids answering it
	}
	id := env.ID
	if ok, _ := validID(id); !ok {
		id = nil // never echo an id we would not accept
	}
	s.writeReply(id, CodeInvalidRequest, "invalid request: "+problem)
	return nil, false
}

// malformedResponse handles a response the library cannot take: it is
// never answered (JSON-RPC forbids it) but, when its id is valid, it is
// turned into an error response for that id, so a call of ours waiting on
// it ends with an error instead of its timeout. It returns that response,
// or nil when line is not a response or has no usable id.
func (s *lineStream) malformedResponse(line []byte, problem string) []byte {
	var env envelope
	if json.Unmarshal(line, &env) != nil || !env.isResponse() {
		return nil
	}
	s.log.Warn("malformed response from the client", zap.ByteString("id", env.ID), zap.String("problem", problem))
	if ok, _ := validID(env.ID); !ok {
		return nil
	}
	b, err := json.Marshal(errorReply{JSONRPC: "2.0", ID: env.ID,
		Error: NewError(CodeInternalError, "malformed response from the client: "+problem)})
	if err != nil {
		return nil
	}
	return b
}

func (e *envelope) isResponse() bool {
	return e.Method == nil && (e.Result != nil || e.Error != nil)
}

// problem says what is wrong with the message, or "" when nothing is.
func (e *envelope) problem() string {
	if string(e.JSONRPC) != `"2.0"` {
		return `"jsonrpc" must be "2.0"`
	}
	isResponse := e.Result != nil || e.Error != nil
	switch {
	case e.Method != nil && isResponse:
		return `a message cannot have both "method" and "result"/"error"`
	case e.Method != nil:
		if len(e.Method) == 0 || e.Method[0] != '"' {
			return `"method" must be a string`
		}
		if e.ID == nil {
			return "" // a notification
		}
		if ok, null := validID(e.ID); !ok {
			if null {
				return `"id" must not be null`
			}
			return `"id" must be a string or a non-negative integer`
		}
		return ""
	case isResponse:
		switch {
		case e.Result != nil && e.Error != nil:
			return `a response cannot have both "result" and "error"`
		case e.ID == nil:
			return `a response needs an "id"`
		case e.Error != nil && (len(e.Error) == 0 || e.Error[0] != '{'):
			return `"error" must be an object`
		}
		return ""
	}
	return `a message needs "method" (request or notification) or "result"/"error" (response)`
}

// writeReply answers a line the library never sees. id is the raw id to
// echo, or nil for null.
func (s *lineStream) writeReply(id json.RawMessage, code int64, message string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	if err := s.WriteObject(errorReply{JSONRPC: "2.0", ID: id, Error: NewError(code, message)}); err != nil {
		s.log.Debug("write error reply", zap.Error(err))
	}
}

// WriteObject writes v as one compact line in a single write.
func (s *lineStream) WriteObject(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, err = s.w.Write(b); err != nil {
		select {
		case <-s.closed: // closed by us
		default:
			s.outOnce.Do(func() {
				s.outputErr = err
				close(s.outputDone)
			})
		}
	}
	return err
}

// Close releases a ReadObject waiting at the end of input and closes the
// output. It does not take the write lock: a Write blocked on a client
// that stopped reading would hold it forever, and closing a file while a
// write is in progress is safe. The input is not closed: a read blocked
// on a pipe cannot be interrupted, and its goroutine is abandoned at exit.
func (s *lineStream) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.closed)
		err = s.w.Close()
	})
	return err
}

// idOf extracts a valid id from a line, or nil.
func idOf(line []byte) json.RawMessage {
	var env envelope
	if json.Unmarshal(line, &env) != nil {
		return nil
	}
	if ok, _ := validID(env.ID); !ok {
		return nil
	}
	return env.ID
}

// syntaxDetail describes why line is not JSON.
func syntaxDetail(line []byte) string {
	var v any
	err := json.Unmarshal(line, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v (at byte %d)", se, se.Offset)
	}
	if err != nil {
		return err.Error()
	}
	return "invalid JSON"
}

func jsonKind(first byte) string {
	switch first {
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
