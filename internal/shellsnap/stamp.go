package shellsnap

import (
	"os"
	"syscall"
)

// syscallNoFollow makes writeFile refuse a symlink in the snapshot's
// place.
const syscallNoFollow = syscall.O_NOFOLLOW

// stamp is a startup file as it was when a snapshot was taken: its
// identity, size and modification time (following symlinks, as the
// shell reads it), or nil when it could not be found.
type stamp struct {
	path string
	fi   os.FileInfo
}

func stampAll(files []string) []stamp {
	out := make([]stamp, len(files))
	for i, f := range files {
		out[i].path = f
		if fi, err := os.Stat(f); err == nil {
			out[i].fi = fi
		}
	}
	return out
}

// same reports whether the file is still as stamped.
func (s stamp) same() bool {
	fi, err := os.Stat(s.path)
	if err != nil || s.fi == nil {
		return err != nil && s.fi == nil
	}
	return os.SameFile(s.fi, fi) && fi.Size() == s.fi.Size() && fi.ModTime().Equal(s.fi.ModTime())
}
