package tools

// StructuredMode chooses when results carry structuredContent and tools
// carry an outputSchema (tools.structured_content, SPEC §4).
type StructuredMode string

// The structured-content modes.
const (
	// StructuredAuto leaves them out for the clients of textOnlyClients
	// and keeps them for everyone else.
	StructuredAuto   StructuredMode = "auto"
	StructuredAlways StructuredMode = "always"
	StructuredNever  StructuredMode = "never"
)

// textOnlyClients are the clients, by clientInfo.name, known to hand the
// model a result's structuredContent in place of its text, so that the
// model would never see the layouts of SPEC §4. For them, under
// [StructuredAuto], results are text only. Keep SPEC §4 in step.
var textOnlyClients = map[string]string{
	// Codex CLI (exec, TUI, app-server): the JSON, wrapped in its own
	// "Wall time: … Output:" frame.
	"codex-mcp-client": "Codex",
	// Claude Code (-p and TUI): the JSON as the tool result.
	"claude-code": "Claude Code",
}

// structuredFor reports whether a client of this name gets
// structuredContent and outputSchema under mode.
func structuredFor(mode StructuredMode, client string) bool {
	switch mode {
	case StructuredAlways:
		return true
	case StructuredNever:
		return false
	}
	_, textOnly := textOnlyClients[client]
	return !textOnly
}
