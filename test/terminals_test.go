package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

// A sandboxed command cannot reach the user's other terminals: it sees a
// devpts of its own, where its session's terminal and those it makes
// itself are named, and nothing else (issue 13 item 2, SPEC §8.3).
// Before the fix the command could write to the user's terminal.
func TestSandboxHidesOtherTerminals(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		if _, err := os.Stat("/dev/pts"); err != nil {
			t.Skip("no /dev/pts on this host")
		}
		// The user's other terminal, which the user owns, numbered past
		// those the sandbox makes (0 and 1 here).
		var other *os.File
		for other == nil || strings.TrimPrefix(other.Name(), "/dev/pts/") < "5" && len(other.Name()) == len("/dev/pts/0") {
			master, tty, err := pty.Open()
			if err != nil {
				t.Skipf("cannot open a terminal here: %v", err)
			}
			t.Cleanup(func() { master.Close(); tty.Close() })
			other = tty
		}
		h.chown(other.Name())
		// Other mounts of the host's terminals: a chroot's /dev/pts in
		// the workspace, and one terminal bound on a file (a container's
		// /dev/console).
		chrootPts, console := filepath.Join(h.work, "chroot-pts"), filepath.Join(h.work, "console")
		h.mkdir(chrootPts)
		h.writeFile(console, "")
		for _, m := range [][2]string{{"/dev/pts", chrootPts}, {other.Name(), console}} {
			if err := unix.Mount(m[0], m[1], "", unix.MS_BIND, ""); err != nil {
				t.Skipf("cannot bind %s for the test: %v", m[0], err)
			}
			t.Cleanup(func() { _ = unix.Unmount(m[1], unix.MNT_DETACH) })
		}
		cmd := h.command("", "serve")
		cmd.Stderr = &testLog{t: t}
		cs := connect(t, cmd, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})

		reach := "ls /dev/pts | tr '\\n' ' '; echo; echo typed >" + other.Name() + " && echo reached-$((6*7))"
		// A one-shot (pipes) and a terminal session alike.
		_, text, _ := callTool(t, cs, "shell_command", map[string]any{"command": reach, "login": false})
		if !strings.Contains(text, "ptmx \n") || strings.Contains(text, " ptmx") || strings.Contains(text, "reached-42") {
			t.Errorf("a one-shot: want only ptmx in /dev/pts and %s out of reach:\n%s", other.Name(), text)
		}
		// The other mounts are covered: nothing in the chroot's, /dev/null
		// (1:3) on the file.
		_, text, _ = callTool(t, cs, "shell_command", map[string]any{"login": false,
			"command": "echo in-chroot: $(ls -A chroot-pts); stat -c 'console %t:%T' console"})
		if !strings.Contains(text, "in-chroot:\n") || !strings.Contains(text, "console 1:3") {
			t.Errorf("other mounts of terminals: want them covered:\n%s", text)
		}
		id := start(t, cs, map[string]any{"cmd": "bash --norc --noprofile -i", "tty": true, "yield_time_ms": 10000})
		_, st := write(t, cs, id, "tty; "+reach+"\n", 5000)
		if !strings.Contains(st.Output, "/dev/pts/0") || !strings.Contains(strings.ReplaceAll(st.Output, "\r", ""), "\n0 ptmx \n") || strings.Contains(st.Output, "reached-42") {
			t.Errorf("a terminal session: want tty /dev/pts/0, only it and ptmx in /dev/pts, and %s out of reach:\n%q", other.Name(), st.Output)
		}
		// A terminal the command makes itself works, with its name.
		out := until(t, cs, id, "script -qc 'tty; echo made-$((6*7))' /dev/null\n", "made-42")
		if !strings.Contains(out, "/dev/pts/1") || !strings.Contains(out, "made-42") {
			t.Errorf("script in the session:\n%s", out)
		}
		// The session's terminal still delivers ^C to its foreground.
		// ^C may come before bash made sleep the foreground job (and be
		// ignored by bash): send it until the shell answers again.
		write(t, cs, id, "sleep 100\n", 300)
		for range 5 {
			write(t, cs, id, "\x03", 300) // the line discipline flushes what follows ^C
			if out = until(t, cs, id, "echo after-$((6*7))\n", "after-42"); strings.Contains(out, "after-42") {
				break
			}
		}
		if !strings.Contains(out, "after-42") {
			t.Errorf("^C did not interrupt sleep:\n%s", out)
		}
	})
}

// until writes chars to session id and collects its output until want
// appears, for up to 10 s.
func until(t *testing.T, cs *mcp.ClientSession, id int, chars, want string) string {
	t.Helper()
	var out strings.Builder
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), want) && time.Now().Before(deadline) {
		_, st := write(t, cs, id, chars, 1000)
		out.WriteString(st.Output)
		chars = ""
	}
	return out.String()
}
