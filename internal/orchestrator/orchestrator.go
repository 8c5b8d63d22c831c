package orchestrator

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/semaphore"

	"github.com/execd/execd/internal/audit"
	"github.com/execd/execd/internal/policy"
	"github.com/execd/execd/internal/procstore"
	"github.com/execd/execd/internal/reaper"
	"github.com/execd/execd/internal/sandbox"
	"github.com/execd/execd/internal/shellsnap"
)

// Options configures an [Orchestrator].
type Options struct {
	// Logger receives lifecycle events; nil means none.
	Logger *zap.Logger
	// Reaper starts and owns every process. Required.
	Reaper *reaper.Reaper
	// Cwd is the turn directory that relative workdirs resolve against;
	// "" means the process's working directory.
	Cwd     string
	Sandbox SandboxPolicy
	Env     EnvPolicy
	// BaseEnv is the environment commands inherit from; nil means
	// os.Environ().
	BaseEnv []string
	// Shell is the user's shell; the zero value means DetectShell on
	// /etc/passwd for the current uid.
	Shell Shell
	// Sessions sizes the session store (sessions.max); zero values mean
	// 64 sessions with the 8 most recent protected.
	Sessions procstore.Options
	// MaxConcurrent limits the one-shot commands running at once
	// (exec.max_concurrent); 0 means DefaultMaxConcurrent. Calls beyond
	// it wait their turn, in order.
	MaxConcurrent int
	// Support is what the host can enforce; nil means sandbox.Probe, which
	// starts one process.
	Support *sandbox.Support
	// Policy is when to ask (approval_policy); "" means on-request.
	Policy policy.ApprovalPolicy
	// Rules are the exec policy's rules; nil means none. allow_prefix
	// answers add to them.
	Rules *policy.Rules
	// AmendFile is where allow_prefix answers are appended
	// (rules.amend_file); "" means allow_prefix is never offered.
	AmendFile string
	// Audit receives decisions and finished commands; nil means none.
	Audit *audit.Log
	// GitState is the file where execd keeps, from one start to the
	// next, the writable roots in which a sandboxed command ran while the
	// root had no .git (git made there later is not trusted to run
	// outside the sandbox, SPEC §7.2); "" keeps them for this process
	// only.
	GitState string
	// Snapshots configures shell snapshots (SPEC §9.1); nil takes none:
	// every login shell runs the profile.
	Snapshots *SnapshotOptions
	// SkipPolicy runs every command in the sandbox without consulting the
	// policy or asking anyone (execd sandbox, execd doctor's self-test).
	SkipPolicy bool
}

// Orchestrator runs commands. Create it with [New].
type Orchestrator struct {
	log        *zap.Logger
	reaper     *reaper.Reaper
	running    *semaphore.Weighted // one unit per one-shot command running
	cwd        string
	sandbox    SandboxPolicy
	support    sandbox.Support
	roots      []sandbox.Root // writable roots of workspace-write, resolved at start
	shell      Shell
	env        []string // the environment of sandboxed commands, built once
	sessionEnv []string // env with the session overrides
	bareEnv    []string // env without the markers of execd's sandbox
	bareSess   []string // sessionEnv without them
	approvals  *approvals
	patchMu    sync.Mutex // held by a patch from its Prepare to its Commit
	// protectedPaths are kept read-only in every launch (Policy's
	// ProtectedPaths): execd's own files; and submodulePaths, the .git
	// of submodules found at start (recordGit).
	protectedPaths, submodulePaths []string
	// gitStart are the parts of the protected repositories found at
	// start, as they were then (recordGit).
	gitStart map[string]fileID
	gitState string          // Options.GitState
	taintMu  sync.Mutex      // guards tainted
	tainted  map[string]bool // guarded by taintMu: roots a sandboxed command ran in without a .git
	startup  startupCache    // what shell startup files name (startupWhy)

	snaps   *shellsnap.Cache // nil without shell snapshots
	snapWhy string           // why there are none

	launchers       launchers // the sandbox's resident launchers
	sessions        *procstore.Store[*session]
	sessionsRunning sync.WaitGroup // session pumps and waiters
	quiet           time.Duration  // quietWindow; tests lengthen it
	// sandboxErr is why the configured mode cannot be enforced, or nil.
	sandboxErr error

	leftoverMu    sync.Mutex
	leftoverFiles map[*os.File]struct{} // guarded by leftoverMu: pipes read by discard
	closed        bool                  // guarded by leftoverMu: Close was called
	leftovers     sync.WaitGroup        // discard goroutines
}

// New checks opts and returns an Orchestrator. It logs the detected shell
// and the sandbox support once.
func New(opts Options) (*Orchestrator, error) {
	if opts.Reaper == nil {
		return nil, errors.New("orchestrator: a Reaper is required")
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	cwd, err := resolveCwd(opts.Cwd)
	if err != nil {
		return nil, err
	}
	base := opts.BaseEnv
	if base == nil {
		base = os.Environ()
	}
	if opts.Sandbox.Mode == "" {
		opts.Sandbox.Mode = sandbox.WorkspaceWrite
	}
	o := &Orchestrator{
		quiet:    quietWindow,
		log:      log,
		reaper:   opts.Reaper,
		cwd:      cwd,
		sandbox:  opts.Sandbox,
		shell:    opts.Shell,
		sessions: procstore.New[*session](opts.Sessions),
		running:  semaphore.NewWeighted(int64(cmp.Or(opts.MaxConcurrent, DefaultMaxConcurrent))),

		leftoverFiles: map[*os.File]struct{}{},
	}
	env := BuildEnv(base, opts.Env)
	o.initSandbox(opts.Support, env)
	o.initSnapshots(opts.Snapshots, base, opts.Env)
	o.protectedPaths = slices.Clone(opts.Sandbox.OwnFiles)
	o.gitState = opts.GitState
	o.loadTaint()
	o.env = append(slices.Clip(env), o.sandboxMarkers(true)...)
	o.bareEnv = append(slices.Clip(env), o.sandboxMarkers(false)...)
	if o.shell.Path == "" {
		pathEnv, _ := lookupEnv(base, "PATH")
		var note string
		o.shell, note = DetectShell("/etc/passwd", os.Getuid(), pathEnv)
		if note != "" {
			log.Warn("user shell fallback", zap.String("reason", note))
		}
	}
	o.recordGit()
	o.sessionEnv = withOverrides(o.env, sessionOverrides)
	o.bareSess = withOverrides(o.bareEnv, sessionOverrides)
	o.approvals = newApprovals(opts)
	o.logSupport()
	return o, nil
}

func resolveCwd(cwd string) (string, error) {
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("working directory: %w", err)
		}
		cwd = wd
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return "", fmt.Errorf("cwd %s: %w", cwd, err)
	}
	if err := checkDir(abs); err != nil {
		return "", fmt.Errorf("cwd %s: %w", cwd, err)
	}
	return abs, nil
}

func checkDir(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return errors.New("not a directory")
	}
	return nil
}

// Cwd returns the turn directory.
func (o *Orchestrator) Cwd() string { return o.cwd }

// Shell returns the user's shell.
func (o *Orchestrator) Shell() Shell { return o.shell }

// environ is the environment of a command: with the markers of execd's
// sandbox when it runs inside it, with the session overrides for a
// session.
func (o *Orchestrator) environ(sandboxed, session bool) []string {
	switch {
	case sandboxed && session:
		return o.sessionEnv
	case sandboxed:
		return o.env
	case session:
		return o.bareSess
	}
	return o.bareEnv
}

// commandPath is the PATH programs are looked up in: the commands' own,
// or execd's when the environment policy leaves them none.
func (o *Orchestrator) commandPath() string {
	if p, _ := lookupEnv(o.env, "PATH"); p != "" {
		return p
	}
	return os.Getenv("PATH")
}

// ResolveShell resolves a shell named by the model (exec_command's shell:
// a path, or a name on the commands' PATH) as SPEC §9.1 does the user's.
func (o *Orchestrator) ResolveShell(name, workdir string) (Shell, error) {
	dir, err := o.ResolveWorkdir(workdir)
	if err != nil {
		return Shell{}, err
	}
	return ResolveShell(name, o.commandPath(), dir)
}

// WorkdirError reports a workdir that cannot be used.
type WorkdirError struct {
	Workdir string
	Err     error
}

func (e *WorkdirError) Error() string { return fmt.Sprintf("workdir %s: %v", e.Workdir, e.Err) }
func (e *WorkdirError) Unwrap() error { return e.Err }

// ResolveWorkdir returns the absolute directory a command runs in: workdir
// resolved against the turn directory, which must exist. "" means the turn
// directory (whether it still exists, the start finds out: startError).
func (o *Orchestrator) ResolveWorkdir(workdir string) (string, error) {
	if workdir == "" {
		return o.cwd, nil
	}
	dir := workdir
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(o.cwd, dir)
	}
	dir = filepath.Clean(dir)
	if err := checkDir(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			err = errors.New("no such directory")
		}
		return "", &WorkdirError{Workdir: workdir, Err: err}
	}
	return dir, nil
}
