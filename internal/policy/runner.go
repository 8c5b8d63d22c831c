package policy

import (
	"path/filepath"
	"slices"
	"strings"
)

// Commands that run another command or a script given in their argv
// (SPEC §7.1): a forbidden rm is as forbidden behind env, xargs or
// find -exec as on its own, and so is a script behind eval or su -c.

// runs is what a command runs besides itself.
type runs struct {
	cmds    [][]string // commands, each an argv
	scripts []string   // scripts for a POSIX shell
	// opaque: it runs something the policy cannot find in its argv (an
	// option it does not know may take the command's place, or the
	// command comes from a file or its input).
	opaque bool
	// env: it runs the command in another environment or directory
	// (env PATH=… or -i, -u, -C; sudo VAR=…), where its program and what
	// it reads are not what the policy found.
	env bool
	// appends: the command gets more arguments when it runs (xargs
	// reads them from its input or a file).
	appends bool
}

// wrapper describes a program that runs a command given after its
// options: env rm f, timeout 5 rm f, xargs rm.
type wrapper struct {
	valued   string   // short options that take a value (-u NAME, -uNAME)
	flags    string   // short options without a value
	longVal  []string // long options that take a value (--unset NAME, --unset=NAME)
	longFlag []string // long options without a value
	operands int      // operands before the command (timeout's duration, taskset's mask)
	assigns  bool     // NAME=VALUE words may come before the command (env, sudo)
	// opaque are options after which the command is not an argv of this
	// call: env -S splits a string, sudo -s and -i run a shell.
	opaque string
	// noCommand are options after which nothing runs (command -v prints).
	noCommand string
	// script: after its operands (flock's file), -c or --command gives a
	// shell script instead of an argv.
	script bool
	// changesEnv are options that change the command's environment or
	// directory (NAME=VALUE words always do), and changesEnvLong the
	// long ones.
	changesEnv     string
	changesEnvLong []string
}

// wrappers are the programs of that kind the policy looks through, by
// base name. An option not listed makes the call opaque: it might take
// the command's place.
var wrappers = map[string]wrapper{
	"env": {valued: "uCS", flags: "i0v", longVal: []string{"--unset", "--chdir", "--split-string"},
		longFlag: []string{"--ignore-environment", "--null", "--debug"}, assigns: true, opaque: "S", changesEnv: "iuC",
		changesEnvLong: []string{"--unset", "--chdir", "--ignore-environment"}},
	"nohup": {},
	"timeout": {valued: "sk", flags: "v", longVal: []string{"--signal", "--kill-after"},
		longFlag: []string{"--preserve-status", "--foreground", "--verbose"}, operands: 1},
	"nice":    {valued: "n", longVal: []string{"--adjustment"}},
	"command": {flags: "pvV", noCommand: "vV"},
	"exec":    {valued: "a", flags: "cl", changesEnv: "acl"}, // -c empties the environment; -a, -l name the program anew (-zsh: a login shell)
	"builtin": {},
	"stdbuf":  {valued: "ioe", longVal: []string{"--input", "--output", "--error"}},
	"setsid":  {flags: "cfw", longFlag: []string{"--ctty", "--fork", "--wait"}},
	"xargs": {valued: "adEILnPs", flags: "0oprtxile", longVal: []string{"--arg-file", "--delimiter", "--eof", "--replace",
		"--max-lines", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}, longFlag: []string{"--null",
		"--open-tty", "--interactive", "--no-run-if-empty", "--verbose", "--exit", "--show-limits"},
		changesEnvLong: []string{"--process-slot-var"}}, // sets NAME (PATH, say) for the command
	"sudo": {valued: "ugCDhprtTU", flags: "AbEHkKnPSsilvV", changesEnv: "EDH", longVal: []string{"--user", "--group", "--close-from", "--chdir",
		"--host", "--prompt", "--role", "--type", "--command-timeout", "--other-user"}, longFlag: []string{"--askpass",
		"--background", "--preserve-env", "--set-home", "--reset-timestamp", "--non-interactive", "--preserve-groups",
		"--stdin"}, assigns: true, opaque: "si", noCommand: "lvVkK", changesEnvLong: []string{"--preserve-env", "--chdir", "--set-home"}},
	"doas":    {valued: "uC", flags: "nsL", opaque: "s", noCommand: "L"},
	"ionice":  {valued: "cnpPu", flags: "t", noCommand: "pPu"},
	"taskset": {flags: "acp", operands: 1, noCommand: "p"},
	"chrt":    {valued: "TPD", flags: "abdfiormRve", operands: 1, noCommand: "pm"},
	"time": {valued: "fo", flags: "apqvV", longVal: []string{"--format", "--output"},
		longFlag: []string{"--append", "--portability", "--quiet", "--verbose"}},
	"flock": {valued: "wE", flags: "sxunoF", longVal: []string{"--timeout", "--conflict-exit-code"},
		longFlag: []string{"--shared", "--exclusive", "--unlock", "--nonblock", "--close", "--no-fork", "--verbose"},
		operands: 1, script: true},
	"chroot": {longVal: []string{"--userspec", "--groups"}, longFlag: []string{"--skip-chdir"}, operands: 1},
}

// scriptOption are programs whose -c (or --command) takes a shell script,
// wherever it is among their arguments (GNU getopt reorders them):
// su -c S, runuser, script. Without one they run an interactive shell.
var scriptOption = []string{"su", "runuser", "script"}

// runsOf returns what cmd runs besides itself: the command behind a
// wrapper, the script of eval, trap, su -c and their kind, or the
// commands of find -exec. ok is false for a command that runs nothing
// else the policy knows of. Shells are shellInvocation's.
func runsOf(cmd []string) (runs, bool) {
	if len(cmd) == 0 {
		return runs{}, false
	}
	name := filepath.Base(cmd[0])
	switch {
	case name == "eval":
		return runs{scripts: []string{strings.Join(cmd[1:], " ")}}, len(cmd) > 1
	case name == "trap":
		// trap ACTION SIGNAL...; trap -p, trap -l, trap - SIG list or reset.
		if len(cmd) > 2 && !strings.HasPrefix(cmd[1], "-") {
			return runs{scripts: []string{cmd[1]}}, true
		}
		return runs{}, false
	case name == "find":
		return findExec(cmd[1:])
	case name == "watch":
		return watchRuns(cmd[1:])
	case slices.Contains(scriptOption, name):
		return commandOption(cmd[1:]), true
	}
	w, ok := wrappers[name]
	if !ok {
		return runs{}, false
	}
	r := w.parse(name, cmd[1:])
	r.appends = name == "xargs"
	return r, true
}

// commandOption finds the script of -c S, -cS, --command S or
// --command=S anywhere in args; without one the program runs a shell
// that reads its input, which is opaque.
func commandOption(args []string) runs {
	var r runs
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			i = len(args)
		case a == "--command" || a == "--session-command" || (len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.HasSuffix(a, "c")):
			if i+1 < len(args) {
				r.scripts = append(r.scripts, args[i+1])
			}
			i++
		case strings.HasPrefix(a, "--command=") || strings.HasPrefix(a, "--session-command="):
			_, v, _ := strings.Cut(a, "=")
			r.scripts = append(r.scripts, v)
		case strings.HasPrefix(a, "-c"):
			r.scripts = append(r.scripts, a[2:])
		}
	}
	r.opaque = len(r.scripts) == 0
	return r
}

// parse finds the command (or script) after a wrapper's options.
func (w wrapper) parse(name string, args []string) runs {
	var r runs
	i := 0
options:
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			i++
			break options
		case strings.HasPrefix(a, "--"):
			opt, _, hasVal := strings.Cut(a, "=")
			switch {
			case slices.Contains(w.longVal, opt):
				if !hasVal {
					i++
				}
				r.opaque = r.opaque || opt == "--split-string"
			case !slices.Contains(w.longFlag, opt):
				r.opaque = true
			}
			r.env = r.env || slices.Contains(w.changesEnvLong, opt)
		case len(a) < 2 || a[0] != '-':
			break options
		case name == "nice" && isDigits(a[1:]): // nice -10
		default:
			for j := 1; j < len(a); j++ {
				c := a[j]
				switch {
				case strings.IndexByte(w.opaque, c) >= 0:
					r.opaque = true
				case strings.IndexByte(w.noCommand, c) >= 0:
					return r // nothing runs after these
				}
				r.env = r.env || strings.IndexByte(w.changesEnv, c) >= 0
				switch {
				case strings.IndexByte(w.valued, c) >= 0:
					if j == len(a)-1 {
						i++ // the value is the next word
					}
					j = len(a)
				case strings.IndexByte(w.flags, c) < 0:
					r.opaque = true
				}
			}
		}
	}
	for ; w.assigns && i < len(args) && isAssignment(args[i]); i++ {
		r.env = true
	}
	i += w.operands
	switch {
	case i >= len(args):
	case w.script && (args[i] == "-c" || args[i] == "--command"):
		if i+1 < len(args) {
			r.scripts = append(r.scripts, args[i+1])
		}
	default:
		r.cmds = append(r.cmds, args[i:])
	}
	return r
}

// findExec returns the commands of find's -exec, -execdir, -ok and
// -okdir actions (each up to ";" or "+").
func findExec(args []string) (runs, bool) {
	var r runs
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && args[j] != ";" && args[j] != "+" {
				j++
			}
			if j > i+1 {
				r.cmds = append(r.cmds, args[i+1:j])
			}
			i = j
		}
	}
	return r, len(r.cmds) > 0
}

// watchRuns returns what watch runs: its arguments joined into a script
// for sh -c, or with -x the argv itself.
func watchRuns(args []string) (runs, bool) {
	w := wrapper{valued: "nd", flags: "bcdegptxCrw", longVal: []string{"--interval"},
		longFlag: []string{"--beep", "--color", "--differences", "--errexit", "--chgexit", "--exec", "--precise", "--no-title",
			"--no-wrap", "--no-linewrap"}}
	r := w.parse("watch", args)
	exec := false
	for _, a := range args {
		if a == "--" || !strings.HasPrefix(a, "-") {
			break
		}
		exec = exec || a == "--exec" || (!strings.HasPrefix(a, "--") && strings.Contains(a, "x"))
	}
	if !exec {
		for _, c := range r.cmds {
			r.scripts = append(r.scripts, strings.Join(c, " "))
		}
		r.cmds = nil
	}
	return r, len(r.cmds)+len(r.scripts) > 0
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// isAssignment reports whether w is NAME=VALUE.
func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	return ok && identifier(name)
}
