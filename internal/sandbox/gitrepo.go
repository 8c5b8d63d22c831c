package sandbox

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/execd/execd/internal/fspath"
)

// How git finds the repository behind a .git entry (SPEC §8.2), for the
// protection of what git will use: paths are read and resolved as git
// reads and resolves them, not as they look.

// maxGitFile is the largest .git file git reads (and more than any
// commondir file needs).
const maxGitFile = 1 << 20

// gitFile returns the content of the small regular file at path the way
// git reads .git and commondir files: whole, less trailing CR and LF
// characters, after prefix (which must be there).
func gitFile(path, prefix string) (string, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", errors.New("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, maxGitFile+1))
	if err != nil || len(b) > maxGitFile {
		return "", errors.New("unreadable or too long")
	}
	s, ok := strings.CutPrefix(strings.TrimRight(string(b), "\r\n"), prefix)
	if !ok || s == "" {
		return "", errors.New("no path")
	}
	return s, nil
}

// gitRepository returns the directories git, working in dir, uses behind
// the .git entry at git (symlinks resolved): the repository, from a
// "gitdir: X" file or the entry itself, and its common directory when a
// commondir file names one, with the files read on the way and the
// symlinks passed to reach them. It is for the macOS profile and execd's
// own check of patches; the Linux helper walks the same steps pinning
// what it passes.
func gitRepository(dir, git string) (files, dirs []string) {
	repo := git
	if fi, err := os.Stat(git); err == nil && fi.Mode().IsRegular() {
		target, err := gitFile(git, "gitdir: ")
		if err != nil {
			return nil, nil
		}
		var links []string
		if repo, links, err = evalLinks(join(dir, target)); err != nil {
			return links, nil
		}
		files = append(files, links...)
		dirs = append(dirs, repo)
	}
	commondir, links, err := evalLinks(filepath.Join(repo, "commondir"))
	files = append(files, links...)
	if err != nil {
		return files, dirs
	}
	common, err := gitFile(commondir, "")
	if err != nil {
		return files, dirs
	}
	files = append(files, commondir)
	common, links, err = evalLinks(join(repo, common))
	files = append(files, links...)
	if err == nil {
		dirs = append(dirs, common)
	}
	return files, dirs
}

// evalLinks resolves the symlinks of the absolute path as the kernel
// would and returns the result with every symlink it passed: removing or
// replacing any of them would lead the path elsewhere.
func evalLinks(path string) (string, []string, error) {
	return fspath.Resolve(fspath.Disk, path, fspath.Options{})
}

// join is path relative to dir, or path if absolute.
func join(dir, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return dir + "/" + path // not Join: git does not clean ".." textually
}
