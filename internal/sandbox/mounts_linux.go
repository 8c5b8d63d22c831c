package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
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
	if uint64(st.Dev) != dev || st.Ino != ino { //nolint:unconvert // Dev's type varies by architecture
		return errReplaced
	}
	return nil
}

// isolateMounts runs in the helper's own user and mount namespaces,
// before the command (SPEC §8.3). It turns off user namespaces below this
// one; makes every mount read-only but the outermost roots, whose mounts
// stay as they were; pins every directory from an outer root down to a
// root nested in it (a mount point cannot be renamed, so no sandboxed
// command can move a root, or anything protected, out from under its
// path); and makes the protected paths read-only. Every step goes through
// descriptors. It returns the roots as the command will see them.
func isolateMounts(p *Policy, roots []openRoot) ([]openRoot, error) {
	if err := checkOwnMountNamespace(); err != nil {
		return nil, err
	}
	// Nested user namespaces would hand the command every capability
	// over fresh network and mount namespaces: kernel code (netfilter,
	// say) that is the usual way to attack the kernel.
	if err := os.WriteFile("/proc/sys/user/max_user_namespaces", []byte("0\n"), 0); err != nil {
		return nil, fmt.Errorf("turn off nested user namespaces: %w", err)
	}
	// Nothing done here may propagate to the host's mounts.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, fmt.Errorf("make mounts private: %w", err)
	}
	outer, inner := splitNested(roots)
	trees := make([]int, len(outer))
	for i, r := range outer {
		t, err := unix.OpenTree(r.fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
		if err != nil {
			return nil, fmt.Errorf("copy the mounts of %s: %w", r.Path, err)
		}
		trees[i] = t
	}
	if err := readOnlyTree(unix.AT_FDCWD, "/", 0); err != nil {
		return nil, fmt.Errorf("make / read-only: %w", err)
	}
	for i, r := range outer {
		if err := unix.MoveMount(trees[i], "", r.fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
			return nil, fmt.Errorf("mount %s writable: %w", r.Path, err)
		}
	}
	visible, err := openRoots(rootsOf(outer))
	if err != nil {
		return nil, err
	}
	for _, r := range inner { // outermost first: each one's parent root is visible already
		parent := enclosing(visible, r.Path)
		fd, err := pinChain(parent.fd, strings.TrimPrefix(r.Path, parent.Path+"/"))
		if err == nil {
			err = sameFile(fd, r.Dev, r.Ino)
		}
		if err != nil {
			return nil, fmt.Errorf("writable root %s: %w", r.Path, explainLookup(err))
		}
		visible = append(visible, openRoot{Root: r.Root, fd: fd})
	}
	for _, r := range visible {
		if err := protectIn(r, p.ProtectedNames, visible); err != nil {
			return nil, err
		}
	}
	return visible, nil
}

// splitNested separates the roots inside another root from the others;
// the nested ones come sorted outermost first.
func splitNested(roots []openRoot) (outer, inner []openRoot) {
	for _, r := range roots {
		if enclosing(roots, r.Path) != nil {
			inner = append(inner, r)
		} else {
			outer = append(outer, r)
		}
	}
	slices.SortFunc(inner, func(a, b openRoot) int { return len(a.Path) - len(b.Path) })
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
// below it) onto itself, read-only if asked, and returns the copy's
// descriptor, through which lookups see it. Being a mount point, the
// entry can be neither renamed nor removed in this namespace.
func pin(fd int, readOnly bool) (int, error) {
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
	if err != nil {
		return -1, fmt.Errorf("open_tree: %w", err)
	}
	if readOnly {
		if err := readOnlyTree(tree, "", unix.AT_EMPTY_PATH); err != nil {
			return -1, fmt.Errorf("mount_setattr: %w", err)
		}
	}
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return -1, fmt.Errorf("move_mount: %w", err)
	}
	return tree, nil
}

// pinChain walks rel down from the directory dir, pinning each directory
// on the way, and returns the last one. Symlinks are refused.
func pinChain(dir int, rel string) (int, error) {
	cur := dir
	for _, name := range strings.Split(rel, "/") {
		next, err := openat2(cur, name, unix.O_PATH|unix.O_DIRECTORY, strict|unix.RESOLVE_BENEATH)
		if err != nil {
			return -1, err
		}
		if cur, err = pin(next, false); err != nil {
			return -1, err
		}
	}
	return cur, nil
}

// protectIn makes each name that exists directly in root read-only (SPEC
// §8.2): the entry, a symlink's target, and for a .git file the gitdir it
// names and that gitdir's common directory (a worktree's hooks and config
// live there). A symlink is pinned: it can be neither removed nor
// replaced. Entries that are writable roots themselves, or contain one,
// are left alone (an explicit root wins), and so are entries that are
// not files, directories or symlinks. In a world-writable sticky
// directory (/tmp) other users make the entries: none is looked up there.
func protectIn(root openRoot, names []string, roots []openRoot) error {
	if shared, err := worldWritableSticky(root.fd); err != nil || shared {
		return err
	}
	for _, name := range names {
		fd, err := unix.Openat(root.fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err == nil {
			err = protectEntry(root, name, fd, roots)
		}
		if err != nil {
			return fmt.Errorf("protected path %s/%s: %w", root.Path, name, err)
		}
	}
	return nil
}

func protectEntry(root openRoot, name string, fd int, roots []openRoot) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	kind := st.Mode & unix.S_IFMT
	if (kind != unix.S_IFDIR && kind != unix.S_IFREG && kind != unix.S_IFLNK) || containsRoot(fd, roots) {
		return nil
	}
	pinned, err := pin(fd, kind != unix.S_IFLNK)
	if err != nil {
		return err
	}
	switch {
	case kind == unix.S_IFLNK:
		_, err := protectTarget(root.fd, name, roots)
		return err
	case kind == unix.S_IFREG && name == ".git":
		gitdir, err := gitdirOf(pinned)
		if err != nil {
			return nil // not a gitdir pointer: nothing more to protect
		}
		gd, err := protectTarget(root.fd, gitdir, roots)
		if err != nil || gd < 0 {
			return err
		}
		if common, err := firstLine(gd, "commondir"); err == nil && common != "" {
			_, err = protectTarget(gd, common, roots)
			return err
		}
	}
	return nil
}

// protectTarget makes the file or directory that path (relative to dir,
// symlinks followed, magic links refused) leads to read-only, when it is
// inside a writable root and contains none; elsewhere it is read-only
// already. Every directory from its root down to it is pinned, so that no
// sandboxed command can move it away and put another in its place. It
// returns the protected directory's descriptor, or -1 if there was none.
func protectTarget(dir int, path string, roots []openRoot) (int, error) {
	t, err := openat2(dir, path, unix.O_PATH, unix.RESOLVE_NO_MAGICLINKS)
	if err != nil {
		return -1, nil // missing: nothing to protect
	}
	var st unix.Stat_t
	if err := unix.Fstat(t, &st); err != nil {
		return -1, err
	}
	kind := st.Mode & unix.S_IFMT
	if (kind != unix.S_IFDIR && kind != unix.S_IFREG) || containsRoot(t, roots) {
		return -1, nil
	}
	at, err := fdPath(t)
	if err != nil {
		return -1, err
	}
	root := enclosing(roots, at)
	if root == nil {
		return -1, nil
	}
	parentRel, name := filepath.Split(strings.TrimPrefix(at, root.Path+"/"))
	parent := root.fd
	if parentRel != "" {
		if parent, err = pinChain(root.fd, strings.TrimSuffix(parentRel, "/")); err != nil {
			return -1, err
		}
	}
	final, err := openat2(parent, name, unix.O_PATH, strict|unix.RESOLVE_BENEATH)
	if err == nil {
		err = sameFile(final, uint64(st.Dev), st.Ino) //nolint:unconvert // Dev's type varies by architecture
	}
	if err != nil {
		return -1, err
	}
	return pin(final, true)
}

// containsRoot reports whether fd is a writable root or one of their
// ancestors: making it read-only would take a root away.
func containsRoot(fd int, roots []openRoot) bool {
	p, err := fdPath(fd)
	if err != nil {
		return true // unknown: leave it alone
	}
	for _, r := range roots {
		if p == "/" || p == r.Path || strings.HasPrefix(r.Path, p+"/") {
			return true
		}
	}
	return false
}

func fdPath(fd int) (string, error) { return os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd)) }

func worldWritableSticky(fd int) (bool, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, err
	}
	return st.Mode&unix.S_ISVTX != 0 && st.Mode&0o002 != 0, nil
}

// gitdirOf returns X from a .git file "gitdir: X" (fd is the file).
func gitdirOf(fd int) (string, error) {
	line, err := firstLine(fd, "")
	if err != nil {
		return "", err
	}
	gitdir, ok := strings.CutPrefix(line, "gitdir:")
	if !ok {
		return "", errors.New("no gitdir line")
	}
	return strings.TrimSpace(gitdir), nil
}

// firstLine returns the first line of the regular file name in dir (dir
// itself if name is ""), trimmed.
func firstLine(dir int, name string) (string, error) {
	const flags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	var fd int
	var err error
	if name == "" {
		fd, err = unix.Open(fmt.Sprintf("/proc/self/fd/%d", dir), flags&^unix.O_NOFOLLOW, 0)
	} else {
		fd, err = unix.Openat(dir, name, flags, 0)
	}
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), "protected file")
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", errors.New("not a regular file")
	}
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return "", errors.New("empty")
	}
	return strings.TrimSpace(sc.Text()), nil
}
