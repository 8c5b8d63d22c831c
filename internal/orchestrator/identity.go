package orchestrator

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/execd/execd/internal/fspath"
	"github.com/execd/execd/internal/sandbox"
)

// planted reports whether the program name, run in dir, could have been
// written by a sandboxed command (SPEC §7.2): found as the shell or execd
// would find it (a name with a slash relative to dir; a bare name in each
// entry of the commands' PATH in turn, an empty or relative entry
// relative to dir), it is planted when the file, a symlink on the way to
// it, or any PATH entry searched before it up to its own lies in a
// writable root: a sandboxed command, even one still running in another
// session, could put a program of that name there between this check and
// the exec. A program that is not found counts as planted (one may
// appear). With no writable roots nothing is.
func (o *Orchestrator) planted(name, dir string) bool {
	if len(o.roots) == 0 || !o.Sandboxed() {
		return false
	}
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return o.writablePath(p)
	}
	for _, d := range filepath.SplitList(o.commandPath()) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		if o.writablePath(d) {
			return true
		}
		if p := filepath.Join(d, name); isExecutable(p) {
			return o.writablePath(p)
		}
	}
	return true
}

// writablePath reports whether a sandboxed command could change what the
// absolute path p leads to: p as written, where it leads with its
// symlinks resolved (as far as it exists), or a symlink on the way lies
// in a writable root. A path that cannot be resolved counts as writable.
func (o *Orchestrator) writablePath(p string) bool {
	p = filepath.Clean(p)
	final, links, err := fspath.Resolve(fspath.Disk, p, fspath.Options{KeepMissing: true})
	if err != nil {
		return true
	}
	return slices.ContainsFunc(append(links, p, final), o.inRoot)
}

// inRoot reports whether p is a writable root or lies below one.
func (o *Orchestrator) inRoot(p string) bool {
	return slices.ContainsFunc(o.roots, func(r sandbox.Root) bool { return within(p, r.Path) })
}
