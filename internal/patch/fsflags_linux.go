package patch

import "golang.org/x/sys/unix"

// dirFlags opens a directory only to name files in it (O_PATH needs no
// read permission), never through a symlink.
const dirFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
