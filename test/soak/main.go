// Command soak runs execd under a long mixed load (`make soak`): calls of
// every kind (one-shots, terminal and pipe sessions, patches, cancelled
// calls) at 16 in flight, beside a fork loop, with a stderr that drains
// slowly, through the official MCP Go SDK client. It samples execd's
// threads, descriptors and RSS, and at the end closes stdin and looks
// for processes left behind. It fails on any lost or wrong reply, a leak
// of descriptors or threads, RSS that keeps growing, or a leftover.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	duration := flag.Duration("duration", 10*time.Minute, "how long to load execd")
	inFlight := flag.Int("in-flight", 16, "calls in flight")
	bin := flag.String("execd", "bin/execd", "the execd binary")
	flag.Parse()
	if err := run(*bin, *duration, *inFlight); err != nil {
		fmt.Fprintln(os.Stderr, "soak: FAIL:", err)
		os.Exit(1)
	}
	fmt.Println("soak: PASS")
}

// marker is in the command line of every process the soak starts, so
// that leftovers can be found.
var marker = fmt.Sprintf("execd-soak-%d", rand.Uint64())

func run(bin string, duration time.Duration, inFlight int) error {
	dir, err := os.MkdirTemp("", "execd-soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "config.toml")
	// Every call logs; a generous level makes stderr the bottleneck.
	if err := os.WriteFile(cfg, []byte("[log]\nlevel = \"debug\"\n"), 0o644); err != nil {
		return err
	}
	cmd := exec.Command(bin, "serve", "--config", cfg, "--cwd", dir)
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	var logBytes atomic.Int64
	go drainSlowly(stderr, &logBytes)
	client := mcp.NewClient(&mcp.Implementation{Name: "execd-soak", Version: "0"}, nil)
	ctx := context.Background()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	pid := cmd.Process.Pid
	fmt.Printf("soak: execd %d, %v at %d in flight, marker %s\n", pid, duration, inFlight, marker)

	loopCtx, stopLoop := context.WithCancel(ctx)
	loopDone := make(chan error, 1)
	go func() { loopDone <- forkLoop(loopCtx, cs, duration) }()

	var st stats
	sampler := newSampler(pid)
	deadline := time.Now().Add(duration)
	var wg sync.WaitGroup
	for w := range inFlight {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for time.Now().Before(deadline) {
				kind := kinds[r.IntN(len(kinds))]
				err := kind.run(ctx, cs, dir, w)
				st.record(kind.name, err)
			}
		})
	}
	stopSampling := sampler.every(5 * time.Second)
	wg.Wait()
	stopLoop()
	if err := <-loopDone; err != nil {
		st.record("fork-loop", err)
	}
	settled := sampler.settle()
	stopSampling()
	closeErr := cs.Close() // stdin EOF; waits for execd's exit
	time.Sleep(500 * time.Millisecond)
	left := leftovers()

	fmt.Print(st.String())
	fmt.Print(sampler.String())
	fmt.Printf("soak: %d bytes of log read (slowly)\n", logBytes.Load())
	var fails []string
	if n := st.failures(); n > 0 {
		fails = append(fails, fmt.Sprintf("%d calls failed or were answered wrongly (first: %s)", n, st.first))
	}
	fails = append(fails, sampler.leaks(settled)...)
	if closeErr != nil {
		fails = append(fails, "execd did not exit cleanly at stdin's end: "+closeErr.Error())
	}
	if len(left) > 0 {
		fails = append(fails, fmt.Sprintf("%d processes left behind: %v", len(left), left))
	}
	if len(fails) > 0 {
		return errors.New(strings.Join(fails, "; "))
	}
	return nil
}

// drainSlowly reads execd's stderr 512 bytes at a time, 20 times a second:
// slower than execd logs under this load.
func drainSlowly(r io.Reader, n *atomic.Int64) {
	b := make([]byte, 512)
	for {
		m, err := r.Read(b)
		n.Add(int64(m))
		if err != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// forkLoop runs, for the whole soak, a command that forks a short-lived
// background process every few milliseconds.
func forkLoop(ctx context.Context, cs *mcp.ClientSession, d time.Duration) error {
	script := `while :; do sh -c 'sleep 0.2; true' "$0" & sleep 0.005; done`
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{
		"command": []string{"sh", "-c", script, marker}, "timeout_ms": (d + time.Minute).Milliseconds()}})
	if ctx.Err() != nil {
		return nil // cancelled at the end, as meant
	}
	return err
}

// kind is one sort of call the soak makes.
type kind struct {
	name string
	run  func(ctx context.Context, cs *mcp.ClientSession, dir string, worker int) error
}

var kinds = []kind{
	{"one-shot", oneShot},
	{"shell_command", shellCommand},
	{"tty session", ttySession},
	{"pipe session", pipeSession},
	{"patch", patch},
	{"cancel", cancelled},
}

func callText(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	if res.IsError {
		return b.String(), fmt.Errorf("tool error: %.200s", b.String())
	}
	return b.String(), nil
}

func expect(text, want string) error {
	if !strings.Contains(text, want) {
		return fmt.Errorf("want %q in %.300q", want, text)
	}
	return nil
}

func oneShot(ctx context.Context, cs *mcp.ClientSession, _ string, _ int) error {
	text, err := callText(ctx, cs, "shell", map[string]any{"command": []string{"sh", "-c", "seq 1 2000 | tail -n 1; echo err >&2", marker}})
	if err != nil {
		return err
	}
	return expect(text, "2000")
}

func shellCommand(ctx context.Context, cs *mcp.ClientSession, _ string, _ int) error {
	text, err := callText(ctx, cs, "shell_command", map[string]any{"command": "echo $((6*7)) # " + marker, "login": false})
	if err != nil {
		return err
	}
	return expect(text, "42")
}

// ttySession opens a terminal session running a read loop, has it echo a
// line, and tells it to exit.
func ttySession(ctx context.Context, cs *mcp.ClientSession, _ string, _ int) error {
	args := map[string]any{"cmd": "sh -c 'while read l; do echo got-$l; [ $l = bye ] && exit 0; done' " + marker, "tty": true, "yield_time_ms": 200}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec_command", Arguments: args})
	if err != nil {
		return err
	}
	id, err := sessionID(res)
	if err != nil {
		return err
	}
	var out strings.Builder
	for _, chars := range []string{"hello\n", "bye\n"} {
		text, err := callText(ctx, cs, "write_stdin", map[string]any{"session_id": id, "chars": chars, "yield_time_ms": 2000})
		out.WriteString(text)
		if err != nil {
			return err
		}
	}
	// The session may need a moment to exit after bye: poll it out.
	for i := 0; i < 20 && !strings.Contains(out.String(), "exited with code"); i++ {
		text, err := callText(ctx, cs, "write_stdin", map[string]any{"session_id": id, "chars": "", "yield_time_ms": 500})
		out.WriteString(text)
		if err != nil {
			break // gone: "Unknown process id" once it exited and was reported
		}
	}
	if err := expect(out.String(), "got-hello"); err != nil {
		return err
	}
	return expect(out.String(), "got-bye")
}

func sessionID(res *mcp.CallToolResult) (int, error) {
	m, ok := res.StructuredContent.(map[string]any)
	if !ok {
		return 0, fmt.Errorf("exec_command: no structured content (%v)", res.Content)
	}
	id, ok := m["session_id"].(float64)
	if !ok {
		return 0, fmt.Errorf("exec_command left no session: %v", m)
	}
	return int(id), nil
}

// pipeSession runs a command on pipes (whose stdin is closed: only
// terminal sessions take input) and polls its output until it exits.
func pipeSession(ctx context.Context, cs *mcp.ClientSession, _ string, _ int) error {
	args := map[string]any{"cmd": "sh -c 'echo one; sleep 0.3; echo two' " + marker, "yield_time_ms": 100}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec_command", Arguments: args})
	if err != nil {
		return err
	}
	var out strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			out.WriteString(t.Text)
		}
	}
	if !strings.Contains(out.String(), "exited with code") {
		id, err := sessionID(res)
		if err != nil {
			return err
		}
		for i := 0; i < 20 && !strings.Contains(out.String(), "exited with code"); i++ {
			text, err := callText(ctx, cs, "write_stdin", map[string]any{"session_id": id, "chars": "", "yield_time_ms": 500})
			out.WriteString(text)
			if err != nil {
				return err
			}
		}
	}
	if err := expect(out.String(), "one"); err != nil {
		return err
	}
	return expect(out.String(), "two")
}

func patch(ctx context.Context, cs *mcp.ClientSession, dir string, worker int) error {
	name := fmt.Sprintf("soak-%d.txt", worker)
	add := fmt.Sprintf("*** Begin Patch\n*** Add File: %s\n+one\n+two\n*** End Patch", name)
	if _, err := callText(ctx, cs, "apply_patch", map[string]any{"input": add}); err != nil {
		return err
	}
	upd := fmt.Sprintf("*** Begin Patch\n*** Update File: %s\n@@\n one\n-two\n+three\n*** End Patch", name)
	if _, err := callText(ctx, cs, "apply_patch", map[string]any{"input": upd}); err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil || string(b) != "one\nthree\n" {
		return fmt.Errorf("patched file: %q %v", b, err)
	}
	del := fmt.Sprintf("*** Begin Patch\n*** Delete File: %s\n*** End Patch", name)
	_, err = callText(ctx, cs, "apply_patch", map[string]any{"input": del})
	return err
}

// cancelled starts a long command and cancels the call: the SDK sends
// notifications/cancelled and returns; execd must kill the command.
func cancelled(ctx context.Context, cs *mcp.ClientSession, _ string, _ int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(50+rand.IntN(200))*time.Millisecond)
	defer cancel()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{
		"command": []string{"sh", "-c", "sleep 30", marker}}})
	if err == nil {
		return errors.New("a call cancelled after at most 250 ms returned a result for sleep 30")
	}
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// stats counts calls and failures by kind.
type stats struct {
	mu     sync.Mutex
	calls  map[string]int
	failed map[string]int
	first  string
}

func (s *stats) record(kind string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls == nil {
		s.calls, s.failed = map[string]int{}, map[string]int{}
	}
	s.calls[kind]++
	if err != nil {
		s.failed[kind]++
		if s.first == "" {
			s.first = kind + ": " + err.Error()
		}
	}
}

func (s *stats) failures() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, f := range s.failed {
		n += f
	}
	return n
}

func (s *stats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, k := range append(kinds, kind{name: "fork-loop"}) {
		if s.calls[k.name] > 0 {
			fmt.Fprintf(&b, "soak: %-14s %6d calls, %d failed\n", k.name, s.calls[k.name], s.failed[k.name])
		}
	}
	return b.String()
}

// sample is execd's resource use at one moment.
type sample struct{ threads, fds, rssKiB int }

// sampler records execd's threads, descriptors and RSS.
type sampler struct {
	pid     int
	mu      sync.Mutex
	samples []sample
}

func newSampler(pid int) *sampler { return &sampler{pid: pid} }

func (s *sampler) take() sample {
	x := sample{threads: statusField(s.pid, "Threads"), rssKiB: statusField(s.pid, "VmRSS")}
	if ents, err := os.ReadDir("/proc/" + strconv.Itoa(s.pid) + "/fd"); err == nil {
		x.fds = len(ents)
	}
	s.mu.Lock()
	s.samples = append(s.samples, x)
	s.mu.Unlock()
	return x
}

func (s *sampler) every(d time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s.take()
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// settle samples once the load has stopped and the sessions ended.
func (s *sampler) settle() sample {
	time.Sleep(2 * time.Second)
	return s.take()
}

func (s *sampler) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.samples) == 0 {
		return "soak: no samples\n"
	}
	lo, hi := s.samples[0], s.samples[0]
	for _, x := range s.samples {
		lo = sample{min(lo.threads, x.threads), min(lo.fds, x.fds), min(lo.rssKiB, x.rssKiB)}
		hi = sample{max(hi.threads, x.threads), max(hi.fds, x.fds), max(hi.rssKiB, x.rssKiB)}
	}
	return fmt.Sprintf("soak: %d samples: threads %d..%d, fds %d..%d, RSS %.1f..%.1f MiB\n",
		len(s.samples), lo.threads, hi.threads, lo.fds, hi.fds, float64(lo.rssKiB)/1024, float64(hi.rssKiB)/1024)
}

// leaks compares the settled sample with the first one taken under load
// (after a minute's warm-up where the soak is that long): descriptors
// must be back where they were, threads stay few, and RSS must not have
// kept growing.
func (s *sampler) leaks(settled sample) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.samples) < 2 {
		return []string{"too few samples"}
	}
	base := s.samples[min(12, len(s.samples)-2)] // about a minute in
	var out []string
	if settled.fds > base.fds+8 {
		out = append(out, fmt.Sprintf("descriptors: %d at rest after the load, %d under load a minute in", settled.fds, base.fds))
	}
	if settled.threads > 64 {
		out = append(out, fmt.Sprintf("threads: %d at rest after the load", settled.threads))
	}
	if settled.rssKiB > base.rssKiB*3/2 && settled.rssKiB-base.rssKiB > 32<<10 {
		out = append(out, fmt.Sprintf("RSS grew from %d KiB to %d KiB", base.rssKiB, settled.rssKiB))
	}
	return out
}

func statusField(pid int, name string) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte(name+":")); ok {
			n, _ := strconv.Atoi(strings.Fields(string(v))[0])
			return n
		}
	}
	return -1
}

// leftovers lists the processes with the soak's marker in their command
// line.
func leftovers() []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil || e.Name() == strconv.Itoa(os.Getpid()) {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(marker)) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(bytes.TrimRight(b, "\x00")), "\x00", " "))
		}
	}
	return out
}
