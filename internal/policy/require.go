package policy

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// ApprovalPolicy says when to ask the user (SPEC §7.2).
type ApprovalPolicy string

// The approval policies.
const (
	Untrusted ApprovalPolicy = "untrusted"
	OnFailure ApprovalPolicy = "on-failure"
	OnRequest ApprovalPolicy = "on-request"
	Never     ApprovalPolicy = "never"
)

// Request is what decides whether a call may run: its argv, the policy,
// whether execd's sandbox confines it, and what the model asked for.
type Request struct {
	Argv      []string
	Policy    ApprovalPolicy
	Sandboxed bool // the command runs in a sandbox execd enforces
	Escalated bool // sandbox_permissions = require_escalated
	// Prefix is the model's prefix_rule proposal, if any.
	Prefix []string
	// Terminal: the command gets a terminal, so input typed later (to a
	// pager's ! or an editor's :!, say) drives it and never meets the
	// rules; they do not lift the sandbox from it.
	Terminal bool
	// Planted reports whether the program a command names (its argv[0],
	// found as the shell or execd would find it: on the command's PATH,
	// relative to its directory) could have been written by a sandboxed
	// command: the file, a symlink on the way to it, or a PATH entry
	// searched before it lies inside a writable root (SPEC §7.2). nil
	// means none could.
	Planted func(argv0 string) bool
}

// planted is Request.Planted, false when it is nil.
func (req Request) planted(argv0 string) bool { return req.Planted != nil && req.Planted(argv0) }

// Outcome is what a Requirement demands.
type Outcome int

// The outcomes.
const (
	Run    Outcome = iota + 1 // without asking
	Ask                       // the user must approve first
	Refuse                    // never
)

// Requirement is the verdict on a call before it runs.
type Requirement struct {
	Outcome Outcome
	// Unsandboxed: allow rules matched every command (Run only).
	Unsandboxed bool
	// Reason says why (Ask: a prompt rule's, or empty when the built-in
	// knowledge asks; Refuse: always).
	Reason string
	// Amendment is the prefix the user may allow from now on, or nil.
	Amendment []string
}

// NeverConflict is the reason when a rule asks but the policy never does.
const NeverConflict = "approval required by policy, but AskForApproval is set to Never"

// Require decides whether a call runs, must be approved or is refused
// (SPEC §7.2-§7.4, COMPAT §17.8): the rules first, for each command of the
// call; the policy and the built-in knowledge for commands no rule
// matches; the strictest verdict wins. A call runs without the sandbox
// only when allow rules saw it whole: see unsandboxed.
func Require(rs *Rules, req Request) Requirement {
	if req.Escalated && req.Policy != OnRequest {
		return Requirement{Outcome: Refuse, Reason: fmt.Sprintf(
			"sandbox_permissions require_escalated is only honoured under approval_policy on-request (this is %s): run without it", req.Policy)}
	}
	cmds, form := commandsOf(req.Argv)
	heredoc := form == heredocForm
	ev := rs.Evaluate(cmds, func(c []string) Decision { return fallback(req, c, heredoc) })
	inner := seenIn(req.Argv, cmds, form, req.Planted)
	ev = rs.stricter(ev, req, cmds, inner)
	switch ev.Decision {
	case Forbidden:
		return Requirement{Outcome: Refuse, Reason: forbiddenReason(req.Argv, ev)}
	case Prompt:
		if req.Policy == Never {
			return Requirement{Outcome: Refuse, Reason: NeverConflict}
		}
		r := Requirement{Outcome: Ask, Reason: promptReason(req.Argv, ev)}
		if !heredoc {
			r.Amendment = requestedAmendment(rs, req, cmds, ev)
			if r.Amendment == nil {
				r.Amendment = heuristicAmendment(ev, Prompt)
			}
		}
		return r
	}
	r := Requirement{Outcome: Run, Unsandboxed: unsandboxed(rs, req, cmds, form, ev, inner)}
	if !heredoc {
		r.Amendment = heuristicAmendment(ev, Allow)
	}
	return r
}

// unsandboxed reports whether allow rules lift the sandbox from a call
// (SPEC §7.2): they match every command it stands for, each of which is
// plain words (the heredoc form counts as its command for the decision
// but runs in the sandbox: its output may go anywhere; a shell script
// that is not plain was not seen whole), none of which writes files of
// its arguments (WritesFiles), none of which runs a program that a
// sandboxed command could have planted, and every command they run in
// turn (behind env, xargs, a nested shell) is also allowed by a rule and
// seen whole.
func unsandboxed(rs *Rules, req Request, cmds [][]string, f form, ev Evaluation, inner seen) bool {
	if req.Terminal || f == heredocForm || inner.opaque || inner.partial || inner.env || inner.grows || !allowedByRules(cmds, ev) {
		return false
	}
	if _, ok := shellInvocation(req.Argv); ok && f == wholeForm {
		return false // a shell that runs a script or its input, seen as a whole argv
	}
	script := f == plainForm
	if req.planted(req.Argv[0]) {
		return false // the shell of a plain script, or the program itself
	}
	all := append(slices.Clone(cmds), inner.cmds...)
	for _, c := range all {
		if WritesFiles(c) || (!(script && Builtin(c[0])) && req.planted(c[0])) {
			return false
		}
	}
	for _, c := range inner.cmds {
		if !slices.ContainsFunc(rs.Check(c), func(m Match) bool { return m.Decision == Allow }) {
			return false
		}
	}
	return true
}

// stricter adds to ev what the split into commands cannot show: what the
// call runs beyond them (inner: commands inside a script that is not
// plain, such as rm x > /dev/null or echo $(rm -rf /), and behind other
// commands, such as env rm f or sh -c 'rm f') and programs named by a
// path (/bin/rm for a rule on rm). Their forbidden and prompt rules
// count, and so does the built-in knowledge of dangerous commands for
// inner commands when no rule matched the call itself (an allow rule for
// the whole script answers it); their allow rules do not count, so they
// only make a call stricter.
func (rs *Rules) stricter(ev Evaluation, req Request, cmds [][]string, inner seen) Evaluation {
	var named [][]string
	for _, c := range append(slices.Clone(cmds), inner.cmds...) {
		if b, ok := bareName(c); ok {
			named = append(named, b)
		}
	}
	add := func(m Match) {
		if !slices.ContainsFunc(ev.Matches, func(o Match) bool {
			return o.Heuristic == m.Heuristic && o.Decision == m.Decision &&
				slices.Equal(o.Prefix, m.Prefix) && slices.Equal(o.Command, m.Command)
		}) {
			ev.Matches = append(ev.Matches, m)
			ev.Decision = max(ev.Decision, m.Decision)
		}
	}
	ruled := slices.ContainsFunc(ev.Matches, func(m Match) bool { return !m.Heuristic })
	for i, c := range append(slices.Clone(inner.cmds), named...) {
		ms := rs.Check(c)
		for _, m := range ms {
			if m.Decision >= Prompt {
				add(m)
			}
		}
		if len(ms) == 0 && !ruled && i < len(inner.cmds) && Dangerous(c) {
			// The call's argv stands for it: that is the prefix offered,
			// not a cut of c (rm -rf of rm -rf *).
			if d := fallback(req, c, false); d >= Prompt {
				add(Match{Command: req.Argv, Decision: d, Heuristic: true})
			}
		}
	}
	// What the parser cannot see may hide what the rules refuse or ask
	// for, or a dangerous command. When no rule matched the call itself,
	// it asks if there are rules that refuse or ask, or if the call
	// mentions rm.
	if inner.opaque && !ruled {
		d := Decision(0)
		switch {
		case rs.strict():
			d = Prompt
		case mentionsRm.MatchString(strings.Join(req.Argv, " ")):
			d = fallback(req, []string{"rm", "-rf"}, false)
		}
		if d >= Prompt {
			add(Match{Command: req.Argv, Decision: d, Heuristic: true})
		}
	}
	return ev
}

// mentionsRm finds rm as a word, the dangerous command of §7.4.
var mentionsRm = regexp.MustCompile(`(^|[^\w.-])rm([^\w.-]|$)`)

// fallback is the built-in knowledge's verdict on a command no rule
// matches. A command fed by a heredoc is never known-safe: its output may
// go anywhere (cat <<'EOF' > .git/config).
func fallback(req Request, cmd []string, heredoc bool) Decision {
	if !heredoc && KnownSafe(cmd) && !req.planted(cmd[0]) {
		return Allow
	}
	switch req.Policy {
	case Untrusted:
		return Prompt
	case OnRequest:
		if req.Escalated && req.Sandboxed {
			return Prompt
		}
	case Never:
		if !req.Sandboxed {
			return Allow // the user runs without a sandbox and never wants asking
		}
	}
	if Dangerous(cmd) {
		return Prompt // under never: refused
	}
	return Allow
}

// allowedByRules reports whether allow rules matched every command: only
// then does the call run without the sandbox.
func allowedByRules(cmds [][]string, ev Evaluation) bool {
	for _, c := range cmds {
		if !slices.ContainsFunc(ev.Matches, func(m Match) bool {
			return !m.Heuristic && m.Decision == Allow && slices.Equal(m.Command, c)
		}) {
			return false
		}
	}
	return len(cmds) > 0
}

// heuristicAmendment is the first command the built-in knowledge gave
// decision d, when no rule matched any command.
func heuristicAmendment(ev Evaluation, d Decision) []string {
	if slices.ContainsFunc(ev.Matches, func(m Match) bool { return !m.Heuristic && (d == Allow || m.Decision == Prompt) }) {
		return nil
	}
	for _, m := range ev.Matches {
		if m.Heuristic && m.Decision == d {
			return m.Command
		}
	}
	return nil
}

// requestedAmendment is the model's prefix when it may be offered: not
// over-broad, no prompt rule matched, and with it every command of the
// call would run.
func requestedAmendment(rs *Rules, req Request, cmds [][]string, ev Evaluation) []string {
	if len(req.Prefix) == 0 || OverBroad(req.Prefix) ||
		slices.ContainsFunc(ev.Matches, func(m Match) bool { return !m.Heuristic && m.Decision == Prompt }) {
		return nil
	}
	for _, c := range cmds {
		if len(c) >= len(req.Prefix) && slices.Equal(c[:len(req.Prefix)], req.Prefix) {
			continue
		}
		if rs.Evaluate([][]string{c}, func(c []string) Decision { return fallback(req, c, false) }).Decision != Allow {
			return nil
		}
	}
	return slices.Clone(req.Prefix)
}

// overBroad are prefixes that would allow running anything: shells and
// interpreters alone or with their flag for inline code, and programs
// that run other programs.
var overBroad = [][]string{
	{"bash"}, {"bash", "-c"}, {"bash", "-lc"}, {"sh"}, {"sh", "-c"}, {"sh", "-lc"}, {"zsh"}, {"zsh", "-c"}, {"zsh", "-lc"},
	{"dash"}, {"dash", "-c"}, {"fish"}, {"fish", "-c"}, {"ksh"}, {"ksh", "-c"},
	{"pwsh"}, {"pwsh", "-Command"}, {"pwsh", "-c"}, {"powershell"}, {"powershell", "-Command"}, {"cmd"}, {"cmd", "/c"},
	{"python"}, {"python", "-c"}, {"python", "-m"}, {"python3"}, {"python3", "-c"}, {"python3", "-m"}, {"python2"}, {"python2", "-c"},
	{"node"}, {"node", "-e"}, {"nodejs"}, {"perl"}, {"perl", "-e"}, {"ruby"}, {"ruby", "-e"}, {"php"}, {"php", "-r"},
	{"lua"}, {"lua", "-e"}, {"bun"}, {"deno"}, {"npx"}, {"osascript"},
	{"git"}, {"sudo"}, {"doas"}, {"su"}, {"env"}, {"xargs"}, {"nohup"}, {"timeout"}, {"nice"}, {"time"}, {"command"},
	{"exec"}, {"eval"}, {"watch"},
}

// OverBroad reports whether a proposed prefix would allow too much to be
// offered (SPEC §7.2): one of overBroad, with the program named by any
// path and any version (/usr/bin/python3.12 -c), or a program of that
// list followed by options only (bash --norc -lc, git -C dir, env A=1).
func OverBroad(prefix []string) bool {
	if len(prefix) == 0 {
		return true
	}
	name := runnerName(prefix[0])
	if name == "git" && !gitNamesSubcommand(prefix[1:]) {
		return true
	}
	for _, b := range overBroad {
		if runnerName(b[0]) != name {
			continue
		}
		if slices.Equal(b[1:], prefix[1:]) || !slices.ContainsFunc(prefix[1:], func(w string) bool {
			return !strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "+") && !strings.Contains(w, "=")
		}) {
			return true
		}
	}
	return false
}

// gitNamesSubcommand reports whether git's arguments reach a subcommand
// past the global options, some of which take a value (git -C dir).
func gitNamesSubcommand(args []string) bool {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-C" || a == "-c" || a == "--git-dir" || a == "--work-tree" || a == "--namespace" || a == "--exec-path":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return true
		}
	}
	return false
}

// runnerName is a program's base name without a version suffix:
// /usr/bin/python3.12 and python3 are both python.
func runnerName(p string) string {
	return strings.TrimRight(filepath.Base(p), "0123456789.")
}

func forbiddenReason(argv []string, ev Evaluation) string {
	if m, ok := mostSpecific(ev, Forbidden); ok {
		if m.Justification != "" {
			return fmt.Sprintf("`%s` rejected: %s", ShellJoin(argv), m.Justification)
		}
		return fmt.Sprintf("`%s` rejected: policy forbids commands starting with `%s`", ShellJoin(argv), ShellJoin(m.Prefix))
	}
	return fmt.Sprintf("`%s` rejected: blocked by policy", ShellJoin(argv))
}

func promptReason(argv []string, ev Evaluation) string {
	m, ok := mostSpecific(ev, Prompt)
	switch {
	case !ok:
		return ""
	case m.Justification != "":
		return fmt.Sprintf("`%s` requires approval: %s", ShellJoin(argv), m.Justification)
	}
	return fmt.Sprintf("`%s` requires approval by policy", ShellJoin(argv))
}

// mostSpecific is the rule match of decision d with the longest prefix.
func mostSpecific(ev Evaluation, d Decision) (Match, bool) {
	var best Match
	found := false
	for _, m := range ev.Matches {
		if !m.Heuristic && m.Decision == d && (!found || len(m.Prefix) > len(best.Prefix)) {
			best, found = m, true
		}
	}
	return best, found
}

// ShellJoin renders argv as a shell command line for messages and the
// Command: line: POSIX quoting where it can express the word, bash's $'…'
// for control characters, Go quoting for the NUL bytes no shell can hold.
func ShellJoin(argv []string) string {
	words := make([]string, len(argv))
	for i, w := range argv {
		q, err := syntax.Quote(w, syntax.LangPOSIX)
		if err != nil {
			if q, err = syntax.Quote(w, syntax.LangBash); err != nil {
				q = strconv.Quote(w)
			}
		}
		words[i] = q
	}
	return strings.Join(words, " ")
}
