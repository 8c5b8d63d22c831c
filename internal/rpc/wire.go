package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/sourcegraph/jsonrpc2"
)

// JSON-RPC 2.0 error codes used on the wire.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// CancelMethod is the notification that cancels a request in either
// direction (MCP basic/utilities/cancellation).
const CancelMethod = "notifications/cancelled"

// ErrCancelled is the context cause of a request the peer cancelled.
var ErrCancelled = errors.New("request cancelled by the client")

// ErrShutdown is the context cause of requests still running when the
// connection shuts down.
var ErrShutdown = errors.New("server is shutting down")

// ErrOutputClosed is what Serve returns when a write to the output
// failed: the client closed its end (EPIPE), so no reply can reach it.
var ErrOutputClosed = errors.New("output closed")

// Error is a JSON-RPC error object. Handlers return it to choose the code;
// any other error is answered with CodeInternalError.
type Error struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// NewError returns an error with the given code and message.
func NewError(code int64, message string) *Error {
	return &Error{Code: code, Message: message}
}

// Errorf returns an error with the given code and a formatted message.
func Errorf(code int64, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string {
	return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message)
}

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, rpc.NewError(rpc.CodeMethodNotFound, "")) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// ID is a JSON-RPC request id: a string or a non-negative integer.
type ID struct {
	id jsonrpc2.ID
}

// StringID returns the id with the given string value.
func StringID(s string) ID { return ID{jsonrpc2.ID{Str: s, IsString: true}} }

// IntID returns the id with the given integer value.
func IntID(n uint64) ID { return ID{jsonrpc2.ID{Num: n}} }

// String returns the id as it appears in JSON: a quoted string or a number.
func (id ID) String() string {
	if id.id.IsString {
		return strconv.Quote(id.id.Str)
	}
	return strconv.FormatUint(id.id.Num, 10)
}

// MarshalJSON encodes the id as a JSON string or number.
func (id ID) MarshalJSON() ([]byte, error) { return id.id.MarshalJSON() }

// UnmarshalJSON decodes a JSON string or non-negative integer.
func (id *ID) UnmarshalJSON(b []byte) error {
	ok, _ := validID(b)
	if !ok {
		return fmt.Errorf("request id %s is not a string or a non-negative integer", b)
	}
	return id.id.UnmarshalJSON(b)
}

// Request is an incoming request as handlers see it.
type Request struct {
	ID     ID
	Method string
	// Params is the raw params member; nil when it was absent.
	Params json.RawMessage
}

// cancelParams are the params of notifications/cancelled.
type cancelParams struct {
	RequestID json.RawMessage `json:"requestId"`
	Reason    string          `json:"reason,omitempty"`
}

// errorReply is a response the stream writes by itself, for lines the
// library never sees.
type errorReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   *Error          `json:"error"`
}

// validID reports whether raw, a syntactically valid JSON value, is an
// acceptable request id: a string, or an integer in [0, 2^63). null
// reports false with null=true.
func validID(raw json.RawMessage) (ok, null bool) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0:
		return false, false
	case string(raw) == "null":
		return false, true
	case raw[0] == '"':
		return true, false
	}
	n, err := strconv.ParseInt(string(raw), 10, 64) // rejects fractions and exponents
	return err == nil && n >= 0, false
}
