package orchestrator

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// outputPipe returns a pipe whose read end is non-blocking, so reads go
// through the runtime poller and a read deadline can stop them, and whose
// write end is a plain blocking descriptor for the child: it never needs
// the poller (os.Pipe would register both ends, two epoll_ctl calls per
// end and command).
func outputPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, fmt.Errorf("pipe: %w", err)
	}
	if err := unix.SetNonblock(p[0], true); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, nil, fmt.Errorf("pipe: %w", err)
	}
	return os.NewFile(uintptr(p[0]), "output-r"), os.NewFile(uintptr(p[1]), "output-w"), nil
}
