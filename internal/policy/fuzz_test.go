package policy

import (
	"slices"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// FuzzPlainCommands: any script parses without panic, and the commands of
// a plain one, quoted back into a script, are the commands again.
func FuzzPlainCommands(f *testing.F) {
	for _, s := range []string{"ls && pwd; echo 'hi there' | wc -l", `echo "/usr"'/'"local"/bin`, "python3 <<'PY'\nx\nPY",
		`echo a\ b "x\"y\$z\q"`, "git commit -m \"a\nb\"", "echo $(pwd)", "ls *.py", "a || b | c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, script string) {
		_, _ = HeredocCommand(bashLc(script))
		_ = KnownSafe(bashLc(script))
		_ = Dangerous(bashLc(script))
		cmds, ok := PlainCommands(bashLc(script))
		if !ok {
			return
		}
		var again []string
		for _, c := range cmds {
			quoted := make([]string, len(c))
			for i, w := range c {
				q, err := syntax.Quote(w, syntax.LangPOSIX) // single quotes, which plain scripts use
				if err != nil {
					return // a word POSIX quoting cannot hold (a NUL byte, say)
				}
				quoted[i] = q
			}
			again = append(again, strings.Join(quoted, " "))
		}
		got, ok := PlainCommands(bashLc(strings.Join(again, "; ")))
		if !ok || !slices.EqualFunc(got, cmds, slices.Equal) {
			t.Errorf("%q: commands %q, quoted back %q, parsed again %q, %v", script, cmds, again, got, ok)
		}
	})
}
