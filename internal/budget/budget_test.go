package budget

import (
	"errors"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// addThreads leaves the runtime with at least that many OS threads
// besides sysmon, idle.
func TestAddThreads(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("threads are counted from /proc")
	}
	n := threads() + 8
	addThreads(n)
	if after := threads(); after < n+1 {
		t.Fatalf("%d threads after holding %d at once", after, n)
	}
}

// The error names the limit, says whose tasks count, and is still EAGAIN.
func TestLimitError(t *testing.T) {
	l := Limit{Name: "RLIMIT_NPROC", Where: "uid 1000", Max: 30, Used: 30}
	for _, c := range []struct {
		headroom int
		want     string
	}{
		{0, "the limit on processes is reached (RLIMIT_NPROC = 30 for uid 1000, 30 in use; execd's own threads count too): wait for commands to end or raise the limit"},
		{4, "the limit on processes is reached (RLIMIT_NPROC = 30 for uid 1000, 30 in use; execd keeps the last 4 for its own threads): wait for commands to end or raise the limit"},
	} {
		err := error(&LimitError{Limit: l, Headroom: c.headroom, Err: syscall.EAGAIN})
		if err.Error() != c.want {
			t.Errorf("got  %q\nwant %q", err, c.want)
		}
		if !errors.Is(err, syscall.EAGAIN) {
			t.Errorf("%v is not EAGAIN", err)
		}
	}
	p := Limit{Name: "pids.max", Where: "/sys/fs/cgroup/x", Max: 40, Used: 12, AtMost: true}
	if got := p.String(); got != "pids.max = 40 in /sys/fs/cgroup/x, at most 12 in use" {
		t.Errorf("got %q", got)
	}
}

// Explain leaves other errors alone.
func TestExplainOnlyEAGAIN(t *testing.T) {
	err := errors.New("exec: no such file")
	if got := Explain(err); got != err {
		t.Errorf("Explain(%v) = %v", err, got)
	}
	if got := (Kept{}).String(); !strings.Contains(got, "none shared") {
		t.Errorf("Kept{} = %q", got)
	}
}
