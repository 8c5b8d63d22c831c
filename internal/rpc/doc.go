// Package rpc serves JSON-RPC 2.0 over a newline-delimited byte stream, the
// stdio transport of MCP, on top of github.com/sourcegraph/jsonrpc2.
//
// # What it owns
//
//   - Framing (see [NewConn]): one compact JSON message per line, lines up to
//     [DefaultMaxLineBytes]. A line that is not JSON is answered with -32700
//     and a value that is not a single request, notification or response (a
//     batch, a number, a request without "jsonrpc":"2.0") with -32600; the
//     connection keeps serving either way. The library alone would drop the
//     connection on such input.
//   - Dispatch: every request is registered in the in-flight table before it
//     runs in its own goroutine, so a notifications/cancelled that follows it
//     always finds it, and a slow handler never delays another request or a
//     response to one of our own calls. Notifications run inline, in order.
//   - Cancellation: notifications/cancelled cancels the request's context with
//     [ErrCancelled] as its cause, and no response is sent for it.
//   - Calls to the peer ([Conn.Call]) with ids of our own ("execd-N"); when the
//     caller's context ends first, the peer is sent notifications/cancelled.
//
// It does not know MCP methods beyond notifications/cancelled; the tools
// package registers those.
//
// A [Conn] is safe for concurrent use once [Conn.Serve] has started; handlers
// must be registered before.
package rpc
