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
		`echo a\ b "x\"y\$z\q"`, "git commit -m \"a\nb\"", `'$'\'`, "echo $(pwd)", "ls *.py", "a || b | c"} {
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

// FuzzRules: any rules file loads or fails without panic, and every rule
// loaded matches the argv made of its first alternatives, also after the
// amendment line for that argv is parsed back.
func FuzzRules(f *testing.F) {
	for _, s := range []string{
		`prefix_rule(pattern=["git","status"])`,
		`prefix_rule(pattern=[["bash","sh"],["-c","-l"]], decision="prompt", justification="x", match=["bash -c"], not_match=[["sh"]])`,
		"A = [\"x\"]\nprefix_rule(pattern=A + [\"y\"], decision=\"forbidden\")",
		`network_rule(host="a.com:80", protocol="http", decision="deny")`,
		`host_executable(name="git", paths=["/usr/bin/git"])`,
		`[x for x in range(100)]`,
		`prefix_rule(pattern=["a\"b", "ü\\n"])`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		file, err := ParseFile("f.rules", []byte(src))
		if err != nil {
			return
		}
		for _, r := range file.Rules {
			argv := make([]string, len(r.Pattern))
			for i, alts := range r.Pattern {
				argv[i] = alts[0]
			}
			if _, ok := r.match(argv); !ok {
				t.Fatalf("rule %+v does not match %q", r, argv)
			}
			line := AmendLine(argv)
			back, err := ParseFile("amend.rules", []byte(line))
			if err != nil || len(back.Rules) != 1 {
				t.Fatalf("amendment %s does not parse back: %v", line, err)
			}
			if _, ok := back.Rules[0].match(argv); !ok {
				t.Fatalf("amendment %s does not match %q", line, argv)
			}
		}
	})
}
