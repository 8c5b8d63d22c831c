package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/execd/execd/internal/orchestrator"
)

const hunk = "*** Begin Patch\n*** Add File: new.txt\n+hello\n*** Update File: old.txt\n@@\n-a\n+b\n*** End Patch"

// workspace starts a server whose cwd holds old.txt ("a\n").
func workspace(t *testing.T, mods ...serverOpt) (*client, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "old.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mods = append(mods, func(_ *Options, o *orchestrator.Options) { o.Cwd = dir })
	return startServer(t, mods...), dir
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, _ := os.ReadFile(path)
	return string(b)
}

// varying are the parts of a result that vary from run to run.
var varying = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`Wall time: [0-9.]+ seconds`), "Wall time: X seconds"},
	{regexp.MustCompile(`"duration_seconds":[0-9.]+`), `"duration_seconds":X`},
	{regexp.MustCompile(`Chunk ID: [0-9a-f]+`), "Chunk ID: X"},
}

// stable is text with what varies replaced by X.
func stable(text string) string {
	for _, v := range varying {
		text = v.re.ReplaceAllLiteralString(text, v.with)
	}
	return text
}

func TestApplyPatchTool(t *testing.T) {
	c, dir := workspace(t)
	r, raw := c.callRaw("apply_patch", map[string]any{"input": hunk})
	want := "Exit code: 0\nWall time: X seconds\nOutput:\nSuccess. Updated the following files:\nA new.txt\nM old.txt\n"
	if r.IsError || stable(r.Content[0].Text) != want {
		t.Fatalf("result %q (isError %v), want %q", r.Content[0].Text, r.IsError, want)
	}
	st := patchStruct(t, raw)
	if st.ExitCode != 0 || !slices.Equal(st.Added, []string{"new.txt"}) || !slices.Equal(st.Modified, []string{"old.txt"}) ||
		st.Deleted == nil || len(st.Deleted) != 0 || st.Output != "Success. Updated the following files:\nA new.txt\nM old.txt\n" {
		t.Errorf("structured %+v", st)
	}
	if readFile(t, filepath.Join(dir, "new.txt")) != "hello\n" || readFile(t, filepath.Join(dir, "old.txt")) != "b\n" {
		t.Error("files not written")
	}

	r, raw = c.callRaw("apply_patch", map[string]any{"input": hunk}) // new.txt is overwritten; old.txt no longer has "a"
	want = "Exit code: 1\nWall time: X seconds\nOutput:\nFailed to find expected lines in old.txt:\na\n"
	if !r.IsError || stable(r.Content[0].Text) != want {
		t.Fatalf("failed patch %q, want %q", r.Content[0].Text, want)
	}
	if st := patchStruct(t, raw); st.ExitCode != 1 || st.Added == nil || len(st.Added) != 0 {
		t.Errorf("structured %+v", st)
	}
}

func patchStruct(t *testing.T, raw json.RawMessage) patchStructured {
	t.Helper()
	var r struct {
		StructuredContent *patchStructured `json:"structuredContent"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || r.StructuredContent == nil {
		t.Fatalf("no structuredContent in %s (%v)", raw, err)
	}
	return *r.StructuredContent
}

// TestInterceptedPatchLayouts: a patch sent through a shell tool is
// applied, not run, and answers in that tool's layout with the hint.
func TestInterceptedPatchLayouts(t *testing.T) {
	heredoc := "apply_patch <<'EOF'\n" + hunk + "\nEOF\n"
	tests := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"shell", map[string]any{"command": []string{"apply_patch", hunk}},
			`{"output":"Success. Updated the following files:\nA new.txt\nM old.txt\nWarning: apply_patch was requested via shell. Use the apply_patch tool instead of shell.\n","metadata":{"exit_code":0,"duration_seconds":X}}`},
		{"shell", map[string]any{"command": []string{"bash", "-lc", heredoc}},
			`{"output":"Success. Updated the following files:\nA new.txt\nM old.txt\nWarning: apply_patch was requested via shell. Use the apply_patch tool instead of shell.\n","metadata":{"exit_code":0,"duration_seconds":X}}`},
		{"shell_command", map[string]any{"command": heredoc},
			"Exit code: 0\nWall time: X seconds\nOutput:\nSuccess. Updated the following files:\nA new.txt\nM old.txt\n" +
				"Warning: apply_patch was requested via shell_command. Use the apply_patch tool instead of shell_command.\n"},
		{"exec_command", map[string]any{"cmd": heredoc},
			"Command: /bin/bash -lc $'apply_patch <<\\'EOF\\'\\n*** Begin Patch\\n*** Add File: new.txt\\n+hello\\n" +
				"*** Update File: old.txt\\n@@\\n-a\\n+b\\n*** End Patch\\nEOF\\n'\n" +
				"Chunk ID: X\nWall time: X seconds\nProcess exited with code 0\nOriginal token count: 41\nOutput:\n" +
				"Success. Updated the following files:\nA new.txt\nM old.txt\n" +
				"Warning: apply_patch was requested via exec_command. Use the apply_patch tool instead of exec_command.\n"},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			c, dir := workspace(t, func(_ *Options, o *orchestrator.Options) {
				o.Shell = orchestrator.Shell{Path: "/bin/bash", Kind: orchestrator.Bash}
			})
			r, _ := c.callRaw(tt.tool, tt.args)
			if r.IsError || stable(r.Content[0].Text) != tt.want {
				t.Errorf("result (isError %v):\n%s\nwant\n%s", r.IsError, stable(r.Content[0].Text), tt.want)
			}
			if readFile(t, filepath.Join(dir, "old.txt")) != "b\n" {
				t.Error("the patch was not applied")
			}
		})
	}
}

func TestInterceptedPatchInCdDir(t *testing.T) {
	c, dir := workspace(t)
	if err := os.Mkdir(filepath.Join(dir, "sub dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "cd 'sub dir' && apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: x.txt\n+x\n*** End Patch\nEOF"
	r := c.callTool("shell_command", map[string]any{"command": script})
	if r.IsError || readFile(t, filepath.Join(dir, "sub dir", "x.txt")) != "x\n" {
		t.Fatalf("cd: %q", r.text())
	}
	r = c.callTool("shell_command", map[string]any{"command": strings.Replace(script, "sub dir", "nope", 1)})
	if !r.IsError || r.StructuredContent.ExitCode != 1 || !strings.HasPrefix(r.StructuredContent.Output, "cd: nope: No such file or directory\n") {
		t.Errorf("missing cd dir: %q", r.text())
	}
}

func TestPatchEvents(t *testing.T) {
	c, _ := workspace(t)
	c.request("initialize", map[string]any{"protocolVersion": "2025-11-25",
		"capabilities": map[string]any{"experimental": map[string]any{"execd/events": map[string]any{}}}})
	c.callRaw("apply_patch", map[string]any{"input": hunk})
	var events []map[string]any
	for len(c.notes) > 0 {
		n := <-c.notes
		if n.Method == "execd/event" {
			var p map[string]any
			_ = json.Unmarshal(n.Params, &p)
			events = append(events, p)
		}
	}
	if len(events) != 2 || events[0]["type"] != "patch_apply_begin" || events[1]["type"] != "patch_apply_end" {
		t.Fatalf("events %v", events)
	}
	changes, _ := json.Marshal(events[0]["changes"])
	if string(changes) != `{"new.txt":{"type":"add"},"old.txt":{"type":"update"}}` || events[1]["success"] != true ||
		events[0]["call_id"] != events[1]["call_id"] {
		t.Errorf("events %v", events)
	}
}

func TestHideApplyPatch(t *testing.T) {
	c, _ := workspace(t, func(o *Options, _ *orchestrator.Options) { o.HideApplyPatch = true })
	f := c.request("tools/list", map[string]any{})
	if strings.Contains(string(f.Result), `"apply_patch"`) {
		t.Error("apply_patch listed")
	}
	if r, _ := c.callRaw("apply_patch", map[string]any{"input": hunk}); r.IsError {
		t.Errorf("a hidden apply_patch is still callable: %q", r.Content[0].Text)
	}
}
