package patch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// step is a change Commit made, and how to take it back.
type step struct {
	f     *file
	wrote bool     // f.real was written
	aside string   // where f.real was set aside (removed), or ""
	dirs  []string // directories created for it, outermost first
}

// Commit writes the plan: each file through a temporary file renamed into
// place, each removal by a rename aside, in the order the patch first
// touched them. If one fails, or ctx ends before the last, the changes
// already made are taken back and the error names the file that was next
// (and any that could not be restored). Once every file is in place the
// removed ones are unlinked.
func (pl *Plan) Commit(ctx context.Context) error {
	done := make([]step, 0, len(pl.files))
	for _, f := range pl.files {
		if ctx.Err() != nil {
			return rollback(done, failf("The patch was stopped before %s was written (%v); nothing was changed.",
				f.name, context.Cause(ctx)))
		}
		s, err := commitFile(f)
		if err != nil {
			return rollback(append(done, s), err)
		}
		done = append(done, s)
	}
	for _, s := range done {
		if s.aside != "" {
			_ = remove(s.aside) // the patch is applied; a leftover is only a hidden file
		}
	}
	return nil
}

func commitFile(f *file) (step, error) {
	s := step{f: f}
	switch {
	case f.kind == regular && f.written:
		if f.existed && f.was.isRegular() && bytes.Equal(f.data, f.old) && f.perm != nil && *f.perm == f.was.perm() {
			return s, nil // unchanged: keep its times
		}
		var err error
		if s.dirs, err = mkdirAll(filepath.Dir(f.real)); err != nil {
			return s, failWith(err, "Failed to create parent directories for %s: %s", f.name, describe(err))
		}
		if err := writeFile(f.real, f.data, writtenPerm(f.perm), f.owner); err != nil {
			return s, failWith(err, "Failed to write file %s: %s", f.name, describe(err))
		}
		s.wrote = true
	case f.kind == absent && f.existed:
		aside, err := setAside(f.real)
		if err != nil {
			return s, failWith(err, "Failed to delete file %s: %s", f.name, describe(err))
		}
		s.aside = aside
	}
	return s, nil
}

// writtenPerm is the mode of a file given new content: its own, less the
// set-user-ID bit and a set-group-ID bit that makes it run as its group,
// as the kernel clears them when anyone but root writes a file: a patch
// must not turn a privileged program into another.
func writtenPerm(perm *uint32) *uint32 {
	if perm == nil {
		return nil
	}
	p := *perm &^ unix.S_ISUID
	if p&unix.S_IXGRP != 0 {
		p &^= unix.S_ISGID
	}
	return &p
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
		return failWith(errors.Unwrap(err), "%s; the files already changed were restored except %s", err, strings.Join(failed, ", "))
	}
	return err
}

func undo(s step) error {
	f := s.f
	switch {
	case s.aside != "":
		return putBack(s.aside, f.real)
	case !s.wrote:
		return nil
	case !f.existed:
		return remove(f.real)
	case f.link != "": // it was a symlink
		if err := remove(f.real); err != nil {
			return err
		}
		return symlink(f.link, f.real)
	}
	perm := f.was.perm()
	return writeFile(f.real, f.old, &perm, &f.was)
}
