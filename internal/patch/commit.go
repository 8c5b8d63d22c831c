package patch

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
)

// step is a change Commit made, and how to take it back.
type step struct {
	f       *file
	wrote   bool     // f.real was written
	removed bool     // f.real was removed
	dirs    []string // directories created for it, outermost first
}

// Commit writes the plan: each file through a temporary file renamed into
// place, each removal, in the order the patch first touched them. If one
// fails, the changes already made are taken back and the error names the
// file that failed (and any that could not be restored).
func (pl *Plan) Commit() error {
	done := make([]step, 0, len(pl.files))
	for _, f := range pl.files {
		s, err := commitFile(f)
		if err != nil {
			return rollback(append(done, s), err)
		}
		done = append(done, s)
	}
	return nil
}

func commitFile(f *file) (step, error) {
	s := step{f: f}
	switch {
	case f.exists && f.data != nil:
		if f.existed && f.old != nil && bytes.Equal(f.data, f.old) && f.perm != nil && *f.perm == f.was.perm() {
			return s, nil // unchanged: keep its times
		}
		var err error
		if s.dirs, err = mkdirAll(filepath.Dir(f.real)); err != nil {
			return s, failf("Failed to create parent directories for %s: %s", f.name, describe(err))
		}
		if err := writeFile(f.real, f.data, f.perm, f.owner()); err != nil {
			return s, failf("Failed to write file %s: %s", f.name, describe(err))
		}
		s.wrote = true
	case !f.exists && f.existed:
		if err := remove(f.real); err != nil {
			return s, failf("Failed to delete file %s: %s", f.name, describe(err))
		}
		s.removed = true
	}
	return s, nil
}

// owner is whose the file is, to keep, or nil for a new file.
func (f *file) owner() *entry {
	if !f.existed || f.old == nil {
		return nil
	}
	return &f.was
}

// rollback takes back done, last first, and returns err with what could
// not be restored.
func rollback(done []step, err error) error {
	var failed []string
	for i := len(done) - 1; i >= 0; i-- {
		s := done[i]
		if rerr := undo(s); rerr != nil {
			failed = append(failed, fmt.Sprintf("%s (%s)", s.f.name, describe(rerr)))
		}
		for j := len(s.dirs) - 1; j >= 0; j-- {
			_ = rmdir(s.dirs[j]) // fails when something else was put there: then it stays
		}
	}
	if len(failed) > 0 {
		return failf("%s; the files already changed were restored except %s", err, strings.Join(failed, ", "))
	}
	return err
}

func undo(s step) error {
	f := s.f
	switch {
	case s.wrote && f.existed && f.old != nil:
		perm := f.was.perm()
		return writeFile(f.real, f.old, &perm, f.owner())
	case s.wrote:
		return remove(f.real)
	case s.removed && f.link != "":
		return symlink(f.link, f.real)
	case s.removed:
		perm := f.was.perm()
		return writeFile(f.real, f.old, &perm, f.owner())
	}
	return nil
}
