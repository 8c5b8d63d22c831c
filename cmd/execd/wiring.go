package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"

	"go.uber.org/zap"

	"github.com/execd/execd/internal/orchestrator"
	"github.com/execd/execd/internal/policy"
	"github.com/execd/execd/internal/procstore"
	"github.com/execd/execd/internal/reaper"
	"github.com/execd/execd/internal/sandbox"
	"github.com/execd/execd/internal/tools"
)

// newOrchestrator converts the configuration into the orchestrator's
// options. sup is what the host supports; nil lets the orchestrator probe
// it when the configured mode needs it. pol is the exec policy; nil runs
// every command in the sandbox without policy (execd sandbox, doctor).
// snapshots takes shell snapshots when the configuration says so: not
// for execd run, whose one command would pay for the snapshot and gain
// nothing.
func newOrchestrator(cfg *config, log *zap.Logger, r *reaper.Reaper, sup *sandbox.Support, pol *execPolicy, snapshots bool) (*orchestrator.Orchestrator, error) {
	mode, err := sandbox.ParseMode(cfg.Sandbox.Mode)
	if err != nil {
		return nil, err // validated by the loader
	}
	opts := orchestrator.Options{
		Logger: log.Named("orchestrator"),
		Reaper: r,
		Cwd:    cfg.Cwd,
		Sandbox: orchestrator.SandboxPolicy{
			Settings: sandbox.Settings{
				Mode:                mode,
				NetworkAccess:       cfg.Sandbox.NetworkAccess,
				AllowUnixSockets:    cfg.Sandbox.AllowUnixSockets,
				WritableRoots:       cfg.Sandbox.WritableRoots,
				ExcludeTmpdirEnvVar: cfg.Sandbox.ExcludeTmpdirEnvVar,
				ExcludeSlashTmp:     cfg.Sandbox.ExcludeSlashTmp,
				ProtectedNames:      cfg.Sandbox.ProtectedPaths,
			},
			FailClosed: cfg.Sandbox.FailClosed,
			OwnFiles:   ownFiles(cfg),
		},
		Env:           envPolicy(cfg),
		Sessions:      procstore.Options{Max: cfg.Sessions.Max},
		MaxConcurrent: cfg.Exec.MaxConcurrent,
		Support:       sup,
		Policy:        policy.ApprovalPolicy(cfg.ApprovalPolicy),
		GitState:      gitStateFile(),
		AmendFile:     cfg.Rules.AmendFile,
		SkipPolicy:    pol == nil,
	}
	if pol != nil {
		opts.Rules, opts.Audit = pol.rules, pol.audit
	}
	if snapshots && cfg.Shell.Snapshot {
		opts.Snapshots = &orchestrator.SnapshotOptions{TTL: cfg.Shell.SnapshotTTL, Timeout: cfg.Shell.SnapshotTimeout}
	}
	orch, err := orchestrator.New(opts)
	if err == nil && pol != nil {
		makeOwnDir(orch, log)
	}
	return orch, err
}

// ownFiles are execd's own files and directories, which steer later
// runs of execd (SPEC §8.2): the configuration files read and the default
// configuration directory (which holds the rules directory), the rules
// files, the amend file and the audit file. Sandboxed commands must not
// write them: the helper keeps those inside a writable root read-only.
func ownFiles(cfg *config) []string {
	files := slices.Clone(cfg.Files)
	if dir := configDir(); dir != "" {
		files = append(files, filepath.Join(dir, "execd"))
	}
	if dir := stateDir(); dir != "" {
		files = append(files, filepath.Join(dir, "execd"))
	}
	files = append(files, cfg.Rules.Files...)
	for _, f := range []string{cfg.Rules.AmendFile, cfg.AuditPath} {
		if f != "" {
			files = append(files, f)
		}
	}
	slices.Sort(files)
	return slices.Compact(files)
}

// makeOwnDir creates the default configuration and state directories
// when they are missing inside a writable root: otherwise a sandboxed
// command could create them, with a config.toml or rules for the next
// start of execd, and only what exists can be kept read-only.
func makeOwnDir(orch *orchestrator.Orchestrator, log *zap.Logger) {
	for _, base := range []string{configDir(), stateDir()} {
		if base == "" {
			continue
		}
		dir := filepath.Join(base, "execd")
		if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) || orch.WritableRootOf(dir) == "" {
			continue
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			log.Warn("a directory of execd's lies in a writable root and cannot be created to be kept read-only",
				zap.String("dir", dir), zap.Error(err))
			continue
		}
		log.Info("created a directory of execd's, inside a writable root, to keep it read-only to commands", zap.String("dir", dir))
	}
}

// stateDir is $XDG_STATE_HOME, else ~/.local/state, else "".
func stateDir() string { return xdgDir("XDG_STATE_HOME", ".local", "state") }

// gitStateFile is where execd keeps the roots where git is not trusted
// outside the sandbox (orchestrator.Options.GitState).
func gitStateFile() string {
	if dir := stateDir(); dir != "" {
		return filepath.Join(dir, "execd", "untrusted-git")
	}
	return ""
}

// envPolicy is the commands' environment policy of cfg (SPEC §10).
func envPolicy(cfg *config) orchestrator.EnvPolicy {
	return orchestrator.EnvPolicy{
		Inherit:               orchestrator.Inherit(cfg.Env.Inherit),
		IgnoreDefaultExcludes: cfg.Env.IgnoreDefaultExcludes,
		Exclude:               cfg.Env.Exclude,
		Set:                   cfg.Env.Set,
		IncludeOnly:           cfg.Env.IncludeOnly,
	}
}

// toolOptions converts the configuration into the MCP server's options.
func toolOptions(cfg *config, log *zap.Logger, orch *orchestrator.Orchestrator, fwd *tools.LogForwarder) tools.Options {
	return tools.Options{
		Logger:             log.Named("tools"),
		Version:            version,
		Orchestrator:       orch,
		ShellType:          tools.ShellType(cfg.Tools.ShellType),
		Structured:         tools.StructuredMode(cfg.Tools.Structured),
		HideApplyPatch:     !cfg.Tools.ApplyPatch,
		DisallowLoginShell: !cfg.Tools.AllowLoginShell,
		DefaultTimeout:     cfg.Exec.DefaultTimeout,
		MaxOutputTokens:    cfg.Exec.MaxOutputTokens,
		MaxPollTime:        cfg.Sessions.MaxPollTime,
		Logs:               fwd,

		ApprovalTimeout:           cfg.Approval.Timeout,
		AllowWithoutClientSupport: cfg.Approval.WithoutClientSupport == "allow",
	}
}
