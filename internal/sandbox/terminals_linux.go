package sandbox

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/execd/execd/internal/procfs"
)

// terminalFD is the helper's end of the socket on which it sends the
// master of the terminal it made for a command (Policy.Terminal).
const terminalFD = 5

// maxTerminals is how many terminals one sandbox (a helper's command, or
// every command of a launcher: 64 sessions and the terminals their
// programs make) may have at once: the pool of all devpts instances but
// the host's is shared (kernel.pty.max less kernel.pty.reserve), and one
// sandbox must not take it all.
const maxTerminals = 192

// privateTerminals mounts a devpts instance of the sandbox's own over
// /dev/pts, and its ptmx over /dev/ptmx, in the helper's mount namespace,
// and covers every other mount of a devpts (a chroot's /dev/pts, a
// container's /dev/console): the user's other terminals have no name
// there, and the terminals a command allocates (script, Python's pty)
// are made and named in it. A host without /dev/pts has none to hide.
func privateTerminals() error {
	if _, err := os.Stat("/dev/pts"); errors.Is(err, os.ErrNotExist) {
		return hideTerminals("")
	}
	if err := unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC,
		fmt.Sprintf("newinstance,ptmxmode=0666,mode=0620,max=%d", maxTerminals)); err != nil {
		return fmt.Errorf("mount a devpts of the sandbox's own on /dev/pts: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Stat("/dev/pts", &st); err != nil {
		return err
	}
	own := fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	if fi, err := os.Lstat("/dev/ptmx"); err == nil && fi.Mode()&os.ModeSymlink == 0 { // else none, or a link to pts/ptmx
		if err := unix.Mount("/dev/pts/ptmx", "/dev/ptmx", "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind /dev/pts/ptmx on /dev/ptmx: %w", err)
		}
	}
	return hideTerminals(own)
}

// hideTerminals covers every mount of a devpts but those of the device
// own (the sandbox's) and the one /dev/pts hides now: a directory with
// an empty read-only tmpfs, a single terminal with /dev/null.
func hideTerminals(own string) error {
	mounts, err := procfs.Mounts()
	if err != nil {
		return fmt.Errorf("list the mounts: %w", err)
	}
	for _, m := range mounts {
		if m.FSType != "devpts" || m.Dev == own || m.Point == "/dev/pts" && own != "" {
			continue
		}
		fi, err := os.Lstat(m.Point)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue // covered already by an earlier one
		case err != nil:
		case fi.IsDir():
			err = unix.Mount("tmpfs", m.Point, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=0,mode=0555")
		default:
			err = unix.Mount("/dev/null", m.Point, "", unix.MS_BIND, "")
		}
		if errors.Is(err, unix.ENOENT) {
			continue // a mount on an entry since removed: nothing reaches it by a path
		}
		if err != nil {
			return fmt.Errorf("hide the terminals mounted on %s: %w", m.Point, err)
		}
	}
	return nil
}

// openTerminal makes the command's terminal in the sandbox's devpts
// (after privateTerminals), of the given size, sends its master to execd
// on terminalFD, and makes it stdin, stdout, stderr and controlling
// terminal of the helper, which leads its own session and becomes the
// command.
func openTerminal(size *Terminal) error {
	master, tty, err := makeTerminal(size)
	if err != nil {
		return err
	}
	defer unix.Close(master)
	if err := unix.Sendmsg(terminalFD, []byte{0}, unix.UnixRights(master), nil, 0); err != nil {
		return fmt.Errorf("send the terminal to execd: %w", err)
	}
	_ = unix.Close(terminalFD)
	for fd := range 3 {
		if err := unix.Dup3(tty, fd, 0); err != nil {
			return fmt.Errorf("terminal as fd %d: %w", fd, err)
		}
	}
	_ = unix.Close(tty)
	if err := unix.IoctlSetInt(0, unix.TIOCSCTTY, 0); err != nil {
		return fmt.Errorf("make the terminal the controlling one: %w", err)
	}
	return nil
}

// makeTerminal opens a new terminal of /dev/ptmx, of the given size: its
// master and the terminal itself, both close-on-exec.
func makeTerminal(size *Terminal) (master, tty int, err error) {
	master, err = unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, -1, fmt.Errorf("open /dev/ptmx: %w", err)
	}
	if err := unix.IoctlSetPointerInt(master, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(master)
		return -1, -1, fmt.Errorf("unlock the terminal: %w", err)
	}
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(master), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if errno != 0 {
		unix.Close(master)
		return -1, -1, fmt.Errorf("open the terminal: %w", errno)
	}
	tty = int(r)
	ws := &unix.Winsize{Row: size.Rows, Col: size.Cols}
	if err := unix.IoctlSetWinsize(tty, unix.TIOCSWINSZ, ws); err != nil {
		unix.Close(master)
		unix.Close(tty)
		return -1, -1, fmt.Errorf("size the terminal: %w", err)
	}
	return master, tty, nil
}

// terminalSocket is the pair of sockets for Policy.Terminal: execd's end
// and the helper's.
func terminalSocket() (ours, theirs *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		err = unix.SetNonblock(fds[0], true) // ours on the poller, so that a read can time out
	}
	if err != nil {
		return nil, nil, fmt.Errorf("terminal socket: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "execd-terminal"), os.NewFile(uintptr(fds[1]), "execd-terminal-helper"), nil
}

// receiveTerminal reads the master the helper sent on sock, which it did
// before it exec'd the command, so it is there once Await returned nil.
func receiveTerminal(sock *os.File, timeout time.Duration) (*os.File, error) {
	if err := sock.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return nil, fmt.Errorf("receive the terminal: %w", err)
	}
	n, fds, err := recvPacket(sock, make([]byte, 1), make([]byte, unix.CmsgSpace(4)))
	if err == nil && n == 0 {
		err = errors.New("the sandbox helper sent no terminal")
	}
	if err == nil && len(fds) != 1 {
		err = fmt.Errorf("%d descriptors", len(fds))
	}
	if err != nil {
		closeAll(fds)
		return nil, fmt.Errorf("receive the terminal: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "/dev/ptmx"), nil
}
