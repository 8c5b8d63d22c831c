package patch

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// ErrNoChanges is a patch without hunks (SPEC §6.3).
var ErrNoChanges error = &Error{Msg: "No files were modified."}

// Plan is a patch ready to be written: the state every path it touches
// is left in, computed from what is on disk now. Create it with
// [Prepare].
type Plan struct {
	files   []*file          // in the order the patch first touches them
	byReal  map[string]*file // the same, by real path
	summary Summary
}

// file is one path a patch touches: what is there now and what the patch
// leaves there.
type file struct {
	name string // the path as the patch first wrote it, for messages
	real string // absolute, symlinks resolved (but a deleted link's own)

	existed bool   // something is at real now
	was     entry  // what, when existed
	old     []byte // its content, when a regular file
	link    string // its target, when a symlink

	exists bool    // the patch leaves a file at real
	dir    bool    // real is a directory (that no patch replaces)
	data   []byte  // the file the patch leaves, when exists
	perm   *uint32 // its mode; nil means a new file's default
}

// Summary is what a patch changed, paths as written in the patch (SPEC
// §6.5): each list in the order of the hunks, without repeats.
type Summary struct {
	Added, Modified, Deleted []string
}

// String is the success message of SPEC §6.5, with its final newline.
func (s Summary) String() string {
	var b strings.Builder
	b.WriteString("Success. Updated the following files:\n")
	for _, g := range []struct {
		tag   string
		paths []string
	}{{"A", s.Added}, {"M", s.Modified}, {"D", s.Deleted}} {
		for _, p := range g.paths {
			fmt.Fprintf(&b, "%s %s\n", g.tag, p)
		}
	}
	return b.String()
}

// Target is a path a patch writes or removes.
type Target struct {
	Name string // as written in the patch
	Real string // absolute, symlinks resolved
}

// Prepare reads every file p touches and computes what each becomes,
// with cwd (absolute) the directory relative paths start from. Nothing
// is written. Its errors are the messages of SPEC §6.5, naming the path
// as written.
func Prepare(p *Patch, cwd string) (*Plan, error) {
	if len(p.Hunks) == 0 {
		return nil, ErrNoChanges
	}
	pl := &Plan{byReal: map[string]*file{}}
	for _, h := range p.Hunks {
		var err error
		switch h.Op {
		case Add:
			err = pl.add(cwd, h)
		case Delete:
			err = pl.delete(cwd, h)
		case Update:
			err = pl.update(cwd, h)
		}
		if err != nil {
			return nil, err
		}
	}
	return pl, nil
}

// Summary returns what the plan changes.
func (pl *Plan) Summary() Summary { return pl.summary }

// Targets returns every path the plan writes or removes, in the order the
// patch first touches them.
func (pl *Plan) Targets() []Target {
	ts := make([]Target, len(pl.files))
	for i, f := range pl.files {
		ts[i] = Target{Name: f.name, Real: f.real}
	}
	return ts
}

func (pl *Plan) add(cwd string, h Hunk) error {
	f, err := pl.writable(cwd, h.Path)
	if err != nil {
		return err
	}
	f.exists, f.data = true, []byte(h.Contents)
	pl.summary.Added = appendNew(pl.summary.Added, h.Path)
	return nil
}

func (pl *Plan) delete(cwd string, h Hunk) error {
	real, err := resolve(cwd, h.Path, false)
	var f *file
	if err == nil {
		f, err = pl.state(real, h.Path)
	}
	// Only a file or a symlink: a directory is not a file, and nothing
	// else could be put back if a later write failed.
	if err != nil || !f.exists || f.dir || (f.data == nil && f.link == "") {
		return failf("Failed to delete file %s", h.Path)
	}
	f.exists, f.data = false, nil
	pl.summary.Deleted = appendNew(pl.summary.Deleted, h.Path)
	return nil
}

func (pl *Plan) update(cwd string, h Hunk) error {
	f, err := pl.updatable(cwd, h.Path)
	if err != nil {
		return failf("Failed to read file to update %s: %s", h.Path, describe(err))
	}
	data, err := applyChunks(f.data, h.Chunks, h.Path)
	if err != nil {
		return err
	}
	if h.MoveTo == "" {
		f.data = data
		pl.summary.Modified = appendNew(pl.summary.Modified, h.Path)
		return nil
	}
	dest, err := pl.writable(cwd, h.MoveTo)
	if err != nil {
		return err
	}
	if dest != f {
		if !dest.exists || dest.perm == nil {
			dest.perm = f.perm // a new file takes the mode of the one it replaces
		}
		f.exists, f.data = false, nil
	}
	dest.exists, dest.data = true, data
	pl.summary.Modified = appendNew(pl.summary.Modified, h.MoveTo)
	return nil
}

// writable returns the state of the file an Add or a Move writes at name,
// following a symlink to the file it names, once it is known that the
// file can be written there.
func (pl *Plan) writable(cwd, name string) (*file, error) {
	real, err := resolve(cwd, name, true)
	if err == nil {
		err = pl.checkParents(real)
	}
	if err != nil {
		return nil, failf("Failed to create parent directories for %s: %s", name, describe(err))
	}
	f, err := pl.state(real, name)
	switch {
	case err != nil:
	case f.dir:
		err = syscall.EISDIR
	case f.exists && f.data == nil:
		err = errNotRegular // a FIFO, a device: not ours to replace
	}
	if err != nil {
		return nil, failf("Failed to write file %s: %s", name, describe(err))
	}
	return f, nil
}

// updatable returns the state of the existing file an Update changes.
func (pl *Plan) updatable(cwd, name string) (*file, error) {
	real, err := resolve(cwd, name, true)
	if err != nil {
		return nil, err
	}
	f, err := pl.state(real, name)
	switch {
	case err != nil:
		return nil, err
	case f.dir:
		return nil, syscall.EISDIR
	case !f.exists:
		return nil, syscall.ENOENT
	case f.data == nil:
		return nil, errNotRegular
	}
	return f, nil
}

// checkParents reports whether the directories above real exist or can
// be created, as the patch leaves them so far.
func (pl *Plan) checkParents(real string) error {
	for dir := filepath.Dir(real); dir != "/"; dir = filepath.Dir(dir) {
		if f, ok := pl.byReal[dir]; ok && !f.dir {
			if f.exists {
				return syscall.ENOTDIR
			}
			continue // removed by the patch first: it can become a directory
		}
		e, err := lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return err
		case e.isDir():
			return nil // and so is everything above it
		}
		if f, ok := pl.byReal[dir]; !ok || f.exists {
			return syscall.ENOTDIR
		}
	}
	return nil
}

// state returns the file at real as the patch leaves it so far, reading
// it from disk when the patch first touches it.
func (pl *Plan) state(real, name string) (*file, error) {
	if f, ok := pl.byReal[real]; ok {
		return f, nil
	}
	f := &file{name: name, real: real}
	e, err := lstat(real)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		f.existed, f.exists, f.was = true, true, e
		perm := e.perm()
		switch {
		case e.isDir():
			f.dir = true
		case e.isSymlink():
			if f.link, err = readlink(real); err != nil {
				return nil, err
			}
		case e.isRegular():
			if f.old, err = readFile(real); err != nil {
				return nil, err
			}
			if f.old == nil {
				f.old = []byte{}
			}
			f.data, f.perm = f.old, &perm
		}
	}
	pl.files = append(pl.files, f)
	pl.byReal[real] = f
	return f, nil
}

// resolve returns the real path of name, relative to cwd unless absolute:
// every symlink on the way resolved, the last component's too when
// follow is set.
func resolve(cwd, name string, follow bool) (string, error) {
	p := name
	if !filepath.IsAbs(p) {
		p = cwd + "/" + p
	}
	return realPath(p, follow)
}

// maxLinks bounds the symlinks one path may pass, as the kernel does.
const maxLinks = 40

// realPath resolves the symlinks of the absolute path p one component at
// a time as the kernel would (a ".." after a link leaves the link's
// target). Components that do not exist are kept as written.
func realPath(p string, followLast bool) (string, error) {
	todo := strings.Split(p, "/")
	cur := "/"
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		if len(todo) == 0 && !followLast {
			return next, nil
		}
		e, err := lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			cur = next
			continue
		case err != nil:
			return "", err
		case !e.isSymlink():
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return "", syscall.ELOOP
		}
		target, err := readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return cur, nil
}

// describe words err as the compat messages do: "No such file or
// directory (os error 2)".
func describe(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		msg := errno.Error()
		if msg != "" {
			msg = strings.ToUpper(msg[:1]) + msg[1:]
		}
		return fmt.Sprintf("%s (os error %d)", msg, int(errno))
	}
	return err.Error()
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// Apply parses text, prepares it against cwd and commits it: the whole
// of `execd apply-patch`.
func Apply(text, cwd string) (Summary, error) {
	p, err := Parse(text)
	if err != nil {
		return Summary{}, err
	}
	pl, err := Prepare(p, cwd)
	if err != nil {
		return Summary{}, err
	}
	if err := pl.Commit(); err != nil {
		return Summary{}, err
	}
	return pl.Summary(), nil
}
