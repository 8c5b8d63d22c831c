// Package policy decides what a command stands for and what may run
// without asking (SPEC §7): the commands of a call ([Commands]: plain
// shell scripts split with mvdan.cc/sh/v3, the heredoc form), the
// built-in knowledge of read-only ([KnownSafe]) and destructive
// ([Dangerous]) commands, and the rules of .rules files (Starlark, read
// with go.starlark.net: [ParseFile], [Rules], [Amend] for "allow this
// prefix from now on").
//
// It runs nothing and asks nobody: the orchestrator combines its answers
// with the approval policy, and tools carries the questions to the
// client. [Rules] is safe for concurrent use; the rest holds no state.
package policy
