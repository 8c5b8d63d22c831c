package sandbox

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// terminalFD is the helper's end of the socket on which it sends the
// master of the terminal it made for a command (Policy.Terminal).
const terminalFD = 5

// privateTerminals mounts a devpts instance of the sandbox's own over
// /dev/pts, and its ptmx over /dev/ptmx, in the helper's mount namespace:
// the user's other terminals have no name there, and the terminals a
// command allocates (script, Python's pty) are made and named in it. A
// host without /dev/pts has no terminal to hide.
func privateTerminals() error {
	if _, err := os.Stat("/dev/pts"); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC,
		"newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return fmt.Errorf("mount a devpts of the sandbox's own on /dev/pts: %w", err)
	}
	fi, err := os.Lstat("/dev/ptmx")
	if err != nil || fi.Mode()&os.ModeSymlink != 0 {
		return nil // none, or a link to pts/ptmx
	}
	if err := unix.Mount("/dev/pts/ptmx", "/dev/ptmx", "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind /dev/pts/ptmx on /dev/ptmx: %w", err)
	}
	return nil
}

// openTerminal makes the command's terminal in the sandbox's devpts
// (after privateTerminals), of the given size, sends its master to execd
// on terminalFD, and makes it stdin, stdout, stderr and controlling
// terminal of the helper, which leads its own session and becomes the
// command.
func openTerminal(size *Terminal) error {
	master, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open /dev/ptmx: %w", err)
	}
	defer unix.Close(master)
	if err := unix.IoctlSetPointerInt(master, unix.TIOCSPTLCK, 0); err != nil {
		return fmt.Errorf("unlock the terminal: %w", err)
	}
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(master), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if errno != 0 {
		return fmt.Errorf("open the terminal: %w", errno)
	}
	tty := int(r)
	ws := &unix.Winsize{Row: size.Rows, Col: size.Cols}
	if err := unix.IoctlSetWinsize(tty, unix.TIOCSWINSZ, ws); err != nil {
		return fmt.Errorf("size the terminal: %w", err)
	}
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

// terminalSocket is the pair of sockets for Policy.Terminal: execd's end
// and the helper's.
func terminalSocket() (ours, theirs *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("terminal socket: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "execd-terminal"), os.NewFile(uintptr(fds[1]), "execd-terminal-helper"), nil
}

// receiveTerminal reads the master the helper sent on sock, which it did
// before it exec'd the command, so it is there once Await returned nil.
func receiveTerminal(sock *os.File, timeout time.Duration) (*os.File, error) {
	_ = sock.SetReadDeadline(time.Now().Add(timeout))
	rc, err := sock.SyscallConn()
	if err != nil {
		return nil, err
	}
	oob := make([]byte, unix.CmsgSpace(4))
	var n, oobn int
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), make([]byte, 1), oob, unix.MSG_CMSG_CLOEXEC)
		return !errors.Is(rerr, unix.EAGAIN)
	})
	if err == nil {
		err = rerr
	}
	if err == nil && n == 0 {
		err = errors.New("the sandbox helper sent no terminal")
	}
	if err != nil {
		return nil, fmt.Errorf("receive the terminal: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("receive the terminal: %d control messages (%v)", len(msgs), err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("receive the terminal: %d descriptors (%v)", len(fds), err)
	}
	return os.NewFile(uintptr(fds[0]), "/dev/ptmx"), nil
}
