package orchestrator

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/execd/execd/internal/fspath"
	"github.com/execd/execd/internal/gitrepo"
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

// startupWhy says why a shell of the call must not run outside the
// sandbox, or "": it would read a startup file a sandboxed command could
// have written (SPEC §7.2): $BASH_ENV and $ENV; for a login shell (-l,
// --login, or one a script starts so) the profiles of /etc and of $HOME
// (.profile, .bash_profile, .bash_login, .bashrc, .bash_logout, and zsh's
// in $ZDOTDIR); zsh's .zshenv always. A HOME inside a writable root makes
// every such call stay in the sandbox, since a missing file there can be
// made.
func (o *Orchestrator) startupWhy(c call) string {
	get := func(k string) string { v, _ := lookupEnv(o.env, k); return v }
	home, zdot := get("HOME"), get("ZDOTDIR")
	if zdot == "" {
		zdot = home
	}
	var files []string
	for _, cmd := range append([][]string{c.argv}, policy.ScriptCommands(c.argv)...) {
		name, login := shellStartup(cmd)
		if name == "" {
			continue
		}
		for _, v := range []string{"BASH_ENV", "ENV"} {
			if p := get(v); p != "" {
				files = append(files, gitrepo.ExpandHome(p, home))
			}
		}
		if name == "zsh" && zdot != "" {
			files = append(files, filepath.Join(zdot, ".zshenv"), "/etc/zsh/zshenv")
		}
		if !login {
			continue
		}
		files = append(files, "/etc/profile", "/etc/bash.bashrc", "/etc/zsh/zprofile", "/etc/zsh/zlogin")
		if home != "" {
			for _, f := range []string{".profile", ".bash_profile", ".bash_login", ".bashrc", ".bash_logout"} {
				files = append(files, filepath.Join(home, f))
			}
		}
		if zdot != "" {
			for _, f := range []string{".zprofile", ".zshrc", ".zlogin", ".zlogout"} {
				files = append(files, filepath.Join(zdot, f))
			}
		}
	}
	for _, f := range files {
		if !filepath.IsAbs(f) || o.steerable(f) {
			return fmt.Sprintf("its shell reads %s, which a sandboxed command could have written", f)
		}
	}
	return ""
}

// shellStartup returns the shell cmd runs ("bash", "zsh", "sh"; "" when it
// is none) and whether it is a login shell.
func shellStartup(cmd []string) (string, bool) {
	name := strings.TrimPrefix(filepath.Base(cmd[0]), "-") // -bash: a login shell
	switch {
	case name == "bash" || name == "rbash":
		name = "bash"
	case name == "zsh":
	case slices.Contains([]string{"sh", "dash", "ash", "ksh", "mksh", "yash"}, name):
		name = "sh"
	default:
		return "", false
	}
	login := strings.HasPrefix(cmd[0], "-")
	for i := 1; i < len(cmd); i++ {
		a := cmd[i]
		switch {
		case a == "--" || a == "-" || !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+"):
			return name, login // options end
		case a == "--login":
			login = true
		case a == "--rcfile" || a == "--init-file" || a == "--emulate":
			i++
		case strings.HasPrefix(a, "--"):
		default: // a cluster; -o and -O take the next word
			login = login || (a[0] == '-' && strings.Contains(a, "l"))
			i += strings.Count(a, "o") + strings.Count(a, "O")
		}
	}
	return name, login
}
