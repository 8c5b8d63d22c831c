package patch

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// seeds are the scenario patches, so the fuzzer starts from every rule.
func addSeeds(f *testing.F) {
	paths, _ := filepath.Glob("testdata/scenarios/*/patch.txt")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
}

// FuzzParse: no input makes Parse panic, and what it accepts has a path
// for every hunk and lines for every chunk.
func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, text string) {
		p, err := Parse(text)
		if err != nil {
			if _, ok := err.(*ParseError); !ok {
				t.Fatalf("error %T %v is not a *ParseError", err, err)
			}
			return
		}
		for _, h := range p.Hunks {
			if h.Path == "" || strings.TrimSpace(h.Path) != h.Path {
				t.Fatalf("hunk path %q", h.Path)
			}
			if h.Op == Update && len(h.Chunks) == 0 {
				t.Fatal("an update without chunks was accepted")
			}
		}
	})
}

// FuzzApply applies patches to a small tree: no panic, and a patch that
// fails leaves the tree exactly as it was. Patches that name a path
// outside the tree are skipped: the fuzzer must not write elsewhere.
func FuzzApply(f *testing.F) {
	addSeeds(f)
	f.Add("*** Begin Patch\n*** Update File: a.txt\n@@ two\n-three\n+3\n*** Add File: a.txt/x\n+y\n*** End Patch")
	f.Add("*** Begin Patch\n*** Delete File: dir/b.txt\n*** Add File: dir/b.txt/c\n+c\n*** End Patch")
	f.Fuzz(func(t *testing.T, text string) {
		p, err := Parse(text)
		if err != nil || !inside(p) {
			return
		}
		root := t.TempDir()
		write(t, filepath.Join(root, "a.txt"), "one\ntwo\nthree\n", 0o644)
		write(t, filepath.Join(root, "dir", "b.txt"), "b1\r\nb2\r\n", 0o755)
		write(t, filepath.Join(root, "f.txt"), "no final newline", 0o600)
		before := snapshot(t, root)
		_, err = Apply(context.Background(), text, root)
		if err == nil {
			return
		}
		if after := snapshot(t, root); !sameTree(before, after) {
			t.Fatalf("patch failed with %q but changed the tree:\nbefore %v\nafter  %v", err, before, after)
		}
	})
}

// inside reports whether every path of p is relative and stays below
// the directory it is applied in.
func inside(p *Patch) bool {
	for _, h := range p.Hunks {
		for _, path := range []string{h.Path, h.MoveTo} {
			if filepath.IsAbs(path) || slices.Contains(strings.Split(path, "/"), "..") {
				return false
			}
		}
	}
	return true
}
