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

// render writes the snapshot of st for a shell that starts with env, in
// an order that keeps what the profile defined from acting on the
// snapshot itself:
//
//   - the exported variables that changed (and the unset ones), the umask
//     and the options, but for those of lastOptions and alias expansion:
//     a function's text is parsed with the options the profile left
//     (bash's extglob);
//   - the aliases, then the functions, with alias expansion off (an
//     alias would be expanded into their text a second time);
//   - alias expansion and lastOptions (errexit, nounset or xtrace set
//     earlier would act on the snapshot).
//
// Every builtin the snapshot runs once functions exist is named as
// `\builtin NAME`, so that a profile's function of that name (umask,
// shopt) does not stand in for it; a profile that defines `builtin` is
// not snapshotted (see check).
func render(kind Kind, st *state, env []string, keep Filter) string {
	bi := builtinPrefix(kind)
	var b strings.Builder
	b.WriteString("# execd's snapshot of what the login profile left (SPEC §9.1), replaced when a startup file changes.\n")
	switch kind {
	case Bash:
		// Unless the profile exported it, BASH_ENV is unset: the
		// commands' own shells must not read the snapshot again.
		if v, ok := st.env["BASH_ENV"]; ok {
			fmt.Fprintf(&b, "%sexport BASH_ENV=%s\n", bi, quote(v))
		} else {
			b.WriteString(bi + "unset BASH_ENV\n")
		}
	case Zsh:
		// ZDOTDIR as the profile left it, exported or not.
		switch _, exported := st.env["ZDOTDIR"]; {
		case st.zdotdir == nil:
			b.WriteString(bi + "unset ZDOTDIR\n")
		case exported:
			fmt.Fprintf(&b, "%sexport ZDOTDIR=%s\n", bi, quote(*st.zdotdir))
		default:
			fmt.Fprintf(&b, "ZDOTDIR=%s\n%stypeset +x ZDOTDIR\n", quote(*st.zdotdir), bi)
		}
		fmt.Fprintf(&b, "FPATH=%s\n", quote(*st.fpath))
	}
	writeEnv(&b, bi, st.env, env, keep)
	fmt.Fprintf(&b, "%sumask %s\n", bi, st.umask)
	early, late := options(kind, st.opts)
	b.WriteString(early)
	if kind == Zsh {
		b.WriteString(bi + "unsetopt aliases\n")
	}
	b.WriteString(st.aliases)
	if !strings.HasSuffix(b.String(), "\n") {
		b.WriteString("\n")
	}
	switch kind {
	case Bash:
		b.WriteString(st.funcs)
		if !strings.HasSuffix(b.String(), "\n") {
			b.WriteString("\n")
		}
		for _, f := range st.xfuncs {
			fmt.Fprintf(&b, "%sexport -f %s\n", bi, quote(f))
		}
	case Zsh:
		for _, def := range st.zfuncs {
			if m := autoloadStub.FindStringSubmatch(def); m != nil {
				fmt.Fprintf(&b, "%sautoload %s-- %s\n", bi, strings.TrimSuffix("-"+m[2]+" ", "- "), m[1])
				continue
			}
			b.WriteString(def)
			if !strings.HasSuffix(def, "\n") {
				b.WriteString("\n")
			}
		}
		if !strings.HasSuffix(b.String(), "\n") {
			b.WriteString("\n")
		}
	}
	b.WriteString(late)
	return b.String()
}

// builtinPrefix is what names a builtin in kind's language past any
// function: sh's functions are never snapshotted (and dash has no
// builtin builtin).
func builtinPrefix(kind Kind) string {
	if kind == Sh {
		return ""
	}
	return "\\builtin "
}

// definesBuiltin finds, in bash's declare -f or zsh's typeset -f, a
// function named builtin.
var definesBuiltin = regexp.MustCompile(`(?m)^builtin \(\)`)

// writeEnv writes what turns env (NAME=VALUE entries) into the profile's
// exported variables: the changed ones that keep allows, in name order,
// and unset for the ones it removed.
func writeEnv(b *strings.Builder, bi string, exported map[string]string, env []string, keep Filter) {
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
		fmt.Fprintf(b, "%sexport %s=%s\n", bi, n, quote(v))
	}
	var gone []string
	for n := range start {
		if _, ok := exported[n]; !ok && isName(n) && !managed(n) {
			gone = append(gone, n)
		}
	}
	slices.Sort(gone)
	for _, n := range gone {
		fmt.Fprintf(b, "%sunset %s\n", bi, n)
	}
}

// autoloadStub is zsh's typeset -f of a function marked for autoloading
// and not loaded yet (its text would define a function that loads
// itself, but typeset -f would show that text): it is marked again.
var autoloadStub = regexp.MustCompile("^(\\S+) \\(\\) \\{\n\t# undefined\n\tbuiltin autoload -X([A-Za-z]*)\n\\}\n?$")

// lastOptions change how the snapshot itself would run: they are set
// after every other, in this order (xtrace last, so that nothing of the
// snapshot is traced). allexport would export the functions defined
// after it.
var lastOptions = []string{"allexport", "verbose", "errexit", "errreturn", "nounset", "unset", "noexec", "exec", "xtrace"}

// aliasOptions turn alias expansion on: set after the functions are
// defined, with the last ones.
var aliasOptions = []string{"expand_aliases", "aliases"}

// fixedOptions cannot be set after the shell started (they describe how
// it was started).
var fixedOptions = []string{"login", "login_shell", "interactive", "restricted", "restricted_shell", "privileged",
	"shinstdin", "stdin", "singlecommand", "onecmd", "zle", "monitor", "debug", "nolog"}

// options turns the options a dump recorded into commands, without those
// that cannot be set: early the ones to set before the functions are
// defined, late alias expansion and lastOptions, in that order.
func options(kind Kind, recorded string) (early, late string) {
	type opt struct{ name, cmd string }
	var opts []opt
	bi := builtinPrefix(kind)
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
		opts = append(opts, opt{name, bi + cmd})
	}
	// Alias expansion, then lastOptions in their order; and shopt before
	// set (a set -e would stop at a shopt that fails).
	rank := func(o opt) int {
		r := 0
		switch {
		case slices.Contains(aliasOptions, o.name):
			r = 2
		case slices.Contains(lastOptions, o.name):
			r = 2 * (slices.Index(lastOptions, o.name) + 2)
		}
		if !strings.Contains(o.cmd, "shopt ") {
			r++
		}
		return r
	}
	slices.SortStableFunc(opts, func(a, b opt) int { return rank(a) - rank(b) })
	var e, l strings.Builder
	for _, o := range opts {
		if rank(o) < 2 {
			e.WriteString(o.cmd + "\n")
		} else {
			l.WriteString(o.cmd + "\n")
		}
	}
	return e.String(), l.String()
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
