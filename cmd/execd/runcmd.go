package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/execd/execd/internal/orchestrator"
	"github.com/execd/execd/internal/reaper"
	"github.com/execd/execd/internal/sandbox"
)

// runCmd is `execd run -- CMD`: one command through the same pipeline as
// a tool call, its output printed live, its exit code returned.
func runCmd(fs *pflag.FlagSet, argv []string) int {
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "execd run: missing command (usage: execd run [flags] -- CMD [ARG...])")
		return exitUsage
	}
	timeout, _ := fs.GetDuration("timeout")
	if timeout < 0 {
		fmt.Fprintf(os.Stderr, "execd run: --timeout %v: want a duration of 0 (no timeout) or more, such as 30s\n", timeout)
		return exitUsage
	}
	cfg, err := loadConfig(fs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "execd: %v\n", err)
		return exitUsage
	}
	return runOne(fs, cfg, "run", argv, timeout, ttyApprover{timeout: cfg.Approval.Timeout})
}

// runOne runs argv as configured by cfg, printing its output live, and
// returns its exit code or execd's own (SPEC §1). With an approver the
// exec policy applies and approvals are asked of it; without, the
// command runs in the sandbox unchecked (execd sandbox).
func runOne(fs *pflag.FlagSet, cfg *config, name string, argv []string, timeout time.Duration, ask orchestrator.Approver) int {
	if !fs.Changed("log-level") && os.Getenv(envName("log.level")) == "" {
		// The terminal shows the command's output; execd's own problems are
		// printed as plain lines below, not as log records.
		cfg.Log.Level = "error"
	}
	log, _ := newLogger(cfg)
	defer func() { _ = log.Sync() }()
	for _, w := range cfg.Warnings {
		fmt.Fprintf(os.Stderr, "execd: warning: %s\n", w)
	}
	var pol *execPolicy
	if ask != nil {
		var err error
		if pol, err = loadPolicy(cfg, log); err != nil {
			fmt.Fprintf(os.Stderr, "execd: %v\n", err)
			return exitUsage
		}
		defer pol.Close()
		for _, err := range pol.failed {
			fmt.Fprintf(os.Stderr, "execd: warning: rules file not used: %v\n", err)
		}
	}
	r := reaper.New()
	defer r.Close()
	orch, err := newOrchestrator(cfg, log, r, nil, pol, false)
	if err != nil {
		fmt.Fprintf(os.Stderr, "execd %s: %v\n", name, err)
		return exitInternal
	}
	ignoreSIGPIPE() // a closed stdout must not kill execd before its children
	sigCtx, stop := signal.NotifyContext(context.Background(), shutdownSignals...)
	defer stop()
	ctx, cancel := context.WithCancelCause(sigCtx)
	defer cancel(nil)
	out := &livePrinter{stop: cancel}
	res, err := orch.Exec(ctx, orchestrator.ExecRequest{Argv: argv, Timeout: timeout, Output: out.write, Approver: ask})
	if err != nil && sigCtx.Err() != nil { // interrupted while asking
		err = nil
		res = &orchestrator.ExecResult{Stopped: context.Cause(ctx)}
	}
	code := exitCode(name, res, err, timeout)
	// Nothing execd started outlives it, background descendants included.
	sctx, scancel := context.WithTimeout(context.Background(), shutdownLimit)
	defer scancel()
	if err := r.Shutdown(sctx, killGrace); err != nil {
		log.Error("processes survive shutdown", zap.Error(err))
	}
	orch.Close()
	return code
}

// errBrokenPipe stops a command whose output nobody reads any more.
var errBrokenPipe = errors.New("output pipe closed")

// outputError stops a command whose output cannot be written (a full
// disk, an I/O error): what it prints from then on would be lost.
type outputError struct{ err error }

func (e *outputError) Error() string { return "cannot write the command's output: " + e.err.Error() }

// livePrinter prints a command's output as it comes. When the reader of
// execd's stdout or stderr goes away, it stops the command, as a shell
// pipeline's SIGPIPE would; when a write fails otherwise, it stops it
// with the reason.
type livePrinter struct {
	stop context.CancelCauseFunc
}

func (p *livePrinter) write(s orchestrator.Stream, chunk []byte) {
	out := os.Stdout
	if s == orchestrator.Stderr {
		out = os.Stderr
	}
	switch _, err := out.Write(chunk); {
	case errors.Is(err, syscall.EPIPE):
		p.stop(errBrokenPipe)
	case err != nil:
		p.stop(&outputError{err})
	}
}

// exitCode is the command's code, or execd's own for what prevented it.
func exitCode(name string, res *orchestrator.ExecResult, err error, timeout fmt.Stringer) int {
	if err != nil {
		fmt.Fprintf(os.Stderr, "execd %s: %v\n", name, err)
		return failureCode(err)
	}
	switch {
	case res.TimedOut:
		fmt.Fprintf(os.Stderr, "execd %s: command timed out after %v\n", name, timeout)
	case errors.Is(res.Stopped, errBrokenPipe):
		return 128 + int(syscall.SIGPIPE) // what a shell reports for a pipeline cut short
	case errors.As(res.Stopped, new(*outputError)):
		fmt.Fprintf(os.Stderr, "execd %s: %v; command killed\n", name, res.Stopped)
		return exitInternal
	case res.Stopped != nil:
		fmt.Fprintf(os.Stderr, "execd %s: interrupted, command killed\n", name)
		return 128 + int(syscall.SIGINT)
	}
	return res.ExitCode
}

// failureCode is execd's exit code for what kept a command from running
// (SPEC §1).
func failureCode(err error) int {
	var (
		ue *sandbox.UnavailableError
		se *orchestrator.SpawnError
		we *orchestrator.WorkdirError
		su *sandbox.SetupError
		re *orchestrator.RefusedError
		de *orchestrator.DeniedError
	)
	switch {
	case errors.As(err, &ue), errors.As(err, &re), errors.As(err, &de):
		return exitRefused
	case errors.As(err, &se) && errors.Is(err, orchestrator.ErrNotFound):
		return exitNotFound
	case errors.As(err, &se):
		return exitRefused
	case errors.As(err, &su) && su.Stage == "exec" && errors.Is(err, syscall.ENOENT):
		return exitNotFound // the program went away before the helper could run it
	case errors.As(err, &su) && su.Stage == "exec":
		return exitRefused // e.g. not executable, or refused by the sandbox
	case errors.As(err, &we):
		return exitUsage
	}
	return exitInternal
}
