// Package procfs reads what execd needs from Linux's /proc: which
// processes exist and, for each, its state, parent, process group and
// session. It only reads. Where there is no /proc (macOS) every function
// returns an error. It is safe for concurrent use.
package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"syscall"
)

// Stat is the part of /proc/PID/stat execd uses.
type Stat struct {
	State   byte // R, S, D, Z, X, ...
	PPID    int
	PGRP    int
	Session int
	// Threads is num_threads; 0 when the line stops before it.
	Threads int
}

// Zombie reports whether the process has exited and awaits its parent's
// wait (or is being torn down).
func (s Stat) Zombie() bool { return s.State == 'Z' || s.State == 'X' }

// ReadFile reads a small file of /proc whole with open, read until end
// of file and close: os.ReadFile adds an fstat, an fcntl and an attempt
// to register the descriptor with the runtime poller, which doubles the
// cost of the probes that read several such files (ptyio). Errors are
// *fs.PathError, as os.ReadFile's.
func ReadFile(path string) ([]byte, error) {
	fd, err := ignoringEINTR(func() (int, error) { return syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0) })
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	b := make([]byte, 0, 512)
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, cap(b))
		}
		n, err := ignoringEINTR(func() (int, error) { return syscall.Read(fd, b[len(b):cap(b)]) })
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

func ignoringEINTR(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if !errors.Is(err, syscall.EINTR) {
			return n, err
		}
	}
}

// ReadStat reads /proc/PID/stat.
func ReadStat(pid int) (Stat, error) {
	b, err := ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	return parseStat(b)
}

// ReadChars returns how many bytes the process has read so far, by any
// read-like system call (rchar of /proc/PID/io). Reading it takes the
// same permission as ptrace's read access: a process of the same user
// that is not setuid.
func ReadChars(pid int) (uint64, error) {
	b, err := ReadFile("/proc/" + strconv.Itoa(pid) + "/io")
	if err != nil {
		return 0, err
	}
	return parseRChar(b)
}

func parseRChar(b []byte) (uint64, error) {
	v, ok := field(b, "rchar")
	if !ok {
		return 0, errors.New("no rchar in /proc/PID/io")
	}
	return strconv.ParseUint(v, 10, 64)
}

// PidfdPid returns the pid that the pidfd fd of this process refers to,
// in this process's PID namespace, from the pidfd's fdinfo: -1 once the
// process has been reaped.
func PidfdPid(fd int) (int, error) {
	b, err := ReadFile("/proc/self/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return 0, err
	}
	v, ok := field(b, "Pid")
	if !ok {
		return 0, errors.New("no Pid in the pidfd's fdinfo")
	}
	return strconv.Atoi(v)
}

// field returns the value of the line "key: value" of a /proc file
// such as io, status or fdinfo.
func field(b []byte, key string) (string, bool) {
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte(key+":")); ok {
			return string(bytes.TrimSpace(v)), true
		}
	}
	return "", false
}

// parseStat parses a stat line. The command name is in parentheses and
// may itself contain spaces and parentheses, so the fields are counted
// from the last ')'.
func parseStat(b []byte) (Stat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, errors.New("procfs: malformed stat: no command name")
	}
	f := bytes.Fields(b[i+1:]) // state ppid pgrp session ...
	if len(f) < 4 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("procfs: malformed stat: %d fields after the name", len(f))
	}
	s := Stat{State: f[0][0]}
	var err error
	for j, dst := range []*int{&s.PPID, &s.PGRP, &s.Session} {
		if *dst, err = strconv.Atoi(string(f[j+1])); err != nil {
			return Stat{}, fmt.Errorf("procfs: malformed stat: %w", err)
		}
	}
	const threadsField = 17 // num_threads, field 20 of proc_pid_stat(5), counted from the state
	if len(f) > threadsField {
		if s.Threads, err = strconv.Atoi(string(f[threadsField])); err != nil {
			return Stat{}, fmt.Errorf("procfs: malformed stat: %w", err)
		}
	}
	return s, nil
}

// PIDs lists the processes in /proc.
func PIDs() ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	pids := make([]int, 0, len(entries))
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// Each calls f for every process whose stat can be read; processes that
// exit meanwhile are skipped.
func Each(f func(pid int, s Stat)) error {
	pids, err := PIDs()
	if err != nil {
		return err
	}
	for _, pid := range pids {
		if s, err := ReadStat(pid); err == nil {
			f(pid, s)
		}
	}
	return nil
}
