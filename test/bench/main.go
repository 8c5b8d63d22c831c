// Command bench measures execd against baselines taken in the same run
// (`make bench`), so the ratios hold on any machine:
//
//   - round trip of a trivial `shell ["true"]` call through the built
//     binary vs spawning `true` directly from this program, interleaved;
//   - the same with 8 calls in flight vs 8 direct spawns in parallel;
//   - `head -c 50000000 /dev/zero` through shell_command vs reading it
//     directly, and execd's peak RSS (VmHWM) after it;
//   - startup to the initialize response, and idle RSS;
//   - sessions: exec_command of a tty `cat` (it returns when cat waits for
//     input) against spawning cat on a PTY of our own until it blocks
//     reading it, interleaved; write_stdin "echo $FOO" to an idle bash -i
//     against the same exchange on a PTY of our own (the floor), alone and
//     under two busy loops; and the RSS that 64 idle sessions add;
//   - approvals: a call whose rule says prompt, answered at once by the
//     client, against the same call without a rule (approval.go);
//   - patches: a 2,000-line, 200-chunk patch on a 100,000-line file
//     through apply_patch and in process, and a one-line patch, against
//     git apply (patch.go);
//   - the policy's decision on a 2 KiB script against parsing it
//     (policy.go);
//   - the sandbox: the resident launcher's launch overhead (and the
//     helper's, which it replaced), a sandboxed round trip and calls/s
//     with 8 in flight against an unsandboxed daemon, and the seccomp
//     filter's cost per system call (sandbox.go);
//   - login shells: exec_command "true" with a profile that sleeps 0.2 s
//     against login: false, sandboxed and not (login.go).
//
// Targets (issues #2 to #6, #12, #13 and #15) are printed next to each
// number. `-only NAME` runs one group: patch, policy, load, sessions,
// sandbox or login.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/execd/execd/internal/sandbox"
)

func main() {
	// The launch benchmark starts this binary's sandbox probe.
	if code, ok := sandbox.Dispatch(); ok {
		os.Exit(code)
	}
	n := flag.Int("n", 400, "samples per round-trip measurement")
	only := flag.String("only", "", `run one benchmark only: "patch", "policy", "load", "sessions", "sandbox" or "login"`)
	flag.Parse()
	if err := run(*n, *only); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(n int, only string) error {
	dir, err := os.MkdirTemp("", "execd-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// Baselines and execd alike run login shells without any dotfiles.
	os.Setenv("HOME", dir)
	bin := filepath.Join(dir, "execd")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/execd")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte("[sandbox]\nmode = \"danger-full-access\"\n"), 0o644); err != nil {
		return err
	}
	fmt.Printf("execd benchmarks (%d samples; GOMAXPROCS default; machine: %s)\n\n", n, cpuInfo())
	switch only {
	case "":
	case "patch":
		return patchBench(bin, dir)
	case "load":
		if err := concurrency(bin, dir, 500); err != nil {
			return err
		}
		return flood(bin, cfg, dir, 100_000)
	case "policy":
		return policyBench()
	case "sessions":
		return sessions(bin, cfg, dir, n)
	case "sandbox":
		return sandboxBench(bin, dir, n)
	case "login":
		return loginBench(bin, dir, n)
	default:
		return fmt.Errorf("-only %q: the benchmarks that run alone are: patch, policy, load, sessions, sandbox, login", only)
	}

	if err := startup(bin, cfg, dir); err != nil {
		return err
	}
	d, err := start(bin, cfg, dir)
	if err != nil {
		return err
	}
	defer d.stop()
	if err := roundTrip(d, n); err != nil {
		return err
	}
	if err := inFlight(d, n); err != nil {
		return err
	}
	busy := status(d.cmd.Process.Pid, "VmRSS")
	time.Sleep(5 * time.Second) // execd returns freed memory after 2 s without activity
	idle := status(d.cmd.Process.Pid, "VmRSS")
	report("idle RSS after the calls above", fmt.Sprintf("%.1f MiB (%.1f MiB right after them)", float64(idle)/1024, float64(busy)/1024),
		"≤ 10 MiB", float64(idle) <= 10*1024)
	if err := bigOutput(d); err != nil {
		return err
	}
	if err := concurrency(bin, dir, 500); err != nil {
		return err
	}
	if err := flood(bin, cfg, dir, 100_000); err != nil {
		return err
	}
	if err := sessions(bin, cfg, dir, n); err != nil {
		return err
	}
	if err := approvalLatency(bin, dir, n); err != nil {
		return err
	}
	if err := patchBench(bin, dir); err != nil {
		return err
	}
	if err := policyBench(); err != nil {
		return err
	}
	if err := sandboxBench(bin, dir, n); err != nil {
		return err
	}
	return loginBench(bin, dir, n)
}

// daemon is a running execd with a raw JSON-RPC client.
type daemon struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	nextID atomic.Int64
	mu     sync.Mutex
	wait   map[int64]chan json.RawMessage
	// answer, if set, answers execd's requests to the client (an
	// approval's elicitation/create) with a result.
	answer func(method string) any
	wmu    sync.Mutex // serialises writes to stdin
}

func start(bin, cfg, dir string) (*daemon, error) {
	return startWith(bin, cfg, dir, map[string]any{}, nil)
}

// startWith starts execd as a client declaring caps, answering execd's
// requests with answer.
func startWith(bin, cfg, dir string, caps map[string]any, answer func(string) any) (*daemon, error) {
	cmd := exec.Command(bin, "--config", cfg, "--cwd", dir)
	// An empty HOME: the login shells measured run no dotfiles of ours.
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+dir, "HOME="+dir)
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = devnull
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	d := &daemon{cmd: cmd, stdin: stdin, wait: map[int64]chan json.RawMessage{}, answer: answer}
	go d.read(stdout)
	if _, err := d.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": caps,
		"clientInfo": map[string]string{"name": "bench", "version": "0"}}); err != nil {
		return nil, err
	}
	return d, d.write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
}

func (d *daemon) write(line []byte) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	_, err := d.stdin.Write(append(line, '\n'))
	return err
}

// request answers a request execd sent to the client.
func (d *daemon) request(method string, id json.RawMessage) {
	if d.answer == nil {
		return
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": d.answer(method)})
	_ = d.write(b)
}

func (d *daemon) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 32<<20)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		if m.Method != "" {
			d.request(m.Method, m.ID)
			continue
		}
		id, err := strconv.ParseInt(string(m.ID), 10, 64)
		if err != nil {
			continue
		}
		d.mu.Lock()
		ch := d.wait[id]
		delete(d.wait, id)
		d.mu.Unlock()
		if ch != nil {
			if m.Error != nil {
				ch <- append(json.RawMessage(`{"error":`), append(m.Error, '}')...)
			} else {
				ch <- m.Result
			}
		}
	}
}

func (d *daemon) call(method string, params any) (json.RawMessage, error) {
	id := d.nextID.Add(1)
	ch := make(chan json.RawMessage, 1)
	d.mu.Lock()
	d.wait[id] = ch
	d.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err := d.write(b); err != nil {
		return nil, err
	}
	select {
	case res := <-ch:
		if strings.HasPrefix(string(res), `{"error":`) {
			return nil, fmt.Errorf("%s: %s", method, res)
		}
		return res, nil
	case <-time.After(2 * time.Minute):
		return nil, fmt.Errorf("%s: no response", method)
	}
}

func (d *daemon) tool(name string, args map[string]any) (json.RawMessage, error) {
	return d.call("tools/call", map[string]any{"name": name, "arguments": args})
}

func (d *daemon) stop() {
	_ = d.stdin.Close()
	_ = d.cmd.Wait()
}

func startup(bin, cfg, dir string) error {
	var samples, baseline []time.Duration
	for range 30 {
		t0 := time.Now()
		if err := exec.Command("true").Run(); err != nil {
			return err
		}
		baseline = append(baseline, time.Since(t0))
		t0 = time.Now()
		d, err := start(bin, cfg, dir)
		if err != nil {
			return err
		}
		samples = append(samples, time.Since(t0))
		d.stop()
	}
	p50 := pct(samples, 50)
	report("startup to initialize response", fmt.Sprintf("p50 %v p95 %v (spawning true: p50 %v)", p50, pct(samples, 95), pct(baseline, 50)),
		"≤ 20 ms", p50 <= 20*time.Millisecond)
	d, err := start(bin, cfg, dir)
	if err != nil {
		return err
	}
	time.Sleep(200 * time.Millisecond)
	rss := status(d.cmd.Process.Pid, "VmRSS")
	d.stop()
	report("idle RSS after initialize", fmt.Sprintf("%.1f MiB", float64(rss)/1024), "≤ 10 MiB", float64(rss) <= 10*1024)
	return nil
}

func roundTrip(d *daemon, n int) error {
	args := map[string]any{"command": []string{"true"}}
	for range 50 { // warm up both paths
		if _, err := d.tool("shell", args); err != nil {
			return err
		}
		_ = exec.Command("true").Run()
	}
	var viaExecd, direct []time.Duration
	for range n { // interleaved, so drift hits both alike
		t0 := time.Now()
		if err := exec.Command("true").Run(); err != nil {
			return err
		}
		direct = append(direct, time.Since(t0))
		t0 = time.Now()
		if _, err := d.tool("shell", args); err != nil {
			return err
		}
		viaExecd = append(viaExecd, time.Since(t0))
	}
	ratio := float64(pct(viaExecd, 50)) / float64(pct(direct, 50))
	report(`shell ["true"] round trip`, fmt.Sprintf("p50 %v p95 %v; direct spawn p50 %v p95 %v; ratio of medians %.2f",
		pct(viaExecd, 50), pct(viaExecd, 95), pct(direct, 50), pct(direct, 95), ratio), "≤ 1.5× direct", ratio <= 1.5)
	return nil
}

func inFlight(d *daemon, n int) error {
	per := max(n/inFlightWorkers, 10)
	viaExecd, wallExecd, err := parallel(per, func() error {
		_, err := d.tool("shell", map[string]any{"command": []string{"true"}})
		return err
	})
	if err != nil {
		return err
	}
	direct, wallDirect, err := parallel(per, func() error { return exec.Command("true").Run() })
	if err != nil {
		return err
	}
	total := float64(inFlightWorkers * per)
	ratio := float64(pct(viaExecd, 50)) / float64(pct(direct, 50))
	report("8 calls in flight", fmt.Sprintf("p50 %v p95 %v, %.0f calls/s; direct p50 %v p95 %v, %.0f spawns/s; ratio of medians %.2f",
		pct(viaExecd, 50), pct(viaExecd, 95), total/wallExecd.Seconds(), pct(direct, 50), pct(direct, 95),
		total/wallDirect.Seconds(), ratio), "(no target)", true)
	return nil
}

// inFlightWorkers is how many calls parallel keeps in flight.
const inFlightWorkers = 8

// parallel runs one per times on each of inFlightWorkers goroutines and
// returns every call's duration and the wall time of all of them.
func parallel(per int, one func() error) ([]time.Duration, time.Duration, error) {
	var mu sync.Mutex
	var all []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	t0 := time.Now()
	for range inFlightWorkers {
		wg.Go(func() {
			for range per {
				s := time.Now()
				err := one()
				mu.Lock()
				all = append(all, time.Since(s))
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return all, time.Since(t0), firstErr
}

func bigOutput(d *daemon) error {
	t0 := time.Now()
	const script = "head -c 50000000 /dev/zero"
	res, err := d.tool("shell_command", map[string]any{"command": script, "timeout_ms": 120000})
	if err != nil {
		return err
	}
	viaExecd := time.Since(t0)
	if !strings.Contains(string(res), `"truncated":true`) {
		return fmt.Errorf("50 MB output was not reported truncated: %.200s", res)
	}
	hwm := status(d.cmd.Process.Pid, "VmHWM")
	// The baseline runs the same login-shell invocation as shell_command.
	t0 = time.Now()
	cmd := exec.Command("bash", "-lc", script)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, out)
	_ = cmd.Wait()
	direct := time.Since(t0)
	report("50 MB through shell_command", fmt.Sprintf("%v (bash -lc reading it directly: %v); peak RSS %.1f MiB",
		viaExecd.Round(time.Millisecond), direct.Round(time.Millisecond), float64(hwm)/1024),
		"peak RSS ≤ 30 MiB", float64(hwm) <= 30*1024)
	return nil
}

// status returns a /proc/PID/status field in KiB.
func status(pid int, field string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return kb
		}
	}
	return -1
}

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)].Round(time.Microsecond)
}

func report(name, value, target string, ok bool) {
	verdict := "ok  "
	if !ok {
		verdict = "MISS"
	}
	fmt.Printf("%s %-32s %s   [target %s]\n", verdict, name, value, target)
}

func cpuInfo() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	cores := strings.Count(string(b), "\nprocessor") + 1
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "model name"); ok {
			return fmt.Sprintf("%d × %s", cores, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":")))
		}
	}
	return fmt.Sprintf("%d cores", cores)
}
