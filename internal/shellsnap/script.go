package shellsnap

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// shellManaged are the variables a shell sets for itself, or that
// change with each call, whatever the profile did: a snapshot neither
// sets nor unsets them (a script sees the values of its own shell).
// BASH_ENV and ZDOTDIR carry the snapshot to its shell and are set by
// it apart (the values the profile left).
var shellManaged = []string{"PWD", "OLDPWD", "SHLVL", "_", "IFS", "RANDOM", "SRANDOM", "LINENO", "SECONDS",
	"EPOCHSECONDS", "EPOCHREALTIME", "BASHPID", "HISTCMD", "PPID", "UID", "EUID", "GROUPS", "COLUMNS", "LINES",
	"BASH_ENV", "ZDOTDIR", "FPATH"}

// managed reports whether the snapshot leaves the variable name alone.
// (The shells' other variables, BASH_VERSION or ZSH_NAME, are not
// exported unless a profile does it, and then they are its.)
func managed(name string) bool { return slices.Contains(shellManaged, name) }

// Filter tells which variables a snapshot may set: it sees what the
// profile exported with a value that differs from the environment the
// shell started with. A variable it refuses keeps that environment's
// value, or stays unset (SPEC §10: a profile that exports a secret must
// not hand it to commands through the snapshot).
type Filter func(name, value string) bool

// render writes the snapshot of st for a shell that starts with env: the
// functions first (an alias defined before them would be expanded into
// their bodies a second time), then the aliases, the exported variables
// that changed (and the unset ones), the umask, and the options last
// (errexit, nounset or xtrace set earlier would act on the snapshot
// itself), those that change how the rest runs after the others.
func render(kind Kind, st *state, env []string, keep Filter) string {
	var b strings.Builder
	b.WriteString("# execd's snapshot of what the login profile left (SPEC §9.1), replaced when a startup file changes.\n")
	switch kind {
	case Bash:
		// Unless the profile exported it, BASH_ENV is unset: the
		// commands' own shells must not read the snapshot again.
		if v, ok := st.env["BASH_ENV"]; ok {
			fmt.Fprintf(&b, "export BASH_ENV=%s\n", quote(v))
		} else {
			b.WriteString("unset BASH_ENV\n")
		}
		b.WriteString(st.funcs)
		for _, f := range st.xfuncs {
			fmt.Fprintf(&b, "export -f %s\n", quote(f))
		}
	case Zsh:
		// ZDOTDIR as the profile left it, exported or not.
		switch _, exported := st.env["ZDOTDIR"]; {
		case st.zdotdir == nil:
			b.WriteString("unset ZDOTDIR\n")
		case exported:
			fmt.Fprintf(&b, "export ZDOTDIR=%s\n", quote(*st.zdotdir))
		default:
			fmt.Fprintf(&b, "ZDOTDIR=%s\ntypeset +x ZDOTDIR\n", quote(*st.zdotdir))
		}
		fmt.Fprintf(&b, "FPATH=%s\n", quote(*st.fpath))
		b.WriteString(autoloads.ReplaceAllStringFunc(st.funcs, func(def string) string {
			m := autoloads.FindStringSubmatch(def)
			if m[2] != "" {
				return "autoload -" + m[2] + " -- " + m[1] + "\n"
			}
			return "autoload -- " + m[1] + "\n"
		}))
	}
	if !strings.HasSuffix(b.String(), "\n") {
		b.WriteString("\n")
	}
	b.WriteString(st.aliases)
	if !strings.HasSuffix(b.String(), "\n") {
		b.WriteString("\n")
	}
	writeEnv(&b, st.env, env, keep)
	fmt.Fprintf(&b, "umask %s\n", st.umask)
	b.WriteString(options(kind, st.opts))
	return b.String()
}

// writeEnv writes what turns env (NAME=VALUE entries) into the profile's
// exported variables: the changed ones that keep allows, in name order,
// and unset for the ones it removed.
func writeEnv(b *strings.Builder, exported map[string]string, env []string, keep Filter) {
	start := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			start[k] = v
		}
	}
	names := make([]string, 0, len(exported))
	for n := range exported {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		v := exported[n]
		if old, ok := start[n]; managed(n) || (ok && old == v) || !keep(n, v) {
			continue
		}
		fmt.Fprintf(b, "export %s=%s\n", n, quote(v))
	}
	var gone []string
	for n := range start {
		if _, ok := exported[n]; !ok && isName(n) && !managed(n) {
			gone = append(gone, n)
		}
	}
	slices.Sort(gone)
	for _, n := range gone {
		fmt.Fprintf(b, "unset %s\n", n)
	}
}

// autoloads finds, in zsh's typeset -f, a function marked for autoloading
// and not loaded yet: it is marked again (its text would define a
// function that loads itself, but typeset -f would show that text).
var autoloads = regexp.MustCompile("(?m)^(\\S+) \\(\\) \\{\n\t# undefined\n\tbuiltin autoload -X([A-Za-z]*)\n\\}\n")

// lastOptions change how the snapshot itself would run: they are set
// after every other, in this order (xtrace last, so that nothing of the
// snapshot is traced).
var lastOptions = []string{"verbose", "errexit", "errreturn", "nounset", "unset", "noexec", "exec", "xtrace"}

// fixedOptions cannot be set after the shell started (they describe how
// it was started).
var fixedOptions = []string{"login", "login_shell", "interactive", "restricted", "restricted_shell", "privileged",
	"shinstdin", "stdin", "singlecommand", "onecmd", "zle", "monitor", "debug", "nolog"}

// options turns the options a dump recorded into commands, without those
// that cannot be set and with those of lastOptions last.
func options(kind Kind, recorded string) string {
	type opt struct{ name, cmd string }
	var opts []opt
	for line := range strings.Lines(recorded) {
		line = strings.TrimSuffix(line, "\n")
		var name, cmd string
		switch {
		case kind == Zsh:
			n, v, ok := strings.Cut(line, "=")
			if !ok || !isName(n) {
				continue
			}
			name, cmd = n, "unsetopt "+n
			if v == "on" {
				cmd = "setopt " + n
			}
		case strings.HasPrefix(line, "set -o ") || strings.HasPrefix(line, "set +o "):
			name, cmd = line[len("set -o "):], line
		case strings.HasPrefix(line, "shopt -s ") || strings.HasPrefix(line, "shopt -u "):
			name, cmd = line[len("shopt -s "):], line
		default:
			continue
		}
		if !isOptionName(name) || slices.Contains(fixedOptions, name) {
			continue
		}
		opts = append(opts, opt{name, cmd})
	}
	// lastOptions last, and shopt before set (a set -e would stop at a
	// shopt that fails).
	rank := func(o opt) int {
		r := 2 * (slices.Index(lastOptions, o.name) + 1)
		if !strings.HasPrefix(o.cmd, "shopt ") {
			r++
		}
		return r
	}
	slices.SortStableFunc(opts, func(a, b opt) int { return rank(a) - rank(b) })
	var b strings.Builder
	for _, o := range opts {
		b.WriteString(o.cmd + "\n")
	}
	return b.String()
}

// isOptionName reports whether s can be an option's name (bash's have
// dashes: interactive-comments).
func isOptionName(s string) bool {
	return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") == ""
}

// quote quotes s for every POSIX shell and zsh: in single quotes, each
// single quote inside ending the quoted part, escaped with a backslash,
// and starting another.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
