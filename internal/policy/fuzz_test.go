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
		"for t in [\"a\", \"b\"]:\n    if t != \"b\":\n        prefix_rule(pattern=[t])\n",
		"def f(n):\n    return f(n + 1)\nf(0)\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		// A repetition (`'0'*700000008`) allocates up to Starlark's
		// 1 GiB per operation in one step, which the step limit does not
		// bound; on a 2-CPU CI machine with parallel fuzz workers that
		// starves the fuzzer into "hung or terminated unexpectedly".
		if strings.Contains(src, "*") {
			return
		}
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
		for _, c := range append(Commands(req.Argv), ScriptCommands(req.Argv)...) {
			if len(c) > 0 && (c[0] == "rm" || strings.HasSuffix(c[0], "/rm")) && r.Outcome != Refuse {
				t.Fatalf("%q: runs rm (%q) with outcome %d", script, c, r.Outcome)
			}
		}
	})
}

// trustGen builds a bash script from a grammar of plain commands,
// redirections, heredocs, substitutions, wrappers and the spellings of
// nested shells, steered by the fuzzer's bytes, and knows what it built:
// whether every command is plain words (plain) and whether the parser can
// see an rm run (rm: as a command, behind a wrapper, in a substitution
// or a nested shell; not in a heredoc's body).
type trustGen struct {
	in []byte
}

func (g *trustGen) pick(n int) int {
	if len(g.in) == 0 {
		return 0
	}
	c := int(g.in[0]) % n
	g.in = g.in[1:]
	return c
}

var (
	trustWords = []string{"cat f", "echo hi", "ls -l", "sort x", "git status", "rm f", "printf x"}
	// trustShells are spellings of a nested shell with -c; the script
	// follows in single quotes.
	trustShells = []string{"bash -c", "bash -c --", "bash -o errexit -c", "bash -O extglob -c", "bash +O extglob -c",
		"bash --rcfile /dev/null -c", "bash --norc --noprofile -c", "sh -ec", "sh -c -e", "dash -c", "/bin/bash -lc",
		"bash -euo pipefail -c", "busybox sh -c"}
	trustWrappers = []string{"env ", "env -i A=1 ", "timeout 5 ", "nohup ", "nice -n 5 ", "xargs ", "command ", "stdbuf -oL "}
	// trustRedirs: harmless ones first.
	trustRedirs     = []string{"", " 2>&1", " > /dev/null", " 2>/dev/null", " &>/dev/null", " < /dev/null", " >&2"}
	trustBadRedirs  = []string{" > out", " >> /etc/x", " >& out", " > $X", " 2> log", " <<< x", " {fd}>/dev/null"}
	trustConnectors = []string{" && ", " || ", "; ", " | ", "\n"}
)

// script returns a script of one to three statements.
func (g *trustGen) script(depth int) (s string, plain, rm bool) {
	plain = true
	n := 1 + g.pick(3)
	heredoc := false // the last statement ended with a heredoc's delimiter line
	for i := range n {
		st, p, r := g.statement(depth)
		switch {
		case i > 0 && heredoc:
			s += "\n" // nothing may follow the delimiter on its line
		case i > 0:
			s += trustConnectors[g.pick(len(trustConnectors))]
		}
		s += st
		plain, rm = plain && p, rm || r
		heredoc = strings.HasSuffix(st, "\nEOF")
	}
	if !heredoc && g.pick(8) == 0 {
		s += " &"
		plain = false
	}
	return s, plain, rm
}

func (g *trustGen) statement(depth int) (s string, plain, rm bool) {
	plain = true
	switch k := g.pick(7); {
	case k <= 2 || depth > 2:
		w := trustWords[g.pick(len(trustWords))]
		s, rm = w, strings.HasPrefix(w, "rm")
	case k == 3:
		w := trustWords[g.pick(len(trustWords))]
		s, rm = trustWrappers[g.pick(len(trustWrappers))]+w, strings.HasPrefix(w, "rm")
	case k == 4:
		inner, p, r := g.script(depth + 1)
		if strings.Contains(inner, "'") {
			inner, p, r = "rm f", true, true // nested single quotes: keep it simple
		}
		s, rm, plain = trustShells[g.pick(len(trustShells))]+" '"+inner+"'", r, p
	case k == 5:
		inner, _, r := g.script(depth + 1)
		s, rm, plain = "echo $("+inner+"\n)", r, false
	default:
		body := trustWords[g.pick(len(trustWords))]
		s, plain = "cat <<'EOF'\n"+body+"\nEOF", false
		if g.pick(2) == 0 {
			s = "cat >> /etc/profile <<EOF\n" + body + "\nEOF"
		}
		return s, plain, false // the heredoc's body is not run by the shell
	}
	if g.pick(3) == 0 {
		if g.pick(2) == 0 {
			s += trustRedirs[g.pick(len(trustRedirs))]
		} else {
			s += trustBadRedirs[g.pick(len(trustBadRedirs))]
			plain = false
		}
	}
	return s, plain, rm
}

// FuzzTrust: a call whose commands are not all plain words never runs
// without the sandbox by rules, and a forbidden program the parser can
// see is never run (SPEC §7.1, §7.2).
func FuzzTrust(f *testing.F) {
	for _, s := range []string{"", "\x04\x00\x01", "\x03\x05", "\x06\x01", "\x02\x00\x03\x05", "\x00\x05\x00\x01\x07"} {
		f.Add([]byte(s), uint8(0))
	}
	rules := NewRules(&File{Rules: []*Rule{
		{Pattern: [][]string{{"rm"}}, Decision: Forbidden},
		{Pattern: [][]string{{"cat", "echo", "ls", "sort", "printf", "env", "timeout", "nohup", "nice", "xargs", "command",
			"stdbuf", "bash", "sh", "dash", "/bin/bash", "busybox"}}, Decision: Allow},
		{Pattern: [][]string{{"git"}, {"status"}}, Decision: Allow},
	}})
	policies := []ApprovalPolicy{Untrusted, OnFailure, OnRequest, Never}
	f.Fuzz(func(t *testing.T, choices []byte, p uint8) {
		g := &trustGen{in: choices}
		script, plain, rm := g.script(0)
		req := Request{Argv: bashLc(script), Policy: policies[int(p)%len(policies)], Sandboxed: true}
		r := Require(rules, req)
		if r.Unsandboxed && !plain {
			t.Fatalf("%q: not all plain, but runs without the sandbox", script)
		}
		if rm && r.Outcome == Run {
			t.Fatalf("%q: runs rm past a forbidden rule", script)
		}
	})
}
