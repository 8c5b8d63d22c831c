package orchestrator

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrNotFound is the cause of a lookPath failure for a bare name.
var ErrNotFound = errors.New("command not found")

// lookPath resolves a program name like a shell does, against pathEnv (the
// command's own PATH, not execd's): a name with a slash is taken relative
// to dir; a bare name is searched in each PATH entry, where an empty or
// relative entry is relative to dir.
func lookPath(name, pathEnv, dir string) (string, error) {
	if name == "" {
		return "", errors.New("empty program name")
	}
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := checkExecutable(p); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return "", fmt.Errorf("%w: %s does not exist", ErrNotFound, p)
			}
			return "", err
		}
		return p, nil
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		p := filepath.Join(d, name)
		if checkExecutable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w in PATH", ErrNotFound)
}

func checkExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return errors.New("is a directory")
	}
	if fi.Mode()&0o111 == 0 || unix.Access(p, unix.X_OK) != nil {
		return errors.New("permission denied: not executable")
	}
	return nil
}

func isExecutable(p string) bool { return checkExecutable(p) == nil }
