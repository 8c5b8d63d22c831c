package patch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/execd/execd/internal/fspath"
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
	listed  map[string]bool // "A path", "M path", "D path" already in summary
	read    int64           // bytes of files read so far
}

// kind is what is at a path.
type kind int

const (
	absent kind = iota
	regular
	directory
	link
	special // a FIFO, a device, a socket: never replaced or removed
)

// file is one path a patch touches: what is there now and what the patch
// leaves there.
type file struct {
	name string // the path as the patch first wrote it, for messages
	real string // absolute, symlinks resolved (but a deleted link's own)

	existed bool   // something is at real now
	was     entry  // what, when existed
	old     []byte // its content, once read (a regular file the patch writes over)
	link    string // its target, when a symlink

	kind    kind    // what the patch leaves at real
	written bool    // the patch gives it content: data
	data    []byte  // the content of a regular file, once read or written
	perm    *uint32 // the mode it gets; nil means a new file's default
	owner   *entry  // whose it is; nil means the process's
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

// Limits on what one patch reads, so that a huge file (a sparse one
// costs nothing to make) cannot exhaust execd's memory.
const (
	maxFileSize  = 64 << 20
	maxPatchRead = 256 << 20
)

// Prepare reads the files p changes and computes what each becomes, with
// cwd (absolute) the directory relative paths start from. Nothing is
// written. Its errors are the messages of SPEC §6.5, naming the path as
// written, or ctx's cause when it ends first.
func Prepare(ctx context.Context, p *Patch, cwd string) (*Plan, error) {
	if len(p.Hunks) == 0 {
		return nil, ErrNoChanges
	}
	pl := &Plan{byReal: map[string]*file{}, listed: map[string]bool{}}
	for _, h := range p.Hunks {
		if err := context.Cause(ctx); err != nil {
			return nil, err
		}
		var err error
		switch h.Op {
		case Add:
			err = pl.add(cwd, h)
		case Delete:
			err = pl.delete(cwd, h)
		case Update:
			err = pl.update(ctx, cwd, h)
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

// list adds path to the summary under tag (A, M or D), once.
func (pl *Plan) list(tag, path string) {
	if pl.listed[tag+" "+path] {
		return
	}
	pl.listed[tag+" "+path] = true
	switch tag {
	case "A":
		pl.summary.Added = append(pl.summary.Added, path)
	case "M":
		pl.summary.Modified = append(pl.summary.Modified, path)
	default:
		pl.summary.Deleted = append(pl.summary.Deleted, path)
	}
}

func (pl *Plan) add(cwd string, h Hunk) error {
	f, err := pl.writable(cwd, h.Path)
	if err != nil {
		return err
	}
	f.kind, f.written, f.data = regular, true, []byte(h.Contents)
	pl.list("A", h.Path)
	return nil
}

func (pl *Plan) delete(cwd string, h Hunk) error {
	real, err := pl.resolve(cwd, h.Path, false)
	var f *file
	if err == nil {
		f, err = pl.state(real, h.Path)
	}
	// Only a file or a symlink: a directory is not a file, and nothing
	// else could be put back if a later write failed.
	if err != nil || (f.kind != regular && f.kind != link) {
		return failf("Failed to delete file %s", h.Path)
	}
	f.kind, f.written, f.data = absent, false, nil
	pl.list("D", h.Path)
	return nil
}

func (pl *Plan) update(ctx context.Context, cwd string, h Hunk) error {
	f, err := pl.updatable(cwd, h.Path)
	if err != nil {
		return failWith(err, "Failed to read file to update %s: %s", h.Path, describe(err))
	}
	data, err := applyChunks(ctx, f.data, h.Chunks, h.Path)
	if err != nil {
		return err
	}
	if h.MoveTo == "" {
		f.written, f.data = true, data
		pl.list("M", h.Path)
		return nil
	}
	dest, err := pl.writable(cwd, h.MoveTo)
	if err != nil {
		return err
	}
	if dest != f {
		if dest.kind == absent {
			dest.perm, dest.owner = f.perm, f.owner // a moved file keeps its mode and owner
		}
		f.kind, f.written, f.data = absent, false, nil
	}
	dest.kind, dest.written, dest.data = regular, true, data
	pl.list("M", h.MoveTo)
	return nil
}

// writable returns the state of the file an Add or a Move writes at name,
// following a symlink to the file it names, once it is known that the
// file can be written there; what is there now is read, to be put back
// if the patch fails.
func (pl *Plan) writable(cwd, name string) (*file, error) {
	real, err := pl.resolve(cwd, name, true)
	if err == nil {
		err = pl.checkParents(real)
	}
	if err != nil {
		return nil, failWith(err, "Failed to create parent directories for %s: %s", name, describe(err))
	}
	f, err := pl.state(real, name)
	if err == nil {
		switch f.kind {
		case directory:
			err = syscall.EISDIR
		case special, link: // a link only if the lookup loops back to it
			err = errNotRegular
		default: // what an earlier hunk removed is put back too if this fails
			err = pl.load(f)
		}
	}
	if err != nil {
		return nil, failWith(err, "Failed to write file %s: %s", name, describe(err))
	}
	return f, nil
}

// updatable returns the state of the existing file an Update changes,
// with its content.
func (pl *Plan) updatable(cwd, name string) (*file, error) {
	real, err := pl.resolve(cwd, name, true)
	if err != nil {
		return nil, err
	}
	f, err := pl.state(real, name)
	if err != nil {
		return nil, err
	}
	switch f.kind {
	case absent:
		return nil, syscall.ENOENT
	case directory:
		return nil, syscall.EISDIR
	case special, link:
		return nil, errNotRegular
	}
	return f, pl.load(f)
}

// errTooLarge is a file larger than a patch may read.
var errTooLarge = fmt.Errorf("it is larger than %d MiB, the most a patch reads", maxFileSize>>20)

// load reads what the regular file at f held before the patch, the first
// time it is needed: to update it, or to put it back if the patch fails
// after writing over it.
func (pl *Plan) load(f *file) error {
	if f.old != nil || !f.existed || !f.was.isRegular() {
		return nil
	}
	data, err := readFile(f.real, min(maxFileSize, maxPatchRead-pl.read))
	if errors.Is(err, errTooLarge) && pl.read > 0 {
		return fmt.Errorf("the files of this patch are larger than %d MiB together, the most a patch reads", maxPatchRead>>20)
	}
	if err != nil {
		return err
	}
	pl.read += int64(len(data))
	f.old = data
	if f.kind == regular && !f.written {
		f.data = data
	}
	return nil
}

// checkParents reports whether the directories above real exist or can
// be created, as the patch leaves them so far.
func (pl *Plan) checkParents(real string) error {
	for dir := filepath.Dir(real); dir != "/"; dir = filepath.Dir(dir) {
		e, err := pl.lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // to be created
		case err != nil:
			return err
		case e.isDir():
			return nil // and so is everything above it
		}
		return syscall.ENOTDIR
	}
	return nil
}

// state returns the file at real as the patch leaves it so far, looking
// at the disk when the patch first touches it.
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
		f.existed, f.was = true, e
		switch {
		case e.isDir():
			f.kind = directory
		case e.isSymlink():
			f.kind = link
			if f.link, err = os.Readlink(real); err != nil {
				return nil, err
			}
		case e.isRegular():
			perm := e.perm()
			f.kind, f.perm, f.owner = regular, &perm, &f.was
		default:
			f.kind = special
		}
	}
	pl.files = append(pl.files, f)
	pl.byReal[real] = f
	return f, nil
}

// lstat is what is at p as the patch leaves it so far.
func (pl *Plan) lstat(p string) (entry, error) {
	f, ok := pl.byReal[p]
	if !ok {
		return lstat(p)
	}
	switch f.kind {
	case absent:
		return entry{}, syscall.ENOENT
	case directory:
		return entry{mode: unix.S_IFDIR}, nil
	case link:
		return entry{mode: unix.S_IFLNK}, nil
	case regular:
		return entry{mode: unix.S_IFREG}, nil
	}
	return f.was, nil
}

// resolve returns the real path of name, relative to cwd unless absolute:
// every symlink on the way resolved, the last component's too when
// follow is set. A name that ends with "/", "/." or "/.." names a
// directory, never a file.
func (pl *Plan) resolve(cwd, name string, follow bool) (string, error) {
	if base := filepath.Base(name); strings.HasSuffix(name, "/") || base == "." || base == ".." {
		return "", syscall.EISDIR
	}
	p := name
	if !filepath.IsAbs(p) {
		p = cwd + "/" + p
	}
	real, _, err := fspath.Resolve(planView{pl}, p, fspath.Options{NoFollowLast: !follow, KeepMissing: true})
	return real, err
}

// planView shows fspath the files as the patch leaves them so far.
type planView struct{ pl *Plan }

func (v planView) IsLink(p string) (bool, error) {
	e, err := v.pl.lstat(p)
	return e.isSymlink(), err
}

func (v planView) Readlink(p string) (string, error) { return v.pl.readlink(p) }

// readlink is the target of the symlink at p.
func (pl *Plan) readlink(p string) (string, error) {
	if f, ok := pl.byReal[p]; ok && f.kind == link {
		return f.link, nil
	}
	return os.Readlink(p)
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

// Apply parses text, prepares it against cwd and commits it: the whole
// of `execd apply-patch`.
func Apply(ctx context.Context, text, cwd string) (Summary, error) {
	p, err := Parse(text)
	if err != nil {
		return Summary{}, err
	}
	pl, err := Prepare(ctx, p, cwd)
	if err != nil {
		return Summary{}, err
	}
	if err := pl.Commit(ctx); err != nil {
		return Summary{}, err
	}
	return pl.Summary(), nil
}
