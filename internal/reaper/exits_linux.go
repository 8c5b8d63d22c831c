package reaper

import (
	"errors"
	"os"
	"os/exec"
	"sync"

	"golang.org/x/sys/unix"
)

// exits tells when started commands exit without an OS thread per
// command: the pidfd that os/exec holds for each child (Process.WithHandle)
// is watched by one epoll set, and that set's descriptor sits on the Go
// runtime's poller. So a thousand running commands cost one descriptor
// and one parked goroutine here, not a thousand threads blocked in wait.
type exits struct {
	ep *os.File // the epoll set, non-blocking, on the runtime poller

	mu      sync.Mutex
	waiting map[int32]chan struct{} // guarded by mu: by pid, closed on exit
	closed  bool                    // guarded by mu
	loop    sync.WaitGroup
}

// newExits returns nil where epoll cannot be used; callers then block in
// cmd.Wait as os/exec does.
func newExits() *exits {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil
	}
	e := &exits{ep: os.NewFile(uintptr(fd), "execd-exits"), waiting: map[int32]chan struct{}{}}
	e.loop.Go(e.run)
	return e
}

// watch returns a channel closed once cmd's process has exited (it can
// then be waited for without blocking), or nil when its exit cannot be
// watched (no pidfd: Linux before 5.4), in which case cmd.Wait blocks.
func (e *exits) watch(cmd *exec.Cmd) <-chan struct{} {
	if e == nil {
		return nil
	}
	pid := int32(cmd.Process.Pid)
	ch := make(chan struct{})
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.waiting[pid] = ch
	e.mu.Unlock()
	var addErr error
	err := cmd.Process.WithHandle(func(pidfd uintptr) {
		// One-shot: after the exit the entry stays disabled until os/exec
		// closes its pidfd in Wait, which removes it from the set.
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLONESHOT, Fd: pid}
		addErr = e.control(unix.EPOLL_CTL_ADD, int(pidfd), &ev)
	})
	if err != nil || addErr != nil {
		e.mu.Lock()
		delete(e.waiting, pid)
		e.mu.Unlock()
		return nil
	}
	return ch
}

func (e *exits) control(op, fd int, ev *unix.EpollEvent) error {
	rc, err := e.ep.SyscallConn()
	if err != nil {
		return err
	}
	var cerr error
	if err := rc.Control(func(ep uintptr) { cerr = unix.EpollCtl(int(ep), op, fd, ev) }); err != nil {
		return err
	}
	return cerr
}

// run closes the channel of each process whose pidfd became readable. It
// returns when close closes the set.
func (e *exits) run() {
	rc, err := e.ep.SyscallConn()
	if err != nil {
		return
	}
	events := make([]unix.EpollEvent, 64)
	_ = rc.Read(func(ep uintptr) bool {
		for {
			n, err := unix.EpollWait(int(ep), events, 0)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || n == 0 {
				return false // wait on the runtime poller until more are ready
			}
			e.mu.Lock()
			for _, ev := range events[:n] {
				if ch := e.waiting[ev.Fd]; ch != nil {
					delete(e.waiting, ev.Fd)
					close(ch)
				}
			}
			e.mu.Unlock()
		}
	})
}

// close stops watching; the Waits still watching go on to block in
// cmd.Wait.
func (e *exits) close() {
	if e == nil {
		return
	}
	_ = e.ep.Close() // ends run's Read
	e.loop.Wait()
	e.mu.Lock()
	e.closed = true
	for pid, ch := range e.waiting {
		delete(e.waiting, pid)
		close(ch)
	}
	e.mu.Unlock()
}
