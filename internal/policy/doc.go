// Package policy decides what a command stands for and what may run
// without asking (SPEC §7): the commands of a call ([Commands]: plain
// shell scripts split with mvdan.cc/sh/v3, the heredoc form), and the
// built-in knowledge of read-only ([KnownSafe]) and destructive
// ([Dangerous]) commands.
//
// It runs nothing and asks nobody: the orchestrator combines its answers
// with the approval policy, and tools carries the questions to the
// client. It holds no state and is safe for concurrent use.
package policy
