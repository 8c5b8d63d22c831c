package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// takeStdout gives the protocol a private close-on-exec copy of fd 1 and
// points fd 1 (and os.Stdout) at stderr, so that nothing but protocol
// frames can reach the real stdout: not a stray print, a library, nor a
// child that inherits fd 1 (DEPS.md §F).
func takeStdout() (*os.File, error) {
	fd, err := unix.FcntlInt(1, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, err
	}
	if err := redirect(2, 1); err != nil {
		unix.Close(fd)
		return nil, err
	}
	// os.Stdout still names fd 1, which now writes to stderr. Do not
	// replace it: the *os.File it holds would become garbage, and its
	// finalizer would close fd 1 for the next open to reuse.
	return os.NewFile(uintptr(fd), "mcp-stdout"), nil
}
