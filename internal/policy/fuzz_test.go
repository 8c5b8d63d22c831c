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
				if q == w && declarations[w] {
					// Quote needs no quotes for these, but bare they start
					// a declaration, which is not a plain command.
					q = "'" + w + "'"
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

// declarations are the words bash parses as a declaration or let
// clause, not a command, when they start one unquoted.
var declarations = map[string]bool{"declare": true, "local": true, "export": true, "readonly": true,
	"typeset": true, "nameref": true, "let": true}

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

// FuzzRequire: any script under any policy gets a verdict without panic;
// only a call to run goes without the sandbox, a refusal says why, and a
// forbidden rm rule refuses every script in which the parser sees an rm
// command (plain, behind redirections, in substitutions).
func FuzzRequire(f *testing.F) {
	for _, s := range []string{"rm x > /dev/null", "echo $(rm -rf /)", "ls && /bin/rm -f a", "f() { rm a; }; f",
		"python3 <<'PY'\nimport os\nPY", "cat x | grep y", "rm", "true && sudo rm -rf /"} {
		f.Add(s, uint8(0), false)
	}
	rules := NewRules(&File{Rules: []*Rule{
		{Pattern: [][]string{{"rm"}}, Decision: Forbidden},
		{Pattern: [][]string{{"git"}, {"push"}}, Decision: Prompt},
		{Pattern: [][]string{{"cat"}}, Decision: Allow},
	}})
	policies := []ApprovalPolicy{Untrusted, OnFailure, OnRequest, Never}
	f.Fuzz(func(t *testing.T, script string, p uint8, escalated bool) {
		req := Request{Argv: bashLc(script), Policy: policies[int(p)%len(policies)], Sandboxed: p&4 == 0, Escalated: escalated}
		r := Require(rules, req)
		switch {
		case r.Outcome < Run || r.Outcome > Refuse:
			t.Fatalf("%q: outcome %d", script, r.Outcome)
		case r.Unsandboxed && r.Outcome != Run:
			t.Fatalf("%q: unsandboxed but %d", script, r.Outcome)
		case r.Outcome == Refuse && r.Reason == "":
			t.Fatalf("%q: refused without a reason", script)
		}
		if escalated && req.Policy != OnRequest {
			return // refused before the rules
		}
		inner, _ := literalCommands(req.Argv)
		for _, c := range append(Commands(req.Argv), inner...) {
			if len(c) > 0 && (c[0] == "rm" || strings.HasSuffix(c[0], "/rm")) && r.Outcome != Refuse {
				t.Fatalf("%q: runs rm (%q) with outcome %d", script, c, r.Outcome)
			}
		}
	})
}
