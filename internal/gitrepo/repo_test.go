package gitrepo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Find agrees with git on where it finds the repository, in the layouts
// git makes: a plain repository and a subdirectory of it, a linked
// worktree, a submodule, a bare repository, a .git symlink, nested
// repositories, and none.
func TestFindLikeGit(t *testing.T) {
	base, git := gitLab(t)
	must := func(dir string, args ...string) {
		t.Helper()
		if out, err := git(dir, args...); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	must(base, "init", "-q", "main")
	main := filepath.Join(base, "main")
	must(main, "commit", "-q", "--allow-empty", "-m", "init")
	if err := os.MkdirAll(filepath.Join(main, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	must(main, "worktree", "add", "-q", "../wt")
	must(base, "init", "-q", "--bare", "bare.git")
	must(base, "init", "-q", "lib")
	must(filepath.Join(base, "lib"), "commit", "-q", "--allow-empty", "-m", "lib")
	must(main, "submodule", "add", "-q", "../lib", "sub")
	must(main, "init", "-q", "a/nested")
	if err := os.MkdirAll(filepath.Join(base, "link"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(main, ".git"), filepath.Join(base, "link", ".git")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(base, "none"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Repositories as git's checks see them (validate_headref, access
	// X_OK): a HEAD symlink to a missing branch, objects a file with an
	// execute bit; and a HEAD git refuses, which git looks past.
	must(main, "init", "-q", "a/dangling")
	must(main, "init", "-q", "a/xobjects")
	must(main, "init", "-q", "a/badhead")
	head := filepath.Join(main, "a", "dangling", ".git", "HEAD")
	objects := filepath.Join(main, "a", "xobjects", ".git", "objects")
	if err := errors.Join(os.Remove(head), os.Symlink("refs/heads/zzz", head), os.RemoveAll(objects),
		os.WriteFile(objects, nil, 0o755), os.WriteFile(filepath.Join(main, "a", "badhead", ".git", "HEAD"), []byte("garbage\n"), 0o644)); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"main", "main/a/b", "wt", "main/sub", "bare.git", "main/a/nested", "link", "none",
		"main/a/dangling", "main/a/xobjects", "main/a/badhead"} {
		d := filepath.Join(base, dir)
		r, ok := Find(d)
		out, err := git(d, "rev-parse", "--absolute-git-dir", "--path-format=absolute", "--git-common-dir")
		if err != nil {
			if ok {
				t.Errorf("%s: git finds no repository (%s); Find found %+v", dir, out, r)
			}
			continue
		}
		lines := strings.Split(out, "\n")
		want := Repo{GitDir: lines[0], CommonDir: lines[1]}
		if top, err := git(d, "rev-parse", "--show-toplevel"); err == nil {
			want.Worktree = top // none for a bare repository
		}
		got := Repo{GitDir: clean(r.GitDir), CommonDir: clean(r.CommonDir), Worktree: r.Worktree}
		if !ok || got != want {
			t.Errorf("%s: Find = %+v, %v; git says %+v", dir, got, ok, want)
		}
	}
}

// gitLab is a directory for repositories, and a runner of real git in
// it (skipping the test where git is missing) that reads no
// configuration but the directory's and lets submodules clone locally.
func gitLab(t *testing.T) (string, func(dir string, args ...string) (string, error)) {
	t.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return base, func(dir string, args ...string) (string, error) {
		cmd := exec.Command(gitBin, append([]string{"-c", "protocol.file.allow=always"}, args...)...)
		cmd.Dir = dir
		cmd.Env = []string{"HOME=" + base, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x", "GIT_CEILING_DIRECTORIES=" + filepath.Dir(base),
			"PATH=/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
}

// clean resolves symlinks and dots, as git's absolute paths have them.
func clean(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// Gitlinks agrees with git ls-files on the submodules an index records,
// in each index version, and refuses a split index.
func TestGitlinksLikeGit(t *testing.T) {
	base, run := gitLab(t)
	git := func(dir string, args ...string) string {
		t.Helper()
		out, err := run(dir, args...)
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return out + "\n"
	}
	git(base, "init", "-q", "lib")
	git(filepath.Join(base, "lib"), "commit", "-q", "--allow-empty", "-m", "lib")
	git(base, "init", "-q", "main")
	main := filepath.Join(base, "main")
	for _, f := range []string{"a.txt", "dir/b.txt", strings.Repeat("long/", 30) + "c.txt"} {
		if err := os.MkdirAll(filepath.Join(main, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(main, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(main, "add", ".")
	git(main, "submodule", "add", "-q", "../lib", "sub")
	git(main, "submodule", "add", "-q", "../lib", "dir/nested sub")
	if err := os.WriteFile(filepath.Join(main, "intent.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	git(main, "add", "-N", "intent.txt") // an extended flag
	r, ok := Find(main)
	if !ok {
		t.Fatal("no repository")
	}
	for _, version := range []string{"2", "3", "4"} {
		git(main, "update-index", "--index-version", version)
		var want []string
		for _, line := range strings.Split(git(main, "ls-files", "-s"), "\n") {
			if f := strings.SplitN(line, "\t", 2); len(f) == 2 && strings.HasPrefix(f[0], "160000 ") {
				want = append(want, f[1])
			}
		}
		got, err := r.Gitlinks()
		if err != nil || strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("index version %s: Gitlinks = %q, %v; git says %q", version, got, err, want)
		}
	}
	git(main, "update-index", "--split-index")
	if _, err := r.Gitlinks(); err != ErrSplitIndex {
		t.Errorf("a split index: %v, want ErrSplitIndex", err)
	}
}

// FuzzGitlinks: any bytes parse or fail without panic.
func FuzzGitlinks(f *testing.F) {
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x00"), false)
	f.Add([]byte("DIRC\x00\x00\x00\x04\x00\x00\x00\x01"+strings.Repeat("\x00", 62)+"\x05a\x00"), true)
	f.Fuzz(func(t *testing.T, b []byte, sha256 bool) {
		n := 20
		if sha256 {
			n = 32
		}
		_, _ = ParseGitlinks(strings.NewReader(string(b)), n)
	})
}

// v4Index is an index of version 4 with one gitlink entry for each
// (strip, suffix) pair.
func v4Index(entries [][2]any) []byte {
	b := []byte("DIRC\x00\x00\x00\x04")
	b = binary.BigEndian.AppendUint32(b, uint32(len(entries)))
	for _, e := range entries {
		fixed := make([]byte, 40+20+2)
		binary.BigEndian.PutUint32(fixed[24:28], gitlinkMode)
		b = append(b, fixed...)
		b = append(b, byte(e[0].(int))) // strip < 128: one byte
		b = append(b, e[1].(string)...)
		b = append(b, 0)
	}
	return b
}

// An index a sandboxed command wrote costs execd little to read: a
// version 4 path that grows with each entry (each suffix short, none
// stripped) is bounded as a whole, and so are the gitlinks kept.
func TestGitlinksBounded(t *testing.T) {
	suffix := strings.Repeat("a", 40<<10)
	_, err := ParseGitlinks(bytes.NewReader(v4Index([][2]any{{0, suffix}, {0, suffix}})), 20)
	if err == nil || !strings.Contains(err.Error(), "path too long") {
		t.Errorf("a path of 80 KiB built from two suffixes: err = %v, want path too long", err)
	}
	var many [][2]any
	for i := range maxGitlinks + 1 {
		many = append(many, [2]any{0, fmt.Sprint("/", i)})
	}
	if _, err := ParseGitlinks(bytes.NewReader(v4Index(many)), 20); err == nil {
		t.Errorf("%d gitlinks: no error", len(many))
	}
	if links, err := ParseGitlinks(bytes.NewReader(v4Index(many[:3])), 20); err != nil || len(links) != 3 || links[2] != "/0/1/2" {
		t.Errorf("three gitlinks: %q, %v; want their paths built on each other", links, err)
	}
}

// git reads at most 255 bytes of HEAD (refs.c, validate_headref): a
// "ref: refs/" whose refs/ ends past them is no HEAD to it, nor to
// execd.
func TestValidHeadLength(t *testing.T) {
	dir := t.TempDir()
	for spaces, want := range map[int]bool{246: true, 247: false} {
		head := filepath.Join(dir, "HEAD")
		if err := os.WriteFile(head, []byte("ref:"+strings.Repeat(" ", spaces)+"refs/heads/main\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := validHead(head); got != want {
			t.Errorf("HEAD with refs/ after %d spaces: valid %v, want %v", spaces, got, want)
		}
	}
}
