// Package reapertest runs a test binary under a Reaper: a process has at
// most one, and the tests of packages that start commands share it.
package reapertest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/execd/execd/internal/reaper"
)

// Run runs the tests with r as the process's Reaper, then kills whatever
// they left behind and stops r. It returns m.Run's exit code:
//
//	var testReaper = reaper.New()
//	func TestMain(m *testing.M) { os.Exit(reapertest.Run(m, testReaper)) }
//
// HOME points at an empty directory meanwhile: the login shells that
// tests start must not run the developer's dotfiles (slow, and a test
// that kills one mid-profile can leave their locks behind).
func Run(m *testing.M, r *reaper.Reaper) int {
	home, err := os.MkdirTemp("", "execd-test-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "reapertest:", err)
		return 1
	}
	defer os.RemoveAll(home)
	os.Setenv("HOME", home)
	code := m.Run()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.Shutdown(ctx, time.Second) // the tests already failed if something was left
	r.Close()
	return code
}
