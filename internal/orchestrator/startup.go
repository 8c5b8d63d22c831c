package orchestrator

import (
	"cmp"
	"errors"
	"fmt"
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
// $BASH_ENV and $ENV; zsh's zshenv files always, and the rest from each
// ZDOTDIR the files may set; for a login shell (-l, --login, or one a
// script starts so) the profiles of /etc and of the home directory
// (.profile, .bash_profile, .bash_login, .bashrc, .bash_logout, and
// zsh's); for an interactive one (-i) bash's rc file (--rcfile, or
// .bashrc) and zsh's .zshrc. The home directory is $HOME, else the
// user's in the password database, as the shell takes it. A home inside
// a writable root makes every such call stay in the sandbox, since a
// missing file there can be made. A shell a call starts in an
// environment of its own making (exec -l, env HOME=…) reads what execd
// cannot tell, and fish's and csh's files execd does not read.
func (o *Orchestrator) startupWhy(c call) string {
	shells := []shellStart{shellStartup(c.argv)}
	nested := false
	for _, cmd := range policy.ScriptCommands(c.argv) {
		if sh := shellStartup(cmd); sh.name != "" {
			shells, nested = append(shells, sh), true
		}
	}
	if shells[0].name == "" && !nested {
		return ""
	}
	if nested && policy.SetsEnvironment(c.argv) {
		return "it starts a shell in an environment of its own making (exec -l, env HOME=…), whose startup files execd cannot tell"
	}
	home := o.shellHome()
	zdot := o.getenv("ZDOTDIR")
	if zdot == "" {
		zdot = home
	}
	for _, sh := range shells {
		if sh.name == "fish" || sh.name == "csh" {
			return fmt.Sprintf("execd does not read %s's startup files, which it reads whatever its options", sh.name)
		}
	}
	scan := &startupScan{o: o, vars: startupVars{"PWD": {c.cwd}, "ZDOTDIR": {zdot}}}
	for pass := 0; ; pass++ {
		if pass == maxStartupPasses {
			return fmt.Sprintf("its shell's startup files assign variables that still change after %d readings", maxStartupPasses)
		}
		var files []string
		for _, sh := range shells {
			f, why := scan.files(sh, home, c.cwd)
			if why != "" {
				return why
			}
			files = append(files, f...)
		}
		before := maps.Clone(scan.vars)
		if why := scan.check(files); why != "" {
			return why
		}
		if scan.vars.equal(before) {
			return "" // every file was read with every value
		}
	}
}

// files returns the startup files the shell sh reads, in the order it
// reads them, for each ZDOTDIR the files read so far may leave.
func (s *startupScan) files(sh shellStart, home, cwd string) ([]string, string) {
	if sh.name == "" {
		return nil, ""
	}
	var env, files []string
	for _, v := range []string{"BASH_ENV", "ENV"} {
		if p := s.o.getenv(v); p != "" {
			env = append(env, gitrepo.ExpandHome(p, home))
		}
	}
	zds := []string{home} // only zsh takes ZDOTDIR
	if sh.name == "zsh" {
		zds = slices.Clone(s.vars["ZDOTDIR"])
	}
	for i, zd := range zds {
		if zd == unsetValue {
			zd, zds[i] = home, home // zsh's default
		}
		if unknown(zd) || !filepath.IsAbs(zd) {
			return nil, "its zsh's startup files set ZDOTDIR to a directory execd cannot tell"
		}
	}
	inZD := func(names ...string) {
		for _, zd := range zds {
			for _, n := range names {
				files = append(files, filepath.Join(zd, n))
			}
		}
	}
	files = env
	if sh.name == "zsh" {
		files = append(files, "/etc/zshenv", "/etc/zsh/zshenv")
		inZD(".zshenv")
	}
	if sh.login {
		files = append(files, "/etc/profile", "/etc/bash.bashrc", "/etc/zprofile", "/etc/zsh/zprofile",
			"/etc/zlogin", "/etc/zsh/zlogin", "/etc/zlogout", "/etc/zsh/zlogout")
		for _, f := range []string{".profile", ".bash_profile", ".bash_login", ".bashrc", ".bash_logout"} {
			files = append(files, filepath.Join(home, f))
		}
		inZD(".zprofile", ".zshrc", ".zlogin", ".zlogout")
	}
	if sh.interactive {
		switch {
		case sh.rcfile != "":
			rc := sh.rcfile
			if !filepath.IsAbs(rc) {
				rc = filepath.Join(cwd, rc)
			}
			files = append(files, rc)
		case sh.name == "bash":
			files = append(files, "/etc/bash.bashrc", filepath.Join(home, ".bashrc"))
		case sh.name == "zsh":
			files = append(files, "/etc/zshrc", "/etc/zsh/zshrc")
			inZD(".zshrc")
		}
	}
	return files, ""
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
	case name == "fish":
		sh.name = "fish"
	case name == "csh" || name == "tcsh":
		sh.name = "csh"
	default:
		return shellStart{}
	}
	sh.login = strings.HasPrefix(cmd[0], "-")
	// option sets what an option of that name (zsh's -o NAME or --NAME,
	// whose case and underscores do not count) turns on.
	option := func(name string) {
		name = strings.ReplaceAll(strings.ToLower(name), "_", "")
		sh.login = sh.login || name == "login"
		sh.interactive = sh.interactive || name == "interactive"
	}
	for i := 1; i < len(cmd); i++ {
		a := cmd[i]
		switch {
		case a == "--" || a == "-" || !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+"):
			return sh // options end
		case (a == "--rcfile" || a == "--init-file") && i+1 < len(cmd):
			i++
			sh.rcfile = cmd[i]
		case a == "--emulate":
			i++
		case strings.HasPrefix(a, "--"):
			option(a[2:])
		default: // a cluster; -o and -O take the next word
			sh.login = sh.login || (a[0] == '-' && strings.Contains(a, "l"))
			sh.interactive = sh.interactive || (a[0] == '-' && strings.Contains(a, "i"))
			for range strings.Count(a, "o") + strings.Count(a, "O") {
				if i++; i < len(cmd) && a[0] == '-' {
					option(cmd[i])
				}
			}
		}
	}
	return sh
}

// Bounds on what a startupScan reads for one call (more keeps the call
// in the sandbox): files (that exist) in all, bytes in each, how deep
// one names the next, and how often the whole is read before the values
// of its variables settle.
const (
	maxStartupFiles  = 32
	maxStartupSize   = 256 << 10
	maxStartupDepth  = 6
	maxStartupPasses = 8
)

// startupVars are the values each variable may have while startup files
// run: the environment's and every value any file read assigns it, none
// replacing another (an assignment may be conditional, commented out, in
// a file the shell skips, or undone by unset), each list sorted without
// repeats; unknownValue for what execd cannot expand, unsetValue for
// unset. A variable with more than maxValues, or assigned from itself
// (X="$X:/opt/bin", which grows with every reading), is unknown for good
// (widenedValue).
type startupVars map[string][]string

// The values that are no string.
const (
	unknownValue = "\x00"
	unsetValue   = "\x01"
	widenedValue = "\x02"
)

// unknown reports whether v is a value execd cannot tell.
func unknown(v string) bool { return v == unknownValue || v == widenedValue }

// Bounds on the values of a variable, and on the paths one word may
// stand for (more keeps the call in the sandbox).
const (
	maxValues     = 16
	maxExpansions = 64
)

func (v startupVars) equal(w startupVars) bool { return maps.EqualFunc(v, w, slices.Equal[[]string]) }

// add returns v with name's values grown by more.
func (v startupVars) add(name string, more []string) startupVars {
	if slices.Contains(v[name], widenedValue) {
		return v
	}
	vals := slices.Concat(v[name], more)
	slices.Sort(vals)
	vals = slices.Compact(vals)
	if len(vals) > maxValues {
		vals = []string{widenedValue}
	}
	if slices.Equal(vals, v[name]) {
		return v
	}
	v = maps.Clone(v)
	v[name] = vals
	return v
}

// startupScan checks the startup files a shell reads, carrying the
// values the files assign to every file read after them (and to what
// they source); startupWhy reads all again until no value is new, so
// that a value assigned late counts early too.
type startupScan struct {
	o     *Orchestrator
	vars  startupVars
	steer map[string]bool // steerable's answers, for the call
}

// steerable is o.steerable, each path asked once for the call.
func (s *startupScan) steerable(path string) bool {
	v, ok := s.steer[path]
	if !ok {
		if s.steer == nil {
			s.steer = map[string]bool{}
		}
		v = s.o.steerable(path)
		s.steer[path] = v
	}
	return v
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
		if !filepath.IsAbs(f) || s.steerable(f) {
			return fmt.Sprintf("its shell reads %s, which a sandboxed command could have written", f)
		}
		todo = append(todo, item{f, 0})
	}
	read, found := map[string]bool{}, 0
	for len(todo) > 0 {
		it := todo[0]
		todo = todo[1:]
		if read[it.path] {
			continue
		}
		read[it.path] = true
		refs, vars, err := s.o.startup.scan(it.path, s.vars, s.o.startupEnv)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return fmt.Sprintf("its shell reads %s, which execd cannot check: %v", it.path, err)
		}
		if found++; found > maxStartupFiles {
			return fmt.Sprintf("its shell's startup files name more than the %d files execd checks", maxStartupFiles)
		}
		s.vars = vars
		for _, r := range refs {
			switch {
			case r.tooMany:
				return fmt.Sprintf("its shell's %s names %s, which may stand for more than the %d paths execd checks", it.path, r.word, maxExpansions)
			case r.pathEntry != "":
				return fmt.Sprintf("its shell's %s adds the %s entry %q, found relative to where it starts", it.path, r.pathEntry, r.word)
			case r.source && r.path != "" && !filepath.IsAbs(r.path):
				return fmt.Sprintf("its shell's %s sources %s, found relative to where it starts", it.path, r.word)
			case r.dir != "" && s.steerable(r.dir):
				return fmt.Sprintf("its shell reads %s, which names %s, within reach of sandboxed commands", it.path, r.word)
			}
			if !r.follow || r.path == "" {
				continue
			}
			if it.depth >= maxStartupDepth {
				return fmt.Sprintf("its shell's startup files source files more than %d deep", maxStartupDepth)
			}
			matches, _ := filepath.Glob(strings.ReplaceAll(r.path, "[!", "[^")) // the shell's [!…] is Go's [^…]
			for _, m := range matches {
				if s.steerable(m) {
					return fmt.Sprintf("its shell reads %s, which names %s, within reach of sandboxed commands", it.path, m)
				}
				todo = append(todo, item{m, it.depth + 1})
			}
		}
	}
	return ""
}

// loginFiles returns the startup files a login shell at path reads
// (those of startupWhy: /etc's and the home directory's, $BASH_ENV,
// $ENV, zsh's in each ZDOTDIR they may set), missing ones too, with the
// files they source or glob by names execd can expand and the
// directories they glob in, within startupScan's bounds: what a
// shell snapshot is taken again for when it changes (SPEC §9.1).
func (o *Orchestrator) loginFiles(path, cwd string) []string {
	sh := shellStartup([]string{path, "-l"})
	if sh.name == "" {
		return nil
	}
	home := o.shellHome()
	zdot := o.getenv("ZDOTDIR")
	if zdot == "" {
		zdot = home
	}
	scan := &startupScan{o: o, vars: startupVars{"PWD": {cwd}, "ZDOTDIR": {zdot}}}
	var all []string
	for range maxStartupPasses {
		files, _ := scan.files(sh, home, cwd) // with a ZDOTDIR execd cannot tell, those it can
		before := maps.Clone(scan.vars)
		all = append(append(all, files...), scan.reads(files)...)
		if scan.vars.equal(before) {
			break
		}
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// reads returns the files among files that exist and what they source
// or glob, read in turn as check does (within the same bounds), and the
// directories they glob in.
func (s *startupScan) reads(files []string) []string {
	type item struct {
		path  string
		depth int
	}
	var todo []item
	for _, f := range files {
		if filepath.IsAbs(f) {
			todo = append(todo, item{f, 0})
		}
	}
	var out []string
	read := map[string]bool{}
	for len(todo) > 0 && len(read) <= maxStartupFiles {
		it := todo[0]
		todo = todo[1:]
		if read[it.path] {
			continue
		}
		read[it.path] = true
		refs, vars, err := s.o.startup.scan(it.path, s.vars, s.o.startupEnv)
		if err != nil {
			continue
		}
		s.vars = vars
		out = append(out, it.path)
		for _, r := range refs {
			if !r.follow || r.path == "" || it.depth >= maxStartupDepth {
				continue
			}
			if r.dir != "" && strings.ContainsAny(r.path, "*?[") {
				out = append(out, r.dir) // a file added there is read too
			}
			matches, _ := filepath.Glob(strings.ReplaceAll(r.path, "[!", "[^"))
			for _, m := range matches {
				todo = append(todo, item{m, it.depth + 1})
			}
		}
	}
	return out
}

// startupEnv is the commands' environment as a startup file sees it,
// with the shell's home directory for HOME.
func (o *Orchestrator) startupEnv(k string) string {
	if k == "HOME" {
		return o.shellHome()
	}
	return o.getenv(k)
}

// startupRef is a path a startup file names (one of those a word may
// stand for).
type startupRef struct {
	word string // as written
	// path is the word expanded (~, $HOME, variables), globs kept; ""
	// when a part could not be expanded.
	path string
	// dir is what is certain of it: the path, or the directory before
	// its first unknown variable or glob character; "" when nothing
	// absolute is.
	dir string
	// source: it follows . or source. follow: the shell may read it as
	// a script (a source, or a glob: for f in DIR/*.sh; do . "$f"; done).
	source, follow bool
	// pathEntry names the list (PATH, LD_LIBRARY_PATH…) it assigns a
	// relative (or empty) entry.
	pathEntry string
	// tooMany: the word stands for more than maxExpansions paths.
	tooMany bool
}

// startupCache keeps what each startup file names, while the file stays
// the same (device, inode, size, modification time), for the last few
// sets of variables it started with (each reading of startupWhy's
// starts it with its own).
type startupCache struct {
	mu      sync.Mutex
	entries map[string][]startupEntry
}

// startupCacheWays is how many sets of variables a file's entries keep.
const startupCacheWays = 4

type startupEntry struct {
	file fileStamp
	in   startupVars // the variables it started with
	refs []startupRef
	out  startupVars // the variables it left
}

// fileStamp tells a file as it is: its identity, size and modification
// time.
type fileStamp struct {
	fileID
	size  uint64
	mtime int64
}

// scan returns the paths the file at path names and the variables it
// leaves, starting from vars; read as the shell would (through
// symlinks), at most maxStartupSize bytes of text.
func (c *startupCache) scan(path string, vars startupVars, getenv func(string) string) ([]startupRef, startupVars, error) {
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
	key := startupEntry{file: fileStamp{fileID{dev, ino}, uint64(fi.Size()), fi.ModTime().UnixNano()}, in: vars}
	c.mu.Lock()
	for _, e := range c.entries[path] {
		if e.file == key.file && e.in.equal(vars) {
			c.mu.Unlock()
			return e.refs, e.out, nil
		}
	}
	c.mu.Unlock()
	b, err := fspath.ReadAtMost(f, maxStartupSize)
	if err != nil {
		return nil, nil, err
	}
	key.refs, key.out = startupRefs(string(b), vars, getenv) // a NUL does not stop the shells
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string][]startupEntry{}
	}
	ways := slices.DeleteFunc(c.entries[path], func(e startupEntry) bool { return e.file != key.file })
	if len(ways) == startupCacheWays {
		ways = ways[1:]
	}
	c.entries[path] = append(ways, key)
	c.mu.Unlock()
	return key.refs, key.out, nil
}

// startupRefs returns the paths a shell script's text names, as far as
// they can be told without running it, and the variables it leaves
// (vars grown by what it assigns): each word with a / (or a ~), split at
// the colons outside ${…} as PATH is, with ~, $VAR, ${VAR} and
// ${VAR:-word} (and its kind) expanded to every value they may have
// (startupVars: vars, then getenv's but PATH's, whose entries the rules
// check on their own); each word after . or source; and each relative or
// empty entry of a PATH it assigns. It reads words, not the grammar:
// quotes are dropped, comments and strings count, and a line is split
// both at every blank and at the blanks outside quotes, so it may name
// more than the shell reads, never less of what it can expand.
func startupRefs(text string, vars startupVars, getenv func(string) string) ([]startupRef, startupVars) {
	if vars == nil {
		vars = startupVars{}
	}
	lookup := func(name string) []string {
		if v, ok := vars[name]; ok {
			return v
		}
		if name == "PATH" || slices.Contains(shellSets, name) {
			return []string{unknownValue}
		}
		if v := getenv(name); v != "" {
			return []string{v}
		}
		return []string{unsetValue}
	}
	var refs []startupRef
	for _, w := range zshPathWords(text) {
		w = strings.NewReplacer("\\", "", "\"", "", "'", "").Replace(w)
		if exps, ok := expandWord(w, lookup); ok && w != "$path" && w != "${path[@]}" && slices.ContainsFunc(exps, func(e expansion) bool {
			return e.full && e.s != "" && !filepath.IsAbs(e.s)
		}) {
			refs = append(refs, startupRef{word: w, pathEntry: "PATH"})
		}
	}
	for line := range strings.Lines(text) {
		for _, words := range [][]string{strings.FieldsFunc(line, isWordBreak), quotedFields(line)} {
			for i, w := range words {
				w = strings.NewReplacer("\\", "", "\"", "", "'", "").Replace(w)
				words[i] = w
				if isName(w) && slices.ContainsFunc(words[:i], func(u string) bool {
					return slices.Contains([]string{"unset", "local", "declare", "typeset"}, u)
				}) {
					vars = vars.add(w, append(lookup(w), unsetValue))
				}
				if isName(w) && i > 0 && (words[i-1] == "read" || strings.HasPrefix(words[i-1], "-") && slices.Contains(words[:i], "read")) {
					vars = vars.add(w, append(lookup(w), unknownValue)) // read NAME, read -r NAME
				}
				if isName(w) && i > 0 && words[i-1] == "for" {
					// for NAME in WORD…; do: each word is a value.
					vals := []string{unknownValue} // for NAME; do: the arguments
					if i+1 < len(words) && words[i+1] == "in" {
						vals = nil
						for _, v := range words[i+2:] {
							if v == "do" {
								break
							}
							for _, b := range startupPaths(v, true, lookup) {
								vals = append(vals, cmp.Or(b.path, unknownValue))
							}
						}
					}
					vars = vars.add(w, append(lookup(w), vals...))
				}
				name, value, assigns := strings.Cut(w, "=")
				name, appends := strings.CutSuffix(name, "+")
				if assigns && isName(name) {
					exps, ok := expandWord(value, lookup)
					if !ok {
						exps = []expansion{{}} // too many: unknown
					}
					vals := []string{widenedValue} // X="$X:…", X+=…: grows with every reading
					if !appends && !selfRef(value, name) {
						vals = nil
						for _, e := range exps {
							if !e.full {
								e.s = unknownValue
							}
							vals = append(vals, e.s)
						}
					}
					if slices.Contains(searchLists, name) {
						// An empty entry (an unset $GOBIN too) is the
						// directory the shell is in; a variable the files
						// assign counts as set, though.
						assigned := func(name string) []string {
							v := lookup(name)
							if len(v) > 1 {
								v = slices.DeleteFunc(slices.Clone(v), func(s string) bool { return s == unsetValue })
							}
							return v
						}
						for _, piece := range splitColons(value) {
							if exps, ok := expandWord(piece, assigned); ok && slices.ContainsFunc(exps, func(e expansion) bool {
								return e.full && !filepath.IsAbs(e.s)
							}) {
								refs = append(refs, startupRef{word: piece, pathEntry: name})
							}
						}
					}
					vars = vars.add(name, append(lookup(name), vals...)) // the value before stays one
					w = value
				}
				source := i > 0 && (words[i-1] == "." || words[i-1] == "source")
				for _, piece := range splitColons(w) {
					if piece == "" || (!source && !strings.ContainsAny(piece, "/~")) {
						continue
					}
					refs = append(refs, startupPaths(piece, source, lookup)...)
				}
			}
		}
	}
	seen := map[startupRef]bool{}
	return slices.DeleteFunc(refs, func(r startupRef) bool {
		dup := seen[r]
		seen[r] = true
		return dup
	}), vars
}

// zshPathWords returns the words of zsh's path=(…) and path+=(…) in
// text, an array that may span lines: PATH's entries.
func zshPathWords(text string) []string {
	var out []string
	for rest := text; ; {
		i := strings.Index(rest, "path=(")
		if j := strings.Index(rest, "path+=("); j >= 0 && (i < 0 || j < i) {
			i = j + 1 // "path+=(" is one byte longer
		}
		if i < 0 {
			return out
		}
		rest = rest[i+len("path=("):]
		body, after, _ := strings.Cut(rest, ")")
		for _, line := range strings.Split(body, "\n") {
			out = append(out, strings.FieldsFunc(line, isWordBreak)...)
			out = append(out, quotedFields(line)...)
		}
		rest = after
	}
}

// shellSets are the variables a shell sets itself, whatever its
// environment says: execd cannot tell their values (PWD it seeds with
// the directory the shell starts in).
var shellSets = []string{"BASH", "BASH_SOURCE", "BASH_ARGV0", "HISTFILE", "OLDPWD", "ZSH_NAME", "ZSH_ARGZERO", "SHELL"}

// searchLists are the variables whose entries, split at colons, are
// directories searched for programs or libraries, where an empty or
// relative entry is relative to the directory a command runs in.
var searchLists = []string{"PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "NODE_PATH", "PERL5LIB", "RUBYLIB", "GEM_PATH"}

// selfRef reports whether the word value refers to the variable name
// ($NAME, ${NAME…}).
func selfRef(value, name string) bool {
	for i := 0; i < len(value); i++ {
		if value[i] != '$' {
			continue
		}
		rest := strings.TrimPrefix(value[i+1:], "{")
		if after, ok := strings.CutPrefix(rest, name); ok && (after == "" || (after[0] != '_' && !isAlnum(after[0]))) {
			return true
		}
	}
	return false
}

// isWordBreak reports whether r ends a word: a blank or an operator.
func isWordBreak(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || strings.ContainsRune(";&|()<>`", r)
}

// quotedFields splits line as FieldsFunc(line, isWordBreak) does, but
// not inside quotes or at an escaped character ("$HOME/My Files/env",
// ~/My\ Files/env); a quote left open runs to the end of the line.
func quotedFields(line string) []string {
	var out []string
	var cur strings.Builder
	var quote rune
	escaped := false
	for _, r := range line {
		switch {
		case escaped:
			escaped = false
		case r == '\\' && quote != '\'':
			escaped = true
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case isWordBreak(r):
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
			continue
		}
		cur.WriteRune(r)
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// startupPaths is what piece, a word or part of one, names: one ref for
// each path it may stand for (braces, ~/.{cargo/env,aliases}, expanded
// first, as the shell does), none for an empty value or one with nothing
// certain that is not sourced.
func startupPaths(piece string, source bool, lookup func(string) []string) []startupRef {
	var exps []expansion
	words, ok := braces(piece)
	for _, w := range words {
		more, mok := expandWord(w, lookup)
		exps, ok = append(exps, more...), ok && mok && len(exps)+len(more) <= maxExpansions
	}
	if !ok {
		return []startupRef{{word: piece, tooMany: true}}
	}
	var refs []startupRef
	for _, e := range exps {
		path, full := e.s, e.full
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
			follow: path != "" && (source || strings.ContainsAny(path, "*?["))})
	}
	return refs
}

// braces returns the words the shell's brace expansion makes of w
// (a{b,c}d: abd, acd; not ${…}); false when more than maxExpansions.
func braces(w string) ([]string, bool) {
	open := -1
	for i := 0; i < len(w); i++ {
		if w[i] == '{' && (i == 0 || w[i-1] != '$') {
			open = i
			break
		}
	}
	if open < 0 {
		return []string{w}, true
	}
	// The matching brace, and the commas at its level.
	depth, commas := 0, []int{}
	for j := open + 1; j < len(w); j++ {
		switch w[j] {
		case '{':
			depth++
		case ',':
			if depth == 0 {
				commas = append(commas, j)
			}
		case '}':
			if depth > 0 {
				depth--
				continue
			}
			prefix, suffix := w[:open], w[j+1:]
			if len(commas) == 0 { // {x} stays as it is; look further on
				rest, ok := braces(suffix)
				out := make([]string, len(rest))
				for k, r := range rest {
					out[k] = w[:j+1] + r
				}
				return out, ok
			}
			var out []string
			start := open + 1
			for _, c := range append(commas, j) {
				more, ok := braces(prefix + w[start:c] + suffix)
				if out = append(out, more...); !ok || len(out) > maxExpansions {
					return nil, false
				}
				start = c + 1
			}
			return out, true
		}
	}
	return []string{w}, true // never closed
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

// expansion is one string a word may expand to: all of it (full), or
// the part before the first part execd cannot expand.
type expansion struct {
	s    string
	full bool
}

// join appends to each unfinished expansion of exps each of more; false
// when that makes more than maxExpansions.
func join(exps, more []expansion) ([]expansion, bool) {
	var out []expansion
	for _, e := range exps {
		if !e.full {
			out = append(out, e)
			continue
		}
		for _, m := range more {
			out = append(out, expansion{e.s + m.s, m.full})
		}
	}
	slices.SortFunc(out, func(a, b expansion) int {
		if c := strings.Compare(a.s, b.s); c != 0 || a.full == b.full {
			return c
		}
		if a.full {
			return 1
		}
		return -1
	})
	out = slices.Compact(out)
	return out, len(out) <= maxExpansions
}

// values is what lookup's values for a variable expand to: an unset
// one to "", an unknown one to nothing certain.
func values(vals []string) []expansion {
	out := make([]expansion, len(vals))
	for i, v := range vals {
		switch {
		case unknown(v):
			out[i] = expansion{}
		case v == unsetValue:
			out[i] = expansion{"", true}
		default:
			out[i] = expansion{v, true}
		}
	}
	return out
}

// expandWord expands ~ at the start and $NAME, ${NAME} and ${NAME:-word}
// (with -, :=, =, :+ and +) anywhere in w to every string they may
// stand for, a value lookup does not know cutting that one short (the
// part before it is all that is known). It returns false when w stands
// for more than maxExpansions strings.
func expandWord(w string, lookup func(string) []string) ([]expansion, bool) {
	exps := []expansion{{full: true}}
	ok := true
	if rest, found := strings.CutPrefix(w, "~"); found {
		name, rest, _ := strings.Cut(rest, "/")
		if name == "" {
			exps, ok = join(exps, values(lookup("HOME")))
		} else if u, err := user.Lookup(name); err == nil && isUserName(name) && filepath.IsAbs(u.HomeDir) {
			exps, ok = join(exps, []expansion{{u.HomeDir, true}}) // ~user
		} else {
			return []expansion{{}}, true
		}
		if rest != "" || strings.Contains(w, "/") {
			rest = "/" + rest
		}
		w = rest
	}
	for ok {
		i := strings.IndexByte(w, '$')
		if i < 0 {
			return join(exps, []expansion{{w, true}})
		}
		if exps, ok = join(exps, []expansion{{w[:i], true}}); !ok {
			break
		}
		w = w[i+1:]
		if rest, found := strings.CutPrefix(w, "{"); found {
			end := closingBrace(rest)
			if end < 0 {
				return join(exps, []expansion{{}})
			}
			v, vok := expandParam(rest[:end], lookup)
			if !vok {
				return nil, false
			}
			exps, ok = join(exps, v)
			w = rest[end+1:]
			continue
		}
		n := 0
		for n < len(w) && (w[n] == '_' || isAlnum(w[n])) {
			n++
		}
		name := w[:n]
		w = w[n:]
		if !isName(name) {
			return join(exps, []expansion{{}}) // $1, $$, $(…)
		}
		exps, ok = join(exps, values(lookup(name)))
	}
	return nil, false
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
// operators :-, -, :=, =, :+, + and a word, to every string it may
// stand for (a value lookup does not know may be unset, empty or not);
// false when more than maxExpansions.
func expandParam(inner string, lookup func(string) []string) ([]expansion, bool) {
	n := 0
	for n < len(inner) && (inner[n] == '_' || isAlnum(inner[n])) {
		n++
	}
	name, rest := inner[:n], inner[n:]
	if !isName(name) {
		return []expansion{{}}, true // ${#X}, ${!X}, ${1}…
	}
	vals := lookup(name)
	colon := strings.HasPrefix(rest, ":")
	op := strings.TrimPrefix(rest, ":")
	switch {
	case op == "" && !colon:
		return values(vals), true
	case op == "" || strings.ContainsRune("-=+?", rune(op[0])):
	case !colon && slices.Contains([]string{"%/", "%/*", "%%/*"}, op):
		// A trailing slash, or what follows the last (or first) slash,
		// cut: ${X%/}, ${X%/*} (its directory).
		var out []expansion
		for _, v := range values(vals) {
			switch {
			case !v.full:
			case op == "%/":
				v.s = strings.TrimSuffix(v.s, "/")
			case op == "%/*" && strings.Contains(v.s, "/"):
				v.s = v.s[:strings.LastIndex(v.s, "/")]
			case op == "%%/*" && strings.Contains(v.s, "/"):
				v.s = v.s[:strings.Index(v.s, "/")]
			}
			out = append(out, v)
		}
		return out, true
	default:
		return []expansion{{}}, true // ${X#y}, ${X/a/b}, ${X:1}…
	}
	if op == "" {
		return []expansion{{}}, true
	}
	word, ok := expandWord(op[1:], lookup)
	if !ok {
		return nil, false
	}
	var out []expansion
	for _, v := range vals {
		unknown := unknown(v)
		empty := v == unsetValue || colon && v == ""
		switch op[0] {
		case '-', '=':
			if unknown || empty {
				out = append(out, word...)
			}
			if unknown || !empty {
				out = append(out, values([]string{v})...)
			}
		case '+':
			if unknown || empty {
				out = append(out, expansion{full: true})
			}
			if unknown || !empty {
				out = append(out, word...)
			}
		case '?': // or the shell stops
			out = append(out, values([]string{v})...)
		}
	}
	return join([]expansion{{full: true}}, out)
}

// isUserName reports whether s may be a user's name after ~.
func isUserName(s string) bool {
	return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == ""
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
