package test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveSandboxed connects to an execd serve of h's user whose sandboxed
// commands run through a launcher, and returns a caller of its tools.
func serveSandboxed(t *testing.T, h *sandboxHost) func(name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	if !hasPIDNamespace(h) {
		t.Skip("no PID namespace, so no launcher, for sandboxed commands on this host")
	}
	cmd := h.command("", "serve")
	cmd.Stderr = &testLog{t: t}
	cs := connect(t, cmd, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	t.Cleanup(func() { _ = cs.Close() })
	return func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s %v: %v", name, args, err)
		}
		return res
	}
}

// A .git that a sandboxed command made is read-only for the next
// command, as it is with a helper per command: the launcher set up before
// it existed no longer covers the launch and is replaced (SPEC §8.3).
// Without the check the second write succeeds.
func TestLauncherReplacedWhenProtectionChanges(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		call := serveSandboxed(t, h)
		if res := call("shell", map[string]any{"command": []string{"sh", "-c", "mkdir -p .git/hooks && echo made"}}); !strings.Contains(textOf(res), "made") {
			t.Fatalf("mkdir .git: %s", textOf(res))
		}
		res := call("shell", map[string]any{"command": []string{"sh", "-c", "echo evil > .git/hooks/pre-commit && echo WROTE"}})
		if out := textOf(res); strings.Contains(out, "WROTE") || !strings.Contains(out, "Read-only file system") {
			t.Errorf("a hook written into the .git made by an earlier command:\n%s", out)
		}
	})
}

// The launcher is out of the commands' reach although they run as the
// same user in its PID namespace: its descriptors (the control socket),
// environment and memory cannot be opened (it is not dumpable), and a
// command holds no descriptor but its stdio.
func TestLauncherOutOfReach(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		call := serveSandboxed(t, h)
		for _, script := range []string{"readlink /proc/1/fd/5", "cat /proc/1/environ", "head -c1 /proc/1/mem", "ls /proc/1/map_files"} {
			res := call("shell", map[string]any{"command": []string{"sh", "-c", script + " >/dev/null 2>&1 && echo OPENED || echo DENIED"}})
			if out := textOf(res); strings.Contains(out, "OPENED") || !strings.Contains(out, "DENIED") {
				t.Errorf("%s:\n%s", script, out)
			}
		}
		// No pipeline: while sh starts one it holds the pipes' ends, which
		// ls may list; and a command after ls, so that sh does not exec it.
		res := call("shell", map[string]any{"command": []string{"sh", "-c", "ls -m /proc/$$/fd; true"}})
		if out := textOf(res); !strings.Contains(out, "0, 1, 2\n") && !strings.Contains(out, `0, 1, 2\n`) {
			t.Errorf("descriptors of a sandboxed command: %s", out)
		}
	})
}
