package test

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// execd run asks approvals on its controlling terminal, and denies them
// without one (SPEC §1).

func touchRules(t *testing.T) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "touch.rules")
	if err := os.WriteFile(f, []byte(`prefix_rule(pattern=["touch"], decision="prompt", justification="touch is watched")`), 0o644); err != nil {
		t.Fatal(err)
	}
	return "[sandbox]\nmode = \"danger-full-access\"\n[rules]\nfiles = [" + strconvQuote(f) + "]\n"
}

func TestRunDeniesWithoutATerminal(t *testing.T) {
	target := filepath.Join(t.TempDir(), "x")
	r := runCLIWith(t, touchRules(t), func(c *exec.Cmd) {
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no controlling terminal
	}, "run", "--", "touch", target)
	if r.code != 126 || !strings.Contains(r.stderr, "exec command rejected: it needs approval and there is no terminal to ask on") {
		t.Fatalf("exit %d, stderr %q; want 126 and the reason", r.code, r.stderr)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("an unapproved command ran")
	}
}

func TestRunAsksOnTheTerminal(t *testing.T) {
	for _, tt := range []struct {
		answer string
		code   int
	}{{"o", 0}, {"", 126}, {"no", 126}, {"SIGINT", 130}} {
		t.Run("answer "+tt.answer, func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "x")
			cmd, _ := execdCmd(t, touchRules(t))
			cmd.Args = append([]string{cmd.Args[0], "run"}, append(cmd.Args[1:], "--", "touch", target)...)
			cmd.Stderr = nil
			tty, err := pty.Start(cmd) // the terminal becomes execd's controlling one
			if err != nil {
				t.Fatal(err)
			}
			defer tty.Close()
			screen := make(chan string, 1)
			go func() {
				var seen strings.Builder
				r := bufio.NewReader(tty)
				for {
					b, err := r.ReadByte()
					if err != nil {
						break
					}
					seen.WriteByte(b)
					if strings.HasSuffix(seen.String(), "(default deny): ") {
						if tt.answer == "SIGINT" { // interrupted while asking
							_ = cmd.Process.Signal(syscall.SIGINT)
						} else {
							_, _ = tty.WriteString(tt.answer + "\n")
						}
					}
				}
				screen <- seen.String()
			}()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var werr error
			select {
			case werr = <-done:
			case <-time.After(waitLimit):
				_ = cmd.Process.Kill()
				t.Fatal("execd run did not finish")
			}
			_ = tty.Close()
			out := <-screen
			code := 0
			var ee *exec.ExitError
			if errors.As(werr, &ee) {
				code = ee.ExitCode()
			}
			_, statErr := os.Stat(target)
			if code != tt.code || (statErr == nil) != (tt.code == 0) {
				t.Fatalf("exit %d, ran %v; want %d\nterminal:\n%s", code, statErr == nil, tt.code, out)
			}
			for _, want := range []string{"Command: touch " + target, "Reason: `touch " + target + "` requires approval: touch is watched",
				"Allow? [o]nce, [s]ession, [d]eny (default deny): "} {
				if !strings.Contains(out, want) {
					t.Errorf("terminal lacks %q:\n%s", want, out)
				}
			}
		})
	}
}
