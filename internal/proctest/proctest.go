// Package proctest finds processes by a marker in their command line, so
// tests can prove that nothing they started is left running. Give each
// test's processes a unique marker (for example a distinctive sleep
// duration such as "sleep 917.25") and check it with [Gone].
//
// It reads /proc and therefore works on Linux only; elsewhere [Find]
// reports nothing.
package proctest

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/execd/execd/internal/procfs"
)

// Find returns the pids of live (non-zombie) processes whose command line
// contains marker.
func Find(marker string) []int {
	return FindFunc(func(_ int, cmdline string) bool { return strings.Contains(cmdline, marker) })
}

// FindFunc returns the pids of live (non-zombie) processes, other than
// the caller, for which match reports true; cmdline has its arguments
// separated by spaces.
func FindFunc(match func(pid int, cmdline string) bool) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !match(pid, string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))) {
			continue
		}
		if st, err := procfs.ReadStat(pid); err != nil || st.Zombie() {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// ForkRacer is a python3 program that forks the next of its kind, which
// makes itself a new session, and exits, in a loop with no exec: a
// generation lives for a fork's time, so no scan of /proc catches it by
// its parent. Give it the marker as its argument.
const ForkRacer = "import os\nwhile True:\n    if os.fork(): os._exit(0)\n    os.setsid()"

// Kill kills every process whose command line contains marker, again and
// again: a fork racer that escaped keeps making new ones.
func Kill(marker string) {
	for range 100 {
		for _, pid := range Find(marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// Gone waits up to limit for every process whose command line contains
// marker to disappear, and fails the test naming the survivors otherwise.
// limit only bounds a failing wait; a passing test returns as soon as the
// processes are gone.
func Gone(t testing.TB, marker string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		pids := Find(marker)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes with %q still running: %s", marker, Describe(pids))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Running waits up to limit until at least n processes match marker and
// returns their pids, failing the test otherwise.
func Running(t testing.TB, marker string, n int, limit time.Duration) []int {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if pids := Find(marker); len(pids) >= n {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("expected %d processes with %q, found %v", n, marker, Find(marker))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Describe names pids with their command lines, for a failure message.
func Describe(pids []int) string {
	var parts []string
	for _, pid := range pids {
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		parts = append(parts, strconv.Itoa(pid)+" "+strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))))
	}
	return strings.Join(parts, "; ")
}
