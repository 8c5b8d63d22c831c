// Package tools is execd's MCP server: the lifecycle methods (initialize,
// ping, tools/list, tools/call, logging/setLevel), the tool catalogue and
// the model-facing text of every result (SPEC §3–§5).
//
// It maps domain errors to what the client sees, in one place
// ([errorResult]): bad arguments, refusals and spawn failures are tool
// results with isError set; an unknown tool or malformed params are
// JSON-RPC errors. A command that ran and exited non-zero is a result.
//
// It does not run processes itself (the orchestrator does) nor frame
// messages (the rpc package does). A [Server] is safe for concurrent use.
package tools
