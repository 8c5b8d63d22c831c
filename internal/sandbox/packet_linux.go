package sandbox

import (
	"encoding/json"
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// The packets that execd and its sandbox processes exchange on
// SOCK_SEQPACKET sockets: the launcher's control socket and the helper's
// terminal socket.

// packet is m as a packet, with fds as its control message.
func (m message) packet(fds []int) (b, oob []byte) {
	b, _ = json.Marshal(m)
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	return b, oob
}

// recvPacket reads one packet from f, a socket on the runtime's poller,
// into buf, with the descriptors it carried (close-on-exec). n is 0 at
// the socket's end.
func recvPacket(f *os.File, buf, oob []byte) (n int, fds []int, err error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, nil, err
	}
	var oobn int
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_CMSG_CLOEXEC)
		return !errors.Is(rerr, unix.EAGAIN)
	})
	fds = rights(oob[:oobn])
	if err == nil {
		err = rerr
	}
	return n, fds, err
}

// wire is a setup failure at stage as it travels: its message and errno.
func wire(stage string, err error) *wireError {
	w := &wireError{Stage: stage, Message: err.Error()}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		w.Errno = int(errno)
	}
	return w
}

// rights returns the descriptors a control message carried.
func rights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for i := range msgs {
		got, err := unix.ParseUnixRights(&msgs[i])
		if err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

func closeAll(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}
