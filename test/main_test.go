// Package test drives the real execd binary over stdio: with the official
// MCP Go SDK client, with raw lines for malformed input, and through its
// command line. TestMain builds the binary once (with -race when the tests
// run with -race).
package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// execdBin is the binary under test; probeBin is test/sandboxprobe.
var execdBin, probeBin string

// waitLimit only turns a hang into a failure; timing targets live in the
// benchmarks (make bench), not here.
const waitLimit = 15 * time.Second

func TestMain(m *testing.M) {
	if os.Getenv(denyEnv) != "" {
		denyMain()
	}
	dir, err := os.MkdirTemp("", "execd-it-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	execdBin = filepath.Join(dir, "execd")
	probeBin = filepath.Join(dir, "sandboxprobe")
	err = build(execdBin, "../cmd/execd", raceEnabled)
	if err == nil {
		err = build(probeBin, "./sandboxprobe", false)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// build builds the program in pkg into out, static unless race is set.
func build(out, pkg string, race bool) error {
	args := []string{"build", "-o", out}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, pkg)...)
	if !race {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s: %v\n%s", pkg, err, b)
	}
	return nil
}

// fullAccess is the configuration of the tests that are not about the
// sandbox, so that they do not depend on the kernel's features.
const fullAccess = "[sandbox]\nmode = \"danger-full-access\"\n"

// execdCmd returns an execd command with its own config file, turn
// directory and XDG_CONFIG_HOME, and the daemon's stderr in the test log.
func execdCmd(t *testing.T, config string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(execdBin, append([]string{"--config", cfgPath, "--cwd", work}, args...)...)
	cmd.Env = cleanEnv(dir)
	cmd.Stderr = &testLog{t: t}
	return cmd, work
}

// cleanEnv is the test's environment without EXECD_* variables, with a
// private config directory and an empty HOME: the login shells of the
// commands must not run the developer's dotfiles.
func cleanEnv(dir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "EXECD_") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return append(env, "XDG_CONFIG_HOME="+dir, "HOME="+dir, noRaceExitSleep)
}

// noRaceExitSleep stops a -race build from sleeping a second at exit
// (the race detector's default, to let other goroutines report): execd
// exits, and its probe and helper start, in every test.
const noRaceExitSleep = "GORACE=atexit_sleep_ms=0"

// testLog writes the daemon's stderr to the test log.
type testLog struct {
	t    *testing.T
	mu   sync.Mutex
	done bool
	buf  bytes.Buffer
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for {
		line, err := l.buf.ReadString('\n')
		if err != nil {
			l.buf.WriteString(line)
			break
		}
		if !l.done {
			l.t.Log("execd: " + strings.TrimSuffix(line, "\n"))
		}
	}
	return len(p), nil
}

// stop ends the logging of l: the test is over.
func (l *testLog) stop() {
	l.mu.Lock()
	l.done = true
	l.mu.Unlock()
}

// connect starts execd through the SDK's CommandTransport. At cleanup the
// session is closed, which closes stdin: execd must then exit 0.
func connect(t *testing.T, cmd *exec.Cmd, opts *mcp.ClientOptions, sess *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	return connectExiting(t, cmd, opts, sess, func(err error) {
		if err != nil {
			t.Errorf("execd did not exit cleanly: %v", err)
		}
	})
}

// connectExiting is connect for a test that ends execd its own way:
// exited gets the result of the cleanup's Close.
func connectExiting(t *testing.T, cmd *exec.Cmd, opts *mcp.ClientOptions, sess *mcp.ClientSessionOptions, exited func(error)) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "execd-it", Version: "0"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, sess)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		exited(cs.Close())
		if l, ok := cmd.Stderr.(*testLog); ok {
			l.stop()
		}
	})
	return cs
}

// startSDK starts execd with a config and connects the SDK client.
func startSDK(t *testing.T, config string) (*mcp.ClientSession, string) {
	t.Helper()
	cmd, work := execdCmd(t, config)
	return connect(t, cmd, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"}), work
}

// execResult is the structuredContent of shell and shell_command.
type execResult struct {
	ExitCode        int     `json:"exit_code"`
	WallTimeSeconds float64 `json:"wall_time_seconds"`
	Output          string  `json:"output"`
	TimedOut        bool    `json:"timed_out"`
	Truncated       bool    `json:"truncated"`
	Signal          string  `json:"signal"`
	SandboxDenied   bool    `json:"sandbox_denied"`
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, string, *execResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("call %s: %d content blocks, want 1", name, len(res.Content))
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("call %s: content is %T, want text", name, res.Content[0])
	}
	if res.StructuredContent == nil {
		return res, text.Text, nil
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var st execResult
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("structuredContent %s: %v", b, err)
	}
	return res, text.Text, &st
}
