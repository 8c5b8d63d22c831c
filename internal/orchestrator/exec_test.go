package orchestrator

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/execd/execd/internal/proctest"
	"github.com/execd/execd/internal/reaper"
	"github.com/execd/execd/internal/reaper/reapertest"
	"github.com/execd/execd/internal/sandbox"
)

// testReaper is the one Reaper of the test process.
var testReaper *reaper.Reaper

func TestMain(m *testing.M) {
	// Sandboxed commands and patches start this test binary as the
	// sandbox helper and the patch applier.
	if len(os.Args) > 1 && os.Args[1] == PatchApplierArg {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		code := ApplierMain(ctx, os.Stdin, os.Stdout)
		stop()
		os.Exit(code)
	}
	if code, ok := sandbox.Dispatch(); ok {
		os.Exit(code)
	}
	testReaper = reaper.New()
	os.Exit(reapertest.Run(m, testReaper))
}

// waitLimit only turns a hang into a failure; it is no performance bound.
const waitLimit = 10 * time.Second

func newTest(t *testing.T, mod func(*Options)) *Orchestrator {
	t.Helper()
	opts := Options{
		Logger:  zaptest.NewLogger(t),
		Reaper:  testReaper,
		Cwd:     t.TempDir(),
		Sandbox: SandboxPolicy{Settings: sandbox.Settings{Mode: sandbox.DangerFullAccess}, FailClosed: true},
	}
	if mod != nil {
		mod(&opts)
	}
	o, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	return o
}

func run(t *testing.T, o *Orchestrator, req ExecRequest) *ExecResult {
	t.Helper()
	type outcome struct {
		res *ExecResult
		err error
	}
	ch := make(chan outcome, 1)
	go func() {
		res, err := o.Exec(t.Context(), req)
		ch <- outcome{res, err}
	}()
	select {
	case out := <-ch:
		if out.err != nil {
			t.Fatalf("Exec(%q): %v", req.Argv, out.err)
		}
		return out.res
	case <-time.After(waitLimit):
		t.Fatalf("Exec(%q) did not return", req.Argv)
	}
	return nil
}

func sh(script string) []string { return []string{"bash", "-c", script} }

func TestExecSeparatesStreamsAndReportsExitCodes(t *testing.T) {
	o := newTest(t, nil)
	res := run(t, o, ExecRequest{Argv: sh("echo out; echo err >&2; exit 3")})
	if string(res.Stdout.Data) != "out\n" || string(res.Stderr.Data) != "err\n" || res.ExitCode != 3 || res.Signal != 0 {
		t.Fatalf("result = %+v", res)
	}
	res = run(t, o, ExecRequest{Argv: sh("kill -TERM $$")})
	if res.ExitCode != 128+int(syscall.SIGTERM) || res.Signal != syscall.SIGTERM {
		t.Fatalf("killed by SIGTERM: exit %d signal %v", res.ExitCode, res.Signal)
	}
	res = run(t, o, ExecRequest{Argv: []string{"true"}})
	if res.ExitCode != 0 || res.Stdout.Total != 0 {
		t.Fatalf("true: %+v", res)
	}
}

func TestExecRunsInItsOwnSessionWithDevNullAndNoExtraFDs(t *testing.T) {
	o := newTest(t, nil)
	res := run(t, o, ExecRequest{Argv: []string{"cat", "/proc/self/stat"}})
	stat := string(res.Stdout.Data)
	f := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
	pid := strings.Fields(stat)[0]
	if f[2] != pid || f[3] != pid { // pgrp and session are fields 5 and 6
		t.Errorf("pid %s has pgrp %s session %s; want its own session", pid, f[2], f[3])
	}
	res = run(t, o, ExecRequest{Argv: []string{"readlink", "/proc/self/fd/0"}})
	if got := string(res.Stdout.Data); got != "/dev/null\n" {
		t.Errorf("stdin = %q, want /dev/null", got)
	}
	// ls holds fd 3 itself, on the directory it lists.
	res = run(t, o, ExecRequest{Argv: []string{"ls", "/proc/self/fd"}})
	if got := string(res.Stdout.Data); got != "0\n1\n2\n3\n" {
		t.Errorf("descriptors = %q, want only 0 1 2 (and ls's own 3)", got)
	}
}

func TestExecEnvironment(t *testing.T) {
	o := newTest(t, func(opts *Options) {
		opts.BaseEnv = []string{"PATH=" + os.Getenv("PATH"), "HOME=/h", "GITHUB_TOKEN=secret", "KEEP=1"}
		opts.Env = EnvPolicy{Set: map[string]string{"ADDED": "yes"}}
	})
	res := run(t, o, ExecRequest{Argv: []string{"env"}})
	got := strings.Split(strings.TrimSpace(string(res.Stdout.Data)), "\n")
	slices.Sort(got)
	want := []string{"ADDED=yes", "HOME=/h", "KEEP=1", "PATH=" + os.Getenv("PATH")}
	if !slices.Equal(got, want) {
		t.Errorf("env = %q, want %q", got, want)
	}
	ext := newTest(t, func(opts *Options) {
		opts.BaseEnv = []string{"PATH=" + os.Getenv("PATH")}
		opts.Sandbox.Mode = sandbox.ExternalSandbox
	})
	res = run(t, ext, ExecRequest{Argv: []string{"env"}})
	if !strings.Contains(string(res.Stdout.Data), "EXECD_SANDBOX_NETWORK_DISABLED=1") {
		t.Errorf("external-sandbox without network: env %q lacks the marker", res.Stdout.Data)
	}
}

func TestExecWorkdir(t *testing.T) {
	o := newTest(t, nil)
	if err := os.Mkdir(filepath.Join(o.Cwd(), "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := run(t, o, ExecRequest{Argv: []string{"pwd"}, Workdir: "sub"})
	if got := strings.TrimSpace(string(res.Stdout.Data)); got != filepath.Join(o.Cwd(), "sub") {
		t.Errorf("pwd = %q", got)
	}
	_, err := o.Exec(t.Context(), ExecRequest{Argv: []string{"pwd"}, Workdir: "missing"})
	var we *WorkdirError
	if !errors.As(err, &we) || we.Workdir != "missing" || !strings.Contains(err.Error(), "no such directory") {
		t.Errorf("missing workdir: %v", err)
	}
	// The turn directory removed since start: named, not "cannot start".
	if err := os.Remove(filepath.Join(o.Cwd(), "sub")); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(o.Cwd(), "gone")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gone := newTest(t, func(opts *Options) { opts.Cwd = dir })
	if err := os.Remove(gone.Cwd()); err != nil {
		t.Fatal(err)
	}
	_, err = gone.Exec(t.Context(), ExecRequest{Argv: []string{"pwd"}})
	if want := "workdir " + gone.Cwd() + ": no such directory"; err == nil || err.Error() != want {
		t.Errorf("removed turn directory: %v; want %q", err, want)
	}
}

// A command line past the kernel's limits says which limit, and what to
// do instead (SPEC §3).
func TestExecArgMax(t *testing.T) {
	o := newTest(t, nil)
	for _, tt := range []struct {
		argv []string
		want string
	}{
		{[]string{"echo", strings.Repeat("x", 200<<10)}, "MAX_ARG_STRLEN"},
		{append([]string{"echo"}, slices.Repeat([]string{strings.Repeat("x", 100<<10)}, 100)...), "ARG_MAX"},
	} {
		_, err := o.Exec(t.Context(), ExecRequest{Argv: tt.argv})
		var se *SpawnError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "write a long script to a file") {
			t.Errorf("%d arguments: %v; want the limit %s named", len(tt.argv), err, tt.want)
		}
	}
}

func TestExecSpawnErrors(t *testing.T) {
	o := newTest(t, nil)
	_, err := o.Exec(t.Context(), ExecRequest{Argv: []string{"no-such-program-xyz"}})
	var se *SpawnError
	if !errors.As(err, &se) || !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "no-such-program-xyz") {
		t.Errorf("unknown program: %v", err)
	}
	if _, err := o.Exec(t.Context(), ExecRequest{}); !errors.As(err, &se) {
		t.Errorf("empty argv: %v", err)
	}
}

func TestExecFailsClosedWithoutSandbox(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	noLandlock := &sandbox.Support{OS: "linux", Seccomp: true, UserNS: true}
	closed := newTest(t, func(opts *Options) {
		opts.Sandbox = SandboxPolicy{Settings: sandbox.Settings{Mode: sandbox.WorkspaceWrite}, FailClosed: true}
		opts.Support = noLandlock
	})
	_, err := closed.Exec(t.Context(), ExecRequest{Argv: []string{"touch", marker}})
	var ue *sandbox.UnavailableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "lacks Landlock") {
		t.Fatalf("workspace-write, fail_closed: err = %v, want *sandbox.UnavailableError naming Landlock", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran although the sandbox is unavailable")
	}
	open := newTest(t, func(opts *Options) {
		opts.Sandbox = SandboxPolicy{Settings: sandbox.Settings{Mode: sandbox.ReadOnly}, FailClosed: false}
		opts.Support = noLandlock
	})
	if res := run(t, open, ExecRequest{Argv: []string{"touch", marker}}); res.ExitCode != 0 {
		t.Fatalf("fail_closed=false: %+v", res)
	}
	if open.Sandboxed() {
		t.Error("Sandboxed() = true although nothing is enforced")
	}
}

func TestExecTimeoutKillsTheGroup(t *testing.T) {
	o := newTest(t, nil)
	const marker = "sleep 811.5"
	res := run(t, o, ExecRequest{Argv: sh(marker + " & " + marker + "; echo never"), Timeout: 300 * time.Millisecond})
	if !res.TimedOut || res.ExitCode != ExitTimedOut || res.Signal != 0 {
		t.Fatalf("timeout: %+v", res)
	}
	if strings.Contains(string(res.Stdout.Data), "never") {
		t.Fatal("the script went on after its timeout")
	}
	proctest.Gone(t, marker, waitLimit)
}

func TestExecCancellationKillsTheGroupAndRecordsTheCause(t *testing.T) {
	o := newTest(t, nil)
	const marker = "sleep 812.5"
	ctx, cancel := context.WithCancelCause(t.Context())
	done := make(chan *ExecResult, 1)
	go func() {
		res, err := o.Exec(ctx, ExecRequest{Argv: sh(marker + " & " + marker)})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	proctest.Running(t, marker, 2, waitLimit)
	why := errors.New("client cancelled")
	cancel(why)
	select {
	case res := <-done:
		if !errors.Is(res.Stopped, why) || res.Signal != syscall.SIGKILL {
			t.Fatalf("cancelled: stopped %v signal %v", res.Stopped, res.Signal)
		}
	case <-time.After(waitLimit):
		t.Fatal("cancelled command did not return")
	}
	proctest.Gone(t, marker, waitLimit)
}

func TestExecReturnsWhileBackgroundDescendantsHoldThePipes(t *testing.T) {
	o := newTest(t, nil)
	tests := map[string]string{
		"background": "sleep 813.1 & echo hi",
		"setsid":     "setsid sleep 813.2 & echo hi",
		"nohup":      "nohup sleep 813.3 & echo hi",
		"late write": "(sleep 0.05; echo late; exec sleep 813.4) & echo hi",
	}
	for name, script := range tests {
		t.Run(name, func(t *testing.T) {
			marker := script[strings.Index(script, "sleep 813"):][:len("sleep 813.1")]
			res := run(t, o, ExecRequest{Argv: sh(script)})
			if res.ExitCode != 0 || !strings.HasPrefix(string(res.Stdout.Data), "hi\n") {
				t.Fatalf("result %+v, stdout %q", res, res.Stdout.Data)
			}
			if name == "late write" && !strings.Contains(string(res.Stdout.Data), "late") {
				t.Errorf("output written within the grace period was lost: %q", res.Stdout.Data)
			}
			// The descendant is left running (SPEC §9.3) until shutdown.
			for _, pid := range proctest.Running(t, marker, 1, waitLimit) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			proctest.Gone(t, marker, waitLimit)
		})
	}
}

func TestExecBoundsCapturedOutput(t *testing.T) {
	o := newTest(t, nil)
	var mu sync.Mutex
	seen := map[Stream]int64{}
	res := run(t, o, ExecRequest{
		Argv: sh("head -c 3000000 /dev/zero; head -c 1500000 /dev/zero >&2"),
		Output: func(s Stream, chunk []byte) {
			mu.Lock()
			seen[s] += int64(len(chunk))
			mu.Unlock()
		},
	})
	if len(res.Stdout.Data) != CaptureLimit || res.Stdout.Total != 3000000 || !res.Stdout.Dropped() {
		t.Errorf("stdout kept %d of %d", len(res.Stdout.Data), res.Stdout.Total)
	}
	if len(res.Stderr.Data) != CaptureLimit || res.Stderr.Total != 1500000 {
		t.Errorf("stderr kept %d of %d", len(res.Stderr.Data), res.Stderr.Total)
	}
	if seen[Stdout] != 3000000 || seen[Stderr] != 1500000 {
		t.Errorf("observer saw %v", seen)
	}
}

func TestExecKeepsInvalidUTF8ForTheFormatter(t *testing.T) {
	o := newTest(t, nil)
	res := run(t, o, ExecRequest{Argv: []string{"printf", `a\377b`}})
	if string(res.Stdout.Data) != "a\xffb" {
		t.Fatalf("stdout = %q", res.Stdout.Data)
	}
}

func TestConcurrentExecs(t *testing.T) {
	o := newTest(t, nil)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			res, err := o.Exec(t.Context(), ExecRequest{Argv: sh("echo " + strconv.Itoa(i) + "; exit " + strconv.Itoa(i))})
			if err != nil || res.ExitCode != i || strings.TrimSpace(string(res.Stdout.Data)) != strconv.Itoa(i) {
				t.Errorf("exec %d: %v %+v", i, err, res)
			}
		})
	}
	wg.Wait()
}

// SPEC §9.3: a background descendant is left running, so its output after
// the call returned must not kill it with SIGPIPE.
func TestBackgroundDescendantsKeepWritingAfterTheCall(t *testing.T) {
	o := newTest(t, nil)
	alive := filepath.Join(t.TempDir(), "alive")
	res := run(t, o, ExecRequest{Argv: sh("(sleep 0.5; echo late; echo late >&2; touch " + alive + ") & echo started")})
	if string(res.Stdout.Data) != "started\n" {
		t.Fatalf("stdout %q", res.Stdout.Data)
	}
	deadline := time.Now().Add(waitLimit)
	for {
		if _, err := os.Stat(alive); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background job died when it wrote after the call returned")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Close stops reading what background descendants write, without waiting
// for them to exit.
func TestCloseStopsDiscardingLeftoverOutput(t *testing.T) {
	o := newTest(t, nil)
	const marker = "sleep 814.5"
	run(t, o, ExecRequest{Argv: sh("(exec " + marker + ") & echo started")})
	done := make(chan struct{})
	go func() {
		o.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(waitLimit):
		t.Fatal("Close waited for the background process")
	}
	for _, pid := range proctest.Running(t, marker, 1, waitLimit) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	proctest.Gone(t, marker, waitLimit)
}

// At exec.max_concurrent, further one-shot commands wait for a place in
// the order they came, and a cancelled call stops waiting.
func TestExecMaxConcurrentQueuesInOrder(t *testing.T) {
	o := newTest(t, func(opts *Options) { opts.MaxConcurrent = 1 })
	gate := filepath.Join(t.TempDir(), "go")
	started := make(chan string, 4)
	exec := func(ctx context.Context, name string, argv []string) chan error {
		done := make(chan error, 1)
		go func() {
			_, err := o.Exec(ctx, ExecRequest{Argv: argv, Timeout: waitLimit, OnStart: func(string) { started <- name }})
			done <- err
		}()
		return done
	}
	first := exec(t.Context(), "first", []string{"bash", "-c", `while [ ! -e "$0" ]; do sleep 0.01; done`, gate})
	if got := <-started; got != "first" {
		t.Fatalf("started %s", got)
	}
	second := exec(t.Context(), "second", []string{"true"})
	time.Sleep(50 * time.Millisecond) // second queues before third
	ctx, cancel := context.WithCancelCause(t.Context())
	cancelled := exec(ctx, "cancelled", []string{"true"})
	time.Sleep(50 * time.Millisecond)
	third := exec(t.Context(), "third", []string{"true"})
	time.Sleep(100 * time.Millisecond) // a wrong orchestrator starts them meanwhile
	select {
	case got := <-started:
		t.Fatalf("%s started while the only place was taken", got)
	default:
	}
	cancel(errors.New("client cancelled"))
	if err := <-cancelled; err == nil || !strings.Contains(err.Error(), "exec.max_concurrent") || !strings.Contains(err.Error(), "client cancelled") {
		t.Fatalf("cancelled while waiting: %v", err)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"second", "third"} {
		select {
		case got := <-started:
			if got != want {
				t.Fatalf("started %s, want %s", got, want)
			}
		case <-time.After(waitLimit):
			t.Fatalf("%s never started", want)
		}
	}
	for _, done := range []chan error{first, second, third} {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
