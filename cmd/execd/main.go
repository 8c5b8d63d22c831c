// Command execd is a command-execution daemon for AI agents: an MCP server
// on stdin/stdout that runs shell commands for the host's model. See
// SPEC.md for the contract and README.md for use.
package main

import (
	"os"
	"runtime/debug"
)

// gcPercent is execd's GC target unless GOGC is set. Its live heap is a
// few hundred KiB, so collecting at +50% instead of +100% costs little CPU
// and keeps the idle RSS under 10 MiB after bursts of calls (make bench).
const gcPercent = 50

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	os.Exit(run(os.Args[1:]))
}
