package test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execd/execd/internal/policy"
)

// The exec policy through the MCP server (SPEC §3.3, §7): questions go to
// the SDK client's ElicitationHandler, scripted here.

// elicitor records the approval requests it gets and answers each with
// the next scripted answer.
type elicitor struct {
	mu      sync.Mutex
	asked   []*mcp.ElicitParams
	answers []func(ctx context.Context) (*mcp.ElicitResult, error)
}

func (e *elicitor) handle(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	e.mu.Lock()
	e.asked = append(e.asked, req.Params)
	if len(e.answers) == 0 {
		e.mu.Unlock()
		return nil, errors.New("no scripted answer left")
	}
	a := e.answers[0]
	e.answers = e.answers[1:]
	e.mu.Unlock()
	return a(ctx)
}

func (e *elicitor) questions() []*mcp.ElicitParams {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.asked)
}

func decide(decision string) func(context.Context) (*mcp.ElicitResult, error) {
	return func(context.Context) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": decision}}, nil
	}
}

func action(a string) func(context.Context) (*mcp.ElicitResult, error) {
	return func(context.Context) (*mcp.ElicitResult, error) { return &mcp.ElicitResult{Action: a}, nil }
}

// approvingServer starts execd with config and rules (written to a rules
// file listed in rules.files) and a client that answers approvals with e
// (nil: a client without the elicitation capability). It returns the
// session, the turn directory and the config directory.
func approvingServer(t *testing.T, config, rules string, e *elicitor) (*mcp.ClientSession, string, string) {
	t.Helper()
	rulesFile := filepath.Join(t.TempDir(), "test.rules")
	if err := os.WriteFile(rulesFile, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	config += "\n[rules]\nfiles = [" + strconvQuote(rulesFile) + "]\n"
	cmd, work := execdCmd(t, config)
	opts := &mcp.ClientOptions{}
	if e != nil {
		opts.ElicitationHandler = e.handle
	}
	cs := connect(t, cmd, opts, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	return cs, work, filepath.Dir(work)
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// enumOf is the decision enum of an approval request's schema.
func enumOf(t *testing.T, p *mcp.ElicitParams) []string {
	t.Helper()
	b, _ := json.Marshal(p.RequestedSchema)
	var schema struct {
		Type       string
		Properties map[string]struct {
			Type string
			Enum []string
		}
		Required []string
	}
	if err := json.Unmarshal(b, &schema); err != nil || schema.Type != "object" || !slices.Equal(schema.Required, []string{"decision"}) ||
		schema.Properties["decision"].Type != "string" {
		t.Fatalf("requestedSchema %s: %v", b, err)
	}
	return schema.Properties["decision"].Enum
}

func TestApprovalPromptRule(t *testing.T) {
	e := &elicitor{answers: []func(context.Context) (*mcp.ElicitResult, error){
		decide("allow_once"), action("decline"), action("cancel"),
		func(context.Context) (*mcp.ElicitResult, error) { return &mcp.ElicitResult{Action: "accept"}, nil },
	}}
	cs, work, _ := approvingServer(t, fullAccess,
		`prefix_rule(pattern=["touch"], decision="prompt", justification="touching is watched")`, e)
	calls := []struct {
		file    string
		ran     bool
		errText string
	}{
		{"once", true, ""},
		{"declined", false, "exec command rejected by user"},
		{"cancelled", false, "exec command rejected: the user dismissed the approval request"},
		{"accept-without-content", true, ""},
	}
	for _, c := range calls {
		res, text, _ := callTool(t, cs, "shell", map[string]any{"command": []string{"touch", c.file},
			"justification": "the test needs it"})
		_, statErr := os.Stat(filepath.Join(work, c.file))
		if (statErr == nil) != c.ran || res.IsError == c.ran || (c.errText != "" && text != c.errText) {
			t.Errorf("%s: ran %v, isError %v, text %q; want ran %v, text %q", c.file, statErr == nil, res.IsError, text, c.ran, c.errText)
		}
	}
	qs := e.questions()
	if len(qs) != len(calls) {
		t.Fatalf("%d approval requests, want %d", len(qs), len(calls))
	}
	q := qs[0]
	for _, want := range []string{"Allow this command to run?", "Command: touch once", "Directory: " + work,
		"Reason: `touch once` requires approval: touching is watched", "The model says: the test needs it", "Sandbox: none"} {
		if !strings.Contains(q.Message, want) {
			t.Errorf("message %q lacks %q", q.Message, want)
		}
	}
	if got := enumOf(t, q); !slices.Equal(got, []string{"allow_once", "allow_session", "deny"}) {
		t.Errorf("decisions %q: a prompt rule offers no prefix", got)
	}
}

func TestApprovalAllowSessionAsksOnce(t *testing.T) {
	e := &elicitor{answers: []func(context.Context) (*mcp.ElicitResult, error){decide("allow_session"), decide("deny")}}
	cs, work, _ := approvingServer(t, "approval_policy = \"untrusted\"\n"+fullAccess, "", e)
	for i := range 3 {
		res, text, st := callTool(t, cs, "shell_command", map[string]any{"command": "mkdir -p d", "login": false})
		if res.IsError || st == nil {
			t.Fatalf("call %d: %q", i, text)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "d")); err != nil {
		t.Fatal(err)
	}
	if n := len(e.questions()); n != 1 {
		t.Fatalf("asked %d times, want once", n)
	}
	// Another command asks again; its deny is a tool error, nothing runs.
	res, text, _ := callTool(t, cs, "shell_command", map[string]any{"command": "mkdir -p e", "login": false})
	if !res.IsError || text != "exec command rejected by user" {
		t.Fatalf("denied call: %v %q", res.IsError, text)
	}
	if _, err := os.Stat(filepath.Join(work, "e")); err == nil {
		t.Fatal("a denied command ran")
	}
}

func TestApprovalAllowPrefixWritesTheRule(t *testing.T) {
	e := &elicitor{answers: []func(context.Context) (*mcp.ElicitResult, error){decide("allow_prefix")}}
	cs, work, dir := approvingServer(t, "approval_policy = \"untrusted\"\n"+fullAccess, "", e)
	for _, sub := range []string{"a", "b"} {
		res, text, _ := callTool(t, cs, "shell", map[string]any{"command": []string{"mkdir", "-p", sub},
			"prefix_rule": []string{"mkdir", "-p"}})
		if res.IsError {
			t.Fatalf("mkdir %s: %q", sub, text)
		}
		if _, err := os.Stat(filepath.Join(work, sub)); err != nil {
			t.Fatal(err)
		}
	}
	qs := e.questions()
	if len(qs) != 1 || !slices.Equal(enumOf(t, qs[0]), []string{"allow_once", "allow_session", "allow_prefix", "deny"}) ||
		!strings.Contains(qs[0].Message, "`mkdir -p`") {
		t.Fatalf("questions %+v: want one, offering the model's prefix", qs)
	}
	amend := filepath.Join(dir, "execd", "rules", "default.rules")
	b, err := os.ReadFile(amend)
	if want := policy.AmendLine([]string{"mkdir", "-p"}) + "\n"; err != nil || string(b) != want {
		t.Fatalf("%s: %q, %v; want %q", amend, b, err, want)
	}
}

func TestApprovalWithoutElicitation(t *testing.T) {
	cs, work, _ := approvingServer(t, fullAccess, `prefix_rule(pattern=["touch"], decision="prompt")`, nil)
	res, text, _ := callTool(t, cs, "shell", map[string]any{"command": []string{"touch", "x"}})
	if !res.IsError || !strings.Contains(text, "did not declare the elicitation capability") ||
		!strings.Contains(text, "approval.without_client_support is deny") {
		t.Fatalf("isError %v, text %q", res.IsError, text)
	}
	if _, err := os.Stat(filepath.Join(work, "x")); err == nil {
		t.Fatal("an unapproved command ran")
	}
	cs2, work2, _ := approvingServer(t, fullAccess+"[approval]\nwithout_client_support = \"allow\"\n",
		`prefix_rule(pattern=["touch"], decision="prompt")`, nil)
	if res, text, _ := callTool(t, cs2, "shell", map[string]any{"command": []string{"touch", "x"}}); res.IsError {
		t.Fatalf("without_client_support = allow: %q", text)
	}
	if _, err := os.Stat(filepath.Join(work2, "x")); err != nil {
		t.Fatal(err)
	}
}

func TestApprovalRefusals(t *testing.T) {
	tests := []struct {
		name, config, rules string
		args                map[string]any
		want                string
	}{
		{"forbidden rule", fullAccess, `prefix_rule(pattern=["rm"], decision="forbidden")`,
			map[string]any{"command": "rm -rf important", "login": false},
			"`/bin/bash -c 'rm -rf important'` rejected: policy forbids commands starting with `rm`"},
		{"forbidden behind a redirection", fullAccess, `prefix_rule(pattern=["rm"], decision="forbidden", justification="use trash")`,
			map[string]any{"command": "rm -rf important 2>/dev/null", "login": false},
			"`/bin/bash -c 'rm -rf important 2>/dev/null'` rejected: use trash"},
		{"never and dangerous in the sandbox", "approval_policy = \"never\"\n", "",
			map[string]any{"command": "rm -rf important", "login": false},
			policy.NeverConflict},
		{"escalation outside on-request", "approval_policy = \"untrusted\"\n" + fullAccess, "",
			map[string]any{"command": "ls", "login": false, "sandbox_permissions": "require_escalated"},
			"sandbox_permissions require_escalated is only honoured under approval_policy on-request (this is untrusted): run without it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &elicitor{}
			cs, work, _ := approvingServer(t, tt.config, tt.rules, e)
			if err := os.Mkdir(filepath.Join(work, "important"), 0o755); err != nil {
				t.Fatal(err)
			}
			res, text, st := callTool(t, cs, "shell_command", tt.args)
			// The script runs in the user's shell, named by its path.
			_, want, shell := strings.Cut(tt.want, "/bin/bash")
			if !shell {
				want = tt.want
			}
			if !res.IsError || st != nil || !strings.HasSuffix(text, want) || (shell && !strings.HasPrefix(text, "`/")) {
				t.Fatalf("isError %v, structured %v, text %q; want %q", res.IsError, st, text, tt.want)
			}
			if _, err := os.Stat(filepath.Join(work, "important")); err != nil {
				t.Fatal("a refused command ran")
			}
			if n := len(e.questions()); n != 0 {
				t.Fatalf("a refusal asked %d times", n)
			}
		})
	}
}

// TestApprovalCancelled: a tool call cancelled while its approval is
// pending cancels the elicitation too, and nothing runs.
func TestApprovalCancelled(t *testing.T) {
	asked := make(chan struct{})
	cancelled := make(chan struct{})
	e := &elicitor{answers: []func(context.Context) (*mcp.ElicitResult, error){
		func(ctx context.Context) (*mcp.ElicitResult, error) {
			close(asked)
			return waitCancel(ctx, cancelled)
		},
	}}
	cs, work, _ := approvingServer(t, fullAccess, `prefix_rule(pattern=["touch"], decision="prompt")`, e)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{"command": []string{"touch", "x"}}})
		done <- err
	}()
	select {
	case <-asked:
	case <-time.After(waitLimit):
		t.Fatal("no approval request")
	}
	cancel()
	select {
	case <-cancelled:
	case <-time.After(waitLimit):
		t.Fatal("the approval request was not cancelled with its tool call")
	}
	<-done
	if _, err := os.Stat(filepath.Join(work, "x")); err == nil {
		t.Fatal("a cancelled call ran")
	}
	// The connection goes on serving.
	if res, text, _ := callTool(t, cs, "shell", map[string]any{"command": []string{"true"}}); res.IsError {
		t.Fatalf("after a cancelled approval: %q", text)
	}
}

// waitCancel is an approval nobody answers: it closes cancelled when
// execd cancels the request, and gives up (declining) after waitLimit.
func waitCancel(ctx context.Context, cancelled chan<- struct{}) (*mcp.ElicitResult, error) {
	select {
	case <-ctx.Done():
		close(cancelled)
		return nil, ctx.Err()
	case <-time.After(waitLimit):
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
}

func TestApprovalTimeout(t *testing.T) {
	cancelled := make(chan struct{})
	e := &elicitor{answers: []func(context.Context) (*mcp.ElicitResult, error){
		func(ctx context.Context) (*mcp.ElicitResult, error) { return waitCancel(ctx, cancelled) },
	}}
	cs, _, _ := approvingServer(t, fullAccess+"[approval]\ntimeout = \"300ms\"\n", `prefix_rule(pattern=["true"], decision="prompt")`, e)
	res, text, _ := callTool(t, cs, "shell", map[string]any{"command": []string{"true"}})
	if !res.IsError || text != "exec command rejected: nobody answered the approval request within 300ms (approval.timeout)" {
		t.Fatalf("isError %v, text %q", res.IsError, text)
	}
	select {
	case <-cancelled:
	case <-time.After(waitLimit):
		t.Fatal("the timed-out approval request was not cancelled")
	}
}

// TestApprovalDenialRetry: under on-failure a write the sandbox denies
// asks to run again without it; allowed, the rerun succeeds.
func TestApprovalDenialRetry(t *testing.T) {
	needSandbox(t)
	e := &elicitor{answers: []func(context.Context) (*mcp.ElicitResult, error){decide("allow_once")}}
	cs, _, dir := approvingServer(t, "approval_policy = \"on-failure\"\n"+noTmp, "", e)
	target := filepath.Join(dir, "outside")
	res, text, st := callTool(t, cs, "shell_command", map[string]any{"command": "echo x > " + target, "login": false})
	if res.IsError || st == nil || st.ExitCode != 0 || st.SandboxDenied {
		t.Fatalf("isError %v, %q, %+v; want the unsandboxed rerun's success", res.IsError, text, st)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "x\n" {
		t.Fatalf("target: %q, %v", b, err)
	}
	qs := e.questions()
	if len(qs) != 1 || !strings.Contains(qs[0].Message, "Run it again WITHOUT the sandbox?") ||
		!strings.Contains(qs[0].Message, "Reason: retry without sandbox: ") || !says(qs[0].Message, denied) {
		t.Fatalf("questions %+v", qs)
	}
}

// needSandbox skips a test on a kernel where execd cannot sandbox.
func needSandbox(t *testing.T) {
	t.Helper()
	cmd := exec.Command(execdBin, "doctor")
	cmd.Env = cleanEnv(t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("this kernel cannot sandbox: %v\n%s", err, out)
	}
}

// Choices carry titles a person reads: oneOf of {const, title} for a
// 2025-11-25 client, enumNames before (issue 14 item 5; SPEC §3.3).
func TestApprovalChoicesAreTitled(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2025-06-18"} {
		t.Run(version, func(t *testing.T) {
			e := &elicitor{answers: []func(context.Context) (*mcp.ElicitResult, error){decide("allow_once")}}
			cmd, _ := execdCmd(t, "approval_policy = \"untrusted\"\n"+fullAccess)
			cs := connect(t, cmd, &mcp.ClientOptions{ElicitationHandler: e.handle}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if res, text, _ := callTool(t, cs, "shell_command", map[string]any{"command": "mkdir -p d", "login": false}); res.IsError {
				t.Fatalf("allowed call: %q", text)
			}
			qs := e.questions()
			if len(qs) != 1 {
				t.Fatalf("%d questions", len(qs))
			}
			b, _ := json.Marshal(qs[0].RequestedSchema)
			var schema struct {
				Properties map[string]struct {
					Enum      []string
					EnumNames []string
					OneOf     []struct{ Const, Title string }
				}
			}
			if err := json.Unmarshal(b, &schema); err != nil {
				t.Fatal(err)
			}
			d := schema.Properties["decision"]
			titles := map[string]string{}
			if version == "2025-11-25" {
				if d.Enum != nil || d.EnumNames != nil {
					t.Errorf("a 2025-11-25 schema with enum: %s", b)
				}
				for _, o := range d.OneOf {
					titles[o.Const] = o.Title
				}
			} else {
				if d.OneOf != nil || len(d.Enum) != len(d.EnumNames) {
					t.Errorf("a %s schema without matching enumNames: %s", version, b)
				}
				for i, c := range d.Enum {
					titles[c] = d.EnumNames[i]
				}
			}
			if titles["allow_once"] != "Allow once" || titles["allow_session"] != "Allow for this session" || titles["deny"] != "Deny" {
				t.Errorf("titles %q in %s", titles, b)
			}
		})
	}
}
