package policy

import (
	"path/filepath"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Commands returns the commands a call's argv stands for (SPEC §7.1): the
// commands of a plain script run by bash, zsh or sh with -c or -lc
// ([PlainCommands]), or the one command of such a script that feeds it a
// heredoc, else the argv itself.
func Commands(argv []string) [][]string {
	cmds, _ := commandsOf(argv)
	return cmds
}

// form is how a call's argv stands for its commands (SPEC §7.1).
type form int

const (
	wholeForm   form = iota // the argv itself
	plainForm               // a plain script's commands
	heredocForm             // the one command of a script that feeds it a heredoc
)

// commandsOf is Commands, also reporting the form: no prefix is offered
// for the heredoc form, since allowing "python3" would allow every
// script, and its command is never known-safe; the rules look inside a
// script that is not plain (stricter).
func commandsOf(argv []string) ([][]string, form) {
	if cmds, ok := PlainCommands(argv); ok {
		return cmds, plainForm
	}
	if cmd, ok := HeredocCommand(argv); ok {
		return [][]string{cmd}, heredocForm
	}
	return [][]string{argv}, wholeForm
}

// PlainCommands reports whether argv is [bash|zsh|sh, -c|-lc, script]
// whose script is a plain sequence, and returns its commands: words and
// quoted strings joined by &&, ||, ; and |, without expansion (globbing
// characters and ~ unquoted count as expansion: they change the argv at
// run time), subshell, substitution, assignment or background job, and
// with no redirection but to or from /dev/null and descriptor
// duplications (2>&1, >&2): nothing a plain command does reaches a file.
func PlainCommands(argv []string) ([][]string, bool) {
	f, ok := parseShellScript(argv)
	if !ok {
		return nil, false
	}
	var cmds [][]string
	for _, st := range f.Stmts {
		if !appendPlain(&cmds, st) {
			return nil, false
		}
	}
	return cmds, true
}

// HeredocCommand reports whether argv is [bash|zsh|sh, -c|-lc, script]
// whose script is one plain command fed by a heredoc (whose body expands
// nothing), maybe with its output redirected to plain words, and returns
// that command: python3 <<'PY' ... PY stands for [python3].
func HeredocCommand(argv []string) ([]string, bool) {
	f, ok := parseShellScript(argv)
	if !ok || len(f.Stmts) != 1 {
		return nil, false
	}
	st := f.Stmts[0]
	c, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || !simpleStmt(st) {
		return nil, false
	}
	words, ok := plainWords(c)
	if !ok {
		return nil, false
	}
	heredocs := 0
	for _, r := range st.Redirs {
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			if !inertHeredoc(r) {
				return nil, false
			}
			heredocs++
		case syntax.RdrOut, syntax.AppOut:
			if _, ok := plainWord(r.Word); !ok {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	if heredocs == 0 {
		return nil, false
	}
	return words, true
}

// parseShellScript parses the script of [bash|zsh|sh, -c|-lc, script]
// as bash. An empty script stands for nothing plain.
func parseShellScript(argv []string) (*syntax.File, bool) {
	if len(argv) != 3 || (argv[1] != "-c" && argv[1] != "-lc") || !isShell(argv[0]) {
		return nil, false
	}
	if !parsedAlike(argv[2]) {
		return nil, false
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(argv[2]), "")
	if err != nil || len(f.Stmts) == 0 {
		return nil, false
	}
	return f, true
}

// isShell reports whether argv0 names bash, zsh or sh that the policy
// may look into: by bare name or in a system directory. A program of that
// name elsewhere (./bash, written by the model) runs whatever it likes,
// so its script stands for nothing.
func isShell(argv0 string) bool {
	switch programName(argv0) {
	case "bash", "zsh", "sh":
		return true
	}
	return false
}

// parsedAlike reports whether a script is free of what makes mvdan's
// parse and a real shell's part ways: control characters but tab and
// newline (mvdan takes a carriage return for a blank, the shells for part
// of a word) and backslash-newline (the shells join the lines before
// anything else, so a comment or a $ on the first line reaches into the
// second; mvdan does not).
func parsedAlike(script string) bool {
	if strings.Contains(script, "\\\n") {
		return false
	}
	for _, r := range script {
		if (r < 0x20 && r != '\t' && r != '\n') || r == 0x7f {
			return false
		}
	}
	return true
}

func simpleStmt(st *syntax.Stmt) bool {
	return !st.Negated && !st.Background && !st.Coprocess && !st.Disown
}

func appendPlain(cmds *[][]string, st *syntax.Stmt) bool {
	if !simpleStmt(st) || slices.ContainsFunc(st.Redirs, func(r *syntax.Redirect) bool { return !harmless(r) }) {
		return false
	}
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		words, ok := plainWords(c)
		if ok {
			*cmds = append(*cmds, words)
		}
		return ok
	case *syntax.BinaryCmd:
		if c.Op != syntax.AndStmt && c.Op != syntax.OrStmt && c.Op != syntax.Pipe {
			return false
		}
		return appendPlain(cmds, c.X) && appendPlain(cmds, c.Y)
	}
	return false
}

// harmless reports whether a redirection reaches no file: to or from
// /dev/null, or a duplication or closing of a descriptor (2>&1, <&0,
// >&-). A numbered descriptor only ({fd}>x would assign a variable), and
// >&WORD only with a number or -, since bash takes >&file for &>file.
func harmless(r *syntax.Redirect) bool {
	if r.N != nil && !isDigits(r.N.Value) {
		return false
	}
	w, ok := plainWord(r.Word)
	if !ok {
		return false
	}
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrIn, syntax.RdrInOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll:
		return w == "/dev/null"
	case syntax.DplOut, syntax.DplIn:
		return w == "-" || isDigits(w)
	}
	return false
}

func plainWords(c *syntax.CallExpr) ([]string, bool) {
	if len(c.Assigns) > 0 || len(c.Args) == 0 {
		return nil, false
	}
	words := make([]string, len(c.Args))
	for i, w := range c.Args {
		s, ok := plainWord(w)
		if !ok {
			return nil, false
		}
		words[i] = s
	}
	return words, true
}

// plainWord returns the value of a word made of literal text and quoted
// strings, as the shell would pass it.
func plainWord(w *syntax.Word) (string, bool) { return wordValue(w, false) }

// literalWord is plainWord that also takes globbing, brace and tilde
// characters as they are written (-I{}, *.txt): for the commands the
// rules look at only to be stricter, where the text is the best guess.
func literalWord(w *syntax.Word) (string, bool) { return wordValue(w, true) }

func wordValue(w *syntax.Word, patterns bool) (string, bool) {
	var b strings.Builder
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if (!patterns && strings.ContainsAny(p.Value, "*?[{~")) || bareDollar(p.Value) || (i == 0 && strings.HasPrefix(p.Value, "=")) {
				return "", false // globbing, braces, tilde, $, zsh's =cmd: expanded at run time
			}
			b.WriteString(unescape(p.Value, false))
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false
			}
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok || bareDollar(l.Value) {
					return "", false
				}
				b.WriteString(unescape(l.Value, true))
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// bareDollar reports whether raw shell text has a $ that no backslash
// escapes: mvdan leaves some in literals ("a$", "$\" before a newline)
// where a shell may expand them.
func bareDollar(raw string) bool {
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '\\':
			i++ // the next byte is escaped
		case '$':
			return true
		}
	}
	return false
}

// unescape removes the backslashes the shell removes: before any
// character outside quotes, and before $ ` " \ inside double quotes; a
// backslash-newline pair joins lines in both.
func unescape(s string, quoted bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		next := s[i+1]
		switch {
		case next == '\n':
		case !quoted || strings.IndexByte("$`\"\\", next) >= 0:
			b.WriteByte(next)
		default:
			b.WriteByte('\\')
			b.WriteByte(next)
		}
		i++
	}
	return b.String()
}

// inertHeredoc reports whether a heredoc's body is passed as written and
// ends where mvdan says: its delimiter is a plain identifier, whole in
// single quotes (the body is literal) or unquoted with a body free of $,
// ` and \ (nothing to expand or escape). Partly quoted or escaped
// delimiters end elsewhere in some shells.
func inertHeredoc(r *syntax.Redirect) bool {
	if len(r.Word.Parts) != 1 {
		return false
	}
	switch d := r.Word.Parts[0].(type) {
	case *syntax.SglQuoted:
		return !d.Dollar && identifier(d.Value)
	case *syntax.Lit:
		if !identifier(d.Value) {
			return false
		}
	default:
		return false
	}
	if r.Hdoc == nil {
		return true
	}
	for _, p := range r.Hdoc.Parts {
		l, lit := p.(*syntax.Lit)
		if !lit || strings.ContainsAny(l.Value, "$`\\") {
			return false
		}
	}
	return true
}

func identifier(s string) bool {
	for i, r := range s {
		if !(r == '_' || 'A' <= r && r <= 'Z' || 'a' <= r && r <= 'z' || i > 0 && '0' <= r && r <= '9') {
			return false
		}
	}
	return s != ""
}

// maxDepth bounds how deep the policy follows scripts inside scripts
// (bash -c "sh -c 'env bash -c …'"); deeper ones are opaque.
const maxDepth = 8

// seen collects what the parser can see a call run (SPEC §7.1), for the
// rules to be stricter with: every simple command anywhere in its
// scripts, taken as its leading literal words (behind redirections, in
// pipelines, subshells, substitutions, conditions, loops and functions;
// not in heredoc bodies), the commands and scripts of the commands that
// run others (shells with -c, wrappers such as env, xargs or timeout,
// eval, trap, su -c, find -exec), and whether some of what it runs cannot
// be seen (opaque): a script that does not parse or that the parser may
// read differently from the shell, a shell that reads its commands from
// its input, an option of a wrapper the policy does not know, a shell
// that a sandboxed command could have planted, a script too deep.
type seen struct {
	cmds   [][]string
	opaque bool
	// partial: a script among them is not plain (§7.1), so its commands
	// as seen are not all it does (a redirection to a file, say).
	partial bool
	// env: something changes the environment or directory its commands
	// run in (an assignment, export, env PATH=…, cd), so what they run
	// and read is not what the policy finds.
	env bool
	// grows: a command that gets more arguments when it runs (xargs sed
	// with what a sandboxed command wrote), which no rule has seen, is
	// one that some arguments make write or run something (any but
	// TakesAnyArguments').
	grows   bool
	planted func(argv0 string) bool
}

// look adds what cmd runs besides itself.
func (s *seen) look(cmd []string, depth int) {
	if depth > maxDepth {
		s.opaque = true
		return
	}
	if len(cmd) > 0 && cmd[0] == "alias" {
		// zsh and sh expand aliases in scripts too: what an alias stands
		// for is not a command the parser sees.
		s.opaque = true
	}
	s.env = s.env || setsShellState(cmd)
	if inv, ok := shellInvocation(cmd); ok {
		if inv.opaque || inv.stdin || (s.planted != nil && s.planted(cmd[0])) {
			s.opaque = true
		}
		if inv.hasScript {
			s.script(inv.script, depth+1)
		}
		return
	}
	r, ok := runsOf(cmd)
	if !ok {
		return
	}
	s.opaque = s.opaque || r.opaque
	s.env = s.env || r.env
	s.grows = s.grows || (r.appends && slices.ContainsFunc(r.cmds, func(c []string) bool { return !TakesAnyArguments(c[0]) }))
	for _, c := range r.cmds {
		s.add(c, depth+1)
	}
	for _, sc := range r.scripts {
		s.script(sc, depth+1)
	}
}

// add adds a command and what it runs.
func (s *seen) add(cmd []string, depth int) {
	if len(cmd) == 0 {
		return
	}
	s.cmds = append(s.cmds, cmd)
	s.look(cmd, depth)
}

// script adds the commands of a shell script.
func (s *seen) script(script string, depth int) {
	if depth > maxDepth {
		s.opaque = true
		return
	}
	if !parsedAlike(script) {
		s.opaque = true
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(script), "")
	if err != nil {
		s.opaque = true
		return
	}
	var plain [][]string
	for _, st := range f.Stmts {
		s.partial = s.partial || !appendPlain(&plain, st)
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		if _, ok := n.(*syntax.DeclClause); ok {
			s.env = true // export, declare, local, readonly, typeset
		}
		c, ok := n.(*syntax.CallExpr)
		if !ok {
			return true
		}
		if len(c.Assigns) > 0 {
			s.env = true
		}
		var words []string
		for _, w := range c.Args {
			v, ok := literalWord(w)
			if !ok {
				break
			}
			words = append(words, v)
		}
		s.add(words, depth)
		return true
	})
}

// seenIn returns what the parser sees a call run beyond cmds, the
// commands it stands for (see seen): for a call that is not plain, the
// commands anywhere in its script; for every command, what it runs.
func seenIn(argv []string, cmds [][]string, f form, planted func(string) bool) seen {
	s := seen{planted: planted}
	if f != plainForm {
		s.look(argv, 0)
		return s
	}
	for _, c := range cmds {
		s.look(c, 1)
	}
	return s
}

// bareName returns cmd with its program named by base name, when it is
// named by a path: a rule for rm also refuses /bin/rm.
func bareName(cmd []string) ([]string, bool) {
	if len(cmd) == 0 || !strings.Contains(cmd[0], "/") {
		return nil, false
	}
	base := filepath.Base(cmd[0])
	if base == "/" || base == "." || base == ".." {
		return nil, false
	}
	return append([]string{base}, cmd[1:]...), true
}

// SetsEnvironment reports whether a call runs some of its commands in an
// environment of its own making: a variable assignment, export and its
// kind, unset, source, or a wrapper's NAME=VALUE, -i, -u or -C. What they
// run and read then is not what a lookup in the call's environment finds
// (SPEC §7.2). (cd is the caller's to follow.)
func SetsEnvironment(argv []string) bool {
	cmds, f := commandsOf(argv)
	return seenIn(argv, cmds, f, nil).env
}

// setsShellState reports whether cmd is a builtin that changes what the
// shell's later commands run or read: their variables (export and its
// kind, unset, read, mapfile, getopts, printf -v, let), its options
// (set, shopt), where it finds programs (hash -p) and builtins (enable
// -f), or a script it runs in place (source).
func setsShellState(cmd []string) bool {
	if len(cmd) == 0 {
		return false
	}
	switch cmd[0] {
	case "export", "unset", "set", "source", ".", "declare", "typeset", "local", "readonly",
		"read", "mapfile", "readarray", "getopts", "let", "hash", "enable", "shopt":
		return true
	case "printf":
		return len(cmd) > 1 && strings.HasPrefix(cmd[1], "-v")
	}
	return false
}

// ScriptCommands returns the commands the parser sees a call run beyond
// the ones it stands for (see seen), for messages: which command made a
// call dangerous.
func ScriptCommands(argv []string) [][]string {
	cmds, f := commandsOf(argv)
	return seenIn(argv, cmds, f, nil).cmds
}
