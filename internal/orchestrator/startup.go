package orchestrator

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/execd/execd/internal/fspath"
	"github.com/execd/execd/internal/gitrepo"
	"github.com/execd/execd/internal/policy"
	"github.com/execd/execd/internal/sandbox"
)

// What a shell reads when it starts, and whether a sandboxed command
// could have written any of it (SPEC §7.2): a call lifted out of the
// sandbox runs its shell's startup files outside it too.

// startupWhy says why a shell of the call must not run outside the
// sandbox, or "": it would read a startup file a sandboxed command could
// have written, or one that names a path within reach (startupScan):
// $BASH_ENV and $ENV; zsh's zshenv files always, and the rest from the
// ZDOTDIR they leave; for a login shell (-l, --login, or one a script
// starts so) the profiles of /etc and of the home directory (.profile,
// .bash_profile, .bash_login, .bashrc, .bash_logout, and zsh's); for an
// interactive one (-i) bash's rc file (--rcfile, or .bashrc) and zsh's
// .zshrc. The home directory is $HOME, else the user's in the password
// database, as the shell takes it. A home inside a writable root makes
// every such call stay in the sandbox, since a missing file there can be
// made.
func (o *Orchestrator) startupWhy(c call) string {
	home, zdot := o.shellHome(), o.getenv("ZDOTDIR")
	if zdot == "" {
		zdot = home
	}
	scan := &startupScan{o: o, vars: map[string]string{}, read: map[string]bool{}}
	for _, cmd := range append([][]string{c.argv}, policy.ScriptCommands(c.argv)...) {
		sh := shellStartup(cmd)
		if sh.name == "" {
			continue
		}
		var env []string
		for _, v := range []string{"BASH_ENV", "ENV"} {
			if p := o.getenv(v); p != "" {
				env = append(env, gitrepo.ExpandHome(p, home))
			}
		}
		zd := zdot
		if sh.name == "zsh" {
			env = append(env, "/etc/zshenv", "/etc/zsh/zshenv", filepath.Join(zdot, ".zshenv"))
		}
		if why := scan.check(env); why != "" {
			return why
		}
		if v, ok := scan.vars["ZDOTDIR"]; ok && sh.name == "zsh" {
			if v == unknownValue || !filepath.IsAbs(v) {
				return "its zsh's startup files set ZDOTDIR to a directory execd cannot tell"
			}
			zd = v
		}
		var files []string
		if sh.login {
			files = append(files, "/etc/profile", "/etc/bash.bashrc", "/etc/zprofile", "/etc/zsh/zprofile",
				"/etc/zlogin", "/etc/zsh/zlogin", "/etc/zlogout", "/etc/zsh/zlogout")
			for _, f := range []string{".profile", ".bash_profile", ".bash_login", ".bashrc", ".bash_logout"} {
				files = append(files, filepath.Join(home, f))
			}
			for _, f := range []string{".zprofile", ".zshrc", ".zlogin", ".zlogout"} {
				files = append(files, filepath.Join(zd, f))
			}
		}
		if sh.interactive {
			switch {
			case sh.rcfile != "":
				rc := sh.rcfile
				if !filepath.IsAbs(rc) {
					rc = filepath.Join(c.cwd, rc)
				}
				files = append(files, rc)
			case sh.name == "bash":
				files = append(files, "/etc/bash.bashrc", filepath.Join(home, ".bashrc"))
			case sh.name == "zsh":
				files = append(files, "/etc/zshrc", "/etc/zsh/zshrc", filepath.Join(zd, ".zshrc"))
			}
		}
		if why := scan.check(files); why != "" {
			return why
		}
	}
	return ""
}

func (o *Orchestrator) getenv(k string) string { v, _ := lookupEnv(o.env, k); return v }

// shellHome is the home directory a shell of the commands' takes: $HOME,
// else (unset or relative) the user's in the password database; "" when
// neither is known.
func (o *Orchestrator) shellHome() string {
	if h := o.getenv("HOME"); filepath.IsAbs(h) {
		return h
	}
	if u, err := user.Current(); err == nil && filepath.IsAbs(u.HomeDir) {
		return u.HomeDir
	}
	return ""
}

// shellStart is what a shell's command line says of the files it reads.
type shellStart struct {
	name               string // "bash", "zsh", "sh"; "" when it is no shell
	login, interactive bool
	rcfile             string // bash's --rcfile or --init-file
}

// shellStartup returns what the shell cmd runs reads at start.
func shellStartup(cmd []string) shellStart {
	var sh shellStart
	name := strings.TrimPrefix(filepath.Base(cmd[0]), "-") // -bash: a login shell
	switch {
	case name == "bash" || name == "rbash":
		sh.name = "bash"
	case name == "zsh":
		sh.name = "zsh"
	case slices.Contains([]string{"sh", "dash", "ash", "ksh", "mksh", "yash"}, name):
		sh.name = "sh"
	default:
		return shellStart{}
	}
	sh.login = strings.HasPrefix(cmd[0], "-")
	for i := 1; i < len(cmd); i++ {
		a := cmd[i]
		switch {
		case a == "--" || a == "-" || !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+"):
			return sh // options end
		case a == "--login":
			sh.login = true
		case a == "--interactive":
			sh.interactive = true
		case (a == "--rcfile" || a == "--init-file") && i+1 < len(cmd):
			i++
			sh.rcfile = cmd[i]
		case a == "--emulate":
			i++
		case strings.HasPrefix(a, "--"):
		default: // a cluster; -o and -O take the next word
			sh.login = sh.login || (a[0] == '-' && strings.Contains(a, "l"))
			sh.interactive = sh.interactive || (a[0] == '-' && strings.Contains(a, "i"))
			i += strings.Count(a, "o") + strings.Count(a, "O")
		}
	}
	return sh
}

// Bounds on what a startupScan reads for one call: files in all, bytes
// in each, and how deep one names the next.
const (
	maxStartupFiles = 32
	maxStartupSize  = 256 << 10
	maxStartupDepth = 4
)

// startupScan checks startup files in the order a shell reads them,
// carrying the variables each leaves to the next (and to what it
// sources).
type startupScan struct {
	o    *Orchestrator
	vars map[string]string
	read map[string]bool
}

// check says why files (read in turn) may run something a sandboxed
// command wrote, or "": a file within reach itself, or a path one names
// within reach (what rustup's `. "$HOME/.cargo/env"` sources, a PATH
// entry `export PATH="$HOME/.cargo/bin:$PATH"` adds, a directory whose
// scripts a loop sources), a relative PATH entry one adds, or a file it
// sources by a relative name (both found where the shell starts). What a
// file sources or globs is read in turn, within bounds. A word execd
// cannot expand counts for the directory before its first unknown part.
func (s *startupScan) check(files []string) string {
	type item struct {
		path  string
		depth int
	}
	var todo []item
	for _, f := range files {
		if !filepath.IsAbs(f) || s.o.steerable(f) {
			return fmt.Sprintf("its shell reads %s, which a sandboxed command could have written", f)
		}
		todo = append(todo, item{f, 0})
	}
	for len(todo) > 0 {
		it := todo[0]
		todo = todo[1:]
		if s.read[it.path] {
			continue
		}
		s.read[it.path] = true
		if len(s.read) > maxStartupFiles {
			return fmt.Sprintf("its shell's startup files name more than the %d files execd checks", maxStartupFiles)
		}
		refs, vars, err := s.o.startup.scan(it.path, s.vars, s.o.startupEnv)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return fmt.Sprintf("its shell reads %s, which execd cannot check: %v", it.path, err)
		}
		s.vars = vars
		for _, r := range refs {
			switch {
			case r.pathEntry:
				return fmt.Sprintf("its shell's %s adds the PATH entry %q, found relative to where it starts", it.path, r.word)
			case r.source && r.path != "" && !filepath.IsAbs(r.path):
				return fmt.Sprintf("its shell's %s sources %s, found relative to where it starts", it.path, r.word)
			case r.dir != "" && s.o.steerable(r.dir):
				return fmt.Sprintf("its shell reads %s, which names %s, within reach of sandboxed commands", it.path, r.word)
			}
			if !r.follow || r.path == "" || it.depth >= maxStartupDepth {
				continue
			}
			matches, _ := filepath.Glob(r.path)
			for _, m := range matches {
				if s.o.steerable(m) {
					return fmt.Sprintf("its shell reads %s, which names %s, within reach of sandboxed commands", it.path, m)
				}
				todo = append(todo, item{m, it.depth + 1})
			}
		}
	}
	return ""
}

// startupEnv is the commands' environment as a startup file sees it,
// with the shell's home directory for HOME.
func (o *Orchestrator) startupEnv(k string) string {
	if k == "HOME" {
		return o.shellHome()
	}
	return o.getenv(k)
}

// startupRef is a path a startup file names.
type startupRef struct {
	word string // as written
	// path is the word expanded (~, $HOME, variables the files set
	// before), globs kept; "" when a part could not be expanded.
	path string
	// dir is what is certain of it: the path, or the directory before
	// its first unknown variable or glob character; "" when nothing
	// absolute is.
	dir string
	// source: it follows . or source. follow: the shell may read it as
	// a script (a source, or a glob: for f in DIR/*.sh; do . "$f"; done).
	source, follow bool
	// pathEntry: a relative (or empty) entry of a PATH it assigns.
	pathEntry bool
}

// unknownValue stands for a variable a file assigned what execd cannot
// expand.
const unknownValue = "\x00"

// startupCache keeps what each startup file names, while the file stays
// the same (device, inode, size, modification time) and the variables
// it starts with too.
type startupCache struct {
	mu      sync.Mutex
	entries map[string]startupEntry
}

type startupEntry struct {
	dev, ino, size uint64
	mtime          int64
	in             map[string]string // the variables it started with
	refs           []startupRef
	out            map[string]string // the variables it left
}

// scan returns the paths the file at path names and the variables it
// leaves, starting from vars; read as the shell would (through
// symlinks), at most maxStartupSize bytes of text. A file with a NUL
// byte names nothing (a shell will not source it).
func (c *startupCache) scan(path string, vars map[string]string, getenv func(string) string) ([]startupRef, map[string]string, error) {
	f, err := fspath.OpenRegular(path, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	dev, ino := sandbox.FileID(fi)
	key := startupEntry{dev: dev, ino: ino, size: uint64(fi.Size()), mtime: fi.ModTime().UnixNano(), in: vars}
	c.mu.Lock()
	e, ok := c.entries[path]
	c.mu.Unlock()
	if ok && e.dev == key.dev && e.ino == key.ino && e.size == key.size && e.mtime == key.mtime && maps.Equal(e.in, vars) {
		return e.refs, e.out, nil
	}
	if fi.Size() > maxStartupSize {
		return nil, nil, fmt.Errorf("larger than %d bytes", maxStartupSize)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxStartupSize+1))
	if err != nil {
		return nil, nil, err
	}
	if len(b) > maxStartupSize {
		return nil, nil, fmt.Errorf("larger than %d bytes", maxStartupSize)
	}
	key.out = vars
	if !bytes.Contains(b, []byte{0}) {
		key.refs, key.out = startupRefs(string(b), vars, getenv)
	}
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string]startupEntry{}
	}
	c.entries[path] = key
	c.mu.Unlock()
	return key.refs, key.out, nil
}

// startupRefs returns the paths a shell script's text names, as far as
// they can be told without running it, and the variables it leaves
// (vars, and what it assigns; unknownValue for what execd cannot
// expand): each word with a / (or a ~), split at the colons outside
// ${…} as PATH is, with ~, $VAR, ${VAR} and ${VAR:-word} (and its kind)
// expanded from the variables assigned before (vars, then the script's
// own), then getenv's but PATH's (whose entries the rules check on their
// own); each word after . or source; and each relative or empty entry of
// a PATH it assigns. It reads words, not the grammar: quotes are
// dropped, comments and strings count, so it may name more than the
// shell reads, never less of what it can expand.
func startupRefs(text string, vars map[string]string, getenv func(string) string) ([]startupRef, map[string]string) {
	vars = maps.Clone(vars)
	if vars == nil {
		vars = map[string]string{}
	}
	lookup := func(name string) (string, bool) {
		if v, ok := vars[name]; ok {
			return v, v != unknownValue
		}
		if name == "PATH" {
			return "", false
		}
		v := getenv(name)
		return v, v != ""
	}
	var refs []startupRef
	for line := range strings.Lines(text) {
		words := strings.FieldsFunc(line, func(r rune) bool {
			return r == ' ' || r == '\t' || r == '\n' || r == '\r' || strings.ContainsRune(";&|()<>`", r)
		})
		for i, w := range words {
			w = strings.NewReplacer("\\", "", "\"", "", "'", "").Replace(w)
			words[i] = w
			name, value, assigns := strings.Cut(w, "=")
			name, appends := strings.CutSuffix(name, "+")
			if assigns && isName(name) {
				v, full := expandWord(value, lookup)
				if prev, ok := lookup(name); appends && ok {
					v = prev + v
				} else if appends {
					full = false
				}
				vars[name] = v
				if !full {
					vars[name] = unknownValue
				}
				if name == "PATH" {
					for _, piece := range splitColons(value) {
						if p, full := expandWord(piece, lookup); full && !filepath.IsAbs(p) {
							refs = append(refs, startupRef{word: piece, pathEntry: true})
						}
					}
				}
				w = value
			}
			source := i > 0 && (words[i-1] == "." || words[i-1] == "source")
			for _, piece := range splitColons(w) {
				if piece == "" || (!source && !strings.ContainsAny(piece, "/~")) {
					continue
				}
				if r, ok := startupPath(piece, source, lookup); ok {
					refs = append(refs, r)
				}
			}
		}
	}
	return refs, vars
}

// startupPath is what piece, a word or part of one, names; ok is false
// when it is nothing (an empty variable) or nothing certain and not
// sourced.
func startupPath(piece string, source bool, lookup func(string) (string, bool)) (startupRef, bool) {
	path, full := expandWord(piece, lookup)
	if full && path == "" {
		return startupRef{}, false // an empty variable: nothing
	}
	dir := path
	if cut := strings.IndexAny(path, "*?["); cut >= 0 || !full {
		if cut >= 0 {
			dir = path[:cut]
		}
		if !strings.HasSuffix(dir, "/") {
			dir = filepath.Dir(dir)
		}
	}
	if !full {
		path = ""
	}
	if filepath.IsAbs(dir) {
		dir = filepath.Clean(dir)
	} else if dir = ""; !source {
		return startupRef{}, false
	}
	return startupRef{word: piece, path: path, dir: dir, source: source,
		follow: path != "" && (source || strings.ContainsAny(path, "*?["))}, true
}

// splitColons splits w at the colons outside ${…}.
func splitColons(w string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(w); i++ {
		switch {
		case w[i] == '$' && i+1 < len(w) && w[i+1] == '{':
			depth++
			i++
		case w[i] == '}' && depth > 0:
			depth--
		case w[i] == ':' && depth == 0:
			out = append(out, w[start:i])
			start = i + 1
		}
	}
	return append(out, w[start:])
}

// expandWord expands ~ at the start and $NAME, ${NAME} and ${NAME:-word}
// (with -, :=, =, :+ and +) anywhere in w, a variable lookup does not
// know counting as unset where a default stands for it. It returns what
// it could expand: all of w (full), or w up to the first part it could
// not (another user's ~, $1, ${#X}, a variable lookup does not know).
func expandWord(w string, lookup func(string) (string, bool)) (string, bool) {
	var out strings.Builder
	if rest, ok := strings.CutPrefix(w, "~"); ok {
		if rest != "" && rest[0] != '/' {
			return "", false
		}
		home, ok := lookup("HOME")
		if !ok {
			return "", false
		}
		out.WriteString(home)
		w = rest
	}
	for {
		i := strings.IndexByte(w, '$')
		if i < 0 {
			out.WriteString(w)
			return out.String(), true
		}
		out.WriteString(w[:i])
		w = w[i+1:]
		if rest, ok := strings.CutPrefix(w, "{"); ok {
			end := closingBrace(rest)
			if end < 0 {
				return out.String(), false
			}
			v, ok := expandParam(rest[:end], lookup)
			if !ok {
				return out.String(), false
			}
			out.WriteString(v)
			w = rest[end+1:]
			continue
		}
		n := 0
		for n < len(w) && (w[n] == '_' || isAlnum(w[n])) {
			n++
		}
		name := w[:n]
		w = w[n:]
		v, ok := lookup(name)
		if !isName(name) || !ok {
			return out.String(), false
		}
		out.WriteString(v)
	}
}

// closingBrace returns the index in s of the } that closes a ${ whose
// inside s starts, or -1.
func closingBrace(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '$' && i+1 < len(s) && s[i+1] == '{':
			depth++
			i++
		case s[i] == '}' && depth == 0:
			return i
		case s[i] == '}':
			depth--
		}
	}
	return -1
}

// expandParam expands the inside of ${…}: NAME, or NAME with one of the
// operators :-, -, :=, =, :+, + and a word.
func expandParam(inner string, lookup func(string) (string, bool)) (string, bool) {
	n := 0
	for n < len(inner) && (inner[n] == '_' || isAlnum(inner[n])) {
		n++
	}
	name, rest := inner[:n], inner[n:]
	if !isName(name) {
		return "", false
	}
	v, set := lookup(name)
	colon := strings.HasPrefix(rest, ":")
	op := strings.TrimPrefix(rest, ":")
	if op == "" && !colon {
		return v, set
	}
	if op == "" {
		return "", false
	}
	word := op[1:]
	empty := !set || (colon && v == "")
	switch op[0] {
	case '-', '=':
		if empty {
			return expandWord(word, lookup)
		}
		return v, true
	case '+':
		if empty {
			return "", true
		}
		return expandWord(word, lookup)
	}
	return "", false // ${X%y}, ${X/a/b}, ${X:1}…
}

// isName reports whether s is a shell variable name.
func isName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '_' && !isAlnum(s[i]) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}
