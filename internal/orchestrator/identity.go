package orchestrator

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/execd/execd/internal/fspath"
	"github.com/execd/execd/internal/policy"
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
// the exec (steerable). A program that is not found counts as planted
// (one may appear). With no writable roots nothing is.
func (o *Orchestrator) planted(name, dir string) bool {
	if len(o.roots) == 0 || !o.Sandboxed() {
		return false
	}
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return o.steerable(p)
	}
	for _, d := range filepath.SplitList(o.commandPath()) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		if o.steerable(d) {
			return true
		}
		if p := filepath.Join(d, name); isExecutable(p) {
			return o.steerable(p)
		}
	}
	return true
}

// plantedFor is planted for the programs of a call (policy's
// Request.Planted). A call that changes directory (cd, pushd) resolves a
// relative name (./tool) and relative PATH entries somewhere else than
// its own directory: those count as planted then.
func (o *Orchestrator) plantedFor(c call) func(argv0 string) bool {
	moves := slices.ContainsFunc(append(policy.Commands(c.argv), policy.ScriptCommands(c.argv)...), func(cmd []string) bool {
		switch filepath.Base(cmd[0]) {
		case "cd", "pushd", "popd":
			return true
		}
		return false
	})
	relative := slices.ContainsFunc(filepath.SplitList(o.commandPath()), func(d string) bool { return !filepath.IsAbs(d) })
	return func(argv0 string) bool {
		if len(o.roots) == 0 || !o.Sandboxed() {
			return false
		}
		if moves && ((strings.Contains(argv0, "/") && !filepath.IsAbs(argv0)) || (relative && !strings.Contains(argv0, "/"))) {
			return true
		}
		return o.planted(argv0, c.cwd)
	}
}

// steerable reports whether a sandboxed command could change what the
// absolute path p leads to: p as written, where it leads (as far as it
// exists), or a symlink on the way lies in a writable root, and not in
// a repository protected since start. A path that cannot be resolved
// counts as steerable.
func (o *Orchestrator) steerable(p string) bool {
	p = filepath.Clean(p)
	final, links, err := fspath.Resolve(fspath.Disk, p, fspath.Options{KeepMissing: true})
	if err != nil {
		return true
	}
	return slices.ContainsFunc(append(links, p, final), func(q string) bool {
		return o.inRoot(q) && !o.protectedSinceStart(q)
	})
}

// inRoot reports whether p is a writable root or lies below one.
func (o *Orchestrator) inRoot(p string) bool {
	return slices.ContainsFunc(o.roots, func(r sandbox.Root) bool { return within(p, r.Path) })
}
