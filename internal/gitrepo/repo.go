// Package gitrepo finds the repository git would use and reads git's
// configuration files, the way git itself does (discovery from a
// directory, gitdir and commondir files, the config file syntax), so
// that execd can tell which files steer a git it is about to run: the
// programs and hooks a repository's configuration names (SPEC §7.2,
// §8.2).
//
// It reads files only; it runs nothing, asks nobody and knows nothing of
// sandboxes or writable roots. It holds no state and is safe for
// concurrent use.
package gitrepo

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/execd/execd/internal/fspath"
)

// Repo is a repository as git finds it.
type Repo struct {
	// GitDir is the repository: .git, a gitfile's target (a linked
	// worktree's own directory), or a bare repository.
	GitDir string
	// CommonDir holds the objects, refs, config and hooks: GitDir, or
	// where GitDir's commondir file leads.
	CommonDir string
	// Worktree is the working tree; "" for a bare repository.
	Worktree string
}

// maxFile is the largest gitfile or commondir file read (git reads more,
// but nothing honest is that long).
const maxFile = 1 << 20

// ReadPointer returns the content of the small regular file path the way
// git reads .git and commondir files: whole, less trailing CR and LF
// characters, after prefix (which must be there). It does not follow a
// final symlink (callers resolve links themselves, to see them) and never
// blocks on a FIFO.
func ReadPointer(path, prefix string) (string, error) {
	f, err := fspath.OpenRegular(path, unix.O_NOFOLLOW)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := fspath.ReadAtMost(f, maxFile)
	if err != nil {
		return "", errors.New("unreadable or too long")
	}
	s, ok := strings.CutPrefix(strings.TrimRight(string(b), "\r\n"), prefix)
	if !ok || s == "" {
		return "", errors.New("no path")
	}
	return s, nil
}

// Join is path relative to dir, or path if absolute. git does not clean
// ".." textually: the result is resolved by the kernel, links first.
func Join(dir, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return dir + "/" + path
}

// Find returns the repository git would use in dir: it looks at dir and
// each directory above it, in order, for a .git directory that is a
// repository, or a .git file naming one ("gitdir: X"), and otherwise at
// the directory itself being a bare repository. ok is false when there
// is none up to /. (git may stop earlier, at GIT_CEILING_DIRECTORIES or a
// filesystem boundary, and then uses none.)
func Find(dir string) (Repo, bool) {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if r, ok := At(d); ok {
			return r, true
		}
		if isRepository(d) {
			return withCommon(Repo{GitDir: d}), true
		}
		if d == "/" {
			return Repo{}, false
		}
	}
}

// At returns the repository of the working tree dir, behind dir/.git
// (a directory, or a gitfile), without looking further up.
func At(dir string) (Repo, bool) {
	git := filepath.Join(dir, ".git")
	fi, err := os.Stat(git)
	switch {
	case err != nil:
		return Repo{}, false
	case fi.Mode().IsRegular():
		target, err := ReadPointer(git, "gitdir: ")
		if err != nil {
			// A symlink to a gitfile: git reads it through the link.
			if real, rerr := filepath.EvalSymlinks(git); rerr == nil {
				target, err = ReadPointer(real, "gitdir: ")
			}
		}
		if err != nil {
			return Repo{}, false
		}
		gitdir := Join(dir, target)
		if !isRepository(gitdir) {
			return Repo{}, false
		}
		return withCommon(Repo{GitDir: gitdir, Worktree: dir}), true
	case fi.IsDir() && isRepository(git):
		return withCommon(Repo{GitDir: git, Worktree: dir}), true
	}
	return Repo{}, false
}

// withCommon fills in CommonDir from the commondir file, if any.
func withCommon(r Repo) Repo {
	r.CommonDir = r.GitDir
	if c, err := ReadPointer(filepath.Join(r.GitDir, "commondir"), ""); err == nil {
		r.CommonDir = Join(r.GitDir, c)
	} else if real, err := filepath.EvalSymlinks(filepath.Join(r.GitDir, "commondir")); err == nil {
		if c, err := ReadPointer(real, ""); err == nil {
			r.CommonDir = Join(r.GitDir, c)
		}
	}
	return r
}

// isRepository reports whether dir is a repository to git (setup.c,
// is_git_directory): a valid HEAD (validHead), and objects and refs it
// may search (access X_OK, which a file with an execute bit passes too),
// in the common directory for a linked worktree's.
func isRepository(dir string) bool {
	if !validHead(filepath.Join(dir, "HEAD")) {
		return false
	}
	common := withCommon(Repo{GitDir: dir}).CommonDir
	for _, d := range []string{"objects", "refs"} {
		if unix.Access(filepath.Join(common, d), unix.X_OK) != nil {
			return false
		}
	}
	return true
}

// validHead reports whether git takes the file at path for a HEAD
// (refs.c, validate_headref): a symlink whose target starts with refs/
// (missing or not), or a file that says "ref: refs/…" or holds an
// object name.
func validHead(path string) bool {
	if target, err := os.Readlink(path); err == nil {
		return strings.HasPrefix(target, "refs/")
	}
	f, err := fspath.OpenRegular(path, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 255) // what git reads of it: a 256-byte buffer, less its NUL
	n, _ := io.ReadFull(f, b)
	s := string(b[:n])
	if ref, ok := strings.CutPrefix(s, "ref:"); ok && strings.HasPrefix(strings.TrimLeft(ref, " \t\n\v\f\r"), "refs/") {
		return true
	}
	isHex := func(n int) bool { return len(s) >= n && strings.Trim(strings.ToLower(s[:n]), "0123456789abcdef") == "" }
	return isHex(40) || isHex(64) // what follows the name does not count
}
