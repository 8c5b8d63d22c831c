package patch

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

// The file operations below take real paths (absolute, symlinks resolved
// by Plan.resolve) and walk them from / one directory at a time without
// following any symlink: a directory swapped for a link after Prepare
// resolved the path makes the operation fail instead of writing where
// the link leads.

// entry is a file's metadata as the operations need it.
type entry struct {
	mode     uint32 // st_mode: type and permission bits
	uid, gid uint32
}

func (e entry) isRegular() bool { return e.mode&unix.S_IFMT == unix.S_IFREG }
func (e entry) isDir() bool     { return e.mode&unix.S_IFMT == unix.S_IFDIR }
func (e entry) isSymlink() bool { return e.mode&unix.S_IFMT == unix.S_IFLNK }
func (e entry) perm() uint32    { return e.mode & 0o7777 }

// retry calls f again while it fails with EINTR.
func retry[T any](f func() (T, error)) (T, error) {
	for {
		v, err := f()
		if !errors.Is(err, syscall.EINTR) {
			return v, err
		}
	}
}

// openDir opens the directory dir without following symlinks.
func openDir(dir string) (int, error) {
	fd, err := retry(func() (int, error) { return unix.Open("/", dirFlags, 0) })
	if err != nil {
		return -1, err
	}
	for c := range strings.SplitSeq(strings.Trim(dir, "/"), "/") {
		if c == "" {
			continue
		}
		next, err := retry(func() (int, error) { return unix.Openat(fd, c, dirFlags, 0) })
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// inDir runs f with a descriptor of p's directory and p's base name.
func inDir(p string, f func(dfd int, name string) error) error {
	dfd, err := openDir(filepath.Dir(p))
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	return f(dfd, filepath.Base(p))
}

// lstat returns p's entry, not following a final symlink. It serves
// planning: what Commit writes it reaches again without following links.
func lstat(p string) (entry, error) {
	var st unix.Stat_t
	if _, err := retry(func() (int, error) { return 0, unix.Lstat(p, &st) }); err != nil {
		return entry{}, &fs.PathError{Op: "lstat", Path: p, Err: err}
	}
	return entry{mode: uint32(st.Mode), uid: st.Uid, gid: st.Gid}, nil
}

// readFile reads the regular file p, or fails with errTooLarge when it
// holds more than limit bytes.
func readFile(p string, limit int64) ([]byte, error) {
	var data []byte
	err := inDir(p, func(dfd int, name string) error {
		f, size, err := openRegular(dfd, name, p, unix.O_RDONLY)
		if err != nil {
			return err
		}
		defer f.Close()
		if size > limit {
			return errTooLarge
		}
		// Sized from fstat, so a large file is read without regrowing;
		// it may still change size while read.
		data = make([]byte, 0, size+1)
		for {
			if len(data) == cap(data) {
				data = append(data, 0)[:len(data)]
			}
			n, err := f.Read(data[len(data):cap(data)])
			data = data[:len(data)+n]
			switch {
			case int64(len(data)) > limit:
				return errTooLarge
			case errors.Is(err, io.EOF):
				return nil
			case err != nil:
				return err
			}
		}
	})
	return data, err
}

// openRegular opens name in dfd with flags, never through a symlink, and
// checks that it is a regular file; p names it in errors. It returns the
// file's size.
func openRegular(dfd int, name, p string, flags int) (*os.File, int64, error) {
	// O_NONBLOCK: a FIFO put in the file's place must not block us.
	fd, err := retry(func() (int, error) {
		return unix.Openat(dfd, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	})
	if err != nil {
		return nil, 0, err
	}
	f := os.NewFile(uintptr(fd), p)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, 0, err
	}
	switch e := (entry{mode: uint32(st.Mode)}); {
	case e.isDir():
		err = syscall.EISDIR
	case !e.isRegular():
		err = errNotRegular
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size, nil
}

var errNotRegular = errors.New("not a regular file")

// writeFile replaces p with data through a temporary file in the same
// directory, renamed into place. perm, when set, is applied first (an
// existing file's mode, kept); otherwise the new file gets 0666 less the
// umask. owner, when set, is kept where the process may set it. When the
// directory does not let us create the temporary file but p exists and
// is writable, p is rewritten in place.
func writeFile(p string, data []byte, perm *uint32, owner *entry) error {
	return inDir(p, func(dfd int, name string) error {
		tmp, fd, err := createTemp(dfd, name, perm)
		if errors.Is(err, syscall.EACCES) && perm != nil {
			return rewrite(dfd, name, p, data)
		}
		if err != nil {
			return err
		}
		err = fill(fd, p, data, perm, owner)
		if err == nil {
			_, err = retry(func() (int, error) { return 0, unix.Renameat(dfd, tmp, dfd, name) })
		}
		if err != nil {
			_ = unix.Unlinkat(dfd, tmp, 0)
		}
		return err
	})
}

// createTemp creates a new file next to name, readable by the owner only
// until fill sets its mode.
func createTemp(dfd int, name string, perm *uint32) (string, int, error) {
	mode := uint32(0o666) // less the umask: a new file's usual mode
	if perm != nil {
		mode = 0o600
	}
	if len(name) > 200 { // leave room for the suffix within NAME_MAX
		name = name[:200]
	}
	for i := 0; ; i++ {
		tmp := fmt.Sprintf(".%s.execd-patch-%d-%d", name, os.Getpid(), i)
		fd, err := retry(func() (int, error) {
			return unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
		})
		if errors.Is(err, syscall.EEXIST) && i < 100 {
			continue
		}
		return tmp, fd, err
	}
}

// fill sets the temporary file's mode and owner, then writes and syncs
// data, and closes fd.
func fill(fd int, p string, data []byte, perm *uint32, owner *entry) error {
	f := os.NewFile(uintptr(fd), p)
	if owner != nil && (int(owner.uid) != os.Geteuid() || int(owner.gid) != os.Getegid()) {
		_ = unix.Fchown(fd, int(owner.uid), int(owner.gid)) // best effort: only root may give files away
	}
	if perm != nil {
		if err := unix.Fchmod(fd, *perm); err != nil {
			f.Close()
			return err
		}
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// rewrite writes data over the existing regular file name in place.
func rewrite(dfd int, name, p string, data []byte) error {
	f, _, err := openRegular(dfd, name, p, unix.O_WRONLY)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Sync()
}

// remove removes the file or symlink p.
func remove(p string) error {
	return inDir(p, func(dfd int, name string) error {
		_, err := retry(func() (int, error) { return 0, unix.Unlinkat(dfd, name, 0) })
		return err
	})
}

// setAside renames the file or symlink p to a new hidden name in its
// directory and returns that name's path: a removal that rename can take
// back, whatever the file's size.
func setAside(p string) (string, error) {
	var aside string
	err := inDir(p, func(dfd int, name string) error {
		base := name
		if len(base) > 200 { // leave room for the suffix within NAME_MAX
			base = base[:200]
		}
		for i := 0; ; i++ {
			tmp := fmt.Sprintf(".%s.execd-deleted-%d-%d", base, os.Getpid(), i)
			// RENAME_NOREPLACE would say EEXIST atomically, but not on
			// every system: look first, and never replace a file.
			var st unix.Stat_t
			if err := unix.Fstatat(dfd, tmp, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
				if i < 100 {
					continue
				}
				return syscall.EEXIST
			}
			if _, err := retry(func() (int, error) { return 0, unix.Renameat(dfd, name, dfd, tmp) }); err != nil {
				return err
			}
			aside = filepath.Join(filepath.Dir(p), tmp)
			return nil
		}
	})
	return aside, err
}

// putBack renames aside (from setAside) back to p.
func putBack(aside, p string) error {
	return inDir(p, func(dfd int, name string) error {
		_, err := retry(func() (int, error) { return 0, unix.Renameat(dfd, filepath.Base(aside), dfd, name) })
		return err
	})
}

// symlink makes p a symlink to target.
func symlink(target, p string) error {
	return inDir(p, func(dfd int, name string) error { return unix.Symlinkat(target, dfd, name) })
}

// mkdirAll creates the missing directories of dir, returning those it
// created, outermost first.
func mkdirAll(dir string) ([]string, error) {
	var created []string
	cur := "/"
	fd, err := retry(func() (int, error) { return unix.Open("/", dirFlags, 0) })
	if err != nil {
		return nil, err
	}
	defer func() { unix.Close(fd) }()
	for c := range strings.SplitSeq(strings.Trim(dir, "/"), "/") {
		if c == "" {
			continue
		}
		cur = filepath.Join(cur, c)
		next, err := retry(func() (int, error) { return unix.Openat(fd, c, dirFlags, 0) })
		if errors.Is(err, syscall.ENOENT) {
			if err = unix.Mkdirat(fd, c, 0o777); err == nil || errors.Is(err, syscall.EEXIST) {
				if err == nil {
					created = append(created, cur)
				}
				next, err = retry(func() (int, error) { return unix.Openat(fd, c, dirFlags, 0) })
			}
		}
		if err != nil {
			return created, err
		}
		unix.Close(fd)
		fd = next
	}
	return created, nil
}

// rmdir removes the empty directory p.
func rmdir(p string) error {
	return inDir(p, func(dfd int, name string) error { return unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR) })
}
