// Package fspath resolves paths the way the kernel does: one component at
// a time, a symlink's target spliced into what is left of the path (so a
// ".." after a link leaves the link's target, where textual cleaning
// would not), at most 40 links, at most PATH_MAX bytes. The files are
// seen through a [View], so a caller may resolve against the state it is
// about to create (a patch that removes a link before writing through
// its name) rather than the disk.
//
// It reports every symlink it passes: whoever protects the final path
// must protect those too, or one replaced link leads the path elsewhere.
//
// OpenRegular opens a file that someone else may have put in place (a
// FIFO, a symlink) without blocking or following it.
package fspath

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// View is how Resolve sees the files.
type View interface {
	// IsLink reports whether p is a symlink; an error wrapping
	// fs.ErrNotExist when nothing is there.
	IsLink(p string) (bool, error)
	// Readlink returns the target of the symlink p.
	Readlink(p string) (string, error)
}

// Disk is the View of the files as they are.
var Disk View = disk{}

type disk struct{}

func (disk) IsLink(p string) (bool, error) {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return false, &fs.PathError{Op: "lstat", Path: p, Err: err}
	}
	return st.Mode&unix.S_IFMT == unix.S_IFLNK, nil
}

func (disk) Readlink(p string) (string, error) { return os.Readlink(p) }

// Options change how Resolve treats the last component and missing ones.
type Options struct {
	// NoFollowLast leaves a symlink in the last component as it is.
	NoFollowLast bool
	// KeepMissing keeps the components that do not exist as written,
	// instead of failing with fs.ErrNotExist.
	KeepMissing bool
}

// maxLinks is how many symlinks one lookup may pass, as in the kernel.
const maxLinks = 40

// Resolve returns the absolute path p with its symlinks resolved, and the
// symlinks it passed, in order. Errors: ELOOP past 40 links,
// ENAMETOOLONG past PATH_MAX, the View's (wrapping fs.ErrNotExist for a
// missing component unless KeepMissing). A relative p is an error.
func Resolve(v View, p string, opts Options) (string, []string, error) {
	if !filepath.IsAbs(p) {
		return "", nil, errors.New("fspath: " + p + " is not absolute")
	}
	if len(p) > unix.PathMax {
		return "", nil, syscall.ENAMETOOLONG
	}
	var links []string
	todo := strings.Split(p, "/")
	cur := "/"
	for len(todo) > 0 {
		if len(cur) > unix.PathMax {
			return "", links, syscall.ENAMETOOLONG
		}
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur) // cur has no symlinks: its parent is its prefix
			continue
		}
		next := filepath.Join(cur, c)
		if len(todo) == 0 && opts.NoFollowLast {
			return next, links, nil
		}
		isLink, err := v.IsLink(next)
		switch {
		case errors.Is(err, fs.ErrNotExist) && opts.KeepMissing:
			cur = next
			continue
		case err != nil:
			return "", links, err
		case !isLink:
			cur = next
			continue
		}
		if links = append(links, next); len(links) > maxLinks {
			return "", links, syscall.ELOOP
		}
		target, err := v.Readlink(next)
		if err != nil {
			return "", links, err
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	if len(cur) > unix.PathMax {
		return "", links, syscall.ENAMETOOLONG
	}
	return cur, links, nil
}

// ReadAtMost reads f whole, refusing one longer than limit bytes (an
// error naming it): at most limit+1 bytes are read.
func ReadAtMost(f *os.File, limit int) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err == nil && len(b) > limit {
		err = fmt.Errorf("%s: larger than %d bytes", f.Name(), limit)
	}
	return b, err
}

// OpenRegular opens the regular file at path for reading, with flags
// (O_NOFOLLOW, say) added, never blocking on a FIFO put in its place
// (O_NONBLOCK, then the file must be regular). Errors wrap the errno
// (ENOENT for a missing one).
func OpenRegular(path string, flags int) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|flags, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	return f, nil
}
