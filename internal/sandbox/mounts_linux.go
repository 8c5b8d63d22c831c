package sandbox

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// protect makes each path read-only in this (private, new) mount
// namespace, without creating anything on the host (SPEC §8.2). A
// directory or file is bind-mounted onto itself and remounted read-only;
// being a mount point it can be neither removed nor renamed. A symlink is
// mounted onto itself (open_tree without following it), which pins the
// link; its target is in the list too.
func protect(paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	// Nothing done here may propagate to the host's mounts.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil {
			continue // gone since the policy was made: nothing to protect
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			err = pinSymlink(p)
		} else {
			err = bindReadOnly(p)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// bindReadOnly bind-mounts p onto itself and makes that mount read-only.
func bindReadOnly(p string) error {
	if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	locked, err := lockedFlags(p)
	if err != nil {
		return err
	}
	if err := unix.Mount("", p, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|locked, ""); err != nil {
		return fmt.Errorf("remount read-only: %w", err)
	}
	return nil
}

// lockedFlags returns the flags of p's mount that a remount inside a
// user namespace must keep, or the kernel refuses it.
func lockedFlags(p string) (uintptr, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return 0, fmt.Errorf("statfs: %w", err)
	}
	var flags uintptr
	for stFlag, msFlag := range map[int64]uintptr{
		unix.ST_NOSUID:     unix.MS_NOSUID,
		unix.ST_NODEV:      unix.MS_NODEV,
		unix.ST_NOEXEC:     unix.MS_NOEXEC,
		unix.ST_NOATIME:    unix.MS_NOATIME,
		unix.ST_NODIRATIME: unix.MS_NODIRATIME,
		unix.ST_RELATIME:   unix.MS_RELATIME,
	} {
		if int64(st.Flags)&stFlag != 0 {
			flags |= msFlag
		}
	}
	return flags, nil
}

// pinSymlink mounts the symlink p onto itself, so that it cannot be
// removed, renamed or replaced.
func pinSymlink(p string) error {
	fd, err := unix.OpenTree(unix.AT_FDCWD, p, unix.OPEN_TREE_CLONE|unix.AT_SYMLINK_NOFOLLOW|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}
