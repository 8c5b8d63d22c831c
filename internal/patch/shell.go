package patch

import (
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Invocation is a shell call that is really a patch (SPEC §6.4).
type Invocation struct {
	Patch string // the patch text, still to be parsed
	// Dir is the directory of a "cd DIR &&" before the patch, as written
	// (relative to the call's directory unless absolute), or "".
	Dir string
}

// ErrImplicit is a patch given as a command without apply_patch before
// it.
var ErrImplicit error = &Error{Msg: "patch detected without explicit call to apply_patch. Call the apply_patch tool with the patch as its input."}

// Recognize reports whether argv is a patch: [apply_patch|applypatch,
// PATCH], or [bash|zsh|sh, -c|-lc, SCRIPT] whose script RecognizeScript
// accepts. A bare patch (as the only argument, or as the script) is
// ErrImplicit.
func Recognize(argv []string) (Invocation, bool, error) {
	switch {
	case len(argv) == 2 && isApplyPatch(argv[0]):
		return Invocation{Patch: argv[1]}, true, nil
	case len(argv) == 1 && isPatch(argv[0]):
		return Invocation{}, false, ErrImplicit
	case len(argv) == 3 && (argv[1] == "-c" || argv[1] == "-lc") && isShellName(argv[0]):
		return RecognizeScript(argv[2])
	}
	return Invocation{}, false, nil
}

// RecognizeScript reports whether a shell script is only
// "apply_patch <<DELIM … DELIM" (or applypatch), maybe after "cd DIR &&"
// with one plain or quoted word for DIR, and returns the heredoc's body.
// Anything else around it (another command, ;, ||, a pipe, arguments,
// another cd) makes it an ordinary script. A bare patch is ErrImplicit.
func RecognizeScript(script string) (Invocation, bool, error) {
	if isPatch(script) {
		return Invocation{}, false, ErrImplicit
	}
	if !strings.Contains(script, "<<") {
		return Invocation{}, false, nil // cheap: most scripts are not patches
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(script), "")
	if err != nil || len(f.Stmts) != 1 {
		return Invocation{}, false, nil
	}
	st := f.Stmts[0]
	var inv Invocation
	if bin, ok := st.Cmd.(*syntax.BinaryCmd); ok && len(st.Redirs) == 0 && plainStmt(st) {
		dir, ok := cdDir(bin.X)
		if !ok || bin.Op != syntax.AndStmt {
			return Invocation{}, false, nil
		}
		inv.Dir, st = dir, bin.Y
	}
	body, ok := heredocBody(script, st)
	if !ok {
		return Invocation{}, false, nil
	}
	inv.Patch = body
	return inv, true, nil
}

func isApplyPatch(name string) bool { return name == "apply_patch" || name == "applypatch" }

func isShellName(argv0 string) bool {
	switch filepath.Base(argv0) {
	case "bash", "zsh", "sh":
		return true
	}
	return false
}

// isPatch reports whether s parses as a patch.
func isPatch(s string) bool {
	if !strings.Contains(s, beginMarker) {
		return false
	}
	_, err := Parse(s)
	return err == nil
}

func plainStmt(st *syntax.Stmt) bool { return !st.Negated && !st.Background && !st.Coprocess }

// cdDir returns DIR of a statement that is only "cd DIR".
func cdDir(st *syntax.Stmt) (string, bool) {
	c, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || !plainStmt(st) || len(st.Redirs) > 0 || len(c.Assigns) > 0 || len(c.Args) != 2 {
		return "", false
	}
	if name, ok := literal(c.Args[0]); !ok || name != "cd" {
		return "", false
	}
	dir, ok := literal(c.Args[1])
	if !ok || dir == "" || strings.HasPrefix(dir, "-") {
		return "", false
	}
	return dir, true
}

// heredocBody returns the body of a statement that is only
// "apply_patch <<DELIM … DELIM".
func heredocBody(script string, st *syntax.Stmt) (string, bool) {
	c, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || !plainStmt(st) || len(c.Assigns) > 0 || len(c.Args) != 1 || len(st.Redirs) != 1 {
		return "", false
	}
	if name, ok := literal(c.Args[0]); !ok || !isApplyPatch(name) {
		return "", false
	}
	r := st.Redirs[0]
	if r.N != nil || (r.Op != syntax.Hdoc && r.Op != syntax.DashHdoc) {
		return "", false
	}
	delim, ok := literal(r.Word)
	if !ok {
		return "", false
	}
	if r.Hdoc == nil {
		return "", true
	}
	// The body as written up to the delimiter line: what the model meant,
	// whatever an unquoted delimiter would let the shell expand in it.
	var body []string
	for l := range strings.Lines(script[r.Hdoc.Pos().Offset():]) {
		l = strings.TrimSuffix(l, "\n")
		if r.Op == syntax.DashHdoc {
			l = strings.TrimLeft(l, "\t")
		}
		if l == delim {
			break
		}
		body = append(body, l)
	}
	return strings.Join(body, "\n"), true
}

// literal returns the value of a word that the shell takes as it is: one
// unquoted word without expansion, escape or pattern, or one quoted
// string without expansion or escape.
func literal(w *syntax.Word) (string, bool) {
	if len(w.Parts) != 1 {
		return "", false
	}
	switch p := w.Parts[0].(type) {
	case *syntax.Lit:
		if strings.ContainsAny(p.Value, "\\*?[]{}~$`") {
			return "", false
		}
		return p.Value, true
	case *syntax.SglQuoted:
		if p.Dollar {
			return "", false
		}
		return p.Value, true
	case *syntax.DblQuoted:
		if len(p.Parts) != 1 || p.Dollar {
			return "", false
		}
		if l, ok := p.Parts[0].(*syntax.Lit); ok && !strings.ContainsAny(l.Value, "\\$`") {
			return l.Value, true
		}
	}
	return "", false
}
