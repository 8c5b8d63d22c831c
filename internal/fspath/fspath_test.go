package fspath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestResolve(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	at := func(p string) string { return filepath.Join(root, p) }
	if err := os.MkdirAll(at("x/y"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"via":  at("x/y"), // absolute
		"up":   "via/..",  // ".." after a link: x, not root
		"loop": "loop",
		"gone": "nowhere",
	} {
		if err := os.Symlink(target, at(link)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		path  string
		opts  Options
		want  string
		links []string
		err   error
	}{
		{at("x/y"), Options{}, at("x/y"), nil, nil},
		{at("up/y"), Options{}, at("x/y"), []string{at("up"), at("via")}, nil},
		{at("up"), Options{NoFollowLast: true}, at("up"), nil, nil},
		{root + "/via/../y", Options{}, at("x/y"), []string{at("via")}, nil}, // not cleaned as text
		{at("gone"), Options{}, "", []string{at("gone")}, fs.ErrNotExist},
		{at("gone/new"), Options{KeepMissing: true}, at("nowhere/new"), []string{at("gone")}, nil},
		{at("loop"), Options{}, "", nil, syscall.ELOOP},
		{"/" + strings.Repeat("m/", 3000), Options{KeepMissing: true}, "", nil, syscall.ENAMETOOLONG},
	}
	for _, tt := range tests {
		got, links, err := Resolve(Disk, tt.path, tt.opts)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("Resolve(%s) = %q, %v; want %v", tt.path, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want || !slices.Equal(links, tt.links) {
			t.Errorf("Resolve(%s) = %q %q %v; want %q %q", tt.path, got, links, err, tt.want, tt.links)
		}
	}
	if _, _, err := Resolve(Disk, "relative", Options{}); err == nil {
		t.Error("a relative path was resolved")
	}
}

func TestReadAtMost(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	for limit, ok := range map[int]bool{5: true, 4: false} {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := ReadAtMost(f, limit)
		f.Close()
		if ok && (err != nil || string(b) != "12345") || !ok && (err == nil || !strings.Contains(err.Error(), "larger than 4 bytes")) {
			t.Errorf("limit %d: %q, %v", limit, b, err)
		}
	}
}
