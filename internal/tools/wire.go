package tools

import "encoding/json"

// Protocol versions execd speaks, newest first (SPEC §3.2).
var protocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

type implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type initializeParams struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    clientCapabilities `json:"capabilities"`
	ClientInfo      *implementation    `json:"clientInfo"`
}

type clientCapabilities struct {
	Elicitation  json.RawMessage            `json:"elicitation,omitempty"`
	Experimental map[string]json.RawMessage `json:"experimental,omitempty"`
}

type initializeResult struct {
	ProtocolVersion string         `json:"protocolVersion"`
	Capabilities    map[string]any `json:"capabilities"`
	ServerInfo      implementation `json:"serverInfo"`
	Instructions    string         `json:"instructions"`
}

type listToolsParams struct {
	Cursor *string `json:"cursor"`
}

type listToolsResult struct {
	Tools []*toolDef `json:"tools"`
}

type callToolParams struct {
	Name      *string         `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      struct {
		ProgressToken json.RawMessage `json:"progressToken"`
	} `json:"_meta"`
}

type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// callResult is a CallToolResult.
type callResult struct {
	Content           []textContent `json:"content"`
	StructuredContent any           `json:"structuredContent,omitempty"`
	IsError           bool          `json:"isError"`
	// rpcErr, when set, is sent instead: the call failed as a request,
	// not as a tool (execd shutting down).
	rpcErr error
}

type setLevelParams struct {
	Level string `json:"level"`
}

type progressParams struct {
	ProgressToken json.RawMessage `json:"progressToken"`
	Progress      int64           `json:"progress"`
	Message       string          `json:"message,omitempty"`
}

type logMessageParams struct {
	Level  string `json:"level"`
	Logger string `json:"logger,omitempty"`
	Data   any    `json:"data"`
}

// toolDef is a Tool of tools/list.
type toolDef struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  annotations     `json:"annotations"`
}

type annotations struct {
	ReadOnlyHint    bool `json:"readOnlyHint"`
	DestructiveHint bool `json:"destructiveHint"`
	OpenWorldHint   bool `json:"openWorldHint"`
}

// execStructured is the structuredContent of shell and shell_command
// (SPEC §4.1, §4.2).
type execStructured struct {
	ExitCode        int     `json:"exit_code"`
	WallTimeSeconds float64 `json:"wall_time_seconds"`
	Output          string  `json:"output"`
	TimedOut        bool    `json:"timed_out"`
	Truncated       bool    `json:"truncated"`
	Signal          string  `json:"signal,omitempty"`
	SandboxDenied   bool    `json:"sandbox_denied"`
}
