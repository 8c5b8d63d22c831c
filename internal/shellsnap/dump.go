package shellsnap

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Kind is a shell family whose profile can be snapshotted.
type Kind string

// The kinds (SPEC §9.1's bash, zsh and sh).
const (
	Bash Kind = "bash"
	Zsh  Kind = "zsh"
	Sh   Kind = "sh"
)

// The dump writes records to stdout, each a tag and a payload ended by
// NUL (no shell string holds one), between a start and an end marker
// that are random for each dump: what the profile prints can only come
// before the start or after the end, where Parse finds it.
//
// Each dump first records the options (before anything of its own could
// change them), then turns off those that would make it fail or trace
// itself (errexit, nounset, verbose, xtrace), with its stderr sent to
// /dev/null: the profile's own output has been written by then. Builtins
// are named with a backslash and `builtin` (`command` in sh), so that an
// alias or function of the profile's does not stand in for them.

// bashDump is the dump of bash. declare -F lists the exported functions
// (-fx), compgen -e the exported variables.
const bashDump = `{ \builtin printf '%s\0' @M@
\builtin printf 'opt\0'; \builtin set +o; \builtin set +euvx; \builtin shopt -p; \builtin printf '\0'
\builtin printf 'pwd\0'; \builtin pwd -P; \builtin printf '\0'
\builtin printf 'umask\0'; \builtin umask; \builtin printf '\0'
\builtin printf 'func\0'; \builtin declare -f; \builtin printf '\0'
\builtin printf 'xfunc\0'; \builtin declare -F; \builtin printf '\0'
\builtin printf 'alias\0'; \builtin alias -p; \builtin printf '\0'
IFS=$' \t\n'
for __execd_n in $(\builtin compgen -e); do
  [[ -v $__execd_n ]] && \builtin printf 'env\0%s=%s\0' "$__execd_n" "${!__execd_n}"
done
\builtin printf '%s\0' @M@-end
} 2>/dev/null`

// zshDump is the dump of zsh. It runs in an anonymous function whose first
// command copies the options, then emulates zsh's own, so that options
// the profile set (ksh_arrays, sh_word_split) do not change how it reads.
// Each function is a record of its own: a stub of one marked for
// autoloading is told by its whole text, which no other function's can
// imitate.
const zshDump = `{ () {
\builtin local -a __execd_o
__execd_o=("${(@kv)options}")
\builtin emulate -L zsh
\builtin printf '%s\0' @M@
\builtin printf 'opt\0'; \builtin printf '%s=%s\n' "${__execd_o[@]}"; \builtin printf '\0'
\builtin printf 'pwd\0'; \builtin pwd -P; \builtin printf '\0'
\builtin printf 'umask\0'; \builtin umask; \builtin printf '\0'
for __execd_n in ${(ko)functions}; do
  \builtin printf 'zfunc\0'; \builtin typeset -f -- "$__execd_n"; \builtin printf '\0'
done
\builtin printf 'alias\0'; \builtin alias -L; \builtin alias -sL; \builtin printf '\0'
\builtin printf 'fpath\0%s\0' "$FPATH"
if (( ${+ZDOTDIR} )); then \builtin printf 'zdotdir\0%s\0' "$ZDOTDIR"; fi
\builtin local __execd_n
for __execd_n in ${(k)parameters[(R)*export*]}; do
  \builtin printf 'env\0%s=%s\0' "$__execd_n" "${(P)__execd_n}"
done
\builtin printf '%s\0' @M@-end
} } 2>/dev/null`

// shDump is the dump of sh (dash; also bash as sh). sh lists neither its
// exported variables in a form easy to read back (env -0 does) nor its
// functions: it tests the names of @F@ (what the profile's files seem to
// define) one by one.
const shDump = `{ \command printf '%s\0' @M@
\command printf 'opt\0'; \set +o; \set +euvx; \command printf '\0'
\command printf 'pwd\0'; \command pwd -P; \command printf '\0'
\command printf 'umask\0'; \command umask; \command printf '\0'
\command printf 'alias\0'; \command alias; \command printf '\0'
for __execd_n in @F@; do
  case $(\command -V "$__execd_n" 2>/dev/null) in *function*) \command printf 'shfunc\0%s\0' "$__execd_n";; esac
done
\command printf 'envz\0'; \command -p env -0; \command printf '%s\0' "@M@-env$?"
\command printf '%s\0' @M@-end
} 2>/dev/null`

// DumpScript returns the script that, run as `SHELL -lc SCRIPT`, writes
// what the profile left to stdout for [Parse]. marker must be a word of
// letters and digits, unique to this dump; funcs (sh only) are the names
// of functions the profile may define.
func DumpScript(kind Kind, marker string, funcs []string) string {
	var s string
	switch kind {
	case Bash:
		s = bashDump
	case Zsh:
		s = zshDump
	default:
		s = shDump
	}
	names := slices.DeleteFunc(slices.Clone(funcs), func(n string) bool { return !isName(n) })
	if len(names) == 0 {
		names = []string{"__execd_none"}
	}
	return strings.NewReplacer("@M@", marker, "@F@", strings.Join(names, " ")).Replace(s)
}

// state is what a dump recorded.
type state struct {
	opts    string            // bash: set +o and shopt -p; zsh: NAME=on|off lines; sh: set +o
	pwd     string            // the physical working directory
	umask   string            // octal
	funcs   string            // bash: declare -f; zsh: typeset -f, the zfuncs together
	zfuncs  []string          // zsh: typeset -f of each function
	xfuncs  []string          // bash: the exported functions
	aliases string            // bash: alias -p; zsh: alias -L and -sL; sh: alias commands, requoted
	env     map[string]string // the exported variables
	shFuncs []string          // sh: the names found to be functions
	fpath   *string           // zsh: $FPATH
	zdotdir *string           // zsh: $ZDOTDIR, when set
}

// PrintedError reports a profile that wrote to stdout or stderr: under
// `-lc` that text would start every command's output.
type PrintedError struct {
	Stream string // "stdout" or "stderr"
	Text   string // the first line, at most 200 bytes
}

func (e *PrintedError) Error() string {
	return fmt.Sprintf("the profile prints to %s (%q)", e.Stream, e.Text)
}

// errMalformed is a dump that does not read as one.
var errMalformed = errors.New("the dump of the profile's state is malformed")

// Parse reads the stdout and stderr of a dump run with marker. Errors:
// *PrintedError when the profile wrote anything of its own, errMalformed
// when the records do not read back (a profile may have broken the dump).
func Parse(kind Kind, marker string, stdout, stderr []byte) (*state, error) {
	if len(stderr) > 0 {
		return nil, printed("stderr", stderr)
	}
	start := []byte(marker + "\x00")
	if !bytes.HasPrefix(stdout, start) {
		if i := bytes.Index(stdout, start); i > 0 {
			return nil, printed("stdout", stdout[:i])
		}
		if len(stdout) > 0 && !bytes.Contains(stdout, start) {
			return nil, printed("stdout", stdout)
		}
		return nil, errMalformed
	}
	fields := bytes.Split(stdout[len(start):], []byte{0})
	st := &state{env: map[string]string{}}
	next := func() (string, bool) {
		if len(fields) == 0 {
			return "", false
		}
		f := string(fields[0])
		fields = fields[1:]
		return f, true
	}
	for {
		tag, ok := next()
		if !ok {
			return nil, errMalformed
		}
		if tag == marker+"-end" {
			// Split leaves one empty field after the last NUL.
			if rest := bytes.Join(fields, []byte{0}); len(rest) > 0 {
				return nil, printed("stdout", rest)
			}
			break
		}
		if tag == "envz" {
			if err := st.readEnvz(next, marker); err != nil {
				return nil, err
			}
			continue
		}
		payload, ok := next()
		if !ok {
			return nil, errMalformed
		}
		if err := st.set(tag, payload); err != nil {
			return nil, err
		}
	}
	if st.umask == "" || st.pwd == "" || (kind == Zsh && st.fpath == nil) {
		return nil, errMalformed
	}
	if kind == Sh {
		var err error
		if st.aliases, err = shAliases(st.aliases); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// set records one tagged payload.
func (st *state) set(tag, payload string) error {
	switch tag {
	case "opt":
		st.opts = payload
	case "pwd":
		st.pwd = strings.TrimSuffix(payload, "\n")
	case "umask":
		st.umask = strings.TrimSpace(payload)
		if st.umask == "" || strings.Trim(st.umask, "01234567") != "" {
			return errMalformed
		}
	case "func":
		st.funcs = payload
	case "zfunc":
		st.zfuncs = append(st.zfuncs, payload)
		st.funcs += payload
	case "xfunc":
		for line := range strings.Lines(payload) {
			if name, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "declare -fx "); ok {
				st.xfuncs = append(st.xfuncs, name)
			}
		}
	case "alias":
		st.aliases = payload
	case "shfunc":
		st.shFuncs = append(st.shFuncs, payload)
	case "fpath":
		st.fpath = &payload
	case "zdotdir":
		st.zdotdir = &payload
	case "env":
		name, value, ok := strings.Cut(payload, "=")
		if !ok || !isName(name) {
			return errMalformed
		}
		st.env[name] = value
	default:
		return errMalformed
	}
	return nil
}

// readEnvz reads the NAME=VALUE items of env -0 up to the marker that
// carries its exit status.
func (st *state) readEnvz(next func() (string, bool), marker string) error {
	for {
		item, ok := next()
		if !ok {
			return errMalformed
		}
		if status, ok := strings.CutPrefix(item, marker+"-env"); ok {
			if status != "0" {
				return fmt.Errorf("env -0, which lists sh's exported variables, failed with status %s", status)
			}
			return nil
		}
		if name, value, ok := strings.Cut(item, "="); ok && isName(name) {
			st.env[name] = value
		} // a name no shell can set came in the environment: it stays as it was
	}
}

// printed makes a PrintedError of what the profile wrote.
func printed(stream string, b []byte) *PrintedError {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	if len(line) > 200 {
		line = line[:200]
	}
	return &PrintedError{Stream: stream, Text: string(line)}
}

// isName reports whether s is a shell variable name.
func isName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// funcDef finds what looks like a function definition in sh's syntax:
// NAME() at the start of a command, or bash's `function NAME`.
var funcDef = regexp.MustCompile(`(?m)(?:^|[\s;&|(){}])([A-Za-z_][A-Za-z0-9_]*)[ \t]*\([ \t]*\)|(?:^|[\s;&|(){}])function[ \t]+([A-Za-z_][A-Za-z0-9_]*)`)

// FuncNames returns the names that text (a startup file) seems to define
// as functions, for sh's dump, which tests each.
func FuncNames(text string) []string {
	var names []string
	for _, m := range funcDef.FindAllStringSubmatch(text, -1) {
		names = append(names, m[1]+m[2])
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// shAliases turns the output of sh's alias builtin (name='value' lines in
// dash; alias name='value' in bash as sh) into alias commands, each
// quoted again.
func shAliases(text string) (string, error) {
	var b strings.Builder
	for len(text) > 0 {
		text = strings.TrimPrefix(text, "alias ")
		eq := strings.IndexByte(text, '=')
		if nl := strings.IndexByte(text, '\n'); eq <= 0 || (nl >= 0 && nl < eq) {
			return "", errMalformed
		}
		name := text[:eq]
		value, rest, err := shWord(text[eq+1:])
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "alias %s\n", quote(name+"="+value))
		text = rest
	}
	return b.String(), nil
}

// shWord reads a shell word from the start of s up to a newline outside
// quotes, and returns it with its quotes removed, and what follows the
// newline.
func shWord(s string) (word, rest string, err error) {
	var w strings.Builder
	for i := 0; i < len(s); {
		switch c := s[i]; c {
		case '\n':
			return w.String(), s[i+1:], nil
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return "", "", errMalformed
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 2
		case '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\\\"$`\n", s[i+1]) >= 0 {
					i++
				}
				w.WriteByte(s[i])
			}
			if i == len(s) {
				return "", "", errMalformed
			}
			i++
		case '\\':
			if i+1 == len(s) {
				return "", "", errMalformed
			}
			w.WriteByte(s[i+1])
			i += 2
		default:
			w.WriteByte(c)
			i++
		}
	}
	return w.String(), "", nil
}
