//go:build linux && !amd64 && !arm64

package ptyio

// Syscall numbers are not tabled for this architecture: probes fall back
// to what /proc/PID/syscall cannot tell, i.e. they answer false unless
// wchan shows a terminal read.
var (
	readCalls   = map[int]bool{}
	selectCalls = map[int]bool{}
	pollCalls   = map[int]bool{}
	epollCalls  = map[int]bool{}
	// intTimeoutPolls take an int timeout; the others a timespec pointer.
	intTimeoutPolls = map[int]bool{}
	waitCalls       = map[int]bool{}
)
