// Command execd is a command-execution daemon for AI agents: an MCP server
// on stdin/stdout that runs shell commands for the host's model. See
// SPEC.md for the contract and README.md for use.
package main

import (
	"os"
	"runtime/debug"

	"github.com/execd/execd/internal/sandbox"
)

// gcPercent is execd's GC target unless GOGC is set. Its live heap is a
// few hundred KiB, so collecting at +50% instead of +100% costs little CPU
// and keeps the idle RSS under 10 MiB after bursts of calls (make bench).
const gcPercent = 50

func main() {
	// The sandbox helper is this binary re-executed; it must not pay for
	// (or be changed by) anything main does.
	if code, ok := sandbox.Dispatch(); ok {
		os.Exit(code)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	os.Exit(run(os.Args[1:]))
}
