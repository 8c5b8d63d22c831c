//go:build !linux

package reaper

import "os/exec"

// exits is Linux's; elsewhere cmd.Wait blocks a thread per command, as
// os/exec does.
type exits struct{}

func newExits() *exits { return nil }

func (e *exits) watch(*exec.Cmd) <-chan struct{} { return nil }

func (e *exits) close() {}
