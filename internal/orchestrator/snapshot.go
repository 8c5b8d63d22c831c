package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/execd/execd/internal/shellsnap"
)

// Shell snapshots (SPEC §9.1): a login shell's profile is run once per
// shell and environment, and its state sourced by later login shells in
// its place (package shellsnap). Only where the profile would run in the
// same place: a snapshot taken in the sandbox stands in only for
// sandboxed commands; one taken outside only where execd enforces no
// sandbox at all (every command runs outside, and the real login shell
// would run its profile there). A call lifted out of an enforced sandbox
// runs its real login shell, after today's checks of its startup files
// (confine).

// SnapshotOptions configures shell snapshots (shell.snapshot_*).
type SnapshotOptions struct {
	// TTL is how long a snapshot is used; 0 means shellsnap.DefaultTTL.
	TTL time.Duration
	// Timeout bounds taking one; 0 means shellsnap.DefaultTimeout.
	Timeout time.Duration
	// Dirs are where execd may make its private directory of snapshots,
	// in order; the first that suits is used (snapshotDir). nil means
	// defaultSnapshotDirs.
	Dirs []string
}

// initSnapshots makes the snapshots' directory, or says why there are
// none. base is execd's environment; env the commands'.
func (o *Orchestrator) initSnapshots(opts *SnapshotOptions, base []string, env EnvPolicy) {
	if opts == nil {
		o.snapWhy = "shell snapshots are off (shell.snapshot = false)"
		return
	}
	dirs := opts.Dirs
	if dirs == nil {
		dirs = defaultSnapshotDirs(base)
	}
	dir, err := o.snapshotDir(dirs)
	if err != nil {
		o.snapWhy = err.Error()
		o.log.Warn("no shell snapshots: login shells run the profile for every command", zap.String("reason", o.snapWhy))
		return
	}
	o.snaps, err = shellsnap.New(shellsnap.Options{Dir: dir, TTL: opts.TTL, Timeout: opts.Timeout,
		Keep: env.Keeps, Logger: o.log.Named("snapshot")})
	if err != nil {
		_ = os.Remove(dir)
		o.snapWhy = err.Error()
		o.log.Warn("no shell snapshots: login shells run the profile for every command", zap.String("reason", o.snapWhy))
	}
}

// defaultSnapshotDirs are where snapshots may be kept: the user's
// runtime directory and, for root, /run. Never a directory others may
// write in, sticky or not, nor one below such (an XDG_RUNTIME_DIR in
// /tmp): another sandbox of the same user, another execd's, writes
// there and could rename execd's directory or write into it; its
// commands, or execd's outside any sandbox, would then run what it put
// in a snapshot.
func defaultSnapshotDirs(base []string) []string {
	var dirs []string
	if d, _ := lookupEnv(base, "XDG_RUNTIME_DIR"); filepath.IsAbs(d) && sharedAbove(d) == "" {
		dirs = append(dirs, d)
	}
	dirs = append(dirs, "/run/user/"+strconv.Itoa(os.Getuid()))
	if os.Getuid() == 0 {
		dirs = append(dirs, "/run")
	}
	return dirs
}

// sharedAbove returns the first directory above d (resolved) that others
// may write in, or "".
func sharedAbove(d string) string {
	p, err := filepath.EvalSymlinks(d)
	if err != nil {
		return ""
	}
	for p != "/" {
		p = filepath.Dir(p)
		if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o022 != 0 {
			return p
		}
	}
	return ""
}

// snapshotDir makes execd's private directory (mode 0700, a random name)
// in the first of dirs that is a directory of the user's or root's,
// writable by no one else (a sticky one, as /tmp, neither: the user's
// other sandboxes write there), and out of every writable root: a
// sandboxed command, though the same user, cannot write there.
func (o *Orchestrator) snapshotDir(dirs []string) (string, error) {
	var tried []string
	for _, d := range dirs {
		dir, why := o.makeSnapshotDir(d)
		if why == "" {
			return dir, nil
		}
		tried = append(tried, d+" ("+why+")")
	}
	return "", fmt.Errorf("no directory for shell snapshots out of the writable roots: %s; set XDG_RUNTIME_DIR to one", strings.Join(tried, ", "))
}

func (o *Orchestrator) makeSnapshotDir(d string) (string, string) {
	fi, err := os.Stat(d)
	if err != nil {
		return "", cause(err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return "", "not a directory"
	case ok && int(st.Uid) != os.Getuid() && st.Uid != 0:
		return "", "another user's"
	case fi.Mode().Perm()&0o022 != 0:
		return "", "writable by others"
	case o.WritableRootOf(d) != "":
		return "", "inside the writable root " + o.WritableRootOf(d)
	}
	removeDeadSnapshotDirs(d)
	dir, err := os.MkdirTemp(d, "execd-snap-"+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", cause(err)
	}
	if root := o.WritableRootOf(dir); root != "" { // a symlink on the way
		_ = os.Remove(dir)
		return "", "inside the writable root " + root
	}
	return dir, ""
}

// removeDeadSnapshotDirs removes the snapshot directories in d of
// execds of this user that are gone (killed by SIGKILL, or the machine
// stopped): a directory whose PID is alive, though another program's
// now, stays.
func removeDeadSnapshotDirs(d string) {
	entries, err := os.ReadDir(d)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "execd-snap-")
		pidText, _, ok2 := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || !ok2 || err != nil || pid <= 0 || !e.IsDir() {
			continue
		}
		if fi, err := e.Info(); err != nil || fi.Sys().(*syscall.Stat_t).Uid != uint32(os.Getuid()) {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(filepath.Join(d, e.Name()))
		}
	}
}

// cause is err without the path a *fs.PathError names.
func cause(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// snapshotUse is how a command may use a snapshot.
type snapshotUse int

const (
	useSnapshot      snapshotUse = iota
	noSnapshot                   // the profile runs (execd doctor's measure)
	selfTestSnapshot             // execd doctor's: the profile's run does not taint the roots (taintRoots)
)

// withSnapshot has the login shell cmd ([SHELL, -lc, SCRIPT] of bash,
// zsh or sh) source the snapshot of its profile in place of running it,
// where one stands in (see above). extra is what the call adds to the
// environment (git's for a lifted call): none may be added.
func (o *Orchestrator) withSnapshot(ctx context.Context, cmd *exec.Cmd, sandboxed bool, use snapshotUse, extra []string) {
	inside := sandboxed && o.Sandboxed()
	if o.snaps == nil || use == noSnapshot || len(extra) > 0 || (!inside && o.Sandboxed()) {
		return
	}
	req, why := o.snapshotRequest(cmd, inside, use != selfTestSnapshot)
	if why != "" {
		o.log.Debug("no shell snapshot", zap.String("shell", cmd.Path), zap.String("why", why))
		return
	}
	snap, why := o.snaps.Get(ctx, req)
	if snap == nil {
		o.log.Debug("the login shell runs its profile", zap.String("shell", cmd.Path), zap.String("why", why))
		return
	}
	cmd.Args, cmd.Env = snap.Command(cmd.Args, cmd.Env)
}

// snapshotRequest is what the snapshot of cmd's login shell is taken
// for, or why it can have none; taint: taking it counts as a sandboxed
// command's run (taintRoots).
func (o *Orchestrator) snapshotRequest(cmd *exec.Cmd, inside, taint bool) (shellsnap.Request, string) {
	kinds := map[ShellKind]shellsnap.Kind{Bash: shellsnap.Bash, Zsh: shellsnap.Zsh, Sh: shellsnap.Sh}
	kind, _ := kindOf(cmd.Path)
	k, ok := kinds[kind]
	_, posix := lookupEnv(cmd.Env, "POSIXLY_CORRECT")
	switch {
	case len(cmd.Args) != 3 || cmd.Args[1] != "-lc" || !ok:
		return shellsnap.Request{}, fmt.Sprintf("%s is no bash, zsh or sh login shell", strings.Join(cmd.Args[:min(2, len(cmd.Args))], " "))
	case k == shellsnap.Bash && posix:
		return shellsnap.Request{}, "bash in POSIX mode (POSIXLY_CORRECT) reads no BASH_ENV"
	}
	// A "shell" a command wrote is not the user's: it could write a
	// snapshot of any size, as often as the model names a new one.
	if root := o.WritableRootOf(cmd.Path); root != "" {
		return shellsnap.Request{}, fmt.Sprintf("the shell %s is inside the writable root %s", cmd.Path, root)
	}
	scope := "outside the sandbox"
	if inside {
		scope = "sandboxed"
	}
	path, dir := cmd.Path, cmd.Dir
	return shellsnap.Request{Kind: k, Shell: path, Scope: scope, Env: cmd.Env, Dir: dir,
		Files: func() []string { return o.loginFiles(path, dir) }, Run: o.snapshotRunner(inside, taint)}, ""
}

// snapshotRunner runs a snapshot's shell as a one-shot command is run,
// inside the sandbox or not; what it leaves running is killed.
func (o *Orchestrator) snapshotRunner(sandboxed, taint bool) shellsnap.Runner {
	return func(ctx context.Context, argv, env []string, dir string) (shellsnap.Result, error) {
		cmd := &exec.Cmd{Path: argv[0], Args: argv, Env: env, Dir: dir, SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
		if sandboxed && taint {
			o.taintRoots() // the profile ran there as a command does
		}
		run, err := o.startPiped(cmd, sandboxed, nil, nil)
		if err != nil {
			return shellsnap.Result{}, err
		}
		res := run.wait(ctx, o, 0)
		if err := o.reaper.SignalSession(cmd, syscall.SIGKILL); err != nil {
			o.log.Warn("kill what a login profile left running", zap.Error(err))
		}
		return shellsnap.Result{Stdout: res.Stdout.Data, Stderr: res.Stderr.Data,
			Truncated: res.Stdout.Dropped() || res.Stderr.Dropped(),
			ExitCode:  res.ExitCode, TimedOut: res.Stopped != nil}, nil
	}
}

// SnapshotStatus says whether a snapshot stands in for the profile of the
// login shell argv ([SHELL, -lc, SCRIPT]) in a one-shot call that runs
// in the sandbox (when one is enforced), as execd doctor's do: the
// snapshot's path, or why none does; and, once one was taken, what its
// login shell took.
func (o *Orchestrator) SnapshotStatus(argv []string) (path, why string, cost time.Duration) {
	if o.snaps == nil {
		return "", o.snapWhy, 0
	}
	prog, err := lookPath(argv[0], o.commandPath(), o.cwd)
	if err != nil {
		return "", err.Error(), 0
	}
	cmd := &exec.Cmd{Path: prog, Args: argv, Env: o.environ(true, false), Dir: o.cwd}
	req, why := o.snapshotRequest(cmd, o.Sandboxed(), false)
	if why != "" {
		return "", why, 0
	}
	info, ok := o.snaps.Info(req)
	if !ok {
		return "", "no snapshot was taken yet", 0
	}
	return info.Path, info.Why, info.Cost
}

// SnapshotSettings returns the snapshots' directory ("" when there are
// none), their time to live and the bound on taking one.
func (o *Orchestrator) SnapshotSettings() (dir string, ttl, timeout time.Duration) {
	if o.snaps == nil {
		return "", 0, 0
	}
	return o.snaps.Dir(), o.snaps.TTL(), o.snaps.Timeout()
}
