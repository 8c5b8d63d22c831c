package orchestrator

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/execd/execd/internal/fspath"
	"github.com/execd/execd/internal/reaper"
	"github.com/execd/execd/internal/sandbox"
)

// helperTimeout bounds the sandbox helper's setup, from fork to exec.
const helperTimeout = 10 * time.Second

// SandboxPolicy is the sandbox configuration (SPEC §2, sandbox.*).
type SandboxPolicy struct {
	sandbox.Settings // Mode "" means workspace-write
	// FailClosed refuses commands when Mode cannot be enforced. When false
	// they run without a sandbox, and that is logged at start.
	FailClosed bool
	// OwnFiles are execd's own files (rules, amend, audit and config
	// files): read-only to sandboxed commands where they lie inside a
	// writable root (SPEC §8.2).
	OwnFiles []string
}

// initSandbox learns what the host supports (probing it unless given) and
// decides how commands will be confined. env is the commands' environment
// (for $TMPDIR). New logs the outcome once the shell is known.
func (o *Orchestrator) initSandbox(given *sandbox.Support, env []string) {
	if given != nil {
		o.support = *given
	} else if o.sandbox.Mode.Enforced() {
		o.support = sandbox.Probe(o.reaper.Run)
	}
	o.sandboxErr = o.support.Check(o.sandbox.Mode)
	o.roots = o.sandbox.Roots(o.cwd, env)
}

func (o *Orchestrator) logSupport() {
	fields := []zap.Field{
		zap.String("mode", string(o.sandbox.Mode)),
		zap.Bool("network_access", o.sandbox.NetworkAccess),
		zap.Bool("unix_sockets", o.UnixSockets()),
		zap.Strings("writable_roots", sandbox.RootPaths(o.roots)),
		zap.Bool("orphans_adopted", o.reaper.Adopts()),
		zap.String("containment", o.reaper.Containment()),
		zap.String("process_budget", o.reaper.Budget()),
		zap.String("shell", o.shell.Path),
	}
	if o.sandbox.Mode.Enforced() {
		fields = append(fields, zap.String("support", o.support.Describe()))
	}
	if o.sandbox.Mode == sandbox.WorkspaceWrite && o.cwd == "/" {
		o.log.Warn("cwd is /, which workspace-write never makes writable: set cwd (--cwd) to the project")
	}
	switch {
	case o.sandboxErr == nil:
		o.log.Info("sandbox", fields...)
		if o.sandbox.Mode == sandbox.WorkspaceWrite && o.support.OS == "linux" && !o.support.UserNS {
			o.log.Warn("user namespaces are unavailable: protected paths are not enforced and the network is cut by seccomp alone",
				zap.String("reason", o.support.UserNSErr))
		}
	case o.sandbox.FailClosed:
		o.log.Warn("sandbox cannot be enforced; commands will be refused", append(fields, zap.Error(o.sandboxErr))...)
	default:
		o.log.Warn("sandbox cannot be enforced; fail_closed is false, so commands run WITHOUT a sandbox",
			append(fields, zap.Error(o.sandboxErr))...)
	}
}

// sandboxMarkers are the variables that tell a command about its sandbox
// (SPEC §8.1, §8.3), for a run inside execd's sandbox or not. Nothing is
// marked when execd enforces nothing, except that an external sandbox
// without network stays one for every run.
func (o *Orchestrator) sandboxMarkers(sandboxed bool) []string {
	var env []string
	inside := sandboxed && o.Sandboxed()
	switch {
	case inside && o.support.OS == "linux":
		env = append(env, "EXECD_SANDBOX=linux")
	case inside && o.support.OS == "darwin":
		env = append(env, "EXECD_SANDBOX=seatbelt")
	}
	if (inside || o.sandbox.Mode == sandbox.ExternalSandbox) && !o.sandbox.NetworkAccess {
		env = append(env, "EXECD_SANDBOX_NETWORK_DISABLED=1")
	}
	return env
}

// SandboxMode returns the configured sandbox mode.
func (o *Orchestrator) SandboxMode() sandbox.Mode { return o.sandbox.Mode }

// Sandboxed reports whether commands run under a sandbox execd enforces.
func (o *Orchestrator) Sandboxed() bool { return o.sandboxErr == nil && o.sandbox.Mode.Enforced() }

// FailsClosed reports whether commands are refused because the configured
// sandbox cannot be enforced.
func (o *Orchestrator) FailsClosed() bool { return o.sandboxErr != nil && o.sandbox.FailClosed }

// NetworkAccess reports whether sandboxed commands may use the network.
func (o *Orchestrator) NetworkAccess() bool { return o.sandbox.NetworkAccess }

// UnixSockets reports whether sandboxed commands may reach the user's
// UNIX sockets (with the network on and sandbox.allow_unix_sockets).
func (o *Orchestrator) UnixSockets() bool {
	return o.sandbox.NetworkAccess && o.sandbox.AllowUnixSockets
}

// ProtectedNames returns the names kept read-only inside writable roots
// when they are enforced (SPEC §8.2), else nil.
func (o *Orchestrator) ProtectedNames() []string {
	if o.support.OS == "linux" && !o.support.UserNS {
		return nil
	}
	return o.sandbox.ProtectedNames
}

// Support returns what the host can enforce.
func (o *Orchestrator) Support() sandbox.Support { return o.support }

// WritableRoots returns where commands may write under workspace-write.
func (o *Orchestrator) WritableRoots() []string { return sandbox.RootPaths(o.roots) }

// WritableRootOf returns the writable root the absolute path p (as far as
// it exists, symlinks resolved) lies in, or "" when it lies in none: a
// sandboxed command could write there.
func (o *Orchestrator) WritableRootOf(p string) string {
	if !o.Sandboxed() {
		return ""
	}
	final, _, err := fspath.Resolve(fspath.Disk, filepath.Clean(p), fspath.Options{KeepMissing: true})
	if err != nil {
		final = filepath.Clean(p)
	}
	for _, r := range o.roots {
		if within(final, r.Path) || within(filepath.Clean(p), r.Path) {
			return r.Path
		}
	}
	return ""
}

// start starts cmd through the reaper, inside the sandbox when sandboxed
// and one is enforced, and returns once the command itself runs (the
// helper has exec'd it). On error nothing runs and nothing is left to
// wait for. Errors: a *sandbox.SetupError, or the reaper's.
func (o *Orchestrator) start(cmd *exec.Cmd, sandboxed bool) error {
	_, err := o.startWith(cmd, sandboxed, nil)
	return err
}

// terminalInside reports whether a sandboxed session's terminal is made
// inside the sandbox, in its own devpts (SPEC §8.3): where the sandbox
// runs in namespaces.
func (o *Orchestrator) terminalInside(sandboxed bool) bool {
	return sandboxed && o.Sandboxed() && o.support.UserNS
}

// startWith is start; with term (only where terminalInside) the helper
// makes the command's terminal of that size and startWith returns its
// master.
func (o *Orchestrator) startWith(cmd *exec.Cmd, sandboxed bool, term *sandbox.Terminal) (*os.File, error) {
	if !sandboxed || !o.Sandboxed() {
		return nil, o.reaper.Start(cmd)
	}
	policy := sandbox.Policy{
		Terminal:       term,
		Mode:           o.sandbox.Mode,
		Network:        o.sandbox.NetworkAccess,
		UnixSockets:    o.sandbox.NetworkAccess && o.sandbox.AllowUnixSockets,
		Roots:          o.roots,
		ProtectedNames: o.sandbox.ProtectedNames,
		ProtectedPaths: o.protectedPaths,
		SubmodulePaths: o.submodulePaths,
	}
	if o.launchable(cmd, &policy) {
		return o.launch(cmd, policy)
	}
	program, args, dir := cmd.Path, cmd.Args, cmd.Dir
	launch, err := sandbox.Wrap(cmd, policy, o.support)
	if err != nil {
		return nil, &sandbox.SetupError{Stage: "prepare", Err: err}
	}
	err = o.reaper.Start(cmd)
	launch.Started(err)
	// From here on cmd stands for the command, which the helper becomes:
	// logs and errors name it, not the helper.
	cmd.Path, cmd.Args, cmd.Dir = program, args, dir
	switch {
	case errors.Is(err, reaper.ErrClosed):
		return nil, err
	case err != nil:
		// The program started is the helper, this binary: its start
		// failing is the sandbox's problem (namespaces refused since the
		// probe, say).
		var pe *fs.PathError // "fork/exec /proc/self/exe: ..." names the helper
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &sandbox.SetupError{Stage: "start", Err: fmt.Errorf("start the sandbox helper for %s: %w", program, err)}
	}
	err = launch.Await(helperTimeout)
	var master *os.File
	if err == nil && term != nil {
		if master, err = launch.Terminal(); err != nil {
			err = &sandbox.SetupError{Stage: "terminal", Err: err}
		}
	}
	if err != nil {
		_ = o.reaper.Signal(cmd, syscall.SIGKILL)
		_, _ = o.reaper.Wait(cmd)
		return nil, err
	}
	return master, nil
}

// startError maps a failed start to what callers see.
func (o *Orchestrator) startError(cmd *exec.Cmd, err error) error {
	var se *sandbox.SetupError
	switch {
	case errors.Is(err, reaper.ErrClosed):
		return ErrShuttingDown
	case errors.Is(err, syscall.E2BIG):
		return &SpawnError{Program: cmd.Path, Err: errArgMax(cmd)}
	case errors.As(err, &se):
		return err
	case errors.Is(err, fs.ErrNotExist) && cmd.Dir != "" && errors.Is(checkDir(cmd.Dir), fs.ErrNotExist):
		// The directory, removed since it was checked (the turn
		// directory since start, say), not the program.
		return &WorkdirError{Workdir: cmd.Dir, Err: errors.New("no such directory")}
	}
	return &SpawnError{Program: cmd.Path, Err: err}
}

// MaxArgStrlen is the kernel's limit on one argument or environment
// variable (MAX_ARG_STRLEN, 32 pages), NAME=VALUE counted whole.
const MaxArgStrlen = 32 * 4096

// errArgMax says which of the kernel's limits a command's arguments and
// environment passed (E2BIG), and what to do instead.
func errArgMax(cmd *exec.Cmd) error {
	total, longest := 0, 0
	for _, s := range slices.Concat(cmd.Args, cmd.Env) {
		total += len(s) + 1
		longest = max(longest, len(s))
	}
	if longest > MaxArgStrlen {
		return fmt.Errorf("an argument or environment variable of %d bytes is over the kernel's limit of %d for one (MAX_ARG_STRLEN): "+
			"write a long script to a file and run the file", longest, MaxArgStrlen)
	}
	return fmt.Errorf("its arguments and environment, %d bytes, are over the kernel's limit for them all (ARG_MAX, a quarter of the stack limit): "+
		"write a long script to a file and run the file, or pass less environment", total)
}

// confine decides how an authorized run is confined in the end (SPEC
// §7.2): a run lifted out of the sandbox (by allow rules, the user's
// approval of an escalation, or a retry without the sandbox) runs in the
// sandbox after all when its shell would read a startup file, or its git
// use a repository, within the sandboxed commands' reach; otherwise it
// gets the variables that name git's repository, if any. note says why
// it runs in the sandbox, for the model.
func (o *Orchestrator) confine(c call, sandboxed bool) (bool, []string, string) {
	if sandboxed || !o.Sandboxed() || o.approvals.skip {
		return sandboxed, nil, ""
	}
	note := ""
	env, why := []string(nil), o.startupWhy(c)
	if why != "" {
		note = "execd ran this in the sandbox: " + why + "."
	} else if env, why = o.liftGit(c); why != "" {
		note = "execd ran git in the sandbox: " + why + "."
	}
	if note != "" {
		o.log.Info("a lifted call runs in the sandbox", zap.String("call_id", c.id), zap.String("why", why))
		return true, nil, note
	}
	return false, env, ""
}
