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
// Patches (SPEC §6, §7.6) are applied here too: [Orchestrator.ApplyPatch]
// checks the real paths a patch writes against the writable roots and
// protected paths and asks the user for any other. Where execd enforces
// a sandbox, a patch that needs no question is prepared and written by
// the applier ([ApplierMain]: this binary as a sandboxed command, with
// exactly a sandboxed command's rights); what the sandbox refuses is
// asked for too; an approved patch is written by execd itself through
// the [patch] package.
//
// A call lifted out of the sandbox (allow rules, an approved escalation,
// a retry) runs in it after all when its git would use a repository a
// sandboxed command could have written (SPEC §7.2), and its programs are
// resolved as the shell would to tell whether one could have been
// planted.
//
// It does not format anything for the model: that is the tools package.
//
// An [Orchestrator] is safe for concurrent use.
package orchestrator
