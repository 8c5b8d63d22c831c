package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/execd/execd/internal/orchestrator"
	"github.com/execd/execd/internal/reaper"
	"github.com/execd/execd/internal/rpc"
	"github.com/execd/execd/internal/tools"
)

// Shutdown bounds (SPEC §3.2): SIGTERM, then SIGKILL after killGrace;
// replies of cancelled requests get replyLimit more.
const (
	killGrace     = 2 * time.Second
	shutdownLimit = 5 * time.Second
	replyLimit    = time.Second
)

func serveCmd(fs *pflag.FlagSet, args []string) int {
	if len(args) > 0 {
		fmt.Fprintf(os.Stderr, "execd serve: unexpected argument %q (serve speaks MCP on stdin/stdout)\n", args[0])
		return exitUsage
	}
	cfg, err := loadConfig(fs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "execd: %v\n", err)
		return exitUsage
	}
	// From here on stdout belongs to the protocol.
	proto, err := takeStdout()
	if err != nil {
		fmt.Fprintf(os.Stderr, "execd: take stdout: %v\n", err)
		return exitInternal
	}
	ignoreSIGPIPE()
	fwd := tools.NewLogForwarder()
	base, _ := newLogger(cfg) // the rpc package logs through base only: its frame traces must not be forwarded into the stream
	log := zap.New(zapcore.NewTee(base.Core(), fwd))
	defer func() { _ = base.Sync() }() // stderr may not support fsync (zap #328)
	return serve(cfg, base, log, fwd, proto)
}

func serve(cfg *config, base, log *zap.Logger, fwd *tools.LogForwarder, proto *os.File) int {
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	log.Info("execd starting", zap.String("version", version), zap.Int("pid", os.Getpid()),
		zap.Strings("config_files", cfg.Files), zap.String("cwd", cfg.Cwd))
	pol, err := loadPolicy(cfg, log)
	if err != nil {
		log.Error("start", zap.Error(err))
		return exitUsage
	}
	defer pol.Close()
	for _, err := range pol.failed {
		log.Error("rules file not used", zap.Error(err))
	}
	r := reaper.New()
	defer r.Close()
	orch, err := newOrchestrator(cfg, log, r, nil, pol, true)
	if err != nil {
		log.Error("start", zap.Error(err))
		return exitInternal
	}
	conn := rpc.NewConn(os.Stdin, proto, rpc.Options{Logger: base.Named("rpc"), MaxInFlight: cfg.RPC.MaxInFlight})
	srv, err := tools.New(conn, toolOptions(cfg, log, orch, fwd))
	if err != nil {
		log.Error("start", zap.Error(err))
		return exitInternal
	}
	log.Info("serving", zap.Strings("tools", srv.ListedTools()))

	// The signal context stays registered until exit, so a second signal
	// during shutdown cannot kill execd before its children.
	ctx, stop := signal.NotifyContext(context.Background(), shutdownSignals...)
	defer stop()
	memCtx, stopMem := context.WithCancel(ctx)
	var mem sync.WaitGroup
	mem.Go(func() { releaseWhenIdle(memCtx) })
	defer mem.Wait()
	defer stopMem()
	serveErr := srv.Serve(ctx)
	code := 0
	switch {
	case serveErr == nil:
		log.Info("shutting down: stdin closed")
	case errors.Is(serveErr, context.Canceled):
		log.Info("shutting down: signal received")
	case errors.Is(serveErr, rpc.ErrOutputClosed):
		log.Info("shutting down: stdout closed", zap.Error(serveErr)) // the host is gone, as on stdin EOF
	default:
		log.Error("shutting down: connection failed", zap.Error(serveErr))
		code = 1
	}
	shutdown(log, r, orch, srv)
	return code
}

// shutdownSignals end execd like stdin EOF does. Their default actions
// would kill execd at once and leave its commands running in their own
// sessions; SIGHUP comes when a host's terminal closes. (SIGABRT still
// dumps the goroutines for debugging.)
var shutdownSignals = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT}

// shutdown kills every process execd started, lets the requests that were
// running send their replies, and closes the connection; each step is
// bounded.
func shutdown(log *zap.Logger, r *reaper.Reaper, orch *orchestrator.Orchestrator, srv *tools.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownLimit)
	defer cancel()
	orch.HangUp() // terminals first: interactive shells ignore SIGTERM
	if err := r.Shutdown(ctx, killGrace); err != nil {
		log.Error("processes survive shutdown", zap.Error(err))
	}
	orch.Close()
	rctx, rcancel := context.WithTimeout(context.Background(), replyLimit)
	defer rcancel()
	if err := srv.Shutdown(rctx); err != nil {
		log.Warn("close connection", zap.Error(err))
	}
	log.Info("stopped")
}

// ignoreSIGPIPE turns writes to a closed stdout or stderr into EPIPE
// errors instead of killing execd (and orphaning its children) when the
// host stops reading. Children still get the default disposition: exec
// resets handled signals.
func ignoreSIGPIPE() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}
