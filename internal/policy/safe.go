package policy

import (
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
)

// KnownSafe reports whether argv only reads (SPEC §7.4, COMPAT §17.5): a
// read-only tool with no option that writes or runs programs, or a plain
// shell script (PlainCommands) whose every command is one. The program is
// known by its base name.
func KnownSafe(argv []string) bool {
	if safeToExec(argv) {
		return true
	}
	cmds, ok := PlainCommands(argv)
	return ok && len(cmds) > 0 && !slices.ContainsFunc(cmds, func(c []string) bool { return !safeToExec(c) })
}

// Dangerous reports whether argv, or a command of its plain script,
// deletes by force: rm -f or rm -rf, also after sudo (SPEC §7.4).
func Dangerous(argv []string) bool {
	if dangerousToExec(argv) {
		return true
	}
	cmds, _ := PlainCommands(argv)
	return slices.ContainsFunc(cmds, dangerousToExec)
}

func dangerousToExec(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	switch filepath.Base(argv[0]) {
	case "rm":
		return len(argv) > 1 && (argv[1] == "-f" || argv[1] == "-rf")
	case "sudo":
		return dangerousToExec(argv[1:])
	}
	return false
}

// readOnlyTools take no option that writes or runs something else.
var readOnlyTools = []string{"cat", "cd", "cut", "echo", "expr", "false", "grep", "head", "id", "ls", "nl",
	"paste", "pwd", "rev", "seq", "stat", "tail", "tr", "true", "uname", "wc", "which", "whoami"}

// TakesAnyArguments reports whether the program argv0 only reads,
// whatever arguments it gets (readOnlyTools): behind xargs, which adds
// arguments a sandboxed command may have written, no other command
// leaves the sandbox.
func TakesAnyArguments(argv0 string) bool { return slices.Contains(readOnlyTools, programName(argv0)) }

// systemDirs hold the programs a path may name and still be known: a
// relative or other path (./cat, node_modules/.bin/ls) runs whatever file
// is there.
var systemDirs = []string{"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin"}

// programName is the name argv[0] runs as a known tool, or "".
func programName(argv0 string) string {
	if !strings.Contains(argv0, "/") {
		return argv0
	}
	if slices.Contains(systemDirs, filepath.Dir(argv0)) {
		return filepath.Base(argv0)
	}
	return ""
}

func safeToExec(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	args := argv[1:]
	switch name := programName(argv[0]); {
	case slices.Contains(readOnlyTools, name):
		return true
	case name == "uniq":
		return len(operands(args)) <= 1 // uniq IN OUT writes OUT
	case runtime.GOOS == "linux" && (name == "numfmt" || name == "tac"):
		return true
	case name == "base64":
		return !slices.ContainsFunc(args, func(a string) bool {
			return a == "--output" || strings.HasPrefix(a, "--output=") || strings.HasPrefix(a, "-o")
		})
	case name == "find":
		return !slices.ContainsFunc(args, func(a string) bool { return slices.Contains(unsafeFindOptions, a) })
	case name == "rg":
		return !slices.ContainsFunc(args, unsafeRipgrepOption)
	case name == "git":
		return gitReadOnly(args)
	case name == "sed":
		// sed -n Np [FILE]; a further option (-e, -f) would make Np a file
		// name and run another script.
		return len(args) >= 2 && len(args) <= 3 && args[0] == "-n" && sedPrint.MatchString(args[1]) &&
			(len(args) == 2 || !strings.HasPrefix(args[2], "-"))
	}
	return false
}

var unsafeFindOptions = []string{"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fls", "-fprint", "-fprint0", "-fprintf"}

// operands are the arguments that are not options.
func operands(args []string) []string {
	var out []string
	for _, a := range args {
		if a == "-" || !strings.HasPrefix(a, "-") {
			out = append(out, a)
		}
	}
	return out
}

func unsafeRipgrepOption(a string) bool {
	switch {
	case a == "--search-zip" || (strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "z")):
		return true // runs decompression programs (-z, also bundled: -nz)
	case a == "--pre" || strings.HasPrefix(a, "--pre="), a == "--hostname-bin" || strings.HasPrefix(a, "--hostname-bin="):
		return true // runs the program named
	}
	return false
}

// sedPrint is sed -n's only safe script here: print line N or lines N,M.
var sedPrint = regexp.MustCompile(`^(\d+,)?\d+p$`)

// gitReadOnly reports whether git ARGS only reads: status, log, diff, show
// or a listing branch, after no global option but -C DIR and --no-pager
// (others point git at another repository, configuration or program),
// with no option that writes a file or runs a program.
func gitReadOnly(args []string) bool {
	for len(args) > 0 {
		switch a := args[0]; {
		case a == "-C" && len(args) > 1:
			args = args[2:]
		case a == "--no-pager" || a == "-P":
			args = args[1:]
		case strings.HasPrefix(a, "-"):
			return false
		default:
			sub, rest := a, args[1:]
			if slices.ContainsFunc(rest, unsafeGitOption) {
				return false
			}
			switch sub {
			case "status", "log", "diff", "show":
				return true
			case "branch":
				return gitBranchLists(rest)
			}
			return false
		}
	}
	return false
}

func unsafeGitOption(a string) bool {
	switch {
	case a == "--output" || strings.HasPrefix(a, "--output="), a == "--ext-diff", a == "--textconv",
		a == "--exec" || strings.HasPrefix(a, "--exec="), a == "--paginate":
		return true
	}
	return false
}

// gitBranchLists reports whether git branch ARGS lists branches rather
// than creating, renaming or deleting one.
func gitBranchLists(args []string) bool {
	for _, a := range args {
		switch {
		case slices.Contains([]string{"--list", "-l", "--show-current", "-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose"}, a),
			strings.HasPrefix(a, "--format="):
		default:
			return false
		}
	}
	return true
}
