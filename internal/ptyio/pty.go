// Package ptyio gives a command a pseudo-terminal and answers questions
// about it: its size, its foreground process group, and whether the
// processes in the foreground are blocked waiting to read it.
//
// It follows DEPS.md §D: the master is non-blocking and on the runtime
// poller (so Close interrupts a Read, and writes can have a deadline),
// resizes and ioctls go through SyscallConn (Fd would make it blocking
// again), the parent's copy of the terminal is closed once the command
// has started, and EIO from the master is the end of the session. It starts no
// process itself: the caller starts the command it prepared with
// [Pty.Attach].
//
// A Pty is safe for concurrent use by one reader and one writer.
package ptyio

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// Size is a terminal size in character cells.
type Size struct{ Rows, Cols uint16 }

// DefaultSize is the size of a session's terminal (SPEC §4.3).
var DefaultSize = Size{Rows: 24, Cols: 80}

// Wait is what a probe found the terminal's foreground process group
// doing (SPEC §4.4).
type Wait int

const (
	// NotWaiting: a member runs or sleeps for something else, or the
	// probe could not tell.
	NotWaiting Wait = iota
	// Waiting: every member is blocked reading the terminal, or waiting
	// for its children, and at least one reads; but some member could
	// also wake without input: its wait has a timeout or watches other
	// descriptors (epoll counts so), it has other threads, or only its
	// wchan could be read.
	Waiting
	// WaitingOnlyForInput: as Waiting, and every member is single-threaded
	// and waits where only input, a child's change of state or a signal
	// ends the wait: read(2) of the terminal without a VTIME timeout, or
	// a poll or select whose only descriptor is the terminal and that has
	// no timeout, or wait4/waitid.
	WaitingOnlyForInput
)

func (w Wait) String() string {
	switch w {
	case Waiting:
		return "waiting"
	case WaitingOnlyForInput:
		return "waiting only for input"
	}
	return "not waiting"
}

// Pty is a pseudo-terminal pair for one command.
type Pty struct {
	master *os.File // non-blocking, on the poller
	tty    *os.File // the command's side; closed in the parent by Started
	ttyDev uint64   // device number of the terminal, to recognise it in /proc
	// childFiles reports whether /proc/PID/task/TID/children exists
	// (CONFIG_PROC_CHILDREN); probes scan /proc otherwise.
	childFiles bool
	// taking is held from a read of the master until the reader has
	// taken the bytes (see [Pty.ReadEach]), so that [Pty.OutputPending]
	// never misses output that left the master but is not taken yet.
	taking sync.Mutex
}

// Open opens a new pseudo-terminal of the given size.
func Open(size Size) (*Pty, error) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		return nil, fmt.Errorf("open pty: %w", err)
	}
	if err := pty.Setsize(tty, &pty.Winsize{Rows: size.Rows, Cols: size.Cols}); err != nil {
		ptmx.Close()
		tty.Close()
		return nil, fmt.Errorf("size pty: %w", err)
	}
	p, err := fromMaster(ptmx, tty)
	if err != nil {
		tty.Close()
		return nil, err
	}
	p.tty = tty
	return p, nil
}

// FromMaster takes the master of a terminal made elsewhere (by the
// sandbox helper, in the sandbox's own devpts) and already given to its
// command: there is nothing to Attach. It closes master.
func FromMaster(master *os.File) (*Pty, error) {
	tty, err := peer(master)
	if err != nil {
		master.Close()
		return nil, fmt.Errorf("pty: %w", err)
	}
	defer tty.Close()
	return fromMaster(master, tty)
}

// fromMaster makes the Pty of master, which it closes, and of the
// terminal tty, which it only reads the device number of.
func fromMaster(master, tty *os.File) (*Pty, error) {
	// A fresh non-blocking descriptor becomes a pollable *os.File; the one
	// creack/pty made was opened blocking.
	fd, err := unix.FcntlInt(master.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	master.Close()
	if err == nil {
		err = unix.SetNonblock(fd, true)
	}
	if err != nil {
		return nil, fmt.Errorf("pty master: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(tty.Fd()), &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("stat pty: %w", err)
	}
	return &Pty{master: os.NewFile(uintptr(fd), "/dev/ptmx"), ttyDev: uint64(st.Rdev),
		childFiles: haveChildFiles()}, nil
}

// Attach makes the terminal cmd's stdin, stdout, stderr and controlling
// terminal, in a new session (so its process group is the session's).
func (p *Pty) Attach(cmd *exec.Cmd) {
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.tty, p.tty, p.tty
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
	cmd.SysProcAttr.Setctty = true
	cmd.SysProcAttr.Ctty = 0 // the child's stdin, which is the terminal
}

// Started closes the parent's copy of the terminal; call it once the
// attached command has started (or failed to). Without it the master
// would never see the end of the session.
func (p *Pty) Started() {
	if p.tty != nil {
		_ = p.tty.Close()
		p.tty = nil
	}
}

// ReadEach reads output until the end of the session and hands each
// piece to take, which runs before the next read. Output counts as
// pending ([Pty.OutputPending]) until take has returned. It returns nil
// at the end of the session (EIO from the master), or the error that
// stopped it (the terminal was closed).
func (p *Pty) ReadEach(b []byte, take func([]byte)) error {
	rc, err := p.master.SyscallConn()
	if err != nil {
		return err
	}
	for {
		var n int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			p.taking.Lock()
			defer p.taking.Unlock()
			n, rerr = unix.Read(int(fd), b)
			if rerr == unix.EAGAIN || rerr == unix.EINTR {
				return false // wait until readable
			}
			if n > 0 {
				take(b[:n])
			}
			return true
		})
		switch {
		case err != nil:
			return err
		case rerr == unix.EIO || (rerr == nil && n <= 0):
			return nil
		case rerr != nil:
			return rerr
		}
	}
}

// Write writes input as typed, until the deadline if one is set.
func (p *Pty) Write(b []byte) (int, error) { return p.master.Write(b) }

// SetWriteDeadline bounds the writes; zero means none.
func (p *Pty) SetWriteDeadline(t time.Time) error { return p.master.SetWriteDeadline(t) }

// Resize changes the terminal size (TIOCSWINSZ).
func (p *Pty) Resize(size Size) error {
	return p.control(func(fd int) error {
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: size.Rows, Col: size.Cols})
	})
}

// Size returns the terminal size.
func (p *Pty) Size() (Size, error) {
	var s Size
	err := p.control(func(fd int) error {
		ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
		if err == nil {
			s = Size{Rows: ws.Row, Cols: ws.Col}
		}
		return err
	})
	return s, err
}

// Canonical reports whether the terminal is in canonical (line) mode,
// where the kernel keeps at most MaxCanon-1 bytes of a line and drops the
// rest. TCGETS on a master reports the slave's settings.
func (p *Pty) Canonical() bool {
	canonical := false
	_ = p.control(func(fd int) error {
		t, err := unix.IoctlGetTermios(fd, getTermios)
		if err == nil {
			canonical = t.Lflag&unix.ICANON != 0
		}
		return err
	})
	return canonical
}

// MaxCanon is the line buffer of a terminal in canonical mode (Linux
// N_TTY_BUF_SIZE): a line keeps at most MaxCanon-1 bytes and its newline.
const MaxCanon = 4096

// ForegroundGroup returns the terminal's foreground process group
// (tcgetpgrp on the master).
func (p *Pty) ForegroundGroup() (int, error) {
	var pgrp int
	err := p.control(func(fd int) error {
		var err error
		pgrp, err = unix.IoctlGetInt(fd, unix.TIOCGPGRP)
		return err
	})
	return pgrp, err
}

func (p *Pty) control(f func(fd int) error) error {
	rc, err := p.master.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// Close closes the terminal; a Read in progress returns an error.
func (p *Pty) Close() error {
	p.Started()
	return p.master.Close()
}
