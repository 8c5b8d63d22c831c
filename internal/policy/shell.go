package policy

import (
	"path/filepath"
	"slices"
	"strings"
)

// shellNames are the POSIX-family shells whose -c scripts the policy
// reads (with bash's grammar, which they share for what the rules look
// at), by base name; fish's scripts look alike but are not, so a fish
// script is read and also counted as opaque.
var shellNames = []string{"bash", "rbash", "sh", "dash", "ash", "zsh", "ksh", "ksh93", "mksh", "lksh", "oksh",
	"pdksh", "posh", "yash", "fish"}

// invocation is what a shell's argv runs (SPEC §7.1).
type invocation struct {
	// script is the -c script, when hasScript.
	script    string
	hasScript bool
	// stdin: no -c and no script file: it reads its commands from its
	// input (a terminal, in a session), which the rules never see.
	stdin bool
	// opaque: something of the argv the parser does not know (an option,
	// a shell whose grammar differs); it may run what the rules lack.
	opaque bool
}

// shellArgs are the options of the shells that take a value: bash's
// --rcfile and --init-file, zsh's --emulate; -o and -O (and +o, +O) take
// the next word, also inside a cluster (-euo pipefail).
var shellArgs = []string{"--rcfile", "--init-file", "--emulate"}

// shellLongFlags are the long options of bash and zsh that take no
// value. zsh also takes any option name as --name: those are counted as
// unknown, hence opaque, which costs only a question under strict rules.
var shellLongFlags = []string{"--debugger", "--dump-po-strings", "--dump-strings", "--help", "--login", "--noediting",
	"--noprofile", "--norc", "--posix", "--pretty-print", "--protected", "--restricted", "--rpm-requires",
	"--verbose", "--version", "--wordexp"}

// shellInvocation reports whether argv runs a shell of shellNames (named
// by any path; busybox's sh and ash applets too) and what it runs, read
// with the shells' own option grammar: options end at the first operand,
// "--" or "-"; -c takes the script from the first operand, wherever the c
// is (-ec, -c -e, -c -- S); -o and -O take a value; an operand without -c
// is a script file, which the rules do not see (like any program's files).
func shellInvocation(argv []string) (invocation, bool) {
	if len(argv) == 0 {
		return invocation{}, false
	}
	name := filepath.Base(argv[0])
	args := argv[1:]
	if name == "busybox" {
		if len(args) == 0 || (args[0] != "sh" && args[0] != "ash") {
			return invocation{}, false
		}
		name, args = args[0], args[1:]
	}
	if !slices.Contains(shellNames, name) {
		return invocation{}, false
	}
	inv := invocation{opaque: name == "fish"}
	cmode, i := false, 0
options:
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--" || a == "-":
			i++
			break options
		case slices.Contains(shellArgs, a):
			i++
		case strings.HasPrefix(a, "--"):
			if !slices.Contains(shellLongFlags, a) {
				inv.opaque = true
			}
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			for _, c := range a[1:] {
				switch c {
				case 'c':
					cmode = true
				case 'o', 'O':
					i++ // the option's name
				}
			}
		default:
			break options
		}
	}
	switch {
	case i < len(args) && cmode:
		inv.script, inv.hasScript = args[i], true
	case cmode:
		// -c without a script: the shell refuses to start.
	case i >= len(args):
		inv.stdin = true
	}
	return inv, true
}

// shellBuiltins are the commands every shell of the family runs itself
// (dash's builtins, which bash and zsh have too): inside a script they
// are not looked up on PATH, so no file of that name runs.
var shellBuiltins = []string{".", ":", "[", "alias", "bg", "break", "cd", "command", "continue", "echo", "eval", "exec",
	"exit", "export", "false", "fc", "fg", "getopts", "hash", "jobs", "kill", "local", "printf", "pwd", "read",
	"readonly", "return", "set", "shift", "test", "times", "trap", "true", "type", "ulimit", "umask", "unalias",
	"unset", "wait"}

// Builtin reports whether a shell script runs the command name itself,
// rather than a program found on PATH.
func Builtin(name string) bool { return slices.Contains(shellBuiltins, name) }
