package test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/execd/execd/internal/proctest"
)

func readFileIn(dir, name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(dir, name))
}

func waitRunning(t *testing.T, marker string) { t.Helper(); proctest.Running(t, marker, 1, waitLimit) }

// assertGone checks at once, without waiting: execd has exited, so
// whatever it left is left for good.
func assertGone(t *testing.T, marker string) {
	t.Helper()
	if pids := proctest.Find(marker); len(pids) > 0 {
		t.Errorf("%q outlived execd: pids %v", marker, pids)
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
