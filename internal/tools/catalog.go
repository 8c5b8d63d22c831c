package tools

import (
	"encoding/json"
)

// ShellType chooses which shell family tools/list shows (SPEC §2,
// tools.shell_type).
type ShellType string

// The shell families.
const (
	ShellTypeUnifiedExec  ShellType = "unified_exec"
	ShellTypeShellCommand ShellType = "shell_command"
	ShellTypeShell        ShellType = "shell"
	ShellTypeDisabled     ShellType = "disabled"
)

// schema is a JSON Schema object under construction.
type schema map[string]any

func object(required []string, props map[string]schema) schema {
	s := schema{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func str(desc string) schema { return schema{"type": "string", "description": desc} }

func num(desc string) schema { return schema{"type": "number", "description": desc} }

func boolean(desc string) schema { return schema{"type": "boolean", "description": desc} }

func strArray(desc string) schema {
	return schema{"type": "array", "items": schema{"type": "string"}, "description": desc}
}

func (s schema) json() json.RawMessage {
	b, err := json.Marshal(s)
	if err != nil {
		panic("tools: schema does not marshal: " + err.Error()) // static data: a programming error
	}
	return b
}

// The model-facing descriptions follow Codex's, which today's models were
// trained on.
const (
	shellDescription = "Runs a shell command and returns its output.\n" +
		"- The arguments to `shell` will be passed to execvp(). Most terminal commands should be prefixed with [\"bash\", \"-lc\"].\n" +
		"- Always set the `workdir` param when using the shell function. Do not use `cd` unless absolutely necessary."
	shellCommandDescription = "Runs a shell command and returns its output.\n" +
		"- Always set the `workdir` param when using the shell_command function. Do not use `cd` unless absolutely necessary."
	workdirDescription = "The working directory to execute the command in"
	timeoutDescription = "The timeout for the command in milliseconds"
	loginDescription   = "Whether to run the shell with login shell semantics. Defaults to true."
)

// approvalProperties are the shared escalation parameters (SPEC §4).
func approvalProperties(props map[string]schema) map[string]schema {
	props["sandbox_permissions"] = str(`Sandbox permissions for the command. Set to "require_escalated" to request running without sandbox restrictions; defaults to "use_default".`)
	props["justification"] = str(`Only set if sandbox_permissions is "require_escalated". Request approval from the user to run this command outside the sandbox. Phrased as a simple question that summarizes the purpose of the command as it relates to the task at hand - e.g. 'Do you want to fetch and pull the latest version of this git branch?'`)
	props["prefix_rule"] = strArray(`Only specify when sandbox_permissions is ` + "`require_escalated`" + `. Suggest a prefix command pattern that will allow you to fulfill similar requests from the user in the future. Should be a short but reasonable prefix, e.g. ["git", "pull"] or ["uv", "run"] or ["pytest"].`)
	return props
}

// execOutputSchema describes execStructured.
var execOutputSchema = object(
	[]string{"exit_code", "wall_time_seconds", "output", "timed_out", "truncated", "sandbox_denied"},
	map[string]schema{
		"exit_code":         {"type": "integer", "description": "Exit code; 128+N when killed by signal N, 124 on timeout."},
		"wall_time_seconds": num("Elapsed wall time in seconds."),
		"output":            str("stdout then stderr, truncated for the model like the text content (without its header)."),
		"timed_out":         boolean("Whether the timeout killed the command."),
		"truncated":         boolean("Whether any output was dropped, when captured or for the model."),
		"signal":            str(`Name of the signal that ended the command, e.g. "SIGINT".`),
		"sandbox_denied":    boolean(sandboxDeniedDescription),
	})

const sandboxDeniedDescription = "Whether the command failed in a way that suggests the sandbox stopped it (a non-zero exit with a message such as \"Operation not permitted\"); a guess from its output."

func shellDef(name string) *toolDef {
	props := approvalProperties(map[string]schema{
		"command":    strArray("The command to execute"),
		"workdir":    str(workdirDescription),
		"timeout_ms": num(timeoutDescription),
	})
	return &toolDef{
		Name:         name,
		Description:  shellDescription,
		InputSchema:  object([]string{"command"}, props).json(),
		OutputSchema: execOutputSchema.json(),
		Annotations:  shellAnnotations,
	}
}

func shellCommandDef(allowLogin bool) *toolDef {
	props := approvalProperties(map[string]schema{
		"command":    str("The shell script to execute in the user's default shell"),
		"workdir":    str(workdirDescription),
		"timeout_ms": num(timeoutDescription),
	})
	if allowLogin {
		props["login"] = boolean(loginDescription)
	}
	return &toolDef{
		Name:         "shell_command",
		Description:  shellCommandDescription,
		InputSchema:  object([]string{"command"}, props).json(),
		OutputSchema: execOutputSchema.json(),
		Annotations:  shellAnnotations,
	}
}

// The unified exec descriptions follow Codex's, plus what the terminal
// does to long input lines (DEPS.md §D: canonical mode keeps 4095 bytes).
const (
	execCommandDescription = "Runs a command (in a PTY when tty is true, else on pipes), returning output or a session ID for ongoing interaction."
	writeStdinDescription  = "Writes characters to an existing unified exec session and returns recent output.\n" +
		"- On a session started with tty: true, the terminal cuts an input line after 4095 bytes: send longer input in pieces or through a file."
	maxTokensDescription = "Maximum number of tokens to return. Excess output will be truncated."
	yieldDescription     = "How long to wait (in milliseconds) for output before yielding."
)

// sessionOutputSchema describes sessionStructured.
var sessionOutputSchema = object(
	[]string{"wall_time_seconds", "output", "original_token_count", "chunk_id", "truncated"},
	map[string]schema{
		"wall_time_seconds":    num("Elapsed wall time spent waiting for output in seconds."),
		"output":               str("Command output text, possibly truncated (without the Total output lines header)."),
		"exit_code":            {"type": "integer", "description": "Process exit code when the command finished during this call."},
		"signal":               str(`Name of the signal that ended the process, e.g. "SIGINT".`),
		"session_id":           {"type": "integer", "description": "Session identifier to pass to write_stdin when the process is still running."},
		"process_id":           str("The session identifier as a string."),
		"original_token_count": {"type": "integer", "description": "Approximate token count before output truncation."},
		"chunk_id":             str("Chunk identifier of this response."),
		"truncated":            boolean("Whether any output was dropped, by the session buffer or for the model."),
		"warning":              str("Set when nearly all sessions are in use."),
		"sandbox_denied":       boolean(sandboxDeniedDescription + " Only set when the process exited."),
	})

func execCommandDef(allowLogin bool) *toolDef {
	props := approvalProperties(map[string]schema{
		"cmd":               str("Shell command to execute."),
		"workdir":           str("Optional working directory to run the command in; defaults to the turn cwd."),
		"shell":             str("Shell binary to launch. Defaults to the user's default shell."),
		"tty":               boolean("Whether to allocate a TTY for the command. Defaults to false (plain pipes); set to true to open a PTY and access TTY process."),
		"yield_time_ms":     num(yieldDescription),
		"max_output_tokens": num(maxTokensDescription),
	})
	if allowLogin {
		props["login"] = boolean("Whether to run the shell with -l/-i semantics. Defaults to true.")
	}
	return &toolDef{
		Name:         "exec_command",
		Description:  execCommandDescription,
		InputSchema:  object([]string{"cmd"}, props).json(),
		OutputSchema: sessionOutputSchema.json(),
		Annotations:  shellAnnotations,
	}
}

func writeStdinDef() *toolDef {
	props := map[string]schema{
		"session_id":        num("Identifier of the running unified exec session."),
		"chars":             str("Bytes to write to stdin (may be empty to poll)."),
		"yield_time_ms":     num(yieldDescription),
		"max_output_tokens": num(maxTokensDescription),
	}
	return &toolDef{
		Name:         "write_stdin",
		Description:  writeStdinDescription,
		InputSchema:  object([]string{"session_id"}, props).json(),
		OutputSchema: sessionOutputSchema.json(),
		Annotations:  shellAnnotations,
	}
}

// shellAnnotations are honest for a tool that runs anything (SPEC §4).
var shellAnnotations = annotations{ReadOnlyHint: false, DestructiveHint: true, OpenWorldHint: true}
