package gitrepo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/execd/execd/internal/fspath"
)

// Entry is one variable of a git configuration file.
type Entry struct {
	// Key is section[.subsection].name, with the section and the name
	// lower-cased (they are case-insensitive) and the subsection as
	// written.
	Key   string
	Value string
	// Bare: the variable was written without "=" (a boolean true).
	Bare bool
}

// maxConfig is the largest configuration file read, and maxGitmodules
// the largest .gitmodules (a sandboxed command writes it, and every
// launch reads it).
const (
	maxConfig     = 4 << 20
	maxGitmodules = 256 << 10
)

// ReadConfig parses the configuration file at path; a missing file has
// no entries. It never blocks on a FIFO put there (O_NONBLOCK, and only
// a regular file is read). Errors are git's: a line it would reject.
func ReadConfig(path string) ([]Entry, error) { return readConfig(path, maxConfig, nil) }

// readConfig reads a configuration file of at most limit bytes, keeping
// the entries keep accepts (all for nil).
func readConfig(path string, limit int, keep func(key string) bool) ([]Entry, error) {
	f, err := fspath.OpenRegular(path, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := fspath.ReadAtMost(f, limit)
	if err != nil {
		return nil, err
	}
	return parseConfig(b, keep)
}

// ParseConfig parses git's configuration syntax (git-config(1),
// "CONFIGURATION FILE"): [section], [section "subsection"] and the old
// [section.subsection]; "name = value" or a bare name; values trimmed,
// with double quotes, the escapes \n \t \b \" \\, a backslash at the end
// of a line continuing it, and # or ; starting a comment outside quotes.
func ParseConfig(data []byte) ([]Entry, error) { return parseConfig(data, nil) }

func parseConfig(data []byte, keep func(key string) bool) ([]Entry, error) {
	p := &configParser{src: string(data), line: 1}
	var out []Entry
	for {
		p.skipSpace(true)
		if p.eof() {
			return out, nil
		}
		switch c := p.peek(); {
		case c == '#' || c == ';':
			p.skipLine()
		case c == '[':
			if err := p.header(); err != nil {
				return nil, err
			}
		case isAlpha(c):
			e, err := p.variable() // git takes one before any section too, with no section
			if err != nil {
				return nil, err
			}
			if keep == nil || keep(e.Key) {
				out = append(out, e)
			}
		default:
			return nil, p.errorf("unexpected %q", c)
		}
	}
}

type configParser struct {
	src     string
	pos     int
	line    int
	section string // the current section with its subsection, as a key prefix
}

func (p *configParser) eof() bool  { return p.pos >= len(p.src) }
func (p *configParser) peek() byte { return p.src[p.pos] }

func (p *configParser) errorf(format string, args ...any) error {
	return fmt.Errorf("bad config line %d: %s", p.line, fmt.Sprintf(format, args...))
}

// skipSpace skips blanks, and newlines too when lines is set.
func (p *configParser) skipSpace(lines bool) {
	for !p.eof() {
		switch c := p.peek(); {
		case isBlank(c):
		case c == '\n':
			if !lines {
				return
			}
			p.line++
		default:
			return
		}
		p.pos++
	}
}

func (p *configParser) skipLine() {
	for !p.eof() && p.peek() != '\n' {
		p.pos++
	}
}

// header reads [section], [section "subsection"] or [section.sub].
func (p *configParser) header() error {
	p.pos++ // [
	start := p.pos
	for !p.eof() && (isAlnum(p.peek()) || p.peek() == '-' || p.peek() == '.') {
		p.pos++
	}
	name := strings.ToLower(p.src[start:p.pos])
	if name == "" {
		return p.errorf("empty section name")
	}
	if p.eof() {
		return p.errorf("unterminated section header")
	}
	switch p.peek() {
	case ']':
		p.pos++
		if sec, sub, ok := strings.Cut(name, "."); ok {
			name = sec + "." + sub // the old form: the subsection lower-cased too
		}
		p.section = name
		return nil
	case ' ', '\t':
		if strings.Contains(name, ".") {
			return p.errorf("bad section header")
		}
		p.skipSpace(false)
	default:
		return p.errorf("bad section header")
	}
	if p.eof() || p.peek() != '"' {
		return p.errorf("bad section header")
	}
	p.pos++
	var sub strings.Builder
	for {
		if p.eof() || p.peek() == '\n' {
			return p.errorf("unterminated subsection")
		}
		c := p.peek()
		p.pos++
		if c == '"' {
			break
		}
		if c == '\\' {
			if p.eof() || p.peek() == '\n' {
				return p.errorf("unterminated subsection")
			}
			c = p.peek()
			p.pos++
		}
		sub.WriteByte(c)
	}
	if p.eof() || p.peek() != ']' {
		return p.errorf("bad section header")
	}
	p.pos++
	p.section = name + "." + sub.String()
	return nil
}

// variable reads name [= value] up to the end of its (continued) line.
func (p *configParser) variable() (Entry, error) {
	start := p.pos
	for !p.eof() && (isAlnum(p.peek()) || p.peek() == '-') {
		p.pos++
	}
	e := Entry{Key: strings.ToLower(p.src[start:p.pos])}
	if p.section != "" {
		e.Key = p.section + "." + e.Key
	}
	p.skipSpace(false)
	if p.eof() || p.peek() == '\n' || p.peek() == '#' || p.peek() == ';' {
		e.Bare = true
		p.skipLine()
		return e, nil
	}
	if p.peek() != '=' {
		return e, p.errorf("bad variable %q", e.Key)
	}
	p.pos++
	v, err := p.value()
	e.Value = v
	return e, err
}

// value reads a value: leading blanks dropped, trailing ones (outside
// quotes) too, comments ended, escapes and quotes resolved.
func (p *configParser) value() (string, error) {
	p.skipSpace(false)
	var b strings.Builder
	quoted := false
	pending := 0 // blanks seen outside quotes, written only if more follows
	for !p.eof() {
		c := p.peek()
		p.pos++
		switch {
		case c == '\n':
			p.line++
			if quoted {
				return "", p.errorf("unterminated quote")
			}
			return b.String(), nil
		case !quoted && (c == '#' || c == ';'):
			p.skipLine()
			return b.String(), nil
		case !quoted && isBlank(c):
			pending++ // git writes each as a space, if more follows
			continue
		case c == '"':
			b.WriteString(strings.Repeat(" ", pending))
			pending = 0
			quoted = !quoted
		case c == '\\':
			if p.eof() {
				continue // git ignores a backslash that ends the file
			}
			e := p.peek()
			p.pos++
			switch e {
			case '\n':
				p.line++
				continue // a continued line
			case 'n':
				e = '\n'
			case 't':
				e = '\t'
			case 'b':
				e = '\b'
			case '"', '\\':
			default:
				return "", p.errorf("bad escape \\%c", e)
			}
			b.WriteString(strings.Repeat(" ", pending))
			pending = 0
			b.WriteByte(e)
		default:
			b.WriteString(strings.Repeat(" ", pending))
			pending = 0
			b.WriteByte(c)
		}
	}
	if quoted {
		return "", p.errorf("unterminated quote")
	}
	return b.String(), nil
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' }

func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isAlnum(c byte) bool { return isAlpha(c) || '0' <= c && c <= '9' }

// Kind is what a configuration variable makes git do with its value.
type Kind int

// The kinds of variables that steer git outside the repository's data.
const (
	Other   Kind = iota
	Path         // a directory git runs programs from (core.hooksPath)
	Command      // a program or shell command git runs (core.fsmonitor, filters, pagers)
	Include      // another configuration file (include.path, includeIf.*.path)
)

// commandKeys run their value (a program, or a shell command when it has
// shell syntax); "*" stands for any subsection.
var commandKeys = []string{"core.fsmonitor", "core.sshcommand", "core.pager", "core.editor", "core.askpass",
	"core.gitproxy", "sequence.editor", "gpg.program", "gpg.*.program", "diff.external", "diff.*.command",
	"diff.*.textconv", "filter.*.clean", "filter.*.smudge", "filter.*.process", "merge.*.driver",
	"credential.helper", "credential.*.helper", "uploadpack.packobjectshook", "difftool.*.cmd", "mergetool.*.cmd",
	"remote.*.uploadpack", "remote.*.receivepack", "man.*.cmd", "web.browser", "browser.*.cmd", "browser.*.path"}

// KindOf classifies a variable (Key as Entry has it). A pager.CMD, an
// alias or a submodule update that starts with "!" run shell commands.
func KindOf(e Entry) Kind {
	k := e.Key
	switch {
	case k == "core.hookspath":
		return Path // (core.worktree names the working tree, writable anyway: no program)
	case k == "include.path", strings.HasPrefix(k, "includeif.") && strings.HasSuffix(k, ".path"):
		return Include
	case k == "core.fsmonitor" && (e.Bare || isBool(e.Value)):
		return Other // git's own monitor daemon
	case strings.HasPrefix(k, "pager."):
		if isBool(e.Value) || e.Bare {
			return Other
		}
		return Command
	case strings.HasPrefix(k, "alias.") || (strings.HasPrefix(k, "submodule.") && strings.HasSuffix(k, ".update")):
		if strings.HasPrefix(strings.TrimSpace(e.Value), "!") {
			return Command
		}
		return Other
	}
	for _, pat := range commandKeys {
		if keyMatch(pat, k) {
			return Command
		}
	}
	return Other
}

// keyMatch matches section.*.name against section.sub.name (the
// subsection may hold dots).
func keyMatch(pattern, key string) bool {
	sec, rest, ok := strings.Cut(pattern, ".*.")
	if !ok {
		return pattern == key
	}
	if !strings.HasPrefix(key, sec+".") || !strings.HasSuffix(key, "."+rest) {
		return false
	}
	return len(key) > len(sec)+len(rest)+2
}

func isBool(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "false", "yes", "no", "on", "off", "1", "0", "":
		return true
	}
	return false
}

// ConfigFiles returns the repository's own configuration files: the
// common directory's config and the worktree's config.worktree.
func (r Repo) ConfigFiles() []string {
	return []string{filepath.Join(r.CommonDir, "config"), filepath.Join(r.GitDir, "config.worktree")}
}

// HooksDir is where git looks for hooks: core.hooksPath (relative to the
// working tree, or the repository when bare) if set, else hooks in the
// common directory.
func (r Repo) HooksDir(hooksPath string) string {
	if hooksPath == "" {
		return filepath.Join(r.CommonDir, "hooks")
	}
	base := r.Worktree
	if base == "" {
		base = r.GitDir
	}
	return Join(base, ExpandHome(hooksPath, ""))
}

// ExpandHome expands a leading ~/ (or ~ alone) to home, as git does for
// path values; with home "" it is $HOME.
func ExpandHome(p, home string) string {
	if home == "" {
		home = os.Getenv("HOME")
	}
	switch {
	case p == "~":
		return home
	case strings.HasPrefix(p, "~/"):
		return filepath.Join(home, p[2:])
	}
	return p
}

// Submodules returns the paths of the submodules listed in the
// .gitmodules file of the working tree dir (submodule.NAME.path),
// cleaned, each once, without those git refuses (absolute, or with a ..
// component) and without "." (the working tree itself). A .gitmodules
// over 256 KiB is an error; only its paths are kept, so a large one costs
// little more than reading it.
func Submodules(dir string) ([]string, error) {
	path := filepath.Join(dir, ".gitmodules")
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		return nil, nil
	}
	entries, err := readConfig(path, maxGitmodules, func(key string) bool {
		return strings.HasPrefix(key, "submodule.") && strings.HasSuffix(key, ".path")
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		// git refuses a path that is absolute or has a .. component;
		// . (the working tree itself) is no submodule either.
		p := filepath.Clean(e.Value)
		if e.Value == "" || p == "." || filepath.IsAbs(p) || slices.Contains(strings.Split(p, "/"), "..") || slices.Contains(out, p) {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}
