package ptyio

import (
	"golang.org/x/sys/unix"

	"github.com/execd/execd/internal/procfs"
)

// InputMark records, just before input is written, what the terminal's
// readers had read so far, so that [Pty.Consumed] can tell whether they
// have read the input since. A waiting probe alone cannot: the kernel
// hands a write to the terminal's readers asynchronously (a worker moves
// it from the master to the line discipline), and under CPU load a reader
// can still look blocked on its read well after the write returned.
type InputMark struct {
	n     int            // bytes about to be written
	reads map[int]uint64 // foreground members' read counters (rchar)
}

// MarkInput is called before n bytes are written to the terminal of the
// session led by leader.
func (p *Pty) MarkInput(leader, n int) InputMark {
	m := InputMark{n: n, reads: map[int]uint64{}}
	pgrp, err := p.ForegroundGroup()
	if err != nil || pgrp <= 0 {
		return m
	}
	for _, mb := range p.members(leader, pgrp) {
		if c, err := procfs.ReadChars(mb.pid); err == nil {
			m.reads[mb.pid] = c
		}
	}
	return m
}

// Consumed reports evidence that the input written after m was read: the
// processes that were in the foreground when it was written have read at
// least as many bytes since, or the terminal holds no unread input and
// output came since the write (outputSince: a line discipline or a
// readline echoes what it takes in). Without either it answers false; a
// program that reads without echoing and whose counters cannot be read
// then gets its whole yield, which is slower but never wrong.
func (p *Pty) Consumed(m InputMark, outputSince bool) bool {
	var read uint64
	for pid, before := range m.reads {
		if now, err := procfs.ReadChars(pid); err == nil && now > before {
			read += now - before
		}
	}
	if read >= uint64(m.n) {
		return true
	}
	return outputSince && p.unreadInput() == 0
}

// unreadInput returns the bytes of input that no reader has taken yet
// (TIOCINQ on the terminal, opened through the master with TIOCGPTPEER,
// Linux 4.13), or -1 if that cannot be told. A poll(2) of the terminal
// first waits for the kernel worker that hands input written to the
// master to the terminal's line discipline, so input in transit counts.
func (p *Pty) unreadInput() int {
	n := -1
	_ = p.control(func(fd int) error {
		peer, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCGPTPEER,
			unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC)
		if errno != 0 {
			return errno
		}
		defer unix.Close(int(peer))
		if _, err := unix.Poll([]unix.PollFd{{Fd: int32(peer), Events: unix.POLLIN}}, 0); err != nil {
			return err
		}
		q, err := unix.IoctlGetInt(int(peer), unix.TIOCINQ)
		if err == nil {
			n = q
		}
		return err
	})
	return n
}

// InputPending reports whether the terminal holds input that no reader
// has taken yet, input in transit included, or whether that cannot be
// told. In canonical mode only complete lines count: a partial line is
// not for a reader yet.
func (p *Pty) InputPending() bool { return p.unreadInput() != 0 }

// OutputPending reports whether the terminal has output that the reader
// of [Pty.ReadEach] has not taken yet. poll(2) on the master first waits
// for the kernel worker that moves what the command wrote to the
// master's side (n_tty_poll flushes it), so output still in transit
// counts; output read from the master but not yet taken counts too.
func (p *Pty) OutputPending() bool {
	p.taking.Lock()
	defer p.taking.Unlock()
	pending := false
	_ = p.control(func(fd int) error {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 0)
		pending = err == nil && n > 0 && fds[0].Revents&unix.POLLIN != 0
		return err
	})
	return pending
}
