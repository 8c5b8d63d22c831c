package patch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mustPrepare(t *testing.T, text, cwd string) *Plan {
	t.Helper()
	p, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := Prepare(context.Background(), p, cwd)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

func write(t *testing.T, path, content string, perm os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil { // whatever the umask
		t.Fatal(err)
	}
}

// TestCommitRestoresOnFailure makes the third change fail after the
// first two were written (a file now stands where its directory must be
// created) and checks that the tree is back as it was, modes included.
func TestCommitRestoresOnFailure(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "a.txt"), "a\n", 0o640)
	write(t, filepath.Join(root, "gone.txt"), "gone\n", 0o600)
	if err := os.Symlink("a.txt", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	pl := mustPrepare(t, "*** Begin Patch\n*** Update File: a.txt\n-a\n+A\n*** Delete File: gone.txt\n"+
		"*** Delete File: link\n*** Add File: new/dir/b.txt\n+b\n*** Add File: sub/c.txt\n+c\n*** End Patch", root)
	before := snapshot(t, root)
	write(t, filepath.Join(root, "sub"), "in the way\n", 0o644) // after Prepare: Commit fails at sub/c.txt
	before["sub"] = snapshot(t, root)["sub"]

	err := pl.Commit(context.Background())
	if err == nil || err.Error() != "Failed to create parent directories for sub/c.txt: Not a directory (os error 20)" {
		t.Fatalf("Commit() = %v", err)
	}
	diffTrees(t, before, snapshot(t, root))
	for name, perm := range map[string]os.FileMode{"a.txt": 0o640, "gone.txt": 0o600} {
		if fi, err := os.Stat(filepath.Join(root, name)); err != nil || fi.Mode().Perm() != perm {
			t.Errorf("%s: %v, mode %v, want %v", name, err, fi.Mode(), perm)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the directories made for new/dir/b.txt are still there: %v", err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(root, ".*execd-patch*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

// TestCommitDoesNotFollowSwappedLinks swaps a directory for a symlink
// between Prepare and Commit: the write must fail, not land where the
// link leads.
func TestCommitDoesNotFollowSwappedLinks(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	write(t, filepath.Join(root, "dir", "f.txt"), "x\n", 0o644)
	write(t, filepath.Join(outside, "f.txt"), "x\n", 0o644)
	pl := mustPrepare(t, "*** Begin Patch\n*** Update File: dir/f.txt\n-x\n+owned\n*** End Patch", root)
	if err := os.RemoveAll(filepath.Join(root, "dir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "dir")); err != nil {
		t.Fatal(err)
	}
	if err := pl.Commit(context.Background()); err == nil {
		t.Fatal("Commit wrote through a symlink that appeared after Prepare")
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "f.txt")); string(b) != "x\n" {
		t.Errorf("the file outside was changed: %q", b)
	}
}

func TestPrepareResolvesSymlinks(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	write(t, filepath.Join(outside, "f.txt"), "x\n", 0o644)
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	// As the kernel does, ".." after a link leaves the link's target.
	if err := os.Symlink("out/../"+filepath.Base(outside)+"/f.txt", filepath.Join(root, "lf")); err != nil {
		t.Fatal(err)
	}
	pl := mustPrepare(t, "*** Begin Patch\n*** Update File: lf\n-x\n+y\n*** Add File: out/new.txt\n+n\n"+
		"*** Delete File: out\n*** End Patch", root)
	want := []Target{
		{Name: "lf", Real: filepath.Join(outside, "f.txt")},
		{Name: "out/new.txt", Real: filepath.Join(outside, "new.txt")},
		{Name: "out", Real: filepath.Join(root, "out")}, // Delete removes the link itself
	}
	got := pl.Targets()
	if len(got) != len(want) {
		t.Fatalf("Targets() = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("target %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestAbsolutePathsAndMoveKeepsMode(t *testing.T) {
	root, other := t.TempDir(), t.TempDir()
	write(t, filepath.Join(other, "tool.sh"), "echo a\n", 0o750)
	abs := filepath.Join(other, "tool.sh")
	sum, err := Apply(context.Background(), "*** Begin Patch\n*** Update File: "+abs+"\n*** Move to: bin/tool.sh\n-echo a\n+echo b\n*** End Patch", root)
	if err != nil {
		t.Fatal(err)
	}
	if got := sum.String(); got != "Success. Updated the following files:\nM bin/tool.sh\n" {
		t.Errorf("summary %q", got)
	}
	fi, err := os.Stat(filepath.Join(root, "bin", "tool.sh"))
	if err != nil || fi.Mode().Perm() != 0o750 {
		t.Fatalf("moved file: %v %v", fi, err)
	}
	if _, err := os.Stat(abs); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the original is still there: %v", err)
	}
}

func TestNewFileModeFollowsUmask(t *testing.T) {
	root := t.TempDir()
	if _, err := Apply(context.Background(), "*** Begin Patch\n*** Add File: n.txt\n+x\n*** End Patch", root); err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(root, "probe")
	if err := os.WriteFile(probe, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	a, _ := os.Stat(filepath.Join(root, "n.txt"))
	b, _ := os.Stat(probe)
	if a.Mode().Perm() != b.Mode().Perm() {
		t.Errorf("new file mode %v, want %v like any new file", a.Mode(), b.Mode())
	}
}

func TestPrepareRefusesNonRegularFiles(t *testing.T) {
	root := t.TempDir()
	if err := os.Symlink("/dev/null", filepath.Join(root, "null")); err != nil {
		t.Fatal(err)
	}
	_, err := Apply(context.Background(), "*** Begin Patch\n*** Add File: null\n+x\n*** End Patch", root)
	if err == nil || !strings.Contains(err.Error(), "Failed to write file null: not a regular file") {
		t.Errorf("Add over /dev/null: %v", err)
	}
	_, err = Apply(context.Background(), "*** Begin Patch\n*** Update File: null\n+x\n*** End Patch", root)
	if err == nil || !strings.Contains(err.Error(), "Failed to read file to update null: not a regular file") {
		t.Errorf("Update of /dev/null: %v", err)
	}
}

func TestUnchangedFileIsNotRewritten(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "same.txt")
	write(t, p, "a\nb\n", 0o644)
	before, _ := os.Stat(p)
	if _, err := Apply(context.Background(), "*** Begin Patch\n*** Update File: same.txt\n@@\n a\n-b\n+b\n*** End Patch", root); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(p)
	if !os.SameFile(before, after) {
		t.Error("an update that changes nothing replaced the file")
	}
}
