package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// openRoot is a writable root opened as an O_PATH descriptor.
type openRoot struct {
	Root
	fd int
}

// openRoots opens each root that still exists and checks that it is the
// directory execd started with. A root that is gone is left out (there is
// nothing to grant); one that leads elsewhere is an error. The
// descriptors are close-on-exec.
func openRoots(roots []Root) ([]openRoot, error) {
	var out []openRoot
	for _, r := range roots {
		fd, err := unix.Open(r.Path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err == nil {
			err = sameFile(fd, r.Dev, r.Ino)
		}
		if err != nil {
			return nil, fmt.Errorf("writable root %s: %w", r.Path, err)
		}
		out = append(out, openRoot{Root: r, fd: fd})
	}
	return out, nil
}

var errReplaced = errors.New("not the directory it was when execd started (moved or replaced since?); restart execd to use what is there now")

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

// isolateMounts runs in the helper's own mount namespace, before the
// command: it makes every mount read-only but the roots, which stay as
// they were (mounts below them included), and then makes the protected
// paths inside the roots read-only (SPEC §8.2). Landlock grants no right
// to change modes, owners, times or extended attributes; a read-only
// mount refuses them. It returns the roots opened anew, as the command
// will see them.
func isolateMounts(p *Policy, roots []openRoot) ([]openRoot, error) {
	if err := checkOwnMountNamespace(); err != nil {
		return nil, err
	}
	// Nothing done here may propagate to the host's mounts.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, fmt.Errorf("make mounts private: %w", err)
	}
	trees := make([]int, len(roots))
	for i, r := range roots {
		t, err := unix.OpenTree(r.fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
		if err != nil {
			return nil, fmt.Errorf("copy the mounts of %s: %w", r.Path, err)
		}
		trees[i] = t
	}
	if err := readOnlyTree(unix.AT_FDCWD, "/", 0); err != nil {
		return nil, fmt.Errorf("make / read-only: %w", err)
	}
	for i, r := range roots {
		if err := unix.MoveMount(trees[i], "", r.fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
			return nil, fmt.Errorf("mount %s writable: %w", r.Path, err)
		}
	}
	visible, err := openRoots(p.Roots)
	if err != nil {
		return nil, err
	}
	for _, r := range visible {
		if err := protectIn(r, p.ProtectedNames); err != nil {
			return nil, err
		}
	}
	return visible, nil
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

// protectIn makes each name that exists directly in root read-only: the
// entry (a symlink is pinned: mounted onto itself it can be neither
// removed nor replaced), a symlink's target unless it contains the root,
// and for a .git file the gitdir it names and that gitdir's common
// directory (a worktree's hooks and config live there).
func protectIn(root openRoot, names []string) error {
	for _, name := range names {
		fd, err := unix.Openat(root.fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return fmt.Errorf("protected path %s/%s: %w", root.Path, name, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		var targets []int
		switch {
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			if t, err := unix.Openat(root.fd, name, unix.O_PATH|unix.O_CLOEXEC, 0); err == nil && !contains(t, root.Path) {
				targets = append(targets, t)
			}
		case st.Mode&unix.S_IFMT == unix.S_IFREG && name == ".git":
			targets = gitDirs(root.fd)
		}
		for _, t := range append([]int{fd}, targets...) {
			if err := protect(t); err != nil {
				return fmt.Errorf("protected path %s/%s: %w", root.Path, name, err)
			}
		}
	}
	return nil
}

// protect mounts a read-only copy of the file, directory or symlink fd
// onto itself.
func protect(fd int) error {
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(tree)
	if err := readOnlyTree(tree, "", unix.AT_EMPTY_PATH); err != nil {
		return fmt.Errorf("mount_setattr: %w", err)
	}
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

// contains reports whether the directory fd is path or one of its
// ancestors: protecting it would make the root read-only.
func contains(fd int, path string) bool {
	dir, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	return err == nil && (dir == "/" || path == dir || strings.HasPrefix(path, dir+"/"))
}

// gitDirs opens the gitdir named by the .git file in root ("gitdir: X",
// X relative to root) and its common directory (X/commondir names it,
// relative to X), those that exist.
func gitDirs(root int) []int {
	gitdir, err := firstLine(root, ".git")
	gitdir, ok := strings.CutPrefix(gitdir, "gitdir:")
	if err != nil || !ok {
		return nil
	}
	gd, err := unix.Openat(root, strings.TrimSpace(gitdir), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	dirs := []int{gd}
	if common, err := firstLine(gd, "commondir"); err == nil && common != "" {
		if cd, err := unix.Openat(gd, common, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
			dirs = append(dirs, cd)
		}
	}
	return dirs
}

// firstLine returns the first line of the regular file name in dir,
// trimmed.
func firstLine(dir int, name string) (string, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), filepath.Join("fd", name))
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return "", errors.New("empty")
	}
	return strings.TrimSpace(sc.Text()), nil
}
