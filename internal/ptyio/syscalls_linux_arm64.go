package ptyio

import "golang.org/x/sys/unix"

// The calls a process waiting for terminal input sleeps in (arm64 has no
// select, poll or epoll_wait, only their p-variants).
var (
	readCalls   = map[int]bool{unix.SYS_READ: true, unix.SYS_READV: true, unix.SYS_PREAD64: true, unix.SYS_PREADV: true, unix.SYS_PREADV2: true}
	selectCalls = map[int]bool{unix.SYS_PSELECT6: true}
	pollCalls   = map[int]bool{unix.SYS_PPOLL: true}
	epollCalls  = map[int]bool{unix.SYS_EPOLL_PWAIT: true, unix.SYS_EPOLL_PWAIT2: true}
	// intTimeoutPolls take an int timeout; the others a timespec pointer.
	intTimeoutPolls = map[int]bool{}
	waitCalls       = map[int]bool{unix.SYS_WAIT4: true, unix.SYS_WAITID: true}
)
