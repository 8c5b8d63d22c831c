package gitrepo

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/execd/execd/internal/fspath"
)

// gitlinkMode is the mode of an index entry that is a submodule (a
// commit of another repository, checked out at its path).
const gitlinkMode = 0o160000

// ErrSplitIndex is an index split in two files (core.splitIndex), which
// Gitlinks does not read.
var ErrSplitIndex = errors.New("the index is split (core.splitIndex)")

// Gitlinks returns the paths of the submodules the repository's index
// records (entries of mode 160000), which git status and diff look into
// whatever .gitmodules says. A repository without an index has none.
// It reads the index format git-scm.com/docs/index-format documents,
// versions 2 to 4, with SHA-1 or SHA-256 object names
// (extensions.objectFormat).
func (r Repo) Gitlinks() ([]string, error) {
	hashLen := 20
	entries, err := ReadConfig(filepath.Join(r.CommonDir, "config"))
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.Key == "extensions.objectformat" && strings.EqualFold(e.Value, "sha256") {
			hashLen = 32
		}
	}
	f, err := fspath.OpenRegular(filepath.Join(r.GitDir, "index"), 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseGitlinks(bufio.NewReaderSize(f, 64<<10), hashLen)
}

// maxPath bounds a path in the index, and maxGitlinks the submodules
// one may record: an index is read for trust, and one a sandboxed
// command wrote must cost execd little.
const (
	maxPath     = 64 << 10
	maxGitlinks = 1 << 10
)

// ParseGitlinks reads an index from r and returns the paths of its
// gitlinks. hashLen is the length of an object name (20, or 32 for
// SHA-256).
func ParseGitlinks(in io.Reader, hashLen int) ([]string, error) {
	r := bufio.NewReader(in) // in itself when it is one
	var hdr [12]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("index header: %w", err)
	}
	if string(hdr[:4]) != "DIRC" {
		return nil, errors.New("not an index (no DIRC signature)")
	}
	version := binary.BigEndian.Uint32(hdr[4:8])
	if version < 2 || version > 4 {
		return nil, fmt.Errorf("index version %d", version)
	}
	n := binary.BigEndian.Uint32(hdr[8:12])
	fixed := 40 + hashLen + 2 // times, dev, ino, mode, uid, gid, size, name, flags
	buf := make([]byte, fixed+2)
	var links []string
	var name []byte // this entry's path, and the last one's (version 4 builds on it)
	for i := uint32(0); i < n; i++ {
		if _, err := io.ReadFull(r, buf[:fixed]); err != nil {
			return nil, fmt.Errorf("index entry %d: %w", i, err)
		}
		mode := binary.BigEndian.Uint32(buf[24:28])
		flags := binary.BigEndian.Uint16(buf[fixed-2 : fixed])
		size := fixed
		if flags&0x4000 != 0 { // extended: 16 more bits of flags
			if version < 3 {
				return nil, fmt.Errorf("index entry %d: extended flags in version %d", i, version)
			}
			if _, err := io.ReadFull(r, buf[fixed:fixed+2]); err != nil {
				return nil, fmt.Errorf("index entry %d: %w", i, err)
			}
			size += 2
		}
		if version == 4 {
			strip, err := readVarint(r)
			if err != nil || strip > uint64(len(name)) {
				return nil, fmt.Errorf("index entry %d: bad path prefix", i)
			}
			name = name[:len(name)-int(strip)]
			if name, err = appendCString(name, r); err != nil {
				return nil, fmt.Errorf("index entry %d: %w", i, err)
			}
		} else {
			var err error
			if name, err = appendCString(name[:0], r); err != nil {
				return nil, fmt.Errorf("index entry %d: %w", i, err)
			}
			// Entries are padded with 1 to 8 NULs to a multiple of 8;
			// appendCString took the first.
			pad := 8 - (size+len(name))%8
			if _, err := io.CopyN(io.Discard, r, int64(pad-1)); err != nil {
				return nil, fmt.Errorf("index entry %d: %w", i, err)
			}
		}
		if mode&0o170000 == gitlinkMode {
			if len(links) == maxGitlinks {
				return nil, fmt.Errorf("the index records more than %d submodules", maxGitlinks)
			}
			links = append(links, string(name))
		}
	}
	// Extensions: a split index names the shared one, with the rest.
	for {
		var ext [8]byte
		if _, err := io.ReadFull(r, ext[:]); err != nil {
			return links, nil // the checksum, or the end
		}
		if string(ext[:4]) == "link" {
			return nil, ErrSplitIndex
		}
		if l := binary.BigEndian.Uint32(ext[4:]); l > 1<<30 {
			return links, nil // the checksum and what follows it is not an extension
		} else if _, err := io.CopyN(io.Discard, r, int64(l)); err != nil {
			return links, nil
		}
	}
}

func readVarint(r io.ByteReader) (uint64, error) {
	// git's offset encoding (varint.c): each further byte adds one first.
	b, err := r.ReadByte()
	if err != nil {
		return 0, err
	}
	v := uint64(b & 0x7f)
	for n := 0; b&0x80 != 0; n++ {
		if n > 9 {
			return 0, errors.New("varint too long")
		}
		if b, err = r.ReadByte(); err != nil {
			return 0, err
		}
		v = ((v + 1) << 7) | uint64(b&0x7f)
	}
	return v, nil
}

// appendCString appends to b the bytes of r up to a NUL (not included);
// the path it makes may not exceed maxPath.
func appendCString(b []byte, r io.ByteReader) ([]byte, error) {
	for {
		c, err := r.ReadByte()
		if err != nil {
			return nil, err
		}
		if c == 0 {
			return b, nil
		}
		if len(b) >= maxPath {
			return nil, errors.New("path too long")
		}
		b = append(b, c)
	}
}
