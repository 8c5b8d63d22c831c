//go:build linux

package reaper

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/execd/execd/internal/procfs"
	"github.com/execd/execd/internal/proctest"
)

// testReaper serves every test of this process: a process has at most one
// Reaper. The child process of TestShutdownKillsEverythingAndEscalates
// makes its own instead.
var testReaper *Reaper

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "1" {
		testReaper = New()
	}
	os.Exit(m.Run())
}

// waitLimit only turns a hang into a failure.
const waitLimit = 10 * time.Second

func bash(script string) *exec.Cmd {
	cmd := exec.Command("bash", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd
}

func TestStartRequiresOwnGroup(t *testing.T) {
	if err := testReaper.Start(exec.Command("true")); !errors.Is(err, ErrNoGroup) {
		t.Fatalf("Start without a group = %v, want ErrNoGroup", err)
	}
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := testReaper.Start(cmd); err != nil {
		t.Fatal(err)
	}
	if _, err := testReaper.Wait(cmd); err != nil {
		t.Fatal(err)
	}
}

func TestOrphansAreAdoptedAndReaped(t *testing.T) {
	if !testReaper.Adopts() {
		t.Skip("this kernel does not support PR_SET_CHILD_SUBREAPER")
	}
	const marker = "sleep 0.317"
	cmd := bash(marker + " & setsid " + marker + " & exit 0")
	if err := testReaper.Start(cmd); err != nil {
		t.Fatal(err)
	}
	if _, err := testReaper.Wait(cmd); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	pids := proctest.Running(t, marker, 2, waitLimit)
	for _, pid := range pids {
		if ppid := parentOf(pid); ppid != os.Getpid() {
			t.Errorf("orphan %d has parent %d, want this process %d", pid, ppid, os.Getpid())
		}
	}
	// When the orphans exit they must be reaped, not left as zombies.
	deadline := time.Now().Add(waitLimit)
	for _, pid := range pids {
		for exists(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("orphan %d was not reaped", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func TestWaitOwnsDirectChildrenDespiteReaping(t *testing.T) {
	// Many short children exiting while orphans are being reaped: every
	// Wait must still get its own child's status.
	for i := range 50 {
		code := i % 7
		cmd := bash("sleep 0.01 & exit " + strconv.Itoa(code))
		if err := testReaper.Start(cmd); err != nil {
			t.Fatal(err)
		}
		_, err := testReaper.Wait(cmd)
		if got := cmd.ProcessState.ExitCode(); got != code {
			t.Fatalf("run %d: exit code %d (err %v), want %d", i, got, err, code)
		}
	}
}

func TestShutdownKillsEverythingAndEscalates(t *testing.T) {
	// A private Reaper would be a second one in this process; instead this
	// test runs in a child process that owns its own.
	if os.Getenv(childEnv) == "1" {
		shutdownChild(t)
		return
	}
	if !testReaper.Adopts() {
		t.Skip("this kernel does not support PR_SET_CHILD_SUBREAPER")
	}
	runChild(t)
	proctest.Gone(t, "sleep 913.5", waitLimit)
}

// shutdownChild starts descendants of every kind, including ones that
// ignore SIGTERM, and checks Shutdown leaves none.
func shutdownChild(t *testing.T) {
	// The scripts spell the sleep so that only the sleeps themselves
	// carry the marker: a bash whose script mentions it would be counted
	// before it set its trap.
	const marker, sleep = "sleep 913.5", "sleep $((9135/10)).5"
	r := New()
	defer r.Close()
	scripts := []string{
		sleep + " & " + sleep + " & wait",              // group members
		"setsid " + sleep + " & exit 0",                // own session, orphaned
		"nohup " + sleep + " >/dev/null 2>&1 & exit 0", // nohup ignores SIGHUP
		"trap '' TERM; " + sleep + "; " + sleep,        // ignores SIGTERM: needs SIGKILL
		"setsid bash -c 'trap \"\" TERM; setsid " + sleep + " & " + sleep + "' & exit 0",
	}
	var waits []chan error
	for _, s := range scripts {
		cmd := bash(s)
		if err := r.Start(cmd); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := r.Wait(cmd); done <- err }()
		waits = append(waits, done)
	}
	proctest.Running(t, marker, 7, waitLimit) // every sleep: the traps are set
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	start := time.Now()
	if err := r.Shutdown(ctx, 300*time.Millisecond); err != nil {
		t.Fatalf("Shutdown: %v (left: %v)", err, proctest.Find(marker))
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("Shutdown took %v: the SIGTERM-ignoring process cannot be gone before the grace period", d)
	}
	for _, w := range waits {
		<-w
	}
	if left := proctest.Find(marker); len(left) > 0 {
		t.Fatalf("left running: %v", left)
	}
	cmd := bash("true")
	if err := r.Start(cmd); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Shutdown = %v, want ErrClosed", err)
	}
}

// childEnv marks a test binary that runs one test in a child process of
// its own, with a Reaper of its own (a process has at most one).
const childEnv = "REAPER_TEST_CHILD"

// runChild runs the calling test again in a child process (its own
// session, with childEnv and env set) and fails unless it passes there.
func runChild(t *testing.T, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v")
	cmd.Env = append(append(os.Environ(), childEnv+"=1"), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := runOwned(cmd)
	if err != nil || !strings.Contains(out, "--- PASS") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// runOwned runs cmd through the package's reaper and returns its output.
func runOwned(cmd *exec.Cmd) (string, error) {
	var b strings.Builder
	cmd.Stdout, cmd.Stderr = &b, &b
	if err := testReaper.Start(cmd); err != nil {
		return "", err
	}
	_, err := testReaper.Wait(cmd)
	return b.String(), err
}

func TestSignalGroup(t *testing.T) {
	cmd := bash("sleep 100 & sleep 100")
	if err := testReaper.Start(cmd); err != nil {
		t.Fatal(err)
	}
	if err := testReaper.Signal(cmd, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = testReaper.Wait(cmd)
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signal() != syscall.SIGKILL {
		t.Fatalf("status %v, want killed by SIGKILL", ws)
	}
	if err := testReaper.Signal(cmd, syscall.SIGKILL); err != nil {
		t.Fatalf("signalling a gone group = %v, want nil", err)
	}
	// A command the reaper did not start is never signalled.
	stranger := exec.Command("true")
	stranger.Process = &os.Process{Pid: cmd.Process.Pid}
	if err := testReaper.Signal(stranger, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

// SignalSession reaches the jobs an interactive shell put in groups of
// their own.
func TestSignalSessionReachesEveryGroup(t *testing.T) {
	const marker = "sleep 914.5"
	cmd := exec.Command("bash", "--norc", "-i")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := testReaper.Start(cmd); err != nil {
		t.Fatal(err)
	}
	// Without a terminal bash -i still runs jobs, each in its own group.
	if _, err := io.WriteString(in, "set -m; "+marker+" & "+marker+" &\n"); err != nil {
		t.Fatal(err)
	}
	pids := proctest.Running(t, marker, 2, waitLimit)
	for _, pid := range pids {
		if pgid, _ := syscall.Getpgid(pid); pgid == cmd.Process.Pid {
			t.Fatalf("job %d is in the shell's group: the test does not test anything", pid)
		}
	}
	if err := testReaper.SignalSession(cmd, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = testReaper.Wait(cmd)
	proctest.Gone(t, marker, waitLimit)
}

// An orphan that exits while its command still runs is reaped within
// about OrphanPoll, not when the command ends.
func TestOrphansAreReapedWhileTheirCommandRuns(t *testing.T) {
	if !testReaper.Adopts() {
		t.Skip("this kernel does not support PR_SET_CHILD_SUBREAPER")
	}
	cmd := bash("(sleep 0.1 &); sleep 4")
	if err := testReaper.Start(cmd); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = testReaper.Signal(cmd, syscall.SIGKILL)
		_, _ = testReaper.Wait(cmd)
	}()
	deadline := time.Now().Add(3 * time.Second) // the command runs 4 s
	time.Sleep(300 * time.Millisecond)          // the orphan has exited by now
	for len(zombieChildren()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("zombie orphans while their command runs: %v", zombieChildren())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// scanChildren, the fallback for kernels without children files, finds
// the same children.
func TestScanChildrenMatchesChildrenFiles(t *testing.T) {
	cmd := bash("sleep 5")
	if err := testReaper.Start(cmd); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = testReaper.Signal(cmd, syscall.SIGKILL)
		_, _ = testReaper.Wait(cmd)
	}()
	if !slices.Contains(scanChildren(), cmd.Process.Pid) || !slices.Contains(listChildren(), cmd.Process.Pid) {
		t.Fatalf("child %d: scan %v, files %v", cmd.Process.Pid, scanChildren(), listChildren())
	}
}

// zombieChildren lists this process's children that have exited and not
// been reaped.
func zombieChildren() []int {
	var z []int
	for _, pid := range listChildren() {
		if s, err := procfs.ReadStat(pid); err == nil && s.State == 'Z' {
			z = append(z, pid)
		}
	}
	return z
}

func parentOf(pid int) int {
	s, err := procfs.ReadStat(pid)
	if err != nil {
		return -1
	}
	return s.PPID
}

func exists(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

func TestInheritedDescriptorsBecomeCloseOnExec(t *testing.T) {
	fd, err := syscall.Dup(0) // dup(2) does not set FD_CLOEXEC, like a leaky parent
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if flags := fdFlags(t, fd); flags&syscall.FD_CLOEXEC != 0 {
		t.Fatalf("setup: fd %d already close-on-exec", fd)
	}
	closeInheritedOnExec()
	if flags := fdFlags(t, fd); flags&syscall.FD_CLOEXEC == 0 {
		t.Fatalf("fd %d is still inherited by children", fd)
	}
	for std := range 3 {
		if fdFlags(t, std)&syscall.FD_CLOEXEC != 0 {
			t.Fatalf("fd %d must stay inheritable", std)
		}
	}
}

func fdFlags(t *testing.T, fd int) int {
	t.Helper()
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
	if errno != 0 {
		t.Fatalf("fcntl(%d): %v", fd, errno)
	}
	return int(flags)
}

// Waiting for many running commands holds no OS thread per command.
func TestWaitHoldsNoThreadPerCommand(t *testing.T) {
	const n = 200
	if testReaper.exits == nil {
		t.Skip("no epoll here: Wait blocks a thread per command, as os/exec does")
	}
	before := threads(t)
	release, hold, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer release.Close()
	errs := make(chan error, n)
	for range n {
		cmd := exec.Command("cat") // exits when hold is closed
		cmd.Stdin = release
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := testReaper.Start(cmd); err != nil {
			t.Fatal(err)
		}
		go func() { _, err := testReaper.Wait(cmd); errs <- err }()
	}
	time.Sleep(200 * time.Millisecond) // let every Wait block; a thread each would show now
	during := threads(t)
	hold.Close()
	for range n {
		select {
		case err := <-errs:
			if err != nil {
				t.Errorf("Wait: %v", err)
			}
		case <-time.After(waitLimit):
			t.Fatal("a Wait did not return after its command exited")
		}
	}
	t.Logf("threads: %d before, %d while waiting for %d commands", before, during, n)
	if during-before >= n/4 {
		t.Errorf("threads went from %d to %d while waiting for %d commands", before, during, n)
	}
}

func threads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	t.Fatal("no Threads in /proc/self/status")
	return 0
}

// Containment names the cgroup in force, or says why there is none.
func TestContainmentIsReported(t *testing.T) {
	c := testReaper.Containment()
	t.Log(c)
	want := "cgroup " + "/"
	if testReaper.cg != nil {
		want = testReaper.cg.path
	} else if testReaper.cgErr != nil {
		want = testReaper.cgErr.Error()
	}
	if !strings.Contains(c, want) {
		t.Errorf("Containment() = %q, want it to say %q", c, want)
	}
}

// A process that forks the next of its kind into a new session and exits
// at once is never found by a scan of its parent's children; Shutdown
// must still leave none (SPEC §3.2: stopped before killed). The test
// takes the slowest path, with no cgroup and children found by scanning
// /proc, as on kernels without CONFIG_PROC_CHILDREN.
func TestShutdownStopsAForkRacer(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		racerChild(t)
		return
	}
	if !testReaper.Adopts() {
		t.Skip("this kernel does not support PR_SET_CHILD_SUBREAPER")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 for the racer")
	}
	marker := fmt.Sprintf("execd-racer-%d", os.Getpid())
	defer proctest.Kill(marker) // what a failing child leaves
	runChild(t, "RACER_MARKER="+marker)
}

func racerChild(t *testing.T) {
	marker := os.Getenv("RACER_MARKER")
	r := newReaper(nil, errors.New("left out by the test"))
	defer r.Close()
	r.children = scanChildren
	cmd := exec.Command("python3", "-c", proctest.ForkRacer, marker)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := r.Start(cmd); err != nil {
		t.Fatal(err)
	}
	_, _ = r.Wait(cmd) // the first one exits at once
	proctest.Running(t, marker, 1, waitLimit)
	time.Sleep(100 * time.Millisecond) // a few dozen generations
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := r.Shutdown(ctx, 100*time.Millisecond); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	time.Sleep(100 * time.Millisecond) // an escaped racer would have run on meanwhile
	if left := proctest.Find(marker); len(left) > 0 {
		t.Fatalf("left running after Shutdown: %v", left)
	}
}

// A cgroup left by an execd that is gone is removed by the next one; one
// of a live process is not.
func TestStaleCgroupsAreRemoved(t *testing.T) {
	if testReaper.cg == nil {
		t.Skipf("no cgroup: %v", testReaper.cgErr)
	}
	parent := filepath.Dir(testReaper.cg.path)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	ns := pidNamespace()
	stale := filepath.Join(parent, cgroupName(dead.Process.Pid, ns))
	nested := filepath.Join(stale, cgroupName(dead.Process.Pid+1, ns), "deeper") // a nested execd's
	elsewhere := filepath.Join(parent, cgroupName(dead.Process.Pid, ns+1))       // another PID namespace's
	for _, d := range []string{nested, elsewhere} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	defer removeTree(stale)
	defer removeTree(elsewhere)
	removeStale(parent, ns)
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left behind: %v", stale, err)
	}
	if _, err := os.Stat(elsewhere); err != nil {
		t.Errorf("the cgroup of another PID namespace was removed: %v", err)
	}
	if _, err := os.Stat(testReaper.cg.path); err != nil {
		t.Errorf("the live cgroup was removed: %v", err)
	}
}

func TestCgroupNames(t *testing.T) {
	for _, c := range []struct {
		name string
		pid  int
		ns   uint64
		ok   bool
	}{
		{"execd-12-4026531836", 12, 4026531836, true},
		{"execd-12-4026531836.3", 12, 4026531836, true},
		{"execd-12", 12, 0, true},
		{"execd-x-1", 0, 0, false},
		{"execd--1", 0, 0, false},
		{"other", 0, 0, false},
	} {
		pid, ns, ok := parseCgroupName(c.name)
		if pid != c.pid || ns != c.ns || ok != c.ok {
			t.Errorf("%q: %d %d %v", c.name, pid, ns, ok)
		}
	}
	if name := cgroupName(12, 7); name != "execd-12-7" {
		t.Errorf("cgroupName = %q", name)
	}
}
