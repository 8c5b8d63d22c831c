package orchestrator

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
// have written: $BASH_ENV and $ENV; for a login shell (-l, --login, or
// one a script starts so) the profiles of /etc and of $HOME (.profile,
// .bash_profile, .bash_login, .bashrc, .bash_logout, and zsh's in
// $ZDOTDIR); zsh's .zshenv always; and what those files name (sourcedWhy).
// A HOME inside a writable root makes every such call stay in the
// sandbox, since a missing file there can be made.
func (o *Orchestrator) startupWhy(c call) string {
	home, zdot := o.getenv("HOME"), o.getenv("ZDOTDIR")
	if zdot == "" {
		zdot = home
	}
	var files []string
	for _, cmd := range append([][]string{c.argv}, policy.ScriptCommands(c.argv)...) {
		name, login := shellStartup(cmd)
		if name == "" {
			continue
		}
		for _, v := range []string{"BASH_ENV", "ENV"} {
			if p := o.getenv(v); p != "" {
				files = append(files, gitrepo.ExpandHome(p, home))
			}
		}
		if name == "zsh" && zdot != "" {
			files = append(files, filepath.Join(zdot, ".zshenv"), "/etc/zsh/zshenv")
		}
		if !login {
			continue
		}
		files = append(files, "/etc/profile", "/etc/bash.bashrc", "/etc/zsh/zprofile", "/etc/zsh/zlogin")
		if home != "" {
			for _, f := range []string{".profile", ".bash_profile", ".bash_login", ".bashrc", ".bash_logout"} {
				files = append(files, filepath.Join(home, f))
			}
		}
		if zdot != "" {
			for _, f := range []string{".zprofile", ".zshrc", ".zlogin", ".zlogout"} {
				files = append(files, filepath.Join(zdot, f))
			}
		}
	}
	slices.Sort(files)
	files = slices.Compact(files)
	for _, f := range files {
		if !filepath.IsAbs(f) || o.steerable(f) {
			return fmt.Sprintf("its shell reads %s, which a sandboxed command could have written", f)
		}
	}
	return o.sourcedWhy(files)
}

func (o *Orchestrator) getenv(k string) string { v, _ := lookupEnv(o.env, k); return v }

// shellStartup returns the shell cmd runs ("bash", "zsh", "sh"; "" when it
// is none) and whether it is a login shell.
func shellStartup(cmd []string) (string, bool) {
	name := strings.TrimPrefix(filepath.Base(cmd[0]), "-") // -bash: a login shell
	switch {
	case name == "bash" || name == "rbash":
		name = "bash"
	case name == "zsh":
	case slices.Contains([]string{"sh", "dash", "ash", "ksh", "mksh", "yash"}, name):
		name = "sh"
	default:
		return "", false
	}
	login := strings.HasPrefix(cmd[0], "-")
	for i := 1; i < len(cmd); i++ {
		a := cmd[i]
		switch {
		case a == "--" || a == "-" || !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+"):
			return name, login // options end
		case a == "--login":
			login = true
		case a == "--rcfile" || a == "--init-file" || a == "--emulate":
			i++
		case strings.HasPrefix(a, "--"):
		default: // a cluster; -o and -O take the next word
			login = login || (a[0] == '-' && strings.Contains(a, "l"))
			i += strings.Count(a, "o") + strings.Count(a, "O")
		}
	}
	return name, login
}

// Bounds on what sourcedWhy reads for one call: files in all, bytes in
// each, and how deep one names the next.
const (
	maxStartupFiles = 32
	maxStartupSize  = 256 << 10
	maxStartupDepth = 4
)

// sourcedWhy says why the startup files (each out of reach itself) may
// still run something a sandboxed command wrote, or "": a path one names
// (what rustup's `. "$HOME/.cargo/env"` sources, a PATH entry
// `export PATH="$HOME/.cargo/bin:$PATH"` adds, a directory whose
// scripts a loop sources) lies within reach, or a file is sourced by a
// name relative to the directory the shell starts in. What a file
// sources or globs is read in turn, within bounds. A word execd cannot
// expand counts for the directory before its first unknown part.
func (o *Orchestrator) sourcedWhy(files []string) string {
	type item struct {
		path  string
		depth int
	}
	var todo []item
	for _, f := range files {
		todo = append(todo, item{f, 0})
	}
	read := map[string]bool{}
	for len(todo) > 0 {
		it := todo[0]
		todo = todo[1:]
		if read[it.path] {
			continue
		}
		read[it.path] = true
		if len(read) > maxStartupFiles {
			return fmt.Sprintf("its shell's startup files name more than the %d files execd checks", maxStartupFiles)
		}
		refs, err := o.startup.refs(it.path, o.getenv)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return fmt.Sprintf("its shell reads %s, which execd cannot check: %v", it.path, err)
		}
		for _, r := range refs {
			switch {
			case r.source && r.path != "" && !filepath.IsAbs(r.path):
				return fmt.Sprintf("its shell's %s sources %s, found relative to where it starts", it.path, r.word)
			case r.dir != "" && o.steerable(r.dir):
				return fmt.Sprintf("its shell reads %s, which names %s, within reach of sandboxed commands", it.path, r.word)
			}
			if !r.follow || r.path == "" || it.depth >= maxStartupDepth {
				continue
			}
			matches, _ := filepath.Glob(r.path)
			for _, m := range matches {
				if o.steerable(m) {
					return fmt.Sprintf("its shell reads %s, which names %s, within reach of sandboxed commands", it.path, m)
				}
				todo = append(todo, item{m, it.depth + 1})
			}
		}
	}
	return ""
}

// startupRef is a path a startup file names.
type startupRef struct {
	word string // as written
	// path is the word expanded (~, $HOME, variables the file set
	// before), globs kept; "" when a part could not be expanded.
	path string
	// dir is what is certain of it: the path, or the directory before
	// its first unknown variable or glob character; "" when nothing
	// absolute is.
	dir string
	// source: it follows . or source. follow: the shell may read it as
	// a script (a source, or a glob: for f in DIR/*.sh; do . "$f"; done).
	source, follow bool
}

// startupCache keeps the paths each startup file names, while the file
// stays the same (device, inode, size, modification time).
type startupCache struct {
	mu      sync.Mutex
	entries map[string]startupEntry
}

type startupEntry struct {
	dev, ino, size uint64
	mtime          int64
	refs           []startupRef
}

// refs returns the paths the file at path names, read as the shell
// would (through symlinks), at most maxStartupSize bytes of text; a file
// with a NUL byte names nothing (a shell will not source it).
func (c *startupCache) refs(path string, getenv func(string) string) ([]startupRef, error) {
	f, err := fspath.OpenRegular(path, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	dev, ino := sandbox.FileID(fi)
	key := startupEntry{dev: dev, ino: ino, size: uint64(fi.Size()), mtime: fi.ModTime().UnixNano()}
	c.mu.Lock()
	e, ok := c.entries[path]
	c.mu.Unlock()
	if ok && e.dev == key.dev && e.ino == key.ino && e.size == key.size && e.mtime == key.mtime {
		return e.refs, nil
	}
	if fi.Size() > maxStartupSize {
		return nil, fmt.Errorf("larger than %d bytes", maxStartupSize)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxStartupSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxStartupSize {
		return nil, fmt.Errorf("larger than %d bytes", maxStartupSize)
	}
	if !bytes.Contains(b, []byte{0}) {
		key.refs = startupRefs(string(b), getenv)
	}
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string]startupEntry{}
	}
	c.entries[path] = key
	c.mu.Unlock()
	return key.refs, nil
}

// startupRefs returns the paths a shell script's text names, as far as
// they can be told without running it: each word with a / (or a ~),
// split at : as PATH is, with ~, $VAR and ${VAR} expanded (the
// variables the script assigned before, then getenv's but PATH's, which
// the rules check on their own), and each word after . or source. It
// reads words, not the grammar: quotes are dropped, comments and
// strings count, so it may name more than the shell reads, never less
// of what it can expand.
func startupRefs(text string, getenv func(string) string) []startupRef {
	vars := map[string]string{}
	lookup := func(name string) (string, bool) {
		if v, ok := vars[name]; ok {
			return v, true
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
			if name, value, ok := strings.Cut(w, "="); ok && isName(name) {
				if v, full := expandWord(value, lookup); full {
					vars[name] = v
				}
				w = value
			}
			source := i > 0 && (words[i-1] == "." || words[i-1] == "source")
			for _, piece := range strings.Split(w, ":") {
				if piece == "" || (!source && !strings.ContainsAny(piece, "/~")) {
					continue
				}
				path, full := expandWord(piece, lookup)
				if full && path == "" {
					continue // an empty variable: nothing
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
					continue
				}
				refs = append(refs, startupRef{word: piece, path: path, dir: dir, source: source,
					follow: full && (source || strings.ContainsAny(path, "*?["))})
			}
		}
	}
	return refs
}

// expandWord expands ~ at the start and $NAME or ${NAME} anywhere in w.
// It returns what it could expand: all of w (full), or w up to the
// first part it could not (another user's ~, $1, ${X:-y}, a variable
// lookup does not know).
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
		var name string
		if rest, ok := strings.CutPrefix(w, "{"); ok {
			end := strings.IndexByte(rest, '}')
			if end < 0 || !isName(rest[:end]) {
				return out.String(), false
			}
			name, w = rest[:end], rest[end+1:]
		} else {
			n := 0
			for n < len(w) && (w[n] == '_' || isAlnum(w[n])) {
				n++
			}
			name, w = w[:n], w[n:]
		}
		v, ok := lookup(name)
		if !isName(name) || !ok {
			return out.String(), false
		}
		out.WriteString(v)
	}
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
