package orchestrator

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/execd/execd/internal/fspath"
	"github.com/execd/execd/internal/gitrepo"
	"github.com/execd/execd/internal/policy"
	"github.com/execd/execd/internal/sandbox"
)

// git runs programs its repository names: hooks, core.fsmonitor,
// filters, diff drivers, core.sshCommand, pagers. A git that runs
// without the sandbox (lifted by allow rules or by the user's approval)
// must therefore not use a repository a sandboxed command could have
// written (SPEC §7.2): this file decides, and names the repository to git
// so that one made in the meantime is not used.

// fileID is a file as it was: device and inode.
type fileID struct{ dev, ino uint64 }

// recordGit records, at start, the repositories behind the protected
// .git of each root (and of the submodules its .gitmodules lists), with
// every file, link and directory they are made of, as every launch from
// now on protects them (sandbox.Planned, with the helper's budgets): no
// sandboxed command of this execd can write them. The submodules kept
// stay protected in every launch, whatever .gitmodules says then.
func (o *Orchestrator) recordGit() {
	o.gitStart = map[string]fileID{}
	if !o.Sandboxed() || !slices.Contains(o.ProtectedNames(), ".git") {
		return
	}
	var submodules []string
	for _, r := range o.roots {
		if r.Shared {
			continue
		}
		for _, p := range sandbox.ProtectedPaths([]string{r.Path}, []string{".git"}, nil) {
			if p != filepath.Join(r.Path, ".git") && (filepath.Base(p) == ".git" || isSubmoduleDir(r.Path, p)) {
				// A submodule's .git, or the directory of one not
				// initialized.
				submodules = append(submodules, p)
			}
		}
	}
	kept, readOnly, err := sandbox.Planned(o.roots, []string{".git"}, submodules)
	if err != nil {
		o.log.Warn("cannot tell which repositories every launch protects: git runs in the sandbox", zap.Error(err))
		return
	}
	o.submodulePaths = kept
	for _, p := range readOnly {
		if id, ok := statID(p); ok {
			o.gitStart[p] = id
		}
	}
}

// isSubmoduleDir reports whether p is the directory of a submodule that
// the .gitmodules of root, or of a submodule in it, lists (one without a
// .git yet, which ProtectedPaths returns in its place).
func isSubmoduleDir(root, p string) bool {
	for d := filepath.Dir(p); within(d, root); d = filepath.Dir(d) {
		subs, _ := gitrepo.Submodules(d)
		if slices.ContainsFunc(subs, func(s string) bool { return filepath.Join(d, s) == p }) {
			return true
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	return false
}

func statID(p string) (fileID, bool) {
	fi, err := os.Lstat(p)
	if err != nil {
		return fileID{}, false
	}
	dev, ino := sandbox.FileID(fi)
	return fileID{dev, ino}, true
}

// protectedSinceStart reports whether the real path p lies in (or is) a
// part of a repository recorded at start that is still the same file.
func (o *Orchestrator) protectedSinceStart(p string) bool {
	for r, id := range o.gitStart {
		if within(p, r) {
			if now, ok := statID(r); ok && now == id {
				return true
			}
		}
	}
	return false
}

// liftGit decides whether the git commands of a call may run without the
// sandbox. It returns the environment that names their repository to
// git (GIT_DIR, GIT_WORK_TREE), or why they must run in the sandbox.
func (o *Orchestrator) liftGit(c call) (env []string, why string) {
	all := append(policy.Commands(c.argv), policy.ScriptCommands(c.argv)...)
	var gits [][]string
	for _, cmd := range all {
		// git, or one of its programs called directly (git-status,
		// /usr/lib/git-core/git-upload-pack).
		if base := filepath.Base(cmd[0]); base == "git" {
			gits = append(gits, cmd)
		} else if sub, ok := strings.CutPrefix(base, "git-"); ok && sub != "" {
			gits = append(gits, append([]string{"git", sub}, cmd[1:]...))
		}
	}
	if len(gits) == 0 {
		return nil, ""
	}
	if strings.Contains(strings.Join(c.argv, " "), "GIT_") || policy.SetsEnvironment(c.argv) {
		return nil, "the call sets the environment git runs in (HOME, GIT_…), which execd does not follow"
	}
	dirs, why := o.gitDirs(c.cwd, all)
	if why != "" {
		return nil, why
	}
	var repo *gitrepo.Repo
	clones := 0
	for _, g := range gits {
		sub := subcommand(g[1:])
		if sub == "clone" {
			clones++
		}
		for _, d := range dirs {
			// git works in the physical directory (getcwd), whatever
			// links led there.
			if real, _, err := fspath.Resolve(fspath.Disk, d, fspath.Options{KeepMissing: true}); err == nil {
				d = real
			}
			dir, extra, why := gitArgs(d, g[1:])
			if why != "" {
				return nil, why
			}
			r, ok := gitrepo.Find(dir)
			switch {
			case !ok && o.steerable(dir):
				return nil, fmt.Sprintf("a sandboxed command could make a repository in %s", dir)
			case !ok:
				continue // git finds none there, nor can one appear
			case repo != nil && *repo != r:
				return nil, "it uses more than one repository"
			case sub == "init":
				// git init takes GIT_DIR for the repository to make.
				return nil, "git init inside a repository makes one execd cannot name to git beforehand"
			}
			repo = &r
			left := maxSubmodules
			if why := o.gitTrust(r, extra, dir, sub, 0, &left); why != "" {
				return nil, why
			}
		}
	}
	if repo == nil {
		return nil, ""
	}
	env = []string{"GIT_DIR=" + repo.GitDir}
	switch {
	case clones > 0 && clones < len(gits):
		return nil, "it clones a repository and runs git in others, which execd cannot name to git all at once"
	case clones > 0:
		// git clone refuses a GIT_WORK_TREE that exists; GIT_DIR only
		// steers what it reads before it makes the clone.
	case repo.Worktree != "":
		env = append(env, "GIT_WORK_TREE="+repo.Worktree)
	}
	return env, ""
}

// maxGitDirs bounds the directories a call's git may run in.
const maxGitDirs = 8

// gitDirs returns the directories the commands of a call may run in: its
// own, and where each plain cd DIR may lead from each of those (a cd that
// fails leaves the directory as it was, so both count).
func (o *Orchestrator) gitDirs(cwd string, cmds [][]string) ([]string, string) {
	dirs := []string{cwd}
	for _, cmd := range cmds {
		switch filepath.Base(cmd[0]) {
		case "cd", "pushd":
		case "popd":
			return nil, "it changes directories with popd, which execd does not follow"
		default:
			continue
		}
		target := ""
		switch args := cmd[1:]; {
		case len(args) == 0:
			target, _ = lookupEnv(o.env, "HOME")
		case len(args) == 1 && args[0] != "-" && !strings.HasPrefix(args[0], "-"):
			target = args[0]
		}
		if target == "" {
			return nil, fmt.Sprintf("`%s` leads to a directory execd does not follow", policy.ShellJoin(cmd))
		}
		for _, d := range slices.Clone(dirs) {
			if t := filepath.Join(d, target); !filepath.IsAbs(target) {
				dirs = append(dirs, t)
			} else {
				dirs = append(dirs, filepath.Clean(target))
			}
		}
		slices.Sort(dirs)
		dirs = slices.Compact(dirs)
		if len(dirs) > maxGitDirs {
			return nil, "it changes directories too often for execd to follow"
		}
	}
	return dirs, ""
}

// gitArgs applies git's global options to the directory it runs in: -C
// DIR (each relative to the last), and -c KEY=VALUE, returned as
// configuration entries. Options that point git at another repository,
// configuration or program are refused.
func gitArgs(dir string, args []string) (string, []gitrepo.Entry, string) {
	var extra []gitrepo.Entry
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-C" && i+1 < len(args):
			i++
			if args[i] != "" {
				// git changes into it: a ".." after a symlink leaves
				// the link's target, not the link's directory.
				real, _, err := fspath.Resolve(fspath.Disk, gitrepo.Join(dir, args[i]), fspath.Options{KeepMissing: true})
				if err != nil {
					return "", nil, fmt.Sprintf("git -C %s leads nowhere execd can follow: %v", args[i], err)
				}
				dir = real
			}
		case a == "-c" && i+1 < len(args):
			i++
			k, v, ok := strings.Cut(args[i], "=")
			extra = append(extra, gitrepo.Entry{Key: strings.ToLower(k), Value: v, Bare: !ok})
		case strings.HasPrefix(a, "--git-dir"), strings.HasPrefix(a, "--work-tree"), strings.HasPrefix(a, "--exec-path="),
			strings.HasPrefix(a, "--config-env"), strings.HasPrefix(a, "--namespace"), a == "--bare":
			return "", nil, fmt.Sprintf("git %s points it at a repository or program execd does not follow", a)
		case strings.HasPrefix(a, "-"):
		default:
			return dir, extra, ""
		}
	}
	return dir, extra, ""
}

// subcommand is git's subcommand in its arguments (past global options).
func subcommand(args []string) string {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-C" || a == "-c":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}

// maxGitDepth bounds how deep submodules of submodules are checked, and
// maxSubmodules how many one repository may have in all (the helper
// protects no more).
const (
	maxGitDepth   = 3
	maxSubmodules = 64
)

// gitTrust says why git must not run outside the sandbox with repository
// r, or "": its repository and common directory, its configuration
// (the repository's, the global ones, what they include, and extra from
// -c), the programs and hooks that configuration names, and its
// submodules must all be out of the sandboxed commands' reach (steerable
// false).
func (o *Orchestrator) gitTrust(r gitrepo.Repo, extra []gitrepo.Entry, dir, sub string, depth int, left *int) string {
	for _, d := range []string{r.GitDir, r.CommonDir} {
		if o.steerable(d) {
			return fmt.Sprintf("its repository %s was not a protected repository when execd started, so a sandboxed command may have written its configuration or hooks", d)
		}
	}
	if why := o.taintedRepo(r); why != "" {
		return why
	}
	if why := o.homeWhy(r); why != "" {
		return why
	}
	entries, why := o.gitConfig(r, extra, dir)
	if why != "" {
		return why
	}
	hooksPath := ""
	for _, e := range entries {
		if e.Key == "core.hookspath" {
			hooksPath = e.Value
		}
		if strings.HasPrefix(e.Key, "alias.") && e.Key != "alias."+strings.ToLower(sub) {
			continue // only the alias run matters (names are case-insensitive)
		}
		if why := o.gitEntry(r, e); why != "" {
			return why
		}
	}
	hooks := r.HooksDir(hooksPath)
	if o.steerable(hooks) {
		return fmt.Sprintf("its hooks directory %s is within reach of sandboxed commands", hooks)
	}
	if list, err := os.ReadDir(hooks); err == nil {
		for _, h := range list {
			if h.Type()&os.ModeSymlink != 0 && o.steerable(filepath.Join(hooks, h.Name())) {
				return fmt.Sprintf("its hook %s leads within reach of sandboxed commands", filepath.Join(hooks, h.Name()))
			}
		}
	}
	if r.Worktree == "" {
		return ""
	}
	subs, err := gitrepo.Submodules(r.Worktree)
	if err != nil {
		return fmt.Sprintf("its .gitmodules does not parse: %v", err)
	}
	// git status looks into every submodule its index records, listed in
	// .gitmodules (which sandboxed commands can write) or not.
	links, err := r.Gitlinks()
	if err != nil {
		return fmt.Sprintf("its index does not show its submodules: %v", err)
	}
	for _, l := range links {
		if !slices.Contains(subs, l) {
			subs = append(subs, l)
		}
	}
	if len(subs) > 0 && depth >= maxGitDepth {
		return fmt.Sprintf("it has submodules deeper than the %d levels the sandbox protects", maxGitDepth)
	}
	for _, s := range subs {
		if *left--; *left < 0 {
			return fmt.Sprintf("it has more than the %d submodules the sandbox protects", maxSubmodules)
		}
		dir := filepath.Join(r.Worktree, s)
		if o.steerable(filepath.Join(dir, ".git")) {
			return fmt.Sprintf("the .git of its submodule %s was not protected when execd started", s)
		}
		if sr, ok := gitrepo.At(dir); ok {
			// An absorbed submodule keeps its repository in the
			// parent's (modules/NAME), trusted with it; one that keeps
			// it in its working tree may have been made by a sandboxed
			// command before it was listed anywhere.
			modules, err1 := filepath.EvalSymlinks(filepath.Join(r.CommonDir, "modules"))
			common, err2 := filepath.EvalSymlinks(sr.CommonDir)
			if err1 != nil || err2 != nil || !within(common, modules) {
				return fmt.Sprintf("its submodule %s keeps its repository in its working tree, where a sandboxed command could have made it", s)
			}
			if why := o.gitTrust(sr, nil, dir, "", depth+1, left); why != "" {
				return "submodule " + s + ": " + why
			}
		} else if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return fmt.Sprintf("its submodule %s has a .git execd does not take for a repository, which git may", s)
		}
	}
	return ""
}

// homeWhy says why repository r, kept in a writable root, may be one a
// sandboxed command made, or "": only a root's own repository (behind
// its .git) and the submodules absorbed into it (its modules/) are
// protected from the moment they exist. Any other (a nested repository,
// a bare one, a submodule that keeps its .git directory in its working
// tree) may have been made while nothing protected it, and protected
// only later, once .gitmodules listed it or a .git file pointed to it.
func (o *Orchestrator) homeWhy(r gitrepo.Repo) string {
	common, err := filepath.EvalSymlinks(r.CommonDir)
	if err != nil {
		return fmt.Sprintf("its repository %s cannot be followed: %v", r.CommonDir, err)
	}
	if !o.inRoot(common) {
		return ""
	}
	for _, root := range o.roots {
		top, ok := gitrepo.At(root.Path)
		if root.Shared || !ok {
			continue
		}
		if tc, err := filepath.EvalSymlinks(top.CommonDir); err == nil && (common == tc || within(common, filepath.Join(tc, "modules"))) {
			return ""
		}
	}
	return fmt.Sprintf("its repository %s is in a writable root and is neither a root's own nor a submodule's kept in one (modules/), "+
		"so a sandboxed command may have made it before it was protected", common)
}

// gitConfigFiles are git's global configuration files in the commands'
// environment.
func (o *Orchestrator) gitConfigFiles() []string {
	get := func(k string) string { v, _ := lookupEnv(o.env, k); return v }
	home := get("HOME")
	var files []string
	if g := get("GIT_CONFIG_GLOBAL"); g != "" {
		files = append(files, g)
	} else {
		xdg := get("XDG_CONFIG_HOME")
		if xdg == "" && home != "" {
			xdg = filepath.Join(home, ".config")
		}
		if xdg != "" {
			files = append(files, filepath.Join(xdg, "git", "config"))
		}
		if home != "" {
			files = append(files, filepath.Join(home, ".gitconfig"))
		}
	}
	if get("GIT_CONFIG_NOSYSTEM") == "" {
		sys := get("GIT_CONFIG_SYSTEM")
		if sys == "" {
			sys = "/etc/gitconfig"
		}
		files = append(files, sys)
	}
	return files
}

// maxIncludes bounds the configuration files read for one repository.
const maxIncludes = 32

// gitConfig reads every configuration file git would read for r: system,
// global, the repository's, and what they and extra (-c on git's command
// line, in dir) include (every include, whatever its condition). A file a
// sandboxed command could write (or create) is a reason to stay in the
// sandbox.
func (o *Orchestrator) gitConfig(r gitrepo.Repo, extra []gitrepo.Entry, dir string) ([]gitrepo.Entry, string) {
	home, _ := lookupEnv(o.env, "HOME")
	todo := append(o.gitConfigFiles(), r.ConfigFiles()...)
	out := slices.Clone(extra)
	for _, e := range extra {
		if gitrepo.KindOf(e) == gitrepo.Include {
			todo = append(todo, gitrepo.Join(dir, gitrepo.ExpandHome(e.Value, home)))
		}
	}
	for n := 0; len(todo) > 0; n++ {
		f := todo[0]
		todo = todo[1:]
		if n >= maxIncludes {
			return nil, "its configuration includes too many files"
		}
		if !filepath.IsAbs(f) || o.steerable(f) {
			return nil, fmt.Sprintf("its configuration file %s is within reach of sandboxed commands", f)
		}
		entries, err := gitrepo.ReadConfig(f)
		if err != nil {
			return nil, fmt.Sprintf("its configuration file %s does not parse: %v", f, err)
		}
		for _, e := range entries {
			if gitrepo.KindOf(e) == gitrepo.Include {
				todo = append(todo, gitrepo.Join(filepath.Dir(f), gitrepo.ExpandHome(e.Value, home)))
			}
		}
		out = append(out, entries...)
	}
	return out, ""
}

// shellMeta are the characters that make a configured command a shell
// command rather than a program and its arguments.
const shellMeta = ";&|$`()<>{}*?[]\\\"'\n"

// gitEntry says why a configuration variable steers git to something a
// sandboxed command could have written, or "": a path (core.hooksPath is
// checked as the hooks directory), or a command whose program or file
// arguments lie within reach, or whose bare program PATH could supply.
func (o *Orchestrator) gitEntry(r gitrepo.Repo, e gitrepo.Entry) string {
	home, _ := lookupEnv(o.env, "HOME")
	base := r.Worktree
	if base == "" {
		base = r.GitDir
	}
	switch gitrepo.KindOf(e) {
	case gitrepo.Path:
		// core.hooksPath: checked as the hooks directory.
	case gitrepo.Command:
		words := strings.FieldsFunc(strings.TrimPrefix(strings.TrimSpace(e.Value), "!"), func(r rune) bool {
			return r == ' ' || r == '\t' || strings.ContainsRune(shellMeta, r)
		})
		for i, w := range words {
			p := gitrepo.ExpandHome(w, home)
			switch {
			case strings.Contains(p, "/") || strings.HasPrefix(w, "~"):
				p = gitrepo.Join(base, p)
			case i == 0:
				if o.pathSteerable() {
					return fmt.Sprintf("its configuration %s runs %s, and a PATH entry is within reach of sandboxed commands", e.Key, w)
				}
				continue
			default:
				p = filepath.Join(base, p)
				if _, err := os.Lstat(p); err != nil {
					continue // not a file of the working tree
				}
			}
			if o.steerable(p) {
				return fmt.Sprintf("its configuration %s runs %s, within reach of sandboxed commands", e.Key, e.Value)
			}
		}
	}
	return ""
}

// pathSteerable reports whether an entry of the commands' PATH is within
// reach of sandboxed commands: a bare program name could then run one
// they planted.
func (o *Orchestrator) pathSteerable() bool {
	for _, d := range filepath.SplitList(o.commandPath()) {
		if d == "" || !filepath.IsAbs(d) || o.steerable(d) {
			return true
		}
	}
	return false
}

// A root whose .git is missing when a sandboxed command starts is one
// where that command may make a repository, with a configuration or
// hooks of its choosing, which every later launch then protects as the
// user's. execd keeps such roots in the file Options.GitState, from one
// start to the next, and trusts no repository at their top to run git
// outside the sandbox (SPEC §7.2) until the user removes the line.

// loadTaint reads the roots recorded in the state file.
func (o *Orchestrator) loadTaint() {
	o.tainted = map[string]bool{}
	if o.gitState == "" {
		return
	}
	b, err := readSmall(o.gitState)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		o.log.Warn("git state file unreadable: no repository in a root is trusted to run git outside the sandbox",
			zap.String("file", o.gitState), zap.Error(err))
		o.tainted["/"] = true // within every root
		return
	}
	for line := range strings.Lines(string(b)) {
		if p := strings.TrimRight(line, "\n"); filepath.IsAbs(p) {
			o.tainted[filepath.Clean(p)] = true
		}
	}
}

// taintRoots records, before a sandboxed launch, the roots without a
// repository behind .git (missing, or leading nowhere yet): the command
// may make one.
func (o *Orchestrator) taintRoots() {
	if !slices.Contains(o.ProtectedNames(), ".git") {
		return // no repository in a root is trusted (recordGit) anyway
	}
	for _, r := range o.roots {
		if r.Shared {
			continue
		}
		o.taintMu.Lock()
		known := o.tainted[r.Path]
		o.taintMu.Unlock()
		if known {
			continue
		}
		if _, ok := gitrepo.At(r.Path); ok {
			continue // a repository: protected (a .git that leads nowhere yet is not)
		}
		o.taintMu.Lock()
		o.tainted[r.Path] = true
		o.taintMu.Unlock()
		if err := appendLine(o.gitState, r.Path); err != nil {
			o.log.Warn("cannot record a root without .git: it is untrusted for git until execd restarts",
				zap.String("root", r.Path), zap.String("file", o.gitState), zap.Error(err))
		}
	}
}

// TaintedRoots returns the writable roots where a sandboxed command ran
// while the root had no .git, and the file that keeps them, for execd
// doctor.
func (o *Orchestrator) TaintedRoots() ([]string, string) {
	o.taintMu.Lock()
	defer o.taintMu.Unlock()
	var out []string
	for r := range o.tainted {
		out = append(out, r)
	}
	slices.Sort(out)
	return out, o.gitState
}

// taintedRepo says why a repository kept in (or working in) a recorded
// root is not trusted, or "": anything there that was protected later,
// a sandboxed command may have made.
func (o *Orchestrator) taintedRepo(r gitrepo.Repo) string {
	o.taintMu.Lock()
	defer o.taintMu.Unlock()
	for _, d := range []string{r.Worktree, r.GitDir, r.CommonDir} {
		if d == "" {
			continue
		}
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			real = d
		}
		for t := range o.tainted {
			if !within(real, t) {
				continue
			}
			where := "by this execd"
			if o.gitState != "" {
				where = "in " + o.gitState + " (remove the line to trust a repository you made yourself)"
			}
			return fmt.Sprintf("its repository %s is in %s, where a sandboxed command ran while there was no .git, so that command may have made it or written its configuration or hooks; execd records such places %s", real, t, where)
		}
	}
	return ""
}

// readSmall reads the regular file at path, of at most 1 MiB, never
// through a symlink nor blocking on a FIFO.
func readSmall(path string) ([]byte, error) {
	const limit = 1 << 20
	f, err := fspath.OpenRegular(path, unix.O_NOFOLLOW)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return fspath.ReadAtMost(f, limit)
}

// appendLine appends line to the file at path (created 0600 with its
// directory), under an exclusive lock, never through a symlink nor into
// anything but a regular file; "" is no file.
func appendLine(path, line string) error {
	if path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_APPEND|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", path)
	}
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		return err
	}
	_, err = f.WriteString(line + "\n")
	return err
}
