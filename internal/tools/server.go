package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/execd/execd/internal/orchestrator"
	"github.com/execd/execd/internal/patch"
	"github.com/execd/execd/internal/rpc"
	"github.com/execd/execd/internal/sandbox"
)

// Options configures a [Server]. Zero values mean the defaults of SPEC §2.
type Options struct {
	// Logger receives lifecycle events; nil means none.
	Logger *zap.Logger
	// Version is reported in serverInfo.
	Version string
	// Orchestrator runs the commands. Required.
	Orchestrator *orchestrator.Orchestrator
	// ShellType selects the listed shell family; "" means unified_exec.
	ShellType ShellType
	// Structured chooses when results carry structuredContent and tools
	// an outputSchema; "" means auto.
	Structured StructuredMode
	// HideApplyPatch keeps apply_patch out of tools/list (tools.apply_patch
	// = false).
	HideApplyPatch bool
	// DisallowLoginShell makes an omitted login mean -c and an explicit
	// login:true an error (tools.allow_login_shell = false).
	DisallowLoginShell bool
	// DefaultTimeout applies to one-shot commands without timeout_ms;
	// 0 means 10 s.
	DefaultTimeout time.Duration
	// MaxOutputTokens is the model-facing output budget; 0 means 10000.
	MaxOutputTokens int
	// MaxPollTime caps an empty write_stdin poll (sessions.max_poll_ms);
	// 0 means DefaultMaxPollTime.
	MaxPollTime time.Duration
	// ApprovalTimeout bounds the wait for an approval answer
	// (approval.timeout); 0 means 5 minutes.
	ApprovalTimeout time.Duration
	// AllowWithoutClientSupport runs calls that need approval when the
	// client cannot be asked (approval.without_client_support = allow);
	// false denies them.
	AllowWithoutClientSupport bool
	// Logs forwards log entries to the client as notifications/message
	// once it sends logging/setLevel; nil disables forwarding.
	Logs *LogForwarder
}

// Server serves MCP on an rpc.Conn.
type Server struct {
	opts   Options
	log    *zap.Logger
	conn   *rpc.Conn
	orch   *orchestrator.Orchestrator
	tools  map[string]toolFunc // callable names
	listed []*toolDef
	instr  string

	mu          sync.Mutex
	initialized bool               // guarded by mu: initialize was answered
	ready       bool               // guarded by mu: notifications/initialized arrived
	client      clientCapabilities // guarded by mu
	// structured is whether this client gets structuredContent and
	// outputSchema (guarded by mu; set by initialize).
	structured bool
	protocol   string // guarded by mu: the version initialize agreed on

	stopLogs chan struct{}
	logsOff  sync.Once // closes stopLogs
	loops    sync.WaitGroup
}

// toolFunc runs one tool call and always returns a result.
type toolFunc func(ctx context.Context, c *toolCall) *callResult

// toolCall is a tools/call request as the tool sees it.
type toolCall struct {
	id       rpc.ID
	name     string
	args     json.RawMessage
	progress json.RawMessage // the progressToken, or nil
}

// New registers the MCP methods on conn. Call [Server.Serve] next.
func New(conn *rpc.Conn, opts Options) (*Server, error) {
	if opts.Orchestrator == nil {
		return nil, errors.New("tools: an Orchestrator is required")
	}
	if opts.ShellType == "" {
		opts.ShellType = ShellTypeUnifiedExec
	}
	if opts.Structured == "" {
		opts.Structured = StructuredAuto
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = 10 * time.Second
	}
	if opts.MaxOutputTokens <= 0 {
		opts.MaxOutputTokens = 10000
	}
	if opts.ApprovalTimeout <= 0 {
		opts.ApprovalTimeout = DefaultApprovalTimeout
	}
	if opts.MaxPollTime <= 0 {
		opts.MaxPollTime = DefaultMaxPollTime
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	s := &Server{opts: opts, log: log, conn: conn, orch: opts.Orchestrator, stopLogs: make(chan struct{}),
		structured: opts.Structured != StructuredNever}
	s.buildCatalog()
	s.instr = s.instructions()
	conn.Handle("initialize", s.initialize)
	conn.Handle("ping", func(context.Context, *rpc.Request) (any, error) { return struct{}{}, nil })
	conn.Handle("tools/list", s.listTools)
	conn.Handle("tools/call", s.callTool)
	conn.Handle("logging/setLevel", s.setLevel)
	conn.HandleNotification("notifications/initialized", func(context.Context, json.RawMessage) {
		s.mu.Lock()
		s.ready = true
		s.mu.Unlock()
	})
	return s, nil
}

// buildCatalog decides which names are callable and which are listed
// (SPEC §4: the aliases and the other families stay callable).
func (s *Server) buildCatalog() {
	allowLogin := !s.opts.DisallowLoginShell
	s.tools = map[string]toolFunc{"apply_patch": s.runApplyPatch}
	if s.opts.ShellType != ShellTypeDisabled {
		for _, name := range []string{"shell", "container.exec", "local_shell"} {
			s.tools[name] = s.runShell
		}
		s.tools["shell_command"] = s.runShellCommand
		s.tools["exec_command"] = s.runExecCommand
		s.tools["write_stdin"] = s.runWriteStdin
	}
	switch s.opts.ShellType {
	case ShellTypeShell:
		s.listed = append(s.listed, shellDef("shell"))
	case ShellTypeShellCommand:
		s.listed = append(s.listed, shellCommandDef(allowLogin))
	case ShellTypeUnifiedExec:
		s.listed = append(s.listed, execCommandDef(allowLogin), writeStdinDef())
	}
	if !s.opts.HideApplyPatch {
		s.listed = append(s.listed, applyPatchDef())
	}
}

// instructions says what the tools are and how commands are confined
// (SPEC §3.2), truthfully for this configuration.
func (s *Server) instructions() string {
	var what string
	switch s.opts.ShellType {
	case ShellTypeShell:
		what = `execd runs commands on this machine: the shell tool executes an argv (prefix scripts with ["bash", "-lc"]) and returns its output.`
	case ShellTypeDisabled:
		what = "execd's shell tools are disabled by its configuration."
	case ShellTypeUnifiedExec:
		what = "execd runs commands on this machine: exec_command starts one and returns its output, or a session id if it is still running; write_stdin sends a session input and reads what it printed since."
	default:
		what = "execd runs commands on this machine: shell_command runs a script in the user's shell and returns its exit code and output."
	}
	mode := s.orch.SandboxMode()
	var how string
	switch {
	case s.orch.Sandboxed():
		how = s.sandboxInstructions()
	case mode == sandbox.DangerFullAccess:
		how = "Commands run without a sandbox, with the full permissions of the user running execd, so be careful with anything destructive."
	case mode == sandbox.ExternalSandbox:
		how = "execd adds no sandbox of its own: commands are confined only by the container or VM it runs in."
	case s.orch.FailsClosed():
		how = fmt.Sprintf("Commands are currently refused: the configured %s sandbox cannot be enforced on this host, and execd fails closed.", mode)
	default:
		how = fmt.Sprintf("Commands run WITHOUT a sandbox: the configured %s sandbox cannot be enforced on this host.", mode)
	}
	return what + " " + how
}

// sandboxInstructions tells the model what its commands may do.
func (s *Server) sandboxInstructions() string {
	network := "have no network access"
	switch {
	case s.orch.UnixSockets():
		network = "may use the network and the UNIX sockets of the user's own programs"
	case s.orch.NetworkAccess():
		network = "may use the network (but not the UNIX sockets of the user's own programs, such as an SSH agent or a container engine)"
	}
	if s.orch.SandboxMode() == sandbox.ReadOnly {
		return "Commands run in a read-only sandbox: they can read files but not write them, and " + network + "."
	}
	how := fmt.Sprintf("Commands run in a workspace-write sandbox: they can write only under %s", strings.Join(s.orch.WritableRoots(), ", "))
	if names := s.orch.ProtectedNames(); len(names) > 0 {
		how += fmt.Sprintf(", where %s stay read-only,", strings.Join(names, ", "))
	}
	return how + " and " + network + "."
}

// ListedTools returns the names tools/list shows, for logs.
func (s *Server) ListedTools() []string {
	names := make([]string, len(s.listed))
	for i, d := range s.listed {
		names[i] = d.Name
	}
	return names
}

// Serve serves the connection until the input ends or ctx is done; see
// [rpc.Conn.Serve]. Requests still running go on until [Server.Shutdown].
// Log forwarding stops when the input ends: a client that closed its end
// is gone or going, and only the replies it awaits are still its business.
func (s *Server) Serve(ctx context.Context) error {
	if s.opts.Logs != nil {
		fwdCtx := context.WithoutCancel(ctx) // entries logged during a signalled shutdown still go out
		s.loops.Go(func() { s.opts.Logs.forward(fwdCtx, s.conn, s.stopLogs) })
	}
	err := s.conn.Serve(ctx)
	if ctx.Err() == nil {
		s.stopLogging()
	}
	return err
}

func (s *Server) stopLogging() { s.logsOff.Do(func() { close(s.stopLogs) }) }

// Shutdown cancels the requests still running, waits for their replies
// until ctx is done, and closes the connection. The log forwarder gets
// the same deadline: it may be stuck writing to a client that stopped
// reading, and is then abandoned to process exit.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.conn.Shutdown(ctx)
	s.stopLogging()
	done := make(chan struct{})
	go func() { // ends when the forwarder does
		s.loops.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.log.Warn("log forwarder still writing at shutdown")
	}
	return err
}

func (s *Server) initialize(_ context.Context, req *rpc.Request) (any, error) {
	var p initializeParams
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid params for initialize: %v", err)
	}
	version := protocolVersions[0]
	if slices.Contains(protocolVersions, p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	name, client := "", "unknown"
	if p.ClientInfo != nil {
		name, client = p.ClientInfo.Name, p.ClientInfo.Name+" "+p.ClientInfo.Version
	}
	structured := structuredFor(s.opts.Structured, name)
	s.mu.Lock()
	if s.initialized {
		s.mu.Unlock()
		return nil, rpc.NewError(rpc.CodeInvalidRequest, "initialize was already called on this connection")
	}
	s.initialized = true
	s.client, s.protocol, s.structured = p.Capabilities, version, structured
	s.mu.Unlock()

	s.log.Info("initialize", zap.String("client", client), zap.String("requested", p.ProtocolVersion),
		zap.String("protocol", version), zap.Bool("elicitation", p.Capabilities.Elicitation != nil),
		zap.Bool("structured_content", structured))
	return initializeResult{
		ProtocolVersion: version,
		Capabilities:    map[string]any{"tools": struct{}{}, "logging": struct{}{}},
		ServerInfo:      implementation{Name: "execd", Version: s.opts.Version},
		Instructions:    s.instr,
	}, nil
}

func (s *Server) listTools(_ context.Context, req *rpc.Request) (any, error) {
	var p listToolsParams
	if len(req.Params) > 0 {
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid params for tools/list: %v", err)
		}
	}
	if p.Cursor != nil && *p.Cursor != "" {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid params for tools/list: unknown cursor %q (all tools fit in one page)", *p.Cursor)
	}
	tools := make([]*toolDef, 0, len(s.listed))
	structured := s.isStructured()
	for _, d := range s.listed {
		if !structured {
			plain := *d
			plain.OutputSchema = nil
			d = &plain
		}
		tools = append(tools, d)
	}
	return listToolsResult{Tools: tools}, nil
}

func (s *Server) callTool(ctx context.Context, req *rpc.Request) (any, error) {
	var p callToolParams
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid params for tools/call: %v", err)
	}
	if p.Name == nil {
		return nil, rpc.NewError(rpc.CodeInvalidParams, `invalid params for tools/call: "name" is required`)
	}
	run := s.tools[*p.Name]
	if run == nil {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "unknown tool %q (available: %s)", *p.Name, strings.Join(s.callable(), ", "))
	}
	c := &toolCall{id: req.ID, name: *p.Name, args: p.Arguments, progress: p.Meta.ProgressToken}
	s.log.Debug("tool call", zap.Stringer("call_id", req.ID), zap.String("tool", c.name))
	res := run(ctx, c)
	if res.rpcErr != nil {
		return nil, res.rpcErr
	}
	if !s.isStructured() {
		res.StructuredContent = nil
	}
	return res, nil
}

// protocolVersion is the version initialize agreed on; "" before.
func (s *Server) protocolVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.protocol
}

// isStructured reports whether this client gets structuredContent and
// outputSchema.
func (s *Server) isStructured() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.structured
}

func (s *Server) callable() []string {
	names := make([]string, 0, len(s.tools))
	for n := range s.tools {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (s *Server) setLevel(_ context.Context, req *rpc.Request) (any, error) {
	var p setLevelParams
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid params for logging/setLevel: %v", err)
	}
	level, ok := parseMCPLevel(p.Level)
	if !ok {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid params for logging/setLevel: level %q is not one of %s",
			p.Level, strings.Join(mcpLevels, ", "))
	}
	if s.opts.Logs != nil {
		s.opts.Logs.setLevel(level)
	}
	return struct{}{}, nil
}

// textResult is a result with one text block and no structured content.
func textResult(text string, isError bool) *callResult {
	return &callResult{Content: []textContent{{Type: "text", Text: text}}, IsError: isError}
}

// errorResult maps the errors of a call that started nothing to the
// model-facing text. It is the one place where domain errors meet the
// client.
func errorResult(err error) *callResult {
	var (
		ae *ArgError
		we *orchestrator.WorkdirError
		ue *sandbox.UnavailableError
		se *orchestrator.SpawnError
		us *orchestrator.UnknownSessionError
		su *sandbox.SetupError
		re *orchestrator.RefusedError
		de *orchestrator.DeniedError
	)
	switch {
	case errors.As(err, &us):
		return textResult(us.Error()+": the session has ended (its exit was reported) or execd restarted since it was started; start the command again with exec_command", true)
	case errors.As(err, &ae), errors.As(err, &ue), errors.As(err, &su), errors.Is(err, orchestrator.ErrStdinClosed),
		errors.As(err, &re), errors.As(err, &de), errors.Is(err, patch.ErrImplicit):
		return textResult(err.Error(), true)
	case errors.As(err, &we):
		return textResult("invalid arguments: "+we.Error(), true)
	case errors.As(err, &se):
		return textResult("execution error: "+se.Error(), true)
	case errors.Is(err, orchestrator.ErrShuttingDown):
		// A request that came as execd stopped, as the connection
		// answers those that come after (SPEC §3.2).
		return &callResult{rpcErr: rpc.NewError(rpc.CodeInternalError, rpc.ErrShutdown.Error())}
	}
	return textResult("execution error: "+err.Error(), true)
}
