package sandbox

import (
	"os"
	"path/filepath"

	"github.com/execd/execd/internal/fspath"
	"github.com/execd/execd/internal/gitrepo"
)

// How git finds the repository behind a .git entry (SPEC §8.2), for the
// protection of what git will use: paths are read and resolved as git
// reads and resolves them, not as they look.

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
		target, err := gitrepo.ReadPointer(git, "gitdir: ")
		if err != nil {
			return nil, nil
		}
		var links []string
		if repo, links, err = evalLinks(gitrepo.Join(dir, target)); err != nil {
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
	common, err := gitrepo.ReadPointer(commondir, "")
	if err != nil {
		return files, dirs
	}
	files = append(files, commondir)
	common, links, err = evalLinks(gitrepo.Join(repo, common))
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
