package patch

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestScenarios runs every testdata/scenarios/NNN_name: input/ is copied
// to a temporary directory, patch.txt applied there, and the tree must
// then equal expected/ file by file (content, executable bit, symlink
// targets), and the message what output.txt holds (the summary, or the
// error, with a final newline). A missing input/ or expected/ is an
// empty tree.
func TestScenarios(t *testing.T) {
	dirs, err := filepath.Glob("testdata/scenarios/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 25 {
		t.Fatalf("found %d scenarios, want at least 25", len(dirs))
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			root := t.TempDir()
			copyTree(t, filepath.Join(dir, "input"), root)
			text := readString(t, filepath.Join(dir, "patch.txt"))
			want := readString(t, filepath.Join(dir, "output.txt"))

			sum, err := Apply(context.Background(), text, root)
			got := sum.String()
			if err != nil {
				got = err.Error() + "\n"
			}
			if got != want {
				t.Errorf("message:\n got %q\nwant %q", got, want)
			}
			diffTrees(t, snapshot(t, filepath.Join(dir, "expected")), snapshot(t, root))
		})
	}
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// copyTree copies the files, executable bits and symlinks of src into
// dst; a missing src is an empty tree.
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == src && os.IsNotExist(err) {
				return filepath.SkipDir
			}
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// snapshot describes every file and symlink under root by its relative
// path: "file 0755 <content>" (only the executable bit of the mode
// counts, as git keeps only that) or "link <target>". Directories show
// through their contents.
func snapshot(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && os.IsNotExist(err) {
				return filepath.SkipDir
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			out[rel] = "link " + target
			return err
		}
		b, err := os.ReadFile(p)
		exec := "0644"
		if info.Mode()&0o100 != 0 {
			exec = "0755"
		}
		out[rel] = fmt.Sprintf("file %s %q", exec, b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffTrees(t testing.TB, want, got map[string]string) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[k]; !ok {
			t.Errorf("%s: missing, want %s", k, want[k])
		} else if g != want[k] {
			t.Errorf("%s:\n got %s\nwant %s", k, g, want[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: unexpected %s", k, got[k])
		}
	}
}

// sameTree reports whether two snapshots are equal.
func sameTree(a, b map[string]string) bool { return maps.Equal(a, b) }
