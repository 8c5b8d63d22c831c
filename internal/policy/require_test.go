package policy

import (
	"slices"
	"testing"
)

func rulesOf(t *testing.T, src string) *Rules {
	t.Helper()
	if src == "" {
		return NewRules()
	}
	return NewRules(mustParse(t, src))
}

// COMPAT §17.8 cases 43-53, and SPEC §7.2 where it is stricter than Codex.
func TestRequire(t *testing.T) {
	heredoc := bashLc("python3 <<'PY'\nprint('hello')\nPY")
	tests := []struct {
		name, rules string
		req         Request
		want        Requirement
	}{
		{"43 forbidden prefix in a script", `prefix_rule(pattern=["rm"], decision="forbidden")`,
			Request{Argv: bashLc("rm -rf /some/important/folder"), Policy: OnRequest},
			Requirement{Outcome: Refuse, Reason: "`bash -lc 'rm -rf /some/important/folder'` rejected: policy forbids commands starting with `rm`"}},
		{"44 forbidden with a justification", `prefix_rule(pattern=["rm"], decision="forbidden", justification="destructive command")`,
			Request{Argv: words("rm -rf /some/important/folder"), Policy: OnRequest},
			Requirement{Outcome: Refuse, Reason: "`rm -rf /some/important/folder` rejected: destructive command"}},
		{"45 prompt rule", `prefix_rule(pattern=["rm"], decision="prompt")`,
			Request{Argv: words("rm"), Policy: OnRequest, Sandboxed: true},
			Requirement{Outcome: Ask, Reason: "`rm` requires approval by policy"}},
		{"45b prompt rule with a justification", `prefix_rule(pattern=["rm"], decision="prompt", justification="deletes files")`,
			Request{Argv: words("rm x"), Policy: OnRequest, Sandboxed: true},
			Requirement{Outcome: Ask, Reason: "`rm x` requires approval: deletes files"}},
		{"46 allow rule, heredoc: runs, in the sandbox (stricter than Codex)", `prefix_rule(pattern=["python3"], decision="allow")`,
			Request{Argv: heredoc, Policy: OnRequest, Sandboxed: true},
			Requirement{Outcome: Run}},
		{"47 heredoc, untrusted: no prefix offered", "",
			Request{Argv: heredoc, Policy: Untrusted, Sandboxed: true, Prefix: words("python3 -m pip")},
			Requirement{Outcome: Ask}},
		{"48 untrusted", "", Request{Argv: words("cargo build"), Policy: Untrusted, Sandboxed: true},
			Requirement{Outcome: Ask, Amendment: words("cargo build")}},
		{"48b empty script", "", Request{Argv: bashLc(""), Policy: Untrusted, Sandboxed: true},
			Requirement{Outcome: Ask, Amendment: bashLc("")}},
		{"48c blank script", "", Request{Argv: bashLc("  \n\t  "), Policy: Untrusted, Sandboxed: true},
			Requirement{Outcome: Ask, Amendment: bashLc("  \n\t  ")}},
		{"49 escalation with a prefix", "",
			Request{Argv: words("cargo install cargo-insta"), Policy: OnRequest, Sandboxed: true, Escalated: true, Prefix: words("cargo install")},
			Requirement{Outcome: Ask, Amendment: words("cargo install")}},
		{"50 a prefix that does not cover every command", "",
			Request{Argv: bashLc("cargo install cargo-insta && rm -rf codex-tmp"), Policy: OnRequest, Escalated: true, Prefix: words("cargo install")},
			Requirement{Outcome: Ask, Amendment: words("rm -rf codex-tmp")}},
		{"51 allow rule for one command of two", `prefix_rule(pattern=["apple"], decision="allow")`,
			Request{Argv: bashLc("apple | orange"), Policy: Untrusted, Sandboxed: true},
			Requirement{Outcome: Ask, Amendment: words("orange")}},
		{"52 dangerous without a sandbox", "", Request{Argv: words("rm -rf nonexistent"), Policy: OnRequest},
			Requirement{Outcome: Ask, Amendment: words("rm -rf nonexistent")}},
		{"52b never without a sandbox", "", Request{Argv: words("rm -rf nonexistent"), Policy: Never},
			Requirement{Outcome: Run, Amendment: words("rm -rf nonexistent")}},
		{"52c prompt rule under never", `prefix_rule(pattern=["rm"], decision="prompt")`,
			Request{Argv: words("rm -rf nonexistent"), Policy: Never},
			Requirement{Outcome: Refuse, Reason: NeverConflict}},
		{"53 over-broad proposal", "", Request{Argv: words("python3 x.py"), Policy: Untrusted, Sandboxed: true, Prefix: words("python3")},
			Requirement{Outcome: Ask, Amendment: words("python3 x.py")}},
		// SPEC §7.2 and §7.4.
		{"on-request runs in the sandbox", "", Request{Argv: words("cargo build"), Policy: OnRequest, Sandboxed: true},
			Requirement{Outcome: Run, Amendment: words("cargo build")}},
		{"on-request asks for dangerous", "", Request{Argv: words("rm -rf x"), Policy: OnRequest, Sandboxed: true},
			Requirement{Outcome: Ask, Amendment: words("rm -rf x")}},
		{"on-failure asks for dangerous", "", Request{Argv: words("sudo rm -f x"), Policy: OnFailure, Sandboxed: true},
			Requirement{Outcome: Ask, Amendment: words("sudo rm -f x")}},
		{"on-failure runs the rest", "", Request{Argv: words("cargo build"), Policy: OnFailure, Sandboxed: true},
			Requirement{Outcome: Run, Amendment: words("cargo build")}},
		{"never refuses dangerous in the sandbox", "", Request{Argv: words("rm -rf x"), Policy: Never, Sandboxed: true},
			Requirement{Outcome: Refuse, Reason: NeverConflict}},
		{"untrusted runs known-safe", "", Request{Argv: bashLc("ls && git status"), Policy: Untrusted, Sandboxed: true},
			Requirement{Outcome: Run, Amendment: words("ls")}},
		{"escalation outside on-request", "", Request{Argv: words("ls"), Policy: Untrusted, Escalated: true},
			Requirement{Outcome: Refuse, Reason: "sandbox_permissions require_escalated is only honoured under approval_policy on-request (this is untrusted): run without it"}},
		{"an allow rule answers an escalation", `prefix_rule(pattern=["cargo"], decision="allow")`,
			Request{Argv: words("cargo publish"), Policy: OnRequest, Sandboxed: true, Escalated: true},
			Requirement{Outcome: Run, Unsandboxed: true}},
		{"unsandboxed only when rules allow every command", `prefix_rule(pattern=["apple"], decision="allow")`,
			Request{Argv: bashLc("apple && orange"), Policy: OnRequest, Sandboxed: true},
			Requirement{Outcome: Run}},
		{"a prompt rule blocks the model's prefix", `prefix_rule(pattern=["cargo", "install"], decision="prompt")`,
			Request{Argv: words("cargo install x"), Policy: OnRequest, Sandboxed: true, Prefix: words("cargo install")},
			Requirement{Outcome: Ask, Reason: "`cargo install x` requires approval by policy"}},
		{"a heredoc's command is never known-safe", "", Request{Argv: bashLc("cat <<'EOF' > .git/config\nx\nEOF"), Policy: Untrusted, Sandboxed: true},
			Requirement{Outcome: Ask}},
		{"the most specific forbidden rule names its prefix", "prefix_rule(pattern=[\"git\"], decision=\"forbidden\")\nprefix_rule(pattern=[\"git\",\"push\"], decision=\"forbidden\")",
			Request{Argv: words("git push"), Policy: OnRequest},
			Requirement{Outcome: Refuse, Reason: "`git push` rejected: policy forbids commands starting with `git push`"}},
		// Rules also see commands the split cannot show (SPEC §7.1).
		{"forbidden behind a redirection", `prefix_rule(pattern=["rm"], decision="forbidden")`,
			Request{Argv: bashLc("rm x > /dev/null"), Policy: OnRequest, Sandboxed: true},
			Requirement{Outcome: Refuse, Reason: "`bash -lc 'rm x > /dev/null'` rejected: policy forbids commands starting with `rm`"}},
		{"forbidden inside a substitution", `prefix_rule(pattern=["rm"], decision="forbidden")`,
			Request{Argv: bashLc("echo $(rm -rf /)"), Policy: OnRequest, Sandboxed: true},
			Requirement{Outcome: Refuse, Reason: "`bash -lc 'echo $(rm -rf /)'` rejected: policy forbids commands starting with `rm`"}},
		{"forbidden in a subshell and a function", `prefix_rule(pattern=["git", "push"], decision="forbidden")`,
			Request{Argv: bashLc("f() { (cd x; git push --force); }; f"), Policy: OnRequest, Sandboxed: true},
			Requirement{Outcome: Refuse, Reason: "`bash -lc 'f() { (cd x; git push --force); }; f'` rejected: policy forbids commands starting with `git push`"}},
		{"forbidden named by a path", `prefix_rule(pattern=["rm"], decision="forbidden")`,
			Request{Argv: words("/bin/rm x"), Policy: OnRequest, Sandboxed: true},
			Requirement{Outcome: Refuse, Reason: "`/bin/rm x` rejected: policy forbids commands starting with `rm`"}},
		{"forbidden named by a path in a script", `prefix_rule(pattern=["rm"], decision="forbidden")`,
			Request{Argv: bashLc("ls && /usr/bin/rm x"), Policy: OnRequest, Sandboxed: true},
			Requirement{Outcome: Refuse, Reason: "`bash -lc 'ls && /usr/bin/rm x'` rejected: policy forbids commands starting with `rm`"}},
		{"prompt in a pipeline with redirections", `prefix_rule(pattern=["git", "push"], decision="prompt")`,
			Request{Argv: bashLc("git push 2>&1 | tee log"), Policy: OnRequest, Sandboxed: true},
			Requirement{Outcome: Ask, Reason: "`bash -lc 'git push 2>&1 | tee log'` requires approval by policy"}},
		{"an inner allow rule does not lift the sandbox", `prefix_rule(pattern=["ls"], decision="allow")`,
			Request{Argv: bashLc("ls > out"), Policy: OnRequest, Sandboxed: true},
			Requirement{Outcome: Run, Amendment: bashLc("ls > out")}},
		{"dangerous behind a redirection asks", "",
			Request{Argv: bashLc("rm -rf build > log"), Policy: OnRequest, Sandboxed: true},
			Requirement{Outcome: Ask, Amendment: bashLc("rm -rf build > log")}},
		{"a redirection to /dev/null keeps a script plain", "",
			Request{Argv: bashLc("rm -rf build > /dev/null 2>&1"), Policy: OnRequest, Sandboxed: true},
			Requirement{Outcome: Ask, Amendment: words("rm -rf build")}},
		{"dangerous with a glob offers the whole script", "",
			Request{Argv: bashLc("rm -rf *"), Policy: OnRequest, Sandboxed: true},
			Requirement{Outcome: Ask, Amendment: bashLc("rm -rf *")}},
		{"an allow rule for an inner dangerous command answers it, in the sandbox", `prefix_rule(pattern=["rm", "-rf", "build"], decision="allow")`,
			Request{Argv: bashLc("rm -rf build > log"), Policy: OnRequest, Sandboxed: true},
			Requirement{Outcome: Run, Amendment: bashLc("rm -rf build > log")}},
		{"an allow rule for the whole script answers its dangerous command, in the sandbox", "prefix_rule(pattern=[\"bash\", \"-lc\", \"rm -rf build > log\"], decision=\"allow\")",
			Request{Argv: bashLc("rm -rf build > log"), Policy: OnRequest, Sandboxed: true},
			Requirement{Outcome: Run}},
		{"a shell named by a path outside the system directories is looked into only to be stricter", `prefix_rule(pattern=["cargo"], decision="allow")`,
			Request{Argv: []string{"./bash", "-c", "cargo build"}, Policy: OnRequest, Sandboxed: true},
			Requirement{Outcome: Run, Amendment: []string{"./bash", "-c", "cargo build"}}},
		{"a continued comment hides a command from the parser: ask", `prefix_rule(pattern=["rm"], decision="forbidden")`,
			Request{Argv: bashLc("true #\\\nrm -f precious"), Policy: OnRequest, Sandboxed: true},
			Requirement{Outcome: Ask, Amendment: bashLc("true #\\\nrm -f precious")}},
		{"a script that does not parse may still run rm: ask", "",
			Request{Argv: bashLc("rm -rf build; if"), Policy: OnRequest, Sandboxed: true},
			Requirement{Outcome: Ask, Amendment: bashLc("rm -rf build; if")}},
		{"an opaque script under never with rules that ask", `prefix_rule(pattern=["rm"], decision="prompt")`,
			Request{Argv: bashLc("x #\\\nrm y"), Policy: Never},
			Requirement{Outcome: Refuse, Reason: NeverConflict}},
		{"a continued line without rm and without strict rules runs", "",
			Request{Argv: bashLc("docker run \\\n  -v a:b img"), Policy: OnRequest, Sandboxed: true},
			Requirement{Outcome: Run, Amendment: bashLc("docker run \\\n  -v a:b img")}},
		{"bash -c SCRIPT ARG0 is looked into", `prefix_rule(pattern=["rm"], decision="forbidden")`,
			Request{Argv: []string{"bash", "-c", "rm -rf build", "x"}, Policy: OnRequest, Sandboxed: true},
			Requirement{Outcome: Refuse, Reason: "`bash -c 'rm -rf build' x` rejected: policy forbids commands starting with `rm`"}},
		{"bash -ec and --norc -c are looked into", `prefix_rule(pattern=["rm"], decision="forbidden")`,
			Request{Argv: []string{"/bin/bash", "--norc", "-ec", "rm x"}, Policy: OnRequest, Sandboxed: true},
			Requirement{Outcome: Refuse, Reason: "`/bin/bash --norc -ec 'rm x'` rejected: policy forbids commands starting with `rm`"}},
		{"dangerous inside a script under never, sandboxed", "",
			Request{Argv: bashLc("rm -rf build > log"), Policy: Never, Sandboxed: true},
			Requirement{Outcome: Refuse, Reason: NeverConflict}},
	}
	for _, tt := range tests {
		got := Require(rulesOf(t, tt.rules), tt.req)
		if got.Outcome != tt.want.Outcome || got.Unsandboxed != tt.want.Unsandboxed || got.Reason != tt.want.Reason ||
			!slices.Equal(got.Amendment, tt.want.Amendment) {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.name, got, tt.want)
		}
	}
}

func TestOverBroad(t *testing.T) {
	for _, p := range [][]string{words("bash"), words("sh -c"), words("python3 -c"), words("git"), words("sudo"), words("env"), words("bash -lc"),
		words("/bin/bash -lc"), words("/usr/bin/python3.12 -c"), words("bash --norc -lc"), words("git -C dir"), words("env A=1"),
		words("python3 -u -c"), words("node18 -e"), words("/usr/local/bin/sudo -n"), {}} {
		if !OverBroad(p) {
			t.Errorf("OverBroad(%q) = false", p)
		}
	}
	for _, p := range [][]string{words("git status"), words("python3 -m pip"), words("cargo build"), words("npm test"),
		{"/bin/bash", "-lc", "cargo build"}, words("git -C dir status")} {
		if OverBroad(p) {
			t.Errorf("OverBroad(%q) = true", p)
		}
	}
}

func TestShellJoin(t *testing.T) {
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"/bin/bash", "-lc", "echo hi"}, "/bin/bash -lc 'echo hi'"},
		{[]string{"bash", "-lc", "it's $HOME"}, `bash -lc "it's \$HOME"`},
		{[]string{"sh", "-c", "a\nb"}, `sh -c $'a\nb'`},
		{[]string{"x", ""}, "x ''"},
		{[]string{"nul\x00"}, `"nul\x00"`},
	}
	for _, tt := range tests {
		if got := ShellJoin(tt.argv); got != tt.want {
			t.Errorf("ShellJoin(%q) = %s, want %s", tt.argv, got, tt.want)
		}
	}
}
