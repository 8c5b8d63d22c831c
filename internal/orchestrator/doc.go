// Package orchestrator turns a tool call's command into a process and its
// outcome: it resolves the working directory and the program, builds the
// environment (SPEC §10), checks that the sandbox mode can be enforced
// (failing closed, SPEC §8), spawns the command in its own session through
// the [reaper.Reaper] (SPEC §9.2), captures its output with bounded memory
// (SPEC §5.1), and enforces timeouts and cancellation by killing the
// command's process group.
//
// Before anything starts, a call passes the exec policy (SPEC §7): the
// [policy] package's verdict on its commands under the approval policy,
// then, when that says to ask, the call's [Approver] (the tools package
// asks the MCP client, execd run the terminal). allow_session answers are
// remembered here for the connection, allow_prefix answers amend the
// rules, and every decision and finished command goes to the [audit] log.
// A sandboxed command that fails with a denial may run again without the
// sandbox (on-failure, untrusted).
//
// Patches (SPEC §6, §7.6) are applied here too, by execd itself rather
// than a sandboxed process: [Orchestrator.ApplyPatch] checks the real
// paths a patch writes against the writable roots and protected paths,
// asks the user for any other, and writes through the [patch] package.
//
// It does not format anything for the model: that is the tools package.
//
// An [Orchestrator] is safe for concurrent use.
package orchestrator
