package policy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func mustParse(t *testing.T, src string) *File {
	t.Helper()
	f, err := ParseFile("test.rules", []byte(src))
	if err != nil {
		t.Fatalf("ParseFile: %v", err)
	}
	return f
}

func prefixes(ms []Match) [][]string {
	var out [][]string
	for _, m := range ms {
		out = append(out, m.Prefix)
	}
	return out
}

// COMPAT §17.7 cases 34-38.
func TestRulesMatch(t *testing.T) {
	tests := []struct {
		name, rules string
		argv        []string
		decision    Decision
		prefixes    [][]string
	}{
		{"plain prefix", `prefix_rule(pattern=["git","status"])`, words("git status"), Allow, [][]string{{"git", "status"}}},
		{"first-token alternatives", `prefix_rule(pattern=[["bash","sh"],["-c","-l"]])`, words("bash -c echo hi"), Allow, [][]string{{"bash", "-c"}}},
		{"first-token alternatives, the other", `prefix_rule(pattern=[["bash","sh"],["-c","-l"]])`, words("sh -l echo hi"), Allow, [][]string{{"sh", "-l"}}},
		{"later alternatives", `prefix_rule(pattern=["npm",["i","install"],["--legacy-peer-deps","--no-save"]])`,
			words("npm install --no-save leftpad"), Allow, [][]string{{"npm", "install", "--no-save"}}},
		{"strictest wins, all listed", "prefix_rule(pattern=[\"git\"], decision=\"prompt\")\nprefix_rule(pattern=[\"git\",\"commit\"], decision=\"forbidden\")",
			words("git commit -m hi"), Forbidden, [][]string{{"git"}, {"git", "commit"}}},
		{"not a prefix", `prefix_rule(pattern=["git","status"])`, words("git --config color.status=always status"), 0, nil},
		{"argv shorter than the pattern", `prefix_rule(pattern=["git","status"])`, words("git"), 0, nil},
		{"constants and comments", "PMS = [\"npm\", \"pnpm\"]\nprefix_rule(pattern=[PMS, \"install\"], decision=\"prompt\")  # c",
			words("pnpm install x"), Prompt, [][]string{{"pnpm", "install"}}},
	}
	for _, tt := range tests {
		ev := NewRules(mustParse(t, tt.rules)).Evaluate([][]string{tt.argv}, nil)
		if ev.Decision != tt.decision || !slices.EqualFunc(prefixes(ev.Matches), tt.prefixes, slices.Equal) {
			t.Errorf("%s: %v %q; want %v %q", tt.name, ev.Decision, prefixes(ev.Matches), tt.decision, tt.prefixes)
		}
	}
}

func TestEvaluateMultipleCommands(t *testing.T) {
	rs := NewRules(mustParse(t, "prefix_rule(pattern=[\"git\"], decision=\"prompt\")\nprefix_rule(pattern=[\"git\",\"commit\"], decision=\"forbidden\")"))
	ev := rs.Evaluate([][]string{words("git status"), words("git commit -m hi")}, nil)
	if ev.Decision != Forbidden || len(ev.Matches) != 3 {
		t.Errorf("got %v %+v; want forbidden with three matches", ev.Decision, ev.Matches)
	}
	// COMPAT case 39: no rule, a fallback that prompts.
	ev = NewRules().Evaluate([][]string{words("python")}, func([]string) Decision { return Prompt })
	if ev.Decision != Prompt || len(ev.Matches) != 1 || !ev.Matches[0].Heuristic || !slices.Equal(ev.Matches[0].Command, words("python")) {
		t.Errorf("fallback: %+v", ev)
	}
	// A command a rule matches does not consult the fallback.
	ev = rs.Evaluate([][]string{words("git status"), words("ls")}, func([]string) Decision { return Allow })
	if ev.Decision != Prompt || len(ev.Matches) != 2 || ev.Matches[0].Heuristic || !ev.Matches[1].Heuristic {
		t.Errorf("mixed: %+v", ev)
	}
}

func TestRulesErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"empty justification", "prefix_rule(pattern=[\"rm\"],\n justification=\"   \")", "test.rules:1:12: invalid rule: justification cannot be empty"},
		{"bad decision", `prefix_rule(pattern=["rm"], decision="deny")`, `decision "deny" is not allow, prompt or forbidden`},
		{"empty pattern", `prefix_rule(pattern=[])`, "pattern cannot be empty"},
		{"bad pattern element", `prefix_rule(pattern=["a", 1])`, "pattern element 1 must be a string or a list of strings, not int"},
		{"empty alternatives", `prefix_rule(pattern=["a", []])`, "pattern element 1 has no alternatives"},
		{"match that does not", `prefix_rule(pattern=["git","status"], match=["git log"])`, `match example "git log" does not match the pattern`},
		{"not_match that does", `prefix_rule(pattern=["git"], not_match=[["git","x"]])`, `not_match example "git x" matches the pattern`},
		{"example not plain", `prefix_rule(pattern=["git"], match=["git $(x)"])`, "is not one command of plain words"},
		{"unknown argument", `prefix_rule(pattern=["git"], color="red")`, "unexpected keyword argument"},
		{"unknown function", `shell_rule(pattern=["git"])`, "test.rules:1:1: undefined: shell_rule"},
		{"syntax", "prefix_rule(pattern=[\"git\"]", "test.rules:1:"},
		{"wildcard host", `network_rule(host="*", protocol="http", decision="allow")`, "wildcards are not allowed"},
		{"network protocol", `network_rule(host="a.com", protocol="ftp", decision="allow")`, `protocol "ftp"`},
		{"host_executable relative", `host_executable(name="git", paths=["git"])`, "host_executable paths must be absolute (got git)"},
		{"host_executable path name", `host_executable(name="/usr/bin/git", paths=["/usr/bin/git"])`, "must be a bare executable name (got /usr/bin/git)"},
		{"host_executable basename", `host_executable(name="git", paths=["/usr/bin/rg"])`, "host_executable path `/usr/bin/rg` must have basename `git`"},
		{"error in a second call names its line", "prefix_rule(pattern=[\"a\"])\n\nprefix_rule(pattern=[])", "test.rules:3:12:"},
	}
	for _, tt := range tests {
		_, err := ParseFile("test.rules", []byte(tt.src))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v; want it to contain %q", tt.name, err, tt.want)
		}
	}
}

// COMPAT §17.7 case 41.
func TestNetworkRules(t *testing.T) {
	f := mustParse(t, `
network_rule(host = "google.com", protocol = "http", decision = "allow")
network_rule(host = "api.github.com", protocol = "https", decision = "allow")
network_rule(host = "blocked.example.com", protocol = "https", decision = "deny")
network_rule(host = "prompt-only.example.com", protocol = "https", decision = "prompt")
network_rule(host = " EXAMPLE.com.:443 ", protocol = "http-connect", decision = "allow")
host_executable(name = "git", paths = ["/usr/bin/git", "/usr/bin/git", "/opt/bin/git"])
`)
	allowed, denied := NetworkDomains(f.Network)
	if !slices.Equal(allowed, []string{"google.com", "api.github.com", "example.com"}) || !slices.Equal(denied, []string{"blocked.example.com"}) {
		t.Errorf("allowed %q, denied %q", allowed, denied)
	}
	if f.Network[4].Protocol != "https" {
		t.Errorf("http-connect: protocol %q", f.Network[4].Protocol)
	}
	if got := f.HostExecutables["git"]; !slices.Equal(got, []string{"/usr/bin/git", "/opt/bin/git"}) {
		t.Errorf("host_executable: %q", got)
	}
}

// TestRulesCodexDialect: Codex reads rules files with starlark-rust's
// Extended dialect, which allows for and if at the top level, assigns a
// global more than once and lets a function call itself; a file written
// for Codex that does so loads here too.
func TestRulesCodexDialect(t *testing.T) {
	f := mustParse(t, `
VCS = ["git", "hg"]
for tool in VCS:
    prefix_rule(pattern = [tool, "status"], match = [tool + " status"])

if len(VCS) > 1:
    rm = "forbidden"
else:
    rm = "prompt"
prefix_rule(pattern = ["rm"], decision = rm)

count = 0
for tool in VCS:
    count += 1
decision = "allow"
decision = "prompt" if count > 1 else decision
prefix_rule(pattern = ["curl"], decision = decision)

def expand(prefix, rest):
    if not rest:
        prefix_rule(pattern = prefix, decision = "prompt")
        return
    for alt in rest[0]:
        expand(prefix + [alt], rest[1:])

expand(["npm"], [["i", "install"], ["-g", "--global"]])

shout = lambda s, *, suffix = "!": s.upper() + suffix
prefix_rule(pattern = [shout("make", suffix = "")])
`)
	tests := []struct {
		argv     string
		decision Decision
	}{
		{"git status", Allow},
		{"hg status -v", Allow},
		{"rm -rf x", Forbidden},
		{"curl example.com", Prompt},
		{"npm i -g leftpad", Prompt},
		{"npm install --global leftpad", Prompt},
		{"npm install leftpad", 0},
		{"MAKE all", Allow},
	}
	for _, tt := range tests {
		if ev := NewRules(f).Evaluate([][]string{words(tt.argv)}, nil); ev.Decision != tt.decision {
			t.Errorf("%s: %v; want %v", tt.argv, ev.Decision, tt.decision)
		}
	}
	if len(f.Rules) != 9 {
		t.Errorf("%d rules, want 9", len(f.Rules))
	}
}

// TestRulesDialectLimits: what Codex's dialect refuses is refused here
// too (no while, no set), and recursion is bounded as in Codex: a
// runaway function fails after 40 nested calls, not after the 100,000
// that go.starlark.net allows (seconds and hundreds of MiB of stack).
func TestRulesDialectLimits(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"while", "def f():\n    while True:\n        pass\n", "does not support while loops"},
		{"set", "s = set([1])\n", "does not support sets"},
		{"runaway recursion", "def f(n):\n    return f(n + 1)\n\nf(0)\n", "test.rules:2:12: Starlark computation cancelled: more than 40 nested calls"},
		{"mutual recursion", "def a():\n    b()\ndef b():\n    a()\na()\n", "more than 40 nested calls"},
		{"f-string, which go.starlark.net cannot parse", "x = \"a\"\nprefix_rule(pattern = [f\"{x}\"])\n", "test.rules:2:"},
		{"endless work", "[x for x in range(1 << 40)]\n", "test.rules:1:2: Starlark computation cancelled: too many steps"},
	}
	for _, tt := range tests {
		_, err := ParseFile("test.rules", []byte(tt.src))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v; want it to contain %q", tt.name, err, tt.want)
		}
	}
	// 40 nested calls are fine, 41 are not.
	nest := "def f(n):\n    if n > 1:\n        f(n - 1)\n\nf(%d)\n"
	mustParse(t, fmt.Sprintf(nest, 40))
	if _, err := ParseFile("test.rules", []byte(fmt.Sprintf(nest, 41))); err == nil {
		t.Error("41 nested calls: no error")
	}
}
