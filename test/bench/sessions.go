package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// sessions measures interactive sessions on a fresh daemon.
func sessions(bin, cfg, dir string, n int) error {
	d, err := start(bin, cfg, dir)
	if err != nil {
		return err
	}
	defer d.stop()
	samples := max(n/4, 30)

	if err := sessionStart(d, samples); err != nil {
		return err
	}

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
		p50, pct(trips, 95), misses, pct(floor, 50)), "≤ 2 ms p50, all answered", p50 <= 2*time.Millisecond && misses == 0)

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

// sessionStart times exec_command of a tty cat, which returns once cat
// waits for input, against a bare PTY spawn of cat, interleaved. The
// target row runs cat without a login shell (`login: false`): the login
// profile's cost is issue #15's other target; the default is shown too.
func sessionStart(d *daemon, samples int) error {
	var times [3][]time.Duration // bare, execd, execd with a login shell
	start := func(login bool, times *[]time.Duration) func() error {
		return func() error {
			t0 := time.Now()
			res, err := d.tool("exec_command", map[string]any{"cmd": "cat", "tty": true, "login": login, "yield_time_ms": 10000})
			if err != nil {
				return err
			}
			*times = append(*times, time.Since(t0))
			id, err := sessionID(res)
			if err != nil {
				return err
			}
			_, err = d.tool("write_stdin", map[string]any{"session_id": id, "chars": "\u0004", "yield_time_ms": 5000})
			return err
		}
	}
	bare := func() error {
		took, err := barePTYCat()
		times[0] = append(times[0], took)
		return err
	}
	if _, err := interleave(samples, bare, start(false, &times[1]), start(true, &times[2])); err != nil {
		return err
	}
	for i := range times {
		times[i] = times[i][3:] // interleave's warm-up rounds
	}
	p50, floor := pct(times[1], 50), pct(times[0], 50)
	ratio := float64(p50) / float64(floor)
	report("exec_command tty cat (start)", fmt.Sprintf("p50 %v p95 %v; bare PTY spawn until cat blocks reading it p50 %v p95 %v; ratio %.2f; with the default login shell p50 %v",
		p50, pct(times[1], 95), floor, pct(times[0], 95), ratio, pct(times[2], 50)), "≤ 2× a bare PTY spawn", ratio <= 2)
	return nil
}

// barePTYCat spawns cat on a PTY of our own (creack/pty) and returns how
// long until cat is asleep in read(2) of its terminal, which is the
// earliest anyone can know that it waits for input: the same evidence
// execd's probe looks for (/proc/PID/syscall), sampled every 50 µs, so
// the floor is at most that late. The kill and wait are not timed.
func barePTYCat() (time.Duration, error) {
	t0 := time.Now()
	cmd := exec.Command("cat")
	f, err := pty.Start(cmd)
	if err != nil {
		return 0, err
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		f.Close()
	}()
	pid := strconv.Itoa(cmd.Process.Pid)
	reading := fmt.Sprintf("%d 0x0 ", unix.SYS_READ) // read(0, ...)
	for deadline := t0.Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Microsecond) {
		stat, _ := os.ReadFile("/proc/" + pid + "/stat")
		if i := bytes.LastIndexByte(stat, ')'); i < 0 || len(stat) < i+3 || stat[i+2] != 'S' {
			continue
		}
		if sc, _ := os.ReadFile("/proc/" + pid + "/syscall"); strings.HasPrefix(string(sc), reading) {
			return time.Since(t0), nil
		}
	}
	return 0, fmt.Errorf("cat on a bare PTY never waited for input")
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
