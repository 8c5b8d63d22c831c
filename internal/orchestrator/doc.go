// Package orchestrator turns a tool call's command into a process and its
// outcome: it resolves the working directory and the program, builds the
// environment (SPEC §10), checks that the sandbox mode can be enforced
// (failing closed, SPEC §8), spawns the command in its own session through
// the [reaper.Reaper] (SPEC §9.2), captures its output with bounded memory
// (SPEC §5.1), and enforces timeouts and cancellation by killing the
// command's process group.
//
// It does not format anything for the model (that is the tools package)
// and does not decide approvals yet: the exec policy arrives with issue #5.
//
// An [Orchestrator] is safe for concurrent use.
package orchestrator
