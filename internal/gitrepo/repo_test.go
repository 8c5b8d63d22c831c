package gitrepo

import (
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
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	git := func(dir string, args ...string) (string, error) {
		cmd := exec.Command(gitBin, args...)
		cmd.Dir = dir
		cmd.Env = []string{"HOME=" + base, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x", "GIT_CEILING_DIRECTORIES=" + filepath.Dir(base),
			"GIT_ALLOW_PROTOCOL=file", "PATH=/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
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
	must(main, "-c", "protocol.file.allow=always", "submodule", "add", "-q", "../lib", "sub")
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
	for _, dir := range []string{"main", "main/a/b", "wt", "main/sub", "bare.git", "main/a/nested", "link", "none"} {
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

// clean resolves symlinks and dots, as git's absolute paths have them.
func clean(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}
