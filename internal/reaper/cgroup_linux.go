package reaper

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/execd/execd/internal/procfs"
)

// cgroup is the cgroup v2 directory every command is started in
// (clone3's CLONE_INTO_CGROUP: no window in which a command or its first
// children are outside it). Writing cgroup.kill kills all of them at once,
// whatever sessions and process groups they made and however fast they
// fork; a guard process does it when execd itself dies.
type cgroup struct {
	path   string
	dir    *os.File  // the directory, for CgroupFD
	guard  *exec.Cmd // kills the cgroup when its pipe closes
	guardW *os.File  // our end of that pipe; closed by close or by our death
}

// newCgroup creates execd-PID below this process's own cgroup on the
// cgroup v2 hierarchy and starts its guard. It fails, saying why, where
// there is no writable cgroup v2 with cgroup.kill (Linux 5.14), or where
// clone3 is unavailable (a seccomp filter may return ENOSYS).
func newCgroup() (*cgroup, error) {
	own, err := procfs.OwnCgroup("")
	if err != nil {
		return nil, err
	}
	parent := own.Dir
	// Moving a process into a child cgroup takes write access to the
	// cgroup.procs of the common ancestor: our own cgroup.
	if err := unix.Faccessat(unix.AT_FDCWD, filepath.Join(parent, "cgroup.procs"), unix.W_OK, unix.AT_EACCESS); err != nil {
		return nil, fmt.Errorf("%s is not delegated to this user: %w", parent, err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_CLONE3, 0, 0, 0); errno == unix.ENOSYS {
		return nil, errors.New("clone3 is unavailable (kernel or seccomp filter)")
	}
	ns := pidNamespace()
	removeStale(parent, ns)
	path, err := mkdirUnique(filepath.Join(parent, cgroupName(os.Getpid(), ns)))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(path, "cgroup.kill")); err != nil { // the root cgroup has none
		_ = os.Remove(path)
		return nil, errors.New("the cgroup v2 hierarchy has no cgroup.kill (Linux 5.14)")
	}
	dir, err := os.Open(path)
	if err != nil {
		_ = os.Remove(path)
		return nil, err
	}
	cg := &cgroup{path: path, dir: dir}
	if err := cg.startGuard(); err != nil {
		dir.Close()
		_ = os.Remove(path)
		return nil, fmt.Errorf("guard: %w", err)
	}
	return cg, nil
}

// cgroupName is the name of the cgroup of execd pid in the PID namespace
// ns: execd-PID-NS. The namespace tells an execd's stale cgroup from the
// live one of an execd elsewhere that has the same pid.
func cgroupName(pid int, ns uint64) string {
	return "execd-" + strconv.Itoa(pid) + "-" + strconv.FormatUint(ns, 10)
}

// parseCgroupName returns the pid and PID namespace of a cgroupName,
// with or without mkdirUnique's suffix (ns is 0 in the names of older
// execds, execd-PID).
func parseCgroupName(name string) (pid int, ns uint64, ok bool) {
	rest, ok := strings.CutPrefix(name, "execd-")
	if !ok {
		return 0, 0, false
	}
	rest, _, _ = strings.Cut(rest, ".")
	p, n, hasNS := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 {
		return 0, 0, false
	}
	if hasNS {
		if ns, err = strconv.ParseUint(n, 10, 64); err != nil {
			return 0, 0, false
		}
	}
	return pid, ns, true
}

// pidNamespace returns the inode of this process's PID namespace, or 0.
func pidNamespace() uint64 {
	var st unix.Stat_t
	if unix.Stat("/proc/self/ns/pid", &st) != nil {
		return 0
	}
	return st.Ino
}

// mkdirUnique creates path, or path.1, path.2, ... where it exists (an
// execd elsewhere whose cgroup has the same name, a stale one that
// still holds processes).
func mkdirUnique(path string) (string, error) {
	name := path
	for i := 1; ; i++ {
		err := os.Mkdir(name, 0o755)
		if err == nil || !errors.Is(err, os.ErrExist) || i > 16 {
			return name, err
		}
		name = path + "." + strconv.Itoa(i)
	}
}

// removeStale removes the cgroups, and the cgroups inside them (an execd
// started by a command of another execd), that execds of this PID
// namespace which are gone left beside ours (a guard killed before it
// could). It only removes: a cgroup that still holds processes cannot be
// removed; and it leaves alone those of other PID namespaces, whose
// pids mean nothing here.
func removeStale(parent string, ns uint64) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, theirs, ok := parseCgroupName(e.Name())
		if !ok || !e.IsDir() || theirs != 0 && theirs != ns || unix.Kill(pid, 0) != unix.ESRCH {
			continue
		}
		_ = removeTree(filepath.Join(parent, e.Name())) // EBUSY while populated
	}
}

// removeTree removes the cgroup dir and the cgroups below it, deepest
// first (a cgroup with children cannot be removed).
func removeTree(dir string) error {
	var dirs []string
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	for _, d := range slices.Backward(dirs) {
		_ = os.Remove(d)
	}
	return os.Remove(dir)
}

// guardScript is the guard: it waits for EOF on fd 3 (data written to
// it does not count), a pipe whose
// other end only execd holds, so that the kernel ends it when execd dies,
// however it dies; then it kills everything in the cgroup ($1), waits
// (up to about 5 s: a process in D state takes a moment to die) until
// the cgroup is empty and removes it, with the cgroups an execd started
// inside made, deepest first. Signals meant for execd's terminal
// or host do not end it early. A shell, not execd re-executed: it starts
// in a few milliseconds where a Go binary takes tens.
const guardScript = `trap '' INT TERM HUP QUIT PIPE
cat <&3 >/dev/null
i=0
while [ -d "$1" ] && [ "$i" -lt 500 ]; do
	echo 1 >"$1/cgroup.kill"
	find "$1" -depth -type d -exec rmdir {} + 2>/dev/null
	[ -d "$1" ] || exit 0
	sleep 0.01
	i=$((i + 1))
done
[ ! -d "$1" ]`

// startGuard starts the guard (guardScript) in its own session, out of
// the reach of signals sent to execd's process group.
func (cg *cgroup) startGuard() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := &exec.Cmd{
		Path:        "/bin/sh",
		Args:        []string{"execd-cgroup-guard", "-c", guardScript, "execd-cgroup-guard", cg.path},
		ExtraFiles:  []*os.File{r}, // fd 3
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if err := cmd.Start(); err != nil {
		w.Close()
		return err
	}
	cg.guard, cg.guardW = cmd, w
	return nil
}

// place makes cmd start in the cgroup; a nil cgroup places nothing.
func (cg *cgroup) place(cmd *exec.Cmd) {
	if cg == nil {
		return
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = int(cg.dir.Fd())
}

// kill kills every process in the cgroup at once.
func (cg *cgroup) kill() error {
	return os.WriteFile(filepath.Join(cg.path, "cgroup.kill"), []byte("1"), 0)
}

// populated reports whether a live process is left in the cgroup
// (cgroup.events; an unreadable file counts as populated).
func (cg *cgroup) populated() bool {
	b, err := os.ReadFile(filepath.Join(cg.path, "cgroup.events"))
	return err != nil || strings.Contains(string(b), "populated 1")
}

// close kills what is left and removes the cgroup itself, then lets the
// guard go and waits for it, for a bounded time: a command of execd's
// user may have stopped (SIGSTOP) or killed it, and execd's exit must not
// wait on it. A guard that does not end is killed (it is our child).
func (cg *cgroup) close() {
	for range 200 { // 2 s
		_ = cg.kill()
		if err := removeTree(cg.path); err == nil || errors.Is(err, os.ErrNotExist) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = cg.guardW.Close()
	done := make(chan struct{})
	go func() { _ = cg.guard.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		_ = cg.guard.Process.Kill()
		<-done
	}
	_ = cg.dir.Close()
}
