package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// controlFD is the launcher's end of its control socket (a SOCK_SEQPACKET
// pair with execd): launch requests come in, replies and exits go out.
const controlFD = 5

// stopGrace is how long a launcher whose execd is gone lets its commands
// end on SIGTERM before it exits, which kills what is left.
const stopGrace = 2 * time.Second

// Messages between execd and a launcher, one per packet as JSON, with
// descriptors (SCM_RIGHTS) where said.
const (
	msgLaunch  = "launch"  // execd: the request in a memfd, then the stdio it passes
	msgAck     = "ack"     // execd: it has the command's pid; the launcher may reap it
	msgRetire  = "retire"  // execd: no more launches; exit once no process is left
	msgStop    = "stop"    // execd: shutting down; SIGTERM everything, exit once none is left
	msgStarted = "started" // launcher: the command runs; its pidfd, then its terminal's master
	msgFailed  = "failed"  // launcher: the command could not be started
	msgExited  = "exited"  // launcher: a command ended, with its wait status
)

type message struct {
	Kind   string     `json:"kind"`
	Pid    int        `json:"pid,omitempty"` // in the launcher's PID namespace
	Status int        `json:"status,omitempty"`
	Err    *wireError `json:"error,omitempty"`
}

// launchRequest is one command for a launcher, in a memfd (any size).
type launchRequest struct {
	Path     string    `json:"path"`
	Argv     []string  `json:"argv"`
	Dir      string    `json:"dir"`
	Env      []string  `json:"env"`
	Terminal *Terminal `json:"terminal,omitempty"`
	Stdio    [3]bool   `json:"stdio"` // which of fds 0-2 came with the message, in order
}

// readyReport is what a launcher writes on its status pipe once set up:
// every entry it pinned or made read-only.
type readyReport struct {
	Entries []plannedEntry `json:"entries"`
}

type plannedEntry struct {
	Path     string `json:"path"`
	Dev      uint64 `json:"dev"`
	Ino      uint64 `json:"ino"`
	ReadOnly bool   `json:"ro,omitempty"`
}

// LauncherMain runs a resident launcher (SPEC §8.3): started by execd in
// new user, mount, IPC, PID (and network) namespaces, it is the PID
// namespace's init. It sets up the sandbox once, as the helper does for
// one command, restricts itself (no_new_privs, capabilities, Landlock and
// seccomp on every thread), reports the entries it protects on fd 4, and
// then forks and execs the commands execd asks for on its control socket,
// from the one thread it set up on, reporting each command's exit. It is
// not dumpable, so no command can open its descriptors or memory. It
// exits when execd asks it to and no process is left, and SIGTERMs every
// process, then exits after stopGrace, when execd is gone; the kernel
// kills whatever is left in a namespace whose init exits.
func LauncherMain() int {
	runtime.LockOSThread() // never unlocked: commands are forked from this thread
	if _, err := unix.FcntlInt(statusFD, unix.F_GETFD, 0); err != nil {
		return setupExitCode // not started by execd
	}
	status := os.NewFile(statusFD, "status")
	unix.CloseOnExec(statusFD)
	unix.CloseOnExec(controlFD)
	rs, stage, err := setUpResident()
	if err != nil {
		report(status, stage, err)
		return setupExitCode
	}
	if err := json.NewEncoder(status).Encode(readyReport{Entries: rs.entries}); err != nil {
		return setupExitCode
	}
	_ = status.Close()
	return rs.serve()
}

// resident is the launcher's state.
type resident struct {
	entries []plannedEntry
	kick    chan struct{} // a launch or an ack: reap what may be reapable

	mu       sync.Mutex   // serializes sends and guards what follows
	children map[int]bool // commands started and not yet reported, by pid
	unacked  int          // started commands whose pid execd has not read yet
	stopping bool         // exit once no process is left
}

func setUpResident() (*resident, string, error) {
	// Not dumpable: /proc/1/fd, /proc/1/mem and pidfd_getfd stay closed
	// to the commands, which run as the same user.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return nil, "dumpable", err
	}
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return nil, "pdeathsig", err
	}
	if err := defaultSignals(); err != nil {
		return nil, "signals", err
	}
	p, err := readPolicy(true)
	if err != nil {
		return nil, "policy", err
	}
	if !p.Namespaces {
		return nil, "policy", errors.New("a launcher needs namespaces of its own")
	}
	roots, err := openRoots(p.Roots)
	if err != nil {
		return nil, "roots", err
	}
	roots, pl, err := isolateMounts(p, roots)
	if err != nil {
		return nil, "mount", err
	}
	if err := privateTerminals(); err != nil {
		return nil, "terminals", err
	}
	if err := mountProc(); err != nil {
		return nil, "proc", err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return nil, "no_new_privs", err
	}
	if err := dropCapabilities(); err != nil {
		return nil, "capabilities", err
	}
	if err := restrictFS(p, roots); err != nil {
		return nil, "landlock", err
	}
	if err := installFilter(optionsOf(p)); err != nil {
		return nil, "seccomp", err
	}
	for _, r := range roots {
		unix.Close(r.fd)
	}
	return &resident{entries: pl.report(), kick: make(chan struct{}, 1), children: map[int]bool{}}, "", nil
}

// fatalSignals are the signals on which the Go runtime would end this
// process (or dump and crash) when a process sends them. SIGSEGV, SIGBUS
// and SIGFPE among them: a real fault of the launcher's then ends it
// without Go's report, as a panic would have ended it anyway.
var fatalSignals = []unix.Signal{unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGILL, unix.SIGTRAP, unix.SIGABRT,
	unix.SIGBUS, unix.SIGFPE, unix.SIGUSR1, unix.SIGSEGV, unix.SIGUSR2, unix.SIGALRM, unix.SIGTERM, unix.SIGSTKFLT,
	unix.SIGXCPU, unix.SIGXFSZ, unix.SIGVTALRM, unix.SIGSYS, unix.SIGPWR}

// defaultSignals gives the fatal signals back their default action. A
// PID namespace's init gets from the processes of its namespace only the
// signals it has a handler for: with none, the kernel drops a command's
// `kill -TERM 1` (or -ABRT, -QUIT), which would otherwise end the
// launcher, and with it every command of the policy. (Not ignored: exec
// keeps an ignored signal ignored in the commands.) execd, outside the
// namespace, can still end it.
func defaultSignals() error {
	var act [4]uint64 // struct sigaction, all zero: SIG_DFL, no flags, empty mask
	for _, sig := range fatalSignals {
		if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0); errno != 0 {
			return fmt.Errorf("default action of %v: %w", sig, errno)
		}
	}
	return nil
}

// mountProc mounts a /proc of the PID namespace this process is init of,
// read-only like every other mount, so that ps shows the sandbox's own
// processes and /proc/PID reaches nothing outside.
func mountProc() error {
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC|unix.MS_RDONLY, ""); err != nil {
		return fmt.Errorf("mount /proc of the sandbox's PID namespace: %w", err)
	}
	return nil
}

// report lists the plan's entries for execd.
func (pl *plan) report() []plannedEntry {
	out := make([]plannedEntry, 0, len(pl.entries))
	for _, e := range pl.entries {
		out = append(out, plannedEntry{Path: e.path, Dev: e.dev, Ino: e.ino, ReadOnly: e.readOnly})
	}
	return out
}

// serve handles execd's messages on this thread until it must exit.
func (rs *resident) serve() int {
	go rs.reap()
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(controlFD, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		fds := rights(oob[:oobn])
		if err != nil || n == 0 {
			closeAll(fds)
			rs.stop()
			time.Sleep(stopGrace)
			return 1 // what is left dies with the namespace
		}
		var m message
		if json.Unmarshal(buf[:n], &m) != nil {
			closeAll(fds)
			continue
		}
		switch m.Kind {
		case msgLaunch:
			rs.launch(fds)
		case msgAck:
			rs.mu.Lock()
			rs.unacked--
			rs.mu.Unlock()
			rs.poke()
		case msgRetire:
			rs.mu.Lock()
			rs.stopping = true
			rs.mu.Unlock()
			rs.poke()
		case msgStop:
			rs.stop()
			time.AfterFunc(stopGrace, func() { os.Exit(1) }) // what is left dies with the namespace
		}
		if m.Kind != msgLaunch {
			closeAll(fds)
		}
	}
}

// stop SIGTERMs every process of the namespace (all but this one) and
// exits once none is left.
func (rs *resident) stop() {
	rs.mu.Lock()
	rs.stopping = true
	rs.unacked = 0 // execd no longer needs the pids
	rs.mu.Unlock()
	_ = unix.Kill(-1, unix.SIGTERM)
	rs.poke()
}

func (rs *resident) poke() {
	select {
	case rs.kick <- struct{}{}:
	default:
	}
}

// launch starts the command a launch message asks for and replies.
func (rs *resident) launch(fds []int) {
	defer closeAll(fds)
	req, files, null, err := readRequest(fds)
	if null >= 0 {
		defer unix.Close(null)
	}
	if err != nil {
		rs.send(message{Kind: msgFailed, Err: wire("request", err)}, nil)
		return
	}
	var master int = -1
	if req.Terminal != nil {
		var tty int
		if master, tty, err = makeTerminal(req.Terminal); err != nil {
			rs.send(message{Kind: msgFailed, Err: wire("terminal", err)}, nil)
			return
		}
		defer unix.Close(master)
		defer unix.Close(tty)
		files = []uintptr{uintptr(tty), uintptr(tty), uintptr(tty)}
	}
	if err := checkDir(req.Dir); err != nil {
		rs.send(message{Kind: msgFailed, Err: wire("chdir", err)}, nil)
		return
	}
	pidfd := -1
	attr := &syscall.ProcAttr{Dir: req.Dir, Env: req.Env, Files: files, Sys: &syscall.SysProcAttr{
		Setsid: true, Setctty: req.Terminal != nil, Ctty: 0, PidFD: &pidfd,
	}}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.stopping {
		rs.sendLocked(message{Kind: msgFailed, Err: wire("start", errors.New("the launcher is stopping"))}, nil)
		return
	}
	pid, err := syscall.ForkExec(req.Path, req.Argv, attr)
	if err != nil {
		rs.sendLocked(message{Kind: msgFailed, Err: wire("exec", fmt.Errorf("%s: %w", req.Path, err))}, nil)
		return
	}
	defer unix.Close(pidfd)
	rs.children[pid] = true
	rs.unacked++ // not reaped before execd has read the pid through the pidfd
	send := []int{pidfd}
	if master >= 0 {
		send = append(send, master)
	}
	rs.sendLocked(message{Kind: msgStarted, Pid: pid}, send)
}

// readRequest reads the request in fds[0] and returns it with the stdio
// for the child: what came, /dev/null for what did not (null, which the
// caller closes, or -1).
func readRequest(fds []int) (req *launchRequest, files []uintptr, null int, err error) {
	null = -1
	if len(fds) == 0 {
		return nil, nil, null, errors.New("no request")
	}
	b, err := readAt(fds[0])
	if err != nil {
		return nil, nil, null, err
	}
	if err := json.Unmarshal(b, &req); err != nil {
		return nil, nil, null, fmt.Errorf("decode: %w", err)
	}
	if req.Path == "" || len(req.Argv) == 0 || req.Dir == "" {
		return nil, nil, null, errors.New("incomplete request")
	}
	files, next := make([]uintptr, 3), 1
	for i, came := range req.Stdio {
		if came && next < len(fds) {
			files[i] = uintptr(fds[next])
			next++
			continue
		}
		if null < 0 {
			if null, err = unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0); err != nil {
				return nil, nil, -1, err
			}
		}
		files[i] = uintptr(null)
	}
	return req, files, null, nil
}

// readAt reads the whole file fd from its start, leaving fd open (an
// *os.File would close it when collected).
func readAt(fd int) ([]byte, error) {
	var b []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Pread(fd, buf, int64(len(b)))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return b, nil
		}
		b = append(b, buf[:n]...)
	}
}

func checkDir(dir string) error {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("%s: %w", dir, unix.ENOTDIR)
	}
	return nil
}

// reap reaps every child that exits (commands and the orphans the
// namespace's init inherits) and reports the commands' exits, but none
// while a started command's pid is unread: execd reads it through the
// pidfd, which shows it only until the process is reaped. It waits for
// an exit without reaping it (WNOWAIT), or, with no child or an unread
// pid, for a launch or an ack.
func (rs *resident) reap() {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		rs.mu.Lock()
		if errors.Is(err, unix.ECHILD) && rs.stopping {
			os.Exit(0)
		}
		if err != nil || rs.unacked > 0 {
			rs.mu.Unlock()
			<-rs.kick
			continue
		}
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if err != nil || pid <= 0 {
				break
			}
			if rs.children[pid] {
				delete(rs.children, pid)
				rs.sendLocked(message{Kind: msgExited, Pid: pid, Status: int(ws)}, nil)
			}
		}
		rs.mu.Unlock()
	}
}

func (rs *resident) send(m message, fds []int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.sendLocked(m, fds)
}

// sendLocked sends m; an error means execd is gone, which the read loop
// finds out.
func (rs *resident) sendLocked(m message, fds []int) {
	b, oob := m.packet(fds)
	for {
		err := unix.Sendmsg(controlFD, b, oob, nil, unix.MSG_NOSIGNAL)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}
