//go:build !linux

package orchestrator

import "os"

// outputPipe returns a pipe for a command's output; see pipe_linux.go.
func outputPipe() (r, w *os.File, err error) { return os.Pipe() }
