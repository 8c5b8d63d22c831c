package test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Patches through the MCP server and the CLI (SPEC §4.5, §6, §7.6).

// patchResult is the structuredContent of apply_patch.
type patchResult struct {
	ExitCode int      `json:"exit_code"`
	Output   string   `json:"output"`
	Added    []string `json:"added"`
	Modified []string `json:"modified"`
	Deleted  []string `json:"deleted"`
}

func patchStructured(t *testing.T, res *mcp.CallToolResult) patchResult {
	t.Helper()
	var st patchResult
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &st); err != nil || res.StructuredContent == nil {
		t.Fatalf("structuredContent %s: %v", b, err)
	}
	return st
}

// workspace is the configuration of the patch tests: workspace-write
// with the turn directory as the only writable root, so that every other
// temporary directory is outside the workspace.
const workspace = "approval_policy = \"on-request\"\n[sandbox]\nmode = \"workspace-write\"\n" +
	"exclude_slash_tmp = true\nexclude_tmpdir_env_var = true\nfail_closed = false\n"

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fileContent(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func TestApplyPatchTool(t *testing.T) {
	cs, work := startSDK(t, workspace)
	writeTestFile(t, filepath.Join(work, "src", "app.py"), "def greet():\n    print(\"Hi\")\n")
	writeTestFile(t, filepath.Join(work, "obsolete.txt"), "old\n")
	patch := "*** Begin Patch\n*** Add File: hello.txt\n+Hello world\n*** Update File: src/app.py\n*** Move to: src/main.py\n" +
		"@@ def greet():\n-    print(\"Hi\")\n+    print(\"Hello, world!\")\n*** Delete File: obsolete.txt\n*** End Patch\n"
	res, text, _ := callTool(t, cs, "apply_patch", map[string]any{"input": patch})
	const summary = "Success. Updated the following files:\nA hello.txt\nM src/main.py\nD obsolete.txt\n"
	if res.IsError || !strings.HasPrefix(text, "Exit code: 0\nWall time: ") || !strings.HasSuffix(text, "\nOutput:\n"+summary) {
		t.Fatalf("result %q", text)
	}
	st := patchStructured(t, res)
	if st.ExitCode != 0 || st.Output != summary || !slices.Equal(st.Added, []string{"hello.txt"}) ||
		!slices.Equal(st.Modified, []string{"src/main.py"}) || !slices.Equal(st.Deleted, []string{"obsolete.txt"}) {
		t.Errorf("structured %+v", st)
	}
	if got := fileContent(t, filepath.Join(work, "src", "main.py")); got != "def greet():\n    print(\"Hello, world!\")\n" {
		t.Errorf("main.py = %q", got)
	}
	for _, gone := range []string{"src/app.py", "obsolete.txt"} {
		if _, err := os.Stat(filepath.Join(work, gone)); err == nil {
			t.Errorf("%s still there", gone)
		}
	}

	// A patch that cannot apply changes nothing, not even its first hunk.
	res, text, _ = callTool(t, cs, "apply_patch", map[string]any{"input": "*** Begin Patch\n*** Add File: second.txt\n+x\n" +
		"*** Update File: hello.txt\n@@\n-missing\n+y\n*** End Patch"})
	if !res.IsError || !strings.HasSuffix(text, "Output:\nFailed to find expected lines in hello.txt:\nmissing\n") {
		t.Errorf("failed patch %q", text)
	}
	if st := patchStructured(t, res); st.ExitCode != 1 || len(st.Added) != 0 {
		t.Errorf("failed structured %+v", st)
	}
	if _, err := os.Stat(filepath.Join(work, "second.txt")); err == nil {
		t.Error("a failed patch added a file")
	}
}

// TestPatchInterception: a heredoc patch sent to shell_command or
// exec_command is applied by execd, not run, in the calling tool's
// layout and with the hint to use the tool.
func TestPatchInterception(t *testing.T) {
	cs, work := startSDK(t, workspace)
	if err := os.Mkdir(filepath.Join(work, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	heredoc := func(name string) string {
		return "cd pkg && apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: " + name + "\n+via shell\n*** End Patch\nEOF\n"
	}
	res, text, st := callTool(t, cs, "shell_command", map[string]any{"command": heredoc("a.txt")})
	if res.IsError || st == nil || st.ExitCode != 0 ||
		st.Output != "Success. Updated the following files:\nA a.txt\n"+
			"Warning: apply_patch was requested via shell_command. Use the apply_patch tool instead of shell_command.\n" {
		t.Fatalf("shell_command: %q", text)
	}
	res, text, _ = callTool(t, cs, "exec_command", map[string]any{"cmd": heredoc("b.txt"), "yield_time_ms": 1000})
	if res.IsError || !strings.Contains(text, "Process exited with code 0\n") || strings.Contains(text, "session ID") ||
		!strings.Contains(text, "Output:\nSuccess. Updated the following files:\nA b.txt\nWarning: apply_patch was requested via exec_command.") {
		t.Fatalf("exec_command: %q", text)
	}
	for _, name := range []string{"a.txt", "b.txt"} {
		if got := fileContent(t, filepath.Join(work, "pkg", name)); got != "via shell\n" {
			t.Errorf("pkg/%s = %q", name, got)
		}
	}
	// A bare patch is an error that says to call the tool.
	res, text, _ = callTool(t, cs, "shell_command", map[string]any{"command": "*** Begin Patch\n*** Add File: c.txt\n+x\n*** End Patch"})
	if !res.IsError || res.StructuredContent != nil || !strings.Contains(text, "Call the apply_patch tool") {
		t.Errorf("bare patch: %q", text)
	}
	// Not the recognised form: it runs as a script (and apply_patch is
	// no program here).
	res, _, st = callTool(t, cs, "shell_command", map[string]any{"command": "cd pkg; apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: d.txt\n+x\n*** End Patch\nEOF\n"})
	if st == nil || st.ExitCode != 127 || !res.IsError {
		t.Errorf("cd ; apply_patch: %+v", st)
	}
}

// TestPatchApprovalOutsideWorkspace: a patch that writes outside the
// writable roots asks the client; under never it is refused.
func TestPatchApprovalOutsideWorkspace(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "notes.txt")
	writeTestFile(t, outside, "a\n")
	update := func(from, to string) map[string]any {
		return map[string]any{"input": "*** Begin Patch\n*** Update File: " + outside + "\n@@\n-" + from + "\n+" + to + "\n*** End Patch"}
	}
	e := &elicitor{answers: []func(context.Context) (*mcp.ElicitResult, error){action("decline"), decide("allow_once")}}
	cs, _, _ := approvingServer(t, workspace, "", e)

	res, text, _ := callTool(t, cs, "apply_patch", update("a", "b"))
	if !res.IsError || res.StructuredContent != nil || text != "exec command rejected by user" || fileContent(t, outside) != "a\n" {
		t.Fatalf("declined: %q, file %q", text, fileContent(t, outside))
	}
	res, text, _ = callTool(t, cs, "apply_patch", update("a", "b"))
	if res.IsError || fileContent(t, outside) != "b\n" {
		t.Fatalf("approved: %q, file %q", text, fileContent(t, outside))
	}
	qs := e.questions()
	if len(qs) != 2 || !strings.Contains(qs[0].Message, "Allow this patch to be applied?\nFiles:\n  "+outside+"\n") ||
		!strings.Contains(qs[0].Message, "Reason: it writes outside the workspace: "+outside) ||
		!slices.Equal(enumOf(t, qs[0]), []string{"allow_once", "allow_session", "deny"}) {
		t.Errorf("questions %+v", qs)
	}

	never, _ := startSDK(t, strings.Replace(workspace, "on-request", "never", 1))
	res, text, _ = callTool(t, never, "apply_patch", update("b", "c"))
	if !res.IsError || !strings.HasPrefix(text, "patch rejected: it writes outside the workspace ("+outside+")") ||
		fileContent(t, outside) != "b\n" {
		t.Errorf("never: %q", text)
	}
}

// TestPatchSymlinkEscapeRefused: a symlink inside the workspace that
// leads out of it does not let a patch write outside unasked, nor does
// one into a protected path.
func TestPatchSymlinkEscapeRefused(t *testing.T) {
	outsideDir := t.TempDir()
	writeTestFile(t, filepath.Join(outsideDir, "target.txt"), "safe\n")
	cs, work := startSDK(t, strings.Replace(workspace, "on-request", "never", 1))
	if err := os.Symlink(outsideDir, filepath.Join(work, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outsideDir, "target.txt"), filepath.Join(work, "link.txt")); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(work, ".git", "config"), "[core]\n")
	for _, p := range []string{
		"*** Begin Patch\n*** Update File: escape/target.txt\n@@\n-safe\n+owned\n*** End Patch",
		"*** Begin Patch\n*** Update File: link.txt\n@@\n-safe\n+owned\n*** End Patch",
		"*** Begin Patch\n*** Add File: escape/new.txt\n+owned\n*** End Patch",
		"*** Begin Patch\n*** Update File: .git/config\n@@\n-[core]\n+[core]\n+\tfsmonitor = evil\n*** End Patch",
		"*** Begin Patch\n*** Add File: ../sibling.txt\n+owned\n*** End Patch",
	} {
		res, text, _ := callTool(t, cs, "apply_patch", map[string]any{"input": p})
		if !res.IsError || !strings.HasPrefix(text, "patch rejected: it writes outside the workspace") {
			t.Errorf("%q: %q", p, text)
		}
	}
	if got := fileContent(t, filepath.Join(outsideDir, "target.txt")); got != "safe\n" {
		t.Errorf("target.txt = %q", got)
	}
	if _, err := os.Stat(filepath.Join(outsideDir, "new.txt")); err == nil {
		t.Error("a file was added outside the workspace")
	}
	if got := fileContent(t, filepath.Join(work, ".git", "config")); got != "[core]\n" {
		t.Errorf(".git/config = %q", got)
	}
	// Inside the workspace the same link-free patch goes ahead.
	res, text, _ := callTool(t, cs, "apply_patch", map[string]any{"input": "*** Begin Patch\n*** Add File: in.txt\n+ok\n*** End Patch"})
	if res.IsError {
		t.Errorf("inside: %q", text)
	}
}

func TestApplyPatchCLI(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "f.txt"), "one\n")
	patch := "*** Begin Patch\n*** Update File: f.txt\n@@\n-one\n+two\n*** End Patch\n"
	r := runCLI(t, fullAccess, "apply-patch", "--cwd", dir, patch)
	if r.code != 0 || r.stdout != "Success. Updated the following files:\nM f.txt\n" || r.stderr != "" {
		t.Fatalf("argument: %+v", r)
	}
	r = runCLIWith(t, fullAccess, func(c *exec.Cmd) { c.Stdin = strings.NewReader(strings.ReplaceAll(patch, "one", "two_")) },
		"apply-patch", "--cwd", dir)
	if r.code != 1 || r.stdout != "" || r.stderr != "Failed to find expected lines in f.txt:\ntwo_\n" {
		t.Fatalf("stdin, failing: %+v", r)
	}
	r = runCLIWith(t, fullAccess, func(c *exec.Cmd) {
		c.Stdin = strings.NewReader(strings.NewReplacer("-one", "-two", "+two", "+three").Replace(patch))
	}, "apply-patch", "--cwd", dir)
	if r.code != 0 || fileContent(t, filepath.Join(dir, "f.txt")) != "three\n" {
		t.Fatalf("stdin: %+v", r)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"apply-patch", "--cwd", dir, "*** Begin Patch\n*** Frobnicate File: x\n*** End Patch"}, 1,
			"Invalid patch hunk on line 2: '*** Frobnicate File: x' is not a valid hunk header."},
		{[]string{"apply-patch", "--cwd", dir, "a", "b"}, 2, "2 arguments"},
		{[]string{"apply-patch", "--cwd", dir}, 2, "no patch"},
		{[]string{"apply-patch", "--bogus"}, 2, "unknown flag"},
	} {
		r := runCLIWith(t, fullAccess, func(c *exec.Cmd) { c.Stdin = strings.NewReader("") }, tt.args...)
		if r.code != tt.code || r.stdout != "" || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%q: %+v", tt.args, r)
		}
	}
}

// TestApplyPatchKeepsContextLines: a context line that matched only
// after trimming or normalising stays byte for byte as the file has it;
// only the removed and added lines change (SPEC §6.2).
func TestApplyPatchKeepsContextLines(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "f.txt"), "alpha   \nbeta\n\u201cgamma\u201d \u2013 x\n")
	patch := "*** Begin Patch\n*** Update File: f.txt\n@@\n alpha\n-beta\n+BETA\n \"gamma\" - x\n*** End Patch\n"
	r := runCLI(t, fullAccess, "apply-patch", "--cwd", dir, patch)
	if r.code != 0 || r.stdout != "Success. Updated the following files:\nM f.txt\n" {
		t.Fatalf("apply-patch: %+v", r)
	}
	if got, want := fileContent(t, filepath.Join(dir, "f.txt")), "alpha   \nBETA\n\u201cgamma\u201d \u2013 x\n"; got != want {
		t.Errorf("f.txt = %q, want %q", got, want)
	}
}
