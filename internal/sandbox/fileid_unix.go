//go:build unix

package sandbox

import (
	"os"
	"syscall"
)

// FileID returns the device and inode of fi, which came from os.Stat or
// os.Lstat.
func FileID(fi os.FileInfo) (dev, ino uint64) {
	st := fi.Sys().(*syscall.Stat_t)
	return uint64(st.Dev), uint64(st.Ino) //nolint:unconvert // the types differ between platforms
}
