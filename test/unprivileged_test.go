package test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/execd/execd/internal/proctest"
)

// execdAsNobody starts execd as uid/gid 65534 through setpriv: the
// waiting-for-input probe reads /proc/PID/syscall, which the kernel only
// shows to processes allowed to ptrace the target.
func execdAsNobody(t *testing.T) *mcp.ClientSession {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch to an unprivileged uid")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv is not installed")
	}
	dir, err := os.MkdirTemp("", "execd-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "execd")
	data, err := os.ReadFile(execdBin)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.toml")
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{{bin, data, 0o755}, {cfg, []byte(fullAccess), 0o644}} {
		if err := os.WriteFile(f.path, f.data, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin, "--config", cfg, "--cwd", dir)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "XDG_CONFIG_HOME=" + dir, noRaceExitSleep}
	cmd.Stderr = &testLog{t: t}
	return connect(t, cmd, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
}

func TestUnprivilegedSessionsAnswerEarly(t *testing.T) {
	cs := execdAsNobody(t)
	id := start(t, cs, map[string]any{"cmd": "bash --norc -i", "tty": true, "yield_time_ms": 10000})
	_, st := write(t, cs, id, "id -u\n", 30000)
	if !strings.Contains(st.Output, "65534") {
		t.Fatalf("not running as nobody: %q", st.Output)
	}
	if st.WallTimeSeconds > 15 {
		t.Errorf("an idle shell of an unprivileged execd answered after %.1f s, not early", st.WallTimeSeconds)
	}
}

// A cancelled exec_command still inside its yield kills its command: nobody
// would ever learn its session id (SPEC §3.2).
func TestSDKCancelledExecCommandKillsItsCommand(t *testing.T) {
	cs, _ := startSDK(t, fullAccess)
	for _, tty := range []bool{false, true} {
		marker := "sleep 7702.1"
		if tty {
			marker = "sleep 7702.2"
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec_command",
				Arguments: map[string]any{"cmd": marker + "; true", "tty": tty, "yield_time_ms": 30000}})
			done <- err
		}()
		proctest.Running(t, marker, 1, waitLimit)
		cancel()
		select {
		case <-done:
		case <-time.After(waitLimit):
			t.Fatal("cancelled call did not return")
		}
		proctest.Gone(t, marker, waitLimit)
	}
}
