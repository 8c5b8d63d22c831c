package patch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Cases from the review of issue 6: what a hostile patch must not get.

func TestHugeFilesAreNotRead(t *testing.T) {
	root := t.TempDir()
	big := filepath.Join(root, "big")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: costs nothing on disk, and must cost nothing in memory.
	if err := f.Truncate(8 << 30); err != nil {
		t.Skipf("no sparse files here: %v", err)
	}
	f.Close()
	_, err = Apply(context.Background(), "*** Begin Patch\n*** Update File: big\n@@\n-x\n+y\n*** End Patch", root)
	if err == nil || err.Error() != "Failed to read file to update big: it is larger than 64 MiB, the most a patch reads" {
		t.Errorf("update of an 8 GiB file: %v", err)
	}
	// A delete needs no content, and a failure later puts the file back.
	before, _ := os.Stat(big)
	_, err = Apply(context.Background(), "*** Begin Patch\n*** Delete File: big\n*** Update File: missing\n@@\n-x\n*** End Patch", root)
	after, statErr := os.Stat(big)
	if err == nil || statErr != nil || !os.SameFile(before, after) {
		t.Fatalf("failed patch: %v; the file: %v", err, statErr)
	}
	if _, err := Apply(context.Background(), "*** Begin Patch\n*** Delete File: big\n*** End Patch", root); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
}

func TestPatchReadBudget(t *testing.T) {
	root := t.TempDir()
	var p strings.Builder
	p.WriteString("*** Begin Patch\n")
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		write(t, filepath.Join(root, name), strings.Repeat("x", 60<<20)+"\n", 0o644)
		p.WriteString("*** Update File: " + name + "\n@@\n+appended\n")
	}
	p.WriteString("*** End Patch")
	_, err := Apply(context.Background(), p.String(), root)
	if err == nil || !strings.Contains(err.Error(), "larger than 256 MiB together") {
		t.Errorf("5 × 60 MiB: %v", err)
	}
}

func TestDeepPathsFailFast(t *testing.T) {
	root := t.TempDir()
	deep := strings.Repeat("m/", 5000) + "f"
	start := time.Now()
	_, err := Apply(context.Background(), "*** Begin Patch\n*** Add File: "+deep+"\n+x\n*** End Patch", root)
	if err == nil || !strings.HasSuffix(err.Error(), "File name too long (os error 36)") {
		t.Errorf("deep path: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second { // a hang guard, not a performance bound
		t.Errorf("took %v", d)
	}
}

func TestTrailingSlashNamesADirectory(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "a"), "keep\n", 0o644)
	if err := os.Symlink("a", filepath.Join(root, "l")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		"*** Begin Patch\n*** Delete File: l/\n*** End Patch",
		"*** Begin Patch\n*** Add File: x/\n+x\n*** End Patch",
		"*** Begin Patch\n*** Update File: l/.\n@@\n-keep\n+gone\n*** End Patch",
	} {
		if _, err := Apply(context.Background(), p, root); err == nil {
			t.Errorf("%q applied", p)
		}
	}
	if got := snapshot(t, root); len(got) != 2 || got["a"] != `file 0644 "keep\n"` || got["l"] != "link a" {
		t.Errorf("tree %v", got)
	}
}

// TestDeleteThenAddOfALink: a later hunk sees the link gone and writes a
// file in its place, not through it.
func TestDeleteThenAddOfALink(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "a"), "keep\n", 0o644)
	if err := os.Symlink("a", filepath.Join(root, "l")); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(context.Background(), "*** Begin Patch\n*** Delete File: l\n*** Add File: l\n+new\n*** End Patch", root); err != nil {
		t.Fatal(err)
	}
	if got := snapshot(t, root); got["a"] != `file 0644 "keep\n"` || got["l"] != `file 0644 "new\n"` {
		t.Errorf("tree %v", got)
	}
	// And when a later hunk fails, the link comes back.
	if err := os.Remove(filepath.Join(root, "l")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(root, "l")); err != nil {
		t.Fatal(err)
	}
	pl := mustPrepare(t, "*** Begin Patch\n*** Delete File: l\n*** Add File: l\n+new\n*** Add File: sub/x\n+x\n*** End Patch", root)
	write(t, filepath.Join(root, "sub"), "in the way\n", 0o644)
	if err := pl.Commit(context.Background()); err == nil {
		t.Fatal("Commit did not fail")
	}
	if target, err := os.Readlink(filepath.Join(root, "l")); err != nil || target != "a" {
		t.Errorf("the link was not put back: %q %v", target, err)
	}
}

func TestMoveKeepsOwnerAndDropsSetuid(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file away")
	}
	root := t.TempDir()
	src := filepath.Join(root, "s")
	write(t, src, "old\n", 0o755)
	if err := os.Chown(src, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(src, 0o4755); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(context.Background(), "*** Begin Patch\n*** Update File: s\n*** Move to: t\n@@\n-old\n+new\n*** End Patch", root); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(root, "t"))
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != 65534 || st.Gid != 65534 || fi.Mode()&os.ModeSetuid != 0 || fi.Mode().Perm() != 0o755 {
		t.Errorf("moved file: owner %d:%d mode %v", st.Uid, st.Gid, fi.Mode())
	}
}

func TestStoppedPatchesChangeNothing(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "a"), "a\n", 0o644)
	pl := mustPrepare(t, "*** Begin Patch\n*** Update File: a\n@@\n-a\n+b\n*** Add File: n\n+n\n*** End Patch", root)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := pl.Commit(ctx); err == nil || !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("Commit after cancel: %v", err)
	}
	if got := snapshot(t, root); len(got) != 1 || got["a"] != `file 0644 "a\n"` {
		t.Errorf("tree %v", got)
	}
	// A search that would take long stops with its context.
	lines := strings.Repeat("a\n", 20000)
	write(t, filepath.Join(root, "same"), lines, 0o644)
	var p strings.Builder
	p.WriteString("*** Begin Patch\n*** Update File: same\n@@\n")
	for range 9999 {
		p.WriteString(" a\n")
	}
	p.WriteString("-b\n*** End Patch")
	parsed, err := Parse(p.String())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := Prepare(ctx, parsed, root); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Prepare = %v, want the deadline", err)
	}
}

// TestDeleteThenAddIsRestored: a file removed then added by one patch
// comes back with its content when a later hunk fails.
func TestDeleteThenAddIsRestored(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "a"), "precious\n", 0o640)
	pl := mustPrepare(t, "*** Begin Patch\n*** Delete File: a\n*** Add File: a\n+new\n*** Add File: sub/x\n+x\n*** End Patch", root)
	write(t, filepath.Join(root, "sub"), "in the way\n", 0o644)
	if err := pl.Commit(context.Background()); err == nil {
		t.Fatal("Commit did not fail")
	}
	if got := snapshot(t, root)["a"]; got != `file 0644 "precious\n"` {
		t.Errorf("a = %s", got)
	}
	if fi, _ := os.Stat(filepath.Join(root, "a")); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", fi.Mode())
	}
}
