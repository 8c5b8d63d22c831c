package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Launch is a command started through the helper, up to its exec.
type Launch struct {
	policy  *os.File // the memfd holding the policy (the child reads its copy)
	status  *os.File // read end of the status pipe
	statusW *os.File
	term    *os.File // our end of the terminal socket (Policy.Terminal), or nil
	termW   *os.File // the helper's end
}

// Wrap turns cmd (its Path, Args, Env and Dir, its stdio and SysProcAttr
// unchanged) into an invocation of the helper that enforces p and then
// execs cmd. Start cmd as usual, call Started, then Await: the command
// runs only when Await returns nil. With sup.UserNS the helper runs in
// new namespaces; without, protected paths are not enforced.
func Wrap(cmd *exec.Cmd, p Policy, sup Support) (*Launch, error) {
	p.Path, p.Argv, p.Dir, p.Env = cmd.Path, cmd.Args, cmd.Dir, cmd.Env
	if p.Env == nil {
		p.Env = os.Environ() // as os/exec does
	}
	if p.Dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		p.Dir = wd
	}
	p.Namespaces = sup.UserNS
	policy, err := policyFile(&p)
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		policy.Close()
		return nil, fmt.Errorf("status pipe: %w", err)
	}
	l := &Launch{policy: policy, status: r, statusW: w}
	if p.Terminal != nil {
		if !p.Namespaces {
			l.Started(errors.New("not started"))
			return nil, errors.New("a terminal of the sandbox's own needs user namespaces")
		}
		if l.term, l.termW, err = terminalSocket(); err != nil {
			l.Started(err)
			return nil, err
		}
	}
	cmd.Path = "/proc/self/exe" // this binary, even if replaced on disk since
	cmd.Args = []string{"execd-sandbox", HelperArg}
	cmd.Env = []string{} // the command's environment is in the policy
	cmd.Dir = ""
	cmd.ExtraFiles = []*os.File{policy, w} // fds 3 and 4
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if l.termW != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, l.termW)  // fd 5, terminalFD
		cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil // /dev/null until the helper's terminal
		cmd.SysProcAttr.Setsid = true                     // so that the terminal can become its controlling one
		cmd.SysProcAttr.Setctty = false
	}
	if p.Namespaces {
		addNamespaces(cmd.SysProcAttr, p.Network)
	}
	return l, nil
}

// policyFile writes the policy into an anonymous memory file, which any
// size fits and the child reads from the start.
func policyFile(p *Policy) (*os.File, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	fd, err := unix.MemfdCreate("execd-policy", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), "execd-policy")
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Started closes the parent's copies of the helper's descriptors; call it
// with what Start returned. After a failed Start it closes everything:
// there is nothing to await.
func (l *Launch) Started(err error) {
	_ = l.policy.Close()
	_ = l.statusW.Close()
	if l.termW != nil {
		_ = l.termW.Close()
	}
	if err != nil {
		_ = l.status.Close()
		if l.term != nil {
			_ = l.term.Close()
		}
	}
}

// Terminal returns the master of the terminal the helper made
// (Policy.Terminal); call it once Await returned nil. The caller owns it.
func (l *Launch) Terminal() (*os.File, error) {
	if l.term == nil {
		return nil, errors.New("no terminal was asked for")
	}
	defer l.term.Close()
	return receiveTerminal(l.term, time.Second)
}

// Await waits until the helper has exec'd the command (nil) or reported
// why it could not (*SetupError). After timeout it gives up with an
// error; the caller then kills the process.
func (l *Launch) Await(timeout time.Duration) (err error) {
	defer l.status.Close()
	defer func() {
		if err != nil && l.term != nil {
			_ = l.term.Close() // no terminal to take (a master sent is closed with it)
		}
	}()
	_ = l.status.SetReadDeadline(time.Now().Add(timeout))
	b, err := io.ReadAll(l.status)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &SetupError{Stage: "start", Err: fmt.Errorf("the sandbox helper did not start the command within %v", timeout)}
	case err != nil:
		return &SetupError{Stage: "start", Err: err}
	case len(b) == 0:
		return nil
	}
	var w wireError
	if json.Unmarshal(b, &w) != nil {
		return &SetupError{Stage: "start", Err: fmt.Errorf("unreadable report from the sandbox helper: %q", b)}
	}
	return &SetupError{Stage: w.Stage, Err: &reported{msg: w.Message, errno: syscall.Errno(w.Errno)}}
}

// reported is an error the helper reported: its message, which already
// names the errno, and the errno for errors.Is.
type reported struct {
	msg   string
	errno syscall.Errno
}

func (e *reported) Error() string { return e.msg }

func (e *reported) Unwrap() error {
	if e.errno == 0 {
		return nil
	}
	return e.errno
}
