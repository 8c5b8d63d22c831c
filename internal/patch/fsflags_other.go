//go:build unix && !linux

package patch

import "golang.org/x/sys/unix"

// dirFlags opens a directory to name files in it, never through a
// symlink.
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
