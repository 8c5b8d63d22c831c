package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/creack/pty"
)

// sessions measures interactive sessions on a fresh daemon.
func sessions(bin, cfg, dir string, n int) error {
	d, err := start(bin, cfg, dir)
	if err != nil {
		return err
	}
	defer d.stop()
	samples := max(n/4, 30)

	// exec_command of a tty cat: spawn, PTY, and the early return once cat
	// waits for input.
	var starts []time.Duration
	for range samples {
		t0 := time.Now()
		res, err := d.tool("exec_command", map[string]any{"cmd": "cat", "tty": true, "yield_time_ms": 10000})
		if err != nil {
			return err
		}
		starts = append(starts, time.Since(t0))
		id, err := sessionID(res)
		if err != nil {
			return err
		}
		if _, err := d.tool("write_stdin", map[string]any{"session_id": id, "chars": "\u0004", "yield_time_ms": 5000}); err != nil {
			return err
		}
	}
	report("exec_command tty cat (start)", fmt.Sprintf("p50 %v p95 %v", pct(starts, 50), pct(starts, 95)), "(no target)", true)

	// write_stdin "echo $FOO" to an idle bash -i, against the same exchange
	// on our own PTY.
	res, err := d.tool("exec_command", map[string]any{"cmd": "bash --norc --noprofile -i", "tty": true, "yield_time_ms": 10000})
	if err != nil {
		return err
	}
	id, err := sessionID(res)
	if err != nil {
		return err
	}
	if _, err := d.tool("write_stdin", map[string]any{"session_id": id, "chars": "export FOO=bar; PS1='$ '\n", "yield_time_ms": 5000}); err != nil {
		return err
	}
	trips, misses, err := echoTrips(d, id, samples)
	if err != nil {
		return err
	}
	floor, err := ptyFloor(samples)
	if err != nil {
		return err
	}
	p50 := pct(trips, 50)
	report("write_stdin echo to idle bash -i", fmt.Sprintf("p50 %v p95 %v, %d without their answer (output and prompt on a bare PTY: p50 %v; Codex waits the whole yield, ≥ 250 ms)",
		p50, pct(trips, 95), misses, pct(floor, 50)), "≤ 10 ms p50", p50 <= 10*time.Millisecond && misses == 0)

	// The same under two busy loops (nice 0, like a build beside it).
	stopLoad, err := busyLoops(2)
	if err != nil {
		return err
	}
	trips, misses, err = echoTrips(d, id, samples)
	stopLoad()
	if err != nil {
		return err
	}
	report("write_stdin echo under 2 busy loops", fmt.Sprintf("p50 %v p95 %v, %d of %d without their answer", pct(trips, 50), pct(trips, 95), misses, samples),
		"0 without their answer", misses == 0)

	// RSS added by 64 idle sessions (their buffers are empty).
	_, _ = d.tool("write_stdin", map[string]any{"session_id": id, "chars": "exit\n", "yield_time_ms": 5000})
	time.Sleep(2500 * time.Millisecond)
	before := status(d.cmd.Process.Pid, "VmRSS")
	for range 64 {
		if _, err := d.tool("exec_command", map[string]any{"cmd": "cat", "tty": true, "yield_time_ms": 10000}); err != nil {
			return err
		}
	}
	time.Sleep(2500 * time.Millisecond)
	after := status(d.cmd.Process.Pid, "VmRSS")
	per := float64(after-before) / 64
	report("RSS per idle session", fmt.Sprintf("%.0f KiB (%.1f MiB with 64 open, %.1f MiB with none)", per, float64(after)/1024, float64(before)/1024),
		"≤ 200 KiB", per <= 200)
	return nil
}

// echoTrips times write_stdin "echo $FOO" on session id, where FOO=bar,
// and counts the replies that do not carry bar.
func echoTrips(d *daemon, id, samples int) (trips []time.Duration, misses int, err error) {
	for range samples {
		t0 := time.Now()
		res, err := d.tool("write_stdin", map[string]any{"session_id": id, "chars": "echo $FOO\n", "yield_time_ms": 30000})
		if err != nil {
			return nil, 0, err
		}
		trips = append(trips, time.Since(t0))
		if !bytes.Contains(res, []byte("bar")) {
			misses++
		}
	}
	return trips, misses, nil
}

// busyLoops starts n shell loops that spin on a CPU each; stop kills them.
func busyLoops(n int) (stop func(), err error) {
	var loops []*exec.Cmd
	stop = func() {
		for _, c := range loops {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
	for range n {
		c := exec.Command("sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			stop()
			return nil, err
		}
		loops = append(loops, c)
	}
	return stop, nil
}

func sessionID(res json.RawMessage) (int, error) {
	var r struct {
		StructuredContent struct {
			SessionID *int `json:"session_id"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.StructuredContent.SessionID == nil {
		return 0, fmt.Errorf("no session in %s", res)
	}
	return *r.StructuredContent.SessionID, nil
}

// ptyFloor times "echo $FOO" on a bash -i of our own, from the write to
// the next prompt: what any daemon needs at least.
func ptyFloor(samples int) ([]time.Duration, error) {
	cmd := exec.Command("bash", "--norc", "--noprofile", "-i")
	cmd.Env = append(os.Environ(), "TERM=dumb", "PS1=$ ", "FOO=bar")
	f, err := pty.Start(cmd)
	if err != nil {
		return nil, err
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		f.Close()
	}()
	out := make(chan string, 64)
	go func() { // ends when f is closed
		b := make([]byte, 4096)
		for {
			n, err := f.Read(b)
			if n > 0 {
				out <- string(b[:n])
			}
			if err != nil {
				close(out)
				return
			}
		}
	}()
	waitPrompt := func() error {
		var got strings.Builder
		for !strings.HasSuffix(got.String(), "$ ") {
			select {
			case s, ok := <-out:
				if !ok {
					return fmt.Errorf("bash ended")
				}
				got.WriteString(s)
			case <-time.After(10 * time.Second):
				return fmt.Errorf("no prompt")
			}
		}
		return nil
	}
	if err := waitPrompt(); err != nil {
		return nil, err
	}
	var d []time.Duration
	for range samples {
		t0 := time.Now()
		if _, err := f.Write([]byte("echo $FOO\n")); err != nil {
			return nil, err
		}
		if err := waitPrompt(); err != nil {
			return nil, err
		}
		d = append(d, time.Since(t0))
	}
	return d, nil
}
