package ptyio

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/execd/execd/internal/procfs"
)

// maxWalk bounds the processes examined by one probe.
const maxWalk = 512

// ForegroundWait reports how the terminal's foreground process group
// waits (SPEC §4.4): tcgetpgrp on the master, then for each member
// /proc/PID/syscall — a read of the terminal, a select or poll that
// includes it, an epoll set that watches it — or, where that file is
// unreadable, /proc/PID/wchan. A member waiting for its children (wait4,
// waitid: a login shell that runs `cmd` does not exec it) defers to them,
// but at least one member must be reading the terminal. leader is the
// session leader; the group's members are found among its descendants.
// Any doubt answers NotWaiting, or Waiting rather than
// WaitingOnlyForInput: the caller then waits longer, which is always
// correct, only slower.
func (p *Pty) ForegroundWait(leader int) Wait {
	pgrp, err := p.ForegroundGroup()
	if err != nil || pgrp <= 0 {
		return NotWaiting
	}
	members := p.members(leader, pgrp)
	if len(members) == 0 {
		return NotWaiting
	}
	reading, onlyInput := false, true
	for _, m := range members {
		st, only := p.memberState(m)
		switch st {
		case readingTTY:
			reading = true
		case waitingChild:
		default:
			return NotWaiting
		}
		onlyInput = onlyInput && only
	}
	switch {
	case !reading:
		return NotWaiting
	case onlyInput:
		return WaitingOnlyForInput
	}
	return Waiting
}

// WaitingForInput reports whether every process of the terminal's
// foreground process group is blocked waiting to read the terminal:
// ForegroundWait is Waiting or WaitingOnlyForInput.
func (p *Pty) WaitingForInput(leader int) bool { return p.ForegroundWait(leader) != NotWaiting }

// member is a live process of the foreground group, with the stat the
// walk that found it read.
type member struct {
	pid  int
	stat procfs.Stat
}

// members returns the live processes of process group pgrp in the
// session led by leader.
func (p *Pty) members(leader, pgrp int) []member {
	if p.childFiles {
		return groupMembers(leader, pgrp)
	}
	return scanGroup(pgrp)
}

// state is what a probe concludes about one process.
type state int

const (
	busy         state = iota // running, or asleep for another reason
	readingTTY                // asleep waiting to read the terminal
	waitingChild              // asleep waiting for a child to change state
)

// haveChildFiles reports whether the kernel has /proc/PID/task/TID/children.
func haveChildFiles() bool {
	self := strconv.Itoa(os.Getpid())
	_, err := os.Stat("/proc/" + self + "/task/" + self + "/children")
	return err == nil
}

// groupMembers returns the live processes in process group pgrp among
// leader and its descendants, found through /proc/PID/task/*/children.
func groupMembers(leader, pgrp int) []member {
	var members []member
	queue := []int{leader}
	seen := map[int]bool{}
	for len(queue) > 0 && len(seen) < maxWalk {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		st, err := procfs.ReadStat(pid)
		if err != nil || st.Zombie() {
			continue
		}
		if st.PGRP == pgrp {
			members = append(members, member{pid, st})
		}
		queue = append(queue, children(pid, st.Threads)...)
	}
	return members
}

// children lists pid's children, from every thread's children file; a
// process of one thread has one, its own.
func children(pid, threads int) []int {
	base := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks := []string{strconv.Itoa(pid)}
	if threads != 1 {
		ents, err := os.ReadDir(base)
		if err != nil {
			return nil // the process is gone
		}
		tasks = tasks[:0]
		for _, e := range ents {
			tasks = append(tasks, e.Name())
		}
	}
	var kids []int
	for _, t := range tasks {
		b, err := procfs.ReadFile(base + t + "/children")
		if err != nil {
			continue // the thread exited meanwhile
		}
		for _, f := range bytes.Fields(b) {
			if k, err := strconv.Atoi(string(f)); err == nil {
				kids = append(kids, k)
			}
		}
	}
	return kids
}

// scanGroup finds pgrp's live members by reading every process's stat.
func scanGroup(pgrp int) []member {
	var members []member
	_ = procfs.Each(func(pid int, s procfs.Stat) {
		if s.PGRP == pgrp && !s.Zombie() {
			members = append(members, member{pid, s})
		}
	})
	return members
}

// memberState tells what m's main thread sleeps in, and whether only
// input (or a child's change of state, for waitingChild) or a signal can
// end that sleep: m has one thread and its wait has no timeout and no
// descriptor but the terminal. The stat is the walk's; /proc/PID/syscall,
// read after it, says "running" if the process has woken since.
func (p *Pty) memberState(m member) (state, bool) {
	pid, st := m.pid, m.stat
	if st.State != 'S' {
		return busy, false
	}
	b, err := procfs.ReadFile("/proc/" + strconv.Itoa(pid) + "/syscall")
	if err != nil {
		return p.wchanState(pid), false
	}
	// "NR ARG0 ARG1 ... ARG5 SP PC", numbers in hex but NR; "running" or
	// a short line when the task is not asleep in a system call.
	f := strings.Fields(string(b))
	var arg [5]uint64
	if len(f) < len(arg)+1 {
		return busy, false
	}
	nr, err := strconv.Atoi(f[0])
	if err != nil {
		return busy, false
	}
	for i := range arg {
		if arg[i], err = strconv.ParseUint(strings.TrimPrefix(f[i+1], "0x"), 16, 64); err != nil {
			return busy, false
		}
	}
	single := st.Threads == 1
	switch {
	case waitCalls[nr]:
		return waitingChild, single
	case readCalls[nr]: // read(fd, ...)
		if p.isTerminal(pid, int(arg[0])) {
			return readingTTY, single && !p.timedRead()
		}
	case selectCalls[nr]: // select(nfds, readfds, writefds, exceptfds, timeout)
		if watched, only := p.selectWatchesTerminal(pid, int(arg[0]), uintptr(arg[1])); watched {
			return readingTTY, single && only && arg[2] == 0 && arg[3] == 0 && arg[4] == 0
		}
	case pollCalls[nr]: // poll(fds, nfds, timeout) or ppoll(fds, nfds, tsp, ...)
		if watched, only := p.pollWatchesTerminal(pid, uintptr(arg[0]), int(arg[1])); watched {
			return readingTTY, single && only && untimedPoll(nr, arg[2])
		}
	case epollCalls[nr]: // epoll_wait(epfd, ...): its set is not read whole
		if p.epollWatchesTerminal(pid, int(arg[0])) {
			return readingTTY, false
		}
	}
	return busy, false
}

// untimedPoll reports whether poll's or ppoll's third argument asks for
// no timeout: a negative int for poll, a null timespec for ppoll.
func untimedPoll(nr int, timeout uint64) bool {
	if intTimeoutPolls[nr] {
		return int32(timeout) < 0
	}
	return timeout == 0
}

// timedRead reports whether a read of the terminal can return without
// input: non-canonical mode with MIN 0 and a TIME (VTIME) set. With MIN
// above 0, TIME only times the gap between bytes, once one has come.
func (p *Pty) timedRead() bool {
	timed := true // what cannot be told counts as timed
	_ = p.control(func(fd int) error {
		t, err := unix.IoctlGetTermios(fd, getTermios)
		if err == nil {
			timed = t.Lflag&unix.ICANON == 0 && t.Cc[unix.VMIN] == 0 && t.Cc[unix.VTIME] > 0
		}
		return err
	})
	return timed
}

// maxWatched bounds the descriptors read from a poll or select call.
const maxWatched = 1024

// pollWatchesTerminal reads the pollfd array of a poll call from the
// process's memory (process_vm_readv: allowed on our descendants, like
// /proc/PID/syscall) and reports whether it asks to read the terminal,
// and whether the terminal is the only descriptor in it.
func (p *Pty) pollWatchesTerminal(pid int, fds uintptr, n int) (watched, only bool) {
	if n <= 0 || n > maxWatched || fds == 0 {
		return false, false // a poll on nothing is a sleep
	}
	const pollfdSize = 8 // int fd; short events; short revents
	buf, ok := readMemory(pid, fds, n*pollfdSize)
	if !ok {
		return false, false
	}
	only = true
	for i := range n {
		e := buf[i*pollfdSize:]
		fd := int32(binary.NativeEndian.Uint32(e))
		if fd < 0 {
			continue // ignored by poll
		}
		terminal := p.isTerminal(pid, int(fd))
		events := binary.NativeEndian.Uint16(e[4:])
		watched = watched || terminal && events&(unix.POLLIN|unix.POLLPRI) != 0
		only = only && terminal
	}
	return watched, watched && only
}

// selectWatchesTerminal reads the read set of a select call and reports
// whether it holds the terminal, and whether the terminal is all it holds.
func (p *Pty) selectWatchesTerminal(pid, nfds int, readfds uintptr) (watched, only bool) {
	if nfds <= 0 || nfds > maxWatched || readfds == 0 {
		return false, false
	}
	buf, ok := readMemory(pid, readfds, (nfds+63)/64*8) // an array of longs
	if !ok {
		return false, false
	}
	only = true
	for fd := range nfds {
		word := binary.NativeEndian.Uint64(buf[fd/64*8:])
		if word&(1<<(fd%64)) != 0 {
			terminal := p.isTerminal(pid, fd)
			watched = watched || terminal
			only = only && terminal
		}
	}
	return watched, watched && only
}

// readMemory copies n bytes at addr from process pid.
func readMemory(pid int, addr uintptr, n int) ([]byte, bool) {
	buf := make([]byte, n)
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(n)
	remote := []unix.RemoteIovec{{Base: addr, Len: n}}
	got, err := unix.ProcessVMReadv(pid, local, remote, 0)
	return buf, err == nil && got == n
}

// wchanState is the fallback when /proc/PID/syscall cannot be read: a
// process asleep where terminal reads, polls and selects sleep, with the
// terminal as stdin, or where wait4 sleeps.
func (p *Pty) wchanState(pid int) state {
	b, err := procfs.ReadFile("/proc/" + strconv.Itoa(pid) + "/wchan")
	if err != nil {
		return busy
	}
	switch w := string(b); {
	case w == "do_wait":
		return waitingChild
	case w == "wait_woken", w == "n_tty_read":
		// A plain read of the terminal sleeps here; polls and selects,
		// whose descriptors cannot be told from wchan, count as busy.
		if p.isTerminal(pid, 0) {
			return readingTTY
		}
	}
	return busy
}

func (p *Pty) isTerminal(pid, fd int) bool {
	fi, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(fd))
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && uint64(st.Rdev) == p.ttyDev
}

// epollWatchesTerminal reads the watched descriptors of an epoll set from
// /proc/PID/fdinfo ("tfd: N events: ...").
func (p *Pty) epollWatchesTerminal(pid, epfd int) bool {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/fdinfo/" + strconv.Itoa(epfd))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "tfd:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) > 0 {
			if fd, err := strconv.Atoi(fields[0]); err == nil && p.isTerminal(pid, fd) {
				return true
			}
		}
	}
	return false
}
