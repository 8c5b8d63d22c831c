// Command execd is a command-execution daemon for AI agents: an MCP server
// on stdin/stdout that runs shell commands for the host's model. See
// SPEC.md for the contract and README.md for use.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/execd/execd/internal/orchestrator"
	"github.com/execd/execd/internal/sandbox"
)

// gcPercent is execd's GC target unless GOGC is set. Its live heap is a
// few hundred KiB, so collecting at +50% instead of +100% costs little CPU
// and keeps the idle RSS under 10 MiB after bursts of calls (make bench).
const gcPercent = 50

func main() {
	// The sandbox helper and the patch applier are this binary
	// re-executed; they must not pay for (or be changed by) anything main
	// does.
	if len(os.Args) > 1 && os.Args[1] == orchestrator.PatchApplierArg {
		os.Exit(applier())
	}
	if code, ok := sandbox.Dispatch(); ok {
		os.Exit(code)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	os.Exit(run(os.Args[1:]))
}

// applier runs the patch applier (SPEC §7.6) until its patch is written,
// SIGTERM or SIGINT stopping it (a write under way is then rolled back).
func applier() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return orchestrator.ApplierMain(ctx, os.Stdin, os.Stdout)
}
