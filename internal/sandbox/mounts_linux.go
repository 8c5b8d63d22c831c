package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/execd/execd/internal/gitrepo"
)

// openRoot is a writable root opened as an O_PATH descriptor.
type openRoot struct {
	Root
	fd int
}

// strict resolution: the recorded paths have no symlinks (Roots resolved
// them), so one met now means something changed.
const strict = unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openRoots opens each root by its recorded path and checks that it is
// the directory execd started with. A missing root, or one that leads
// elsewhere, is an error: running with less than the configured roots,
// or other ones, would be a different sandbox. The descriptors are
// close-on-exec.
func openRoots(roots []Root) ([]openRoot, error) {
	out := make([]openRoot, 0, len(roots))
	for _, r := range roots {
		fd, err := openat2(unix.AT_FDCWD, r.Path, unix.O_PATH|unix.O_DIRECTORY, strict)
		if err == nil {
			err = sameFile(fd, r.Dev, r.Ino)
		}
		if err != nil {
			return nil, fmt.Errorf("writable root %s: %w", r.Path, explainLookup(err))
		}
		out = append(out, openRoot{Root: r, fd: fd})
	}
	return out, nil
}

var errReplaced = errors.New("not the directory it was when execd started (moved or replaced since?); restart execd to use what is there now")

// explainLookup turns the errors of a strict lookup of a recorded path
// into what happened.
func explainLookup(err error) error {
	switch {
	case errors.Is(err, unix.ENOENT):
		return errors.New("missing (moved or removed since execd started?); restart execd to use what is there now")
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV), errors.Is(err, unix.ENOTDIR):
		return errReplaced // a symlink, or a file, on the way now
	}
	return err
}

func openat2(dirfd int, path string, flags int, resolve uint64) (int, error) {
	return unix.Openat2(dirfd, path, &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: resolve})
}

func sameFile(fd int, dev, ino uint64) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	return sameIDs(&st, dev, ino)
}

// isolateMounts runs in the helper's own user and mount namespaces,
// before the command (SPEC §8.3). It turns off user namespaces below this
// one and makes every mount read-only but the outermost roots, whose
// mounts stay as they were. Then it pins (mounts onto itself) every entry
// on the way from an outer root to a nested root or to a protected path,
// symlinks included: a mount point cannot be renamed or removed, so no
// sandboxed command can swap what those paths lead to. Last it makes the
// protected paths read-only and checks that they are. It returns the
// roots as the command will see them and the plan it applied.
func isolateMounts(p *Policy, roots []openRoot) ([]openRoot, *plan, error) {
	if err := checkOwnMountNamespace(); err != nil {
		return nil, nil, err
	}
	// Nested user namespaces would hand the command every capability
	// over fresh network and mount namespaces: kernel code (netfilter,
	// say) that is the usual way to attack the kernel.
	if err := os.WriteFile("/proc/sys/user/max_user_namespaces", []byte("0\n"), 0); err != nil {
		return nil, nil, fmt.Errorf("turn off nested user namespaces: %w", err)
	}
	// Nothing done here may propagate to the host's mounts.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, nil, fmt.Errorf("make mounts private: %w", err)
	}
	outer, inner := splitNested(roots)
	trees := make([]int, len(outer))
	for i, r := range outer {
		t, err := unix.OpenTree(r.fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
		if err != nil {
			return nil, nil, fmt.Errorf("copy the mounts of %s: %w", r.Path, err)
		}
		trees[i] = t
	}
	if err := readOnlyTree(unix.AT_FDCWD, "/", 0); err != nil {
		return nil, nil, fmt.Errorf("make / read-only: %w", err)
	}
	for i, r := range outer {
		if err := unix.MoveMount(trees[i], "", r.fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
			return nil, nil, fmt.Errorf("mount %s writable: %w", r.Path, err)
		}
	}
	visible, err := openRoots(rootsOf(outer))
	if err != nil {
		return nil, nil, err
	}
	// Another sandboxed command of the user's, running meanwhile, may
	// change an entry between plan and apply: plan again then.
	var pl *plan
	for attempt := 1; ; attempt++ {
		pl, err = pinAndProtect(p, visible, roots, inner)
		if err == nil {
			break
		}
		if !errors.Is(err, errChanged) || attempt == 3 {
			return nil, nil, err
		}
	}
	for _, r := range inner {
		o := enclosing(visible, r.Path)
		fd, err := openat2(o.fd, strings.TrimPrefix(r.Path, o.Path+"/"), unix.O_PATH|unix.O_DIRECTORY, strict|unix.RESOLVE_BENEATH)
		if err == nil {
			err = sameFile(fd, r.Dev, r.Ino)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("writable root %s: %w", r.Path, explainLookup(err))
		}
		visible = append(visible, openRoot{Root: r.Root, fd: fd})
	}
	return visible, pl, nil
}

// pinAndProtect plans the pins and read-only entries and applies them.
func pinAndProtect(p *Policy, outer, roots, inner []openRoot) (*plan, error) {
	pl, err := planProtection(p, outer, roots, inner, &lookups{})
	if err != nil {
		return nil, err
	}
	return pl, pl.apply()
}

// planProtection plans the pins and read-only entries of a launch,
// looking files up with fs. It works from paths alone, so execd can plan
// outside the namespaces too (roots with fd -1), with its own rights: it
// then sets blind where a directory it may not search hid something.
func planProtection(p *Policy, outer, roots, inner []openRoot, fs *lookups) (*plan, error) {
	pl := &plan{fs: fs, outer: outer, roots: rootsOf(roots), entries: map[string]*planned{}}
	for _, r := range inner {
		if err := pl.pinRoot(r.Root); err != nil {
			return nil, fmt.Errorf("writable root %s: %w", r.Path, err)
		}
	}
	for _, r := range roots {
		if r.Shared {
			continue
		}
		if err := pl.protectNames(r.Root, p.ProtectedNames); err != nil {
			return nil, err
		}
		if slices.Contains(p.ProtectedNames, ".git") {
			pl.submodules = maxSubmodules
			if err := pl.protectSubmodules(r.Path, 0); err != nil {
				return nil, err
			}
		}
	}
	// A budget for each: a path a command buried (a missing own file it
	// made a symlink through hundreds of directories, say) leaves only
	// itself unprotected. The submodules execd found at start get a
	// submodule's, so that many cannot make every launch slow.
	for _, path := range p.ProtectedPaths {
		pl.budget = pinsPerName
		if err := pl.protectBelow("/", path); err != nil {
			return nil, fmt.Errorf("protected path %s: %w", path, err)
		}
	}
	if _, err := pl.protectSubmodulePaths(p.SubmodulePaths); err != nil {
		return nil, err
	}
	return pl, nil
}

// protectSubmodulePaths protects each of paths (Policy.SubmodulePaths)
// with a submodule's budget of pins, and returns those it kept.
func (pl *plan) protectSubmodulePaths(paths []string) (kept []string, err error) {
	for _, path := range paths {
		pl.budget = pinsPerSubmodule
		if err := pl.protectBelow("/", path); err != nil {
			return nil, fmt.Errorf("protected path %s: %w", path, err)
		}
		if pl.entries[path] != nil {
			kept = append(kept, path)
		}
	}
	return kept, nil
}

// Planned returns what a launch keeps read-only for the protected names
// of each root that is not shared, and for each of submodules (the .git
// of a submodule, or its directory) when nothing but
// Policy.SubmodulePaths names it, each with a submodule's budget: the
// submodule paths kept, and every read-only entry (whatever lies below
// one is read-only too). It plans as a launch does, with execd's own
// rights and nothing mounted: what execd may not look up is left out, and
// a launch that has more to pin for other reasons only protects more.
func Planned(roots []Root, names, submodules []string) (kept, readOnly []string, err error) {
	all := make([]openRoot, len(roots))
	for i, r := range roots {
		all[i] = openRoot{Root: r, fd: -1}
	}
	outer, _ := splitNested(all)
	pl := &plan{fs: &lookups{}, outer: outer, roots: roots, entries: map[string]*planned{}}
	for _, r := range roots {
		if r.Shared {
			continue
		}
		if err := pl.protectNames(r, names); err != nil {
			return nil, nil, err
		}
	}
	if kept, err = pl.protectSubmodulePaths(submodules); err != nil {
		return nil, nil, err
	}
	for _, e := range pl.entries {
		if e.readOnly {
			readOnly = append(readOnly, e.path)
		}
	}
	slices.Sort(readOnly)
	return kept, readOnly, nil
}

// maxSubmoduleDepth bounds how deep submodules of submodules are
// protected, maxSubmodules how many in all for one root, and
// pinsPerSubmodule the new entries one may add: a command that lists
// thousands, or buries them deep, must not make every later launch slow.
// Those past the bounds are left alone (execd then runs no git outside
// the sandbox in that repository: its check finds them unprotected).
const (
	maxSubmoduleDepth = 3
	maxSubmodules     = 64
	pinsPerSubmodule  = 8
)

// protectSubmodules plans to protect the .git of every submodule that the
// .gitmodules file of the working tree dir lists, like the top one, or
// the submodule's directory while it has no .git: a user's git status at
// the top runs git in each submodule, and so its fsmonitor and filters
// (SPEC §8.2). Paths git itself refuses are skipped (gitrepo.Submodules
// leaves them out); so is a .gitmodules that does not parse.
func (pl *plan) protectSubmodules(dir string, depth int) error {
	if depth >= maxSubmoduleDepth {
		return nil
	}
	subs, err := pl.fs.submodules(dir)
	if err != nil {
		pl.unreachable(err)
		return nil
	}
	for _, sub := range subs {
		if pl.submodules--; pl.submodules < 0 {
			return nil
		}
		pl.budget = pinsPerSubmodule
		// An uninitialized submodule has no .git yet: its (empty)
		// directory is kept read-only instead, so that none is made.
		rel := filepath.Join(sub, ".git")
		_, err := pl.fs.lstat(filepath.Join(dir, rel))
		if pl.unreachable(err); errors.Is(err, unix.ENOENT) {
			rel = sub
		}
		if err := pl.protectBelow(dir, rel); err != nil {
			return fmt.Errorf("protected path %s: %w", filepath.Join(dir, rel), err)
		}
		if err := pl.protectSubmodules(filepath.Join(dir, sub), depth+1); err != nil {
			return err
		}
	}
	return nil
}

// protectBelow plans to protect the entry rel below dir (or the absolute
// path rel) like a protected name (protectName): the entry, a symlink's
// target, the repository behind a .git, with every directory and symlink
// on the way to the entry pinned, and every directory above it inside a
// root, so that nothing on the way can be renamed or repointed.
func (pl *plan) protectBelow(dir, rel string) error {
	parentRel, name := filepath.Split(filepath.Clean(rel))
	if name == "" || name == "." || name == ".." || name == "/" {
		return nil
	}
	if _, err := pl.fs.lstat(gitrepo.Join(dir, rel)); pl.unreachable(err) {
		return nil // nothing there: nothing to pin the way to
	}
	mark := len(pl.added)
	parent, _, err := pl.walk(dir, parentRel)
	switch {
	case errors.Is(err, errSkip):
		pl.dropIfOverBudget(mark)
		return nil
	case err != nil:
		return err
	}
	for d := parent; enclosing(pl.outer, d) != nil; d = filepath.Dir(d) {
		n, err := pl.fs.lstat(d)
		if err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
		pl.add(d, n, false)
	}
	if pl.budget < 0 {
		pl.dropIfOverBudget(mark) // too deep: left alone
		return nil
	}
	return pl.protectName(Root{Path: parent}, name, filepath.Join(parent, name))
}

// splitNested separates the roots inside another root from the others.
func splitNested(roots []openRoot) (outer, inner []openRoot) {
	for _, r := range roots {
		if enclosing(roots, r.Path) != nil {
			inner = append(inner, r)
		} else {
			outer = append(outer, r)
		}
	}
	return outer, inner
}

func rootsOf(rs []openRoot) []Root {
	out := make([]Root, len(rs))
	for i, r := range rs {
		out[i] = r.Root
	}
	return out
}

// enclosing returns the innermost root of roots strictly above path, or
// nil.
func enclosing(roots []openRoot, path string) *openRoot {
	var best *openRoot
	for i, r := range roots {
		if strings.HasPrefix(path, r.Path+"/") && (best == nil || len(r.Path) > len(best.Path)) {
			best = &roots[i]
		}
	}
	return best
}

// checkOwnMountNamespace guards against a helper started without its
// namespaces: its mounts would be the host's.
func checkOwnMountNamespace() error {
	own, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return err
	}
	parent, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", os.Getppid()))
	if err == nil && own == parent {
		return errors.New("the helper shares its parent's mount namespace")
	}
	return nil
}

// readOnlyTree makes the mount at (dirfd, path) and every mount below it
// read-only.
func readOnlyTree(dirfd int, path string, flags uint) error {
	return unix.MountSetattr(dirfd, path, flags|unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
}

// pin mounts a copy of the file, directory or symlink fd (and the mounts
// below it) onto itself. Being a mount point, the entry can be neither
// renamed nor removed in this namespace.
func pin(fd int) error {
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(tree)
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

// plan collects the entries to pin and make read-only, then applies them
// in one pass: each once, parents before children, so that no pin hides
// another, and read-only last.
type plan struct {
	fs      *lookups
	outer   []openRoot // the roots not inside another, as mounted now
	roots   []Root     // every root
	entries map[string]*planned
	budget  int      // new entries the protected name being planned may still add
	added   []string // the new entries, in order
	// submodules is how many more submodules of the root being planned
	// may be protected.
	submodules int
	// blind: a lookup was refused (EACCES), so what lies behind it is
	// not in the plan. The helper looks past the modes of the user's own
	// directories; execd, planning without that right, cannot.
	blind bool
}

// unreachable is the package's unreachable, noting a refused lookup.
func (pl *plan) unreachable(err error) bool {
	if errors.Is(err, unix.EACCES) {
		pl.blind = true
	}
	return unreachable(err)
}

// planned is an entry to pin, as it was when found.
type planned struct {
	path     string
	dev, ino uint64
	readOnly bool
}

// add plans to pin path, if it lies inside a writable root (elsewhere
// every mount is read-only: nothing there can be renamed).
func (pl *plan) add(path string, n node, readOnly bool) {
	if enclosing(pl.outer, path) == nil {
		return
	}
	e := pl.entries[path]
	if e == nil {
		pl.budget--
		pl.added = append(pl.added, path)
		e = &planned{path: path, dev: n.dev, ino: n.ino}
		pl.entries[path] = e
	}
	e.readOnly = e.readOnly || readOnly
}

// pinRoot plans to pin a nested root and every directory above it up to
// its outer root.
func (pl *plan) pinRoot(r Root) error {
	pl.budget = pinsPerName
	_, n, err := pl.walk("/", r.Path)
	switch {
	case errors.Is(err, errSkip):
		err = unix.ENOENT // gone or hidden since it was opened
	case err == nil:
		err = n.same(r.Dev, r.Ino)
	}
	if err != nil {
		return explainLookup(err)
	}
	pl.add(r.Path, n, false)
	return nil
}

// errSkip marks a target that cannot or need not be protected: missing;
// past a directory the helper may not search, which no command of the
// user's can search either (the helper looks past the modes of the user's
// own files, which a command could change, with CAP_DAC_READ_SEARCH); or
// reached through /proc, whose links lead wherever the process that
// follows them is.
var errSkip = errors.New("skip")

// unreachable reports whether a lookup error means there is nothing
// there for the user's commands to reach: missing, past a directory they
// may not search, or past a symlink loop or a path too long, which the
// kernel cannot resolve either.
func unreachable(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EACCES) ||
		errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENAMETOOLONG)
}

// pinsPerName bounds the new entries one protected name may add to the
// plan: an honest repository needs a handful, and a command that builds a
// maze of links and directories behind a name it made must not make every
// later launch slow or fail. Past the bound the name's target is left
// alone (its entry is still protected); other names keep their own.
const pinsPerName = 256

// walk resolves path from the directory dir as the kernel would, one
// component at a time, planning to pin every directory and symlink it
// passes inside a writable root. It returns the final path and its
// status; errSkip when it is unreachable or under /proc.
func (pl *plan) walk(dir, path string) (string, node, error) {
	var st node
	cur := dir
	if filepath.IsAbs(path) {
		cur = "/"
	}
	todo := strings.Split(path, "/")
	for links := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur) // cur has no symlinks: the parent is its prefix
			continue
		}
		next := filepath.Join(cur, c)
		if next == "/proc" || strings.HasPrefix(next, "/proc/") || pl.budget < 0 || len(next) >= unix.PathMax {
			return "", st, errSkip
		}
		n, err := pl.fs.lstat(next)
		switch {
		case pl.unreachable(err):
			return "", st, errSkip
		case err != nil:
			return "", st, fmt.Errorf("%s: %w", next, err)
		}
		if n.kind != unix.S_IFLNK {
			if len(todo) > 0 {
				pl.add(next, n, false)
			}
			cur = next
			continue
		}
		if links++; links > 40 || pl.budget < 0 || len(next) >= unix.PathMax {
			return "", st, errSkip // a loop, a maze, or a path that cannot be reopened
		}
		pl.add(next, n, false) // a symlink on the way: pinned, it cannot be pointed elsewhere
		target, err := pl.fs.readlink(next)
		if err != nil {
			return "", st, err
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	st, err := pl.fs.stat(cur) // cur is the final object; "." or ".." may have led here
	if err != nil {
		return "", st, errSkip
	}
	return cur, st, nil
}

// protectNames plans to make each name that exists directly in root
// read-only (SPEC §8.2): the entry, a symlink's target, and for .git the
// repository git would use behind it (see protectRepository). A symlink
// itself is pinned. Entries that are not files, directories or symlinks
// are left alone, and so are entries or targets that are a writable root
// or contain one (an explicit root wins) and targets outside the roots
// (read-only already).
func (pl *plan) protectNames(root Root, names []string) error {
	for _, name := range names {
		path := filepath.Join(root.Path, name)
		pl.budget = pinsPerName
		if err := pl.protectName(root, name, path); err != nil {
			return fmt.Errorf("protected path %s: %w", path, err)
		}
	}
	return nil
}

func (pl *plan) protectName(root Root, name, path string) error {
	n, err := pl.fs.lstat(path)
	switch {
	case pl.unreachable(err):
		return nil
	case err != nil:
		return err
	}
	kind := n.kind
	if (kind != unix.S_IFDIR && kind != unix.S_IFREG && kind != unix.S_IFLNK) || containsRoot(path, pl.roots) {
		return nil
	}
	pl.add(path, n, kind != unix.S_IFLNK)
	final := path
	if kind == unix.S_IFLNK {
		var err error
		if final, err = pl.protectTarget(root.Path, name); err != nil || final == "" {
			return err
		}
	}
	if name != ".git" {
		return nil
	}
	return pl.protectRepository(root.Path, final)
}

// protectRepository plans to protect what git, working in dir, takes for
// the repository behind .git (found at git, symlinks followed), resolving
// paths the way git does: for a file "gitdir: X", X (relative to dir);
// then, when the repository has a commondir file (it is a worktree's), the
// directory that file names (relative to the repository), where the hooks
// and config are. The files read are made read-only, so the command
// cannot point them elsewhere.
func (pl *plan) protectRepository(dir, git string) error {
	repo := git
	if pl.fs.isRegular(git) {
		target, err := pl.fs.readPointer(git, true)
		if err != nil {
			pl.unreachable(err)
			return nil // not a gitdir pointer: git will not use it
		}
		if repo, err = pl.protectTarget(dir, target); err != nil || repo == "" {
			return err
		}
	}
	commondir, err := pl.protectTarget(repo, "commondir")
	if err != nil || commondir == "" || !pl.fs.isRegular(commondir) {
		return err
	}
	common, err := pl.fs.readPointer(commondir, false)
	if err != nil {
		pl.unreachable(err)
		return nil
	}
	_, err = pl.protectTarget(repo, common)
	return err
}

// dropIfOverBudget forgets the entries added since mark when the name
// being planned went over its budget: the target is left alone, and pins
// on the way to it would only cost.
func (pl *plan) dropIfOverBudget(mark int) {
	if pl.budget >= 0 || mark > len(pl.added) {
		return
	}
	for _, p := range pl.added[mark:] {
		delete(pl.entries, p)
	}
	pl.added = pl.added[:mark]
}

// protectTarget plans to make what path (from dir) leads to read-only,
// with every directory and symlink on the way pinned. It returns the
// target's path, or "" when it is unreachable, under /proc, not a file or
// directory, or is or contains a root.
func (pl *plan) protectTarget(dir, path string) (string, error) {
	mark := len(pl.added)
	final, st, err := pl.walk(dir, path)
	switch {
	case errors.Is(err, errSkip):
		pl.dropIfOverBudget(mark)
		return "", nil
	case err != nil:
		return "", err
	}
	if (st.kind != unix.S_IFDIR && st.kind != unix.S_IFREG) || containsRoot(final, pl.roots) {
		return "", nil
	}
	// ".." may have led here past directories the walk did not pin.
	for d := filepath.Dir(final); enclosing(pl.outer, d) != nil; d = filepath.Dir(d) {
		n, err := pl.fs.lstat(d)
		if err != nil {
			return "", fmt.Errorf("%s: %w", d, err)
		}
		pl.add(d, n, false)
	}
	pl.add(final, st, true)
	return final, nil
}

// apply pins the planned entries, parents first, checking that each is
// still what was found, then makes the read-only ones so and checks that.
// Entries below a read-only one are left to its (recursive) mount.
func (pl *plan) apply() error {
	entries := make([]*planned, 0, len(pl.entries))
	for _, e := range pl.entries {
		if !pl.underReadOnly(e.path) {
			entries = append(entries, e)
		}
	}
	slices.SortFunc(entries, func(a, b *planned) int {
		if d := strings.Count(a.path, "/") - strings.Count(b.path, "/"); d != 0 {
			return d
		}
		return strings.Compare(a.path, b.path)
	})
	for _, e := range entries {
		fd, err := pl.open(e)
		if err == nil {
			err = pin(fd)
			unix.Close(fd)
		}
		if err != nil {
			return fmt.Errorf("pin %s: %w", e.path, err)
		}
	}
	for _, e := range entries {
		if !e.readOnly {
			continue
		}
		fd, err := pl.open(e)
		if err == nil {
			err = readOnlyTree(fd, "", unix.AT_EMPTY_PATH)
			if err == nil {
				err = checkReadOnly(fd)
			}
			unix.Close(fd)
		}
		if err != nil {
			return fmt.Errorf("protected path %s: %w", e.path, err)
		}
	}
	return nil
}

// underReadOnly reports whether path lies below an entry to be made
// read-only: nothing there can be written, renamed or removed, so it
// needs no mount of its own.
func (pl *plan) underReadOnly(path string) bool {
	for d := filepath.Dir(path); d != "/"; d = filepath.Dir(d) {
		if e := pl.entries[d]; e != nil && e.readOnly {
			return true
		}
	}
	return false
}

var errChanged = errors.New("changed while the sandbox was set up")

// open opens a planned entry beneath its outer root, refusing symlinks on
// the way, and checks that it is what was found.
func (pl *plan) open(e *planned) (int, error) {
	o := enclosing(pl.outer, e.path)
	fd, err := openat2(o.fd, strings.TrimPrefix(e.path, o.Path+"/"), unix.O_PATH|unix.O_NOFOLLOW, strict|unix.RESOLVE_BENEATH)
	if err != nil {
		return -1, fmt.Errorf("%w: %w", errChanged, err)
	}
	if err := sameFile(fd, e.dev, e.ino); err != nil {
		unix.Close(fd)
		return -1, errChanged
	}
	return fd, nil
}

func checkReadOnly(fd int) error {
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil {
		return err
	}
	if sfs.Flags&unix.ST_RDONLY == 0 {
		return errors.New("still writable after the read-only mount")
	}
	return nil
}

func sameIDs(st *unix.Stat_t, dev, ino uint64) error {
	if uint64(st.Dev) != dev || st.Ino != ino { //nolint:unconvert // Dev's type varies by architecture
		return errReplaced
	}
	return nil
}

// containsRoot reports whether path is a writable root or one of their
// ancestors: making it read-only would take a root away.
func containsRoot(path string, roots []Root) bool {
	for _, r := range roots {
		if path == "/" || path == r.Path || strings.HasPrefix(r.Path, path+"/") {
			return true
		}
	}
	return false
}
