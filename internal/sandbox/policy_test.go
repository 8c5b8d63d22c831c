package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRoots(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cwd, extra, tmpdir, real := filepath.Join(base, "cwd"), filepath.Join(base, "extra"), filepath.Join(base, "tmpdir"), filepath.Join(base, "real")
	mkdirs(t, cwd, extra, tmpdir, real)
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	env := []string{"TMPDIR=" + tmpdir}
	tests := []struct {
		name string
		s    Settings
		want []string
	}{
		{"defaults", Settings{Mode: WorkspaceWrite}, []string{cwd, "/tmp", "/dev/shm", tmpdir}},
		{"extra roots, relative, symlinked, duplicate and missing",
			Settings{Mode: WorkspaceWrite, WritableRoots: []string{extra, "../link", cwd, filepath.Join(base, "missing")}, ExcludeSlashTmp: true, ExcludeTmpdirEnvVar: true},
			[]string{cwd, extra, real}},
		{"exclude /tmp", Settings{Mode: WorkspaceWrite, ExcludeSlashTmp: true}, []string{cwd, tmpdir}},
		{"exclude $TMPDIR", Settings{Mode: WorkspaceWrite, ExcludeTmpdirEnvVar: true}, []string{cwd, "/tmp", "/dev/shm"}},
		{"read-only has none", Settings{Mode: ReadOnly, WritableRoots: []string{extra}}, nil},
		{"never /", Settings{Mode: WorkspaceWrite, WritableRoots: []string{"/", "/.."}, ExcludeSlashTmp: true, ExcludeTmpdirEnvVar: true}, []string{cwd}},
	}
	for _, tt := range tests {
		got := RootPaths(tt.s.Roots(cwd, env))
		// /dev/shm may be missing in a minimal container.
		want := slices.DeleteFunc(slices.Clone(tt.want), func(d string) bool { _, err := os.Stat(d); return err != nil })
		if !slices.Equal(got, want) {
			t.Errorf("%s: Roots = %q, want %q", tt.name, got, want)
		}
	}
}

// Shared (no protected names looked up) is for world-writable sticky
// temporary directories only: never the workspace, whatever its mode.
func TestRootsShared(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cwd, extra, tmpdir, private := filepath.Join(base, "cwd"), filepath.Join(base, "extra"), filepath.Join(base, "tmpdir"), filepath.Join(base, "private")
	mkdirs(t, cwd, extra, tmpdir, private)
	for _, d := range []string{cwd, extra, tmpdir} {
		if err := os.Chmod(d, os.ModeSticky|0o777); err != nil {
			t.Fatal(err)
		}
	}
	shared := func(s Settings, cwd, tmpdir string) map[string]bool {
		out := map[string]bool{}
		for _, r := range s.Roots(cwd, []string{"TMPDIR=" + tmpdir}) {
			out[r.Path] = r.Shared
		}
		return out
	}
	got := shared(Settings{Mode: WorkspaceWrite, WritableRoots: []string{extra}}, cwd, tmpdir)
	if got[cwd] || got[extra] || !got[tmpdir] {
		t.Errorf("sticky cwd, configured root, $TMPDIR: shared %v; want only $TMPDIR", got)
	}
	if fi, err := os.Stat("/tmp"); err == nil && fi.Mode()&os.ModeSticky != 0 && fi.Mode().Perm()&0o002 != 0 && !got["/tmp"] {
		t.Errorf("/tmp: shared %v; want it shared", got)
	}
	if got := shared(Settings{Mode: WorkspaceWrite}, "/tmp", private); got["/tmp"] || got[private] {
		t.Errorf("cwd /tmp, private $TMPDIR: shared %v; want neither", got)
	}
}

func TestProtectedPaths(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// A worktree: .git is a file naming the real git directory.
	gitdir := filepath.Join(other, "repo.git", "worktrees", "w")
	decoy := filepath.Join(other, "decoy")
	mkdirs(t, gitdir, decoy, filepath.Join(root, ".agents", "deep", ".codex"))
	if err := os.WriteFile(filepath.Join(root, ".git"), []byte("gitdir: "+gitdir+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(decoy, filepath.Join(root, ".codex")); err != nil {
		t.Fatal(err)
	}
	rel, relGitdir := filepath.Join(other, "rel"), filepath.Join(other, "rel", "gd")
	mkdirs(t, relGitdir)
	if err := os.WriteFile(filepath.Join(rel, ".git"), []byte("gitdir: gd"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Submodules of the root, listed in .gitmodules: a plain one, one
	// git would refuse (..), a missing one.
	mkdirs(t, filepath.Join(root, "lib", "sub", ".git"), filepath.Join(root, "vendor", "x"))
	gitmodules := "[submodule \"a\"]\n\tpath = lib/sub\n[submodule \"b\"]\n\tpath = ../out\n[submodule \"c\"]\n\tpath = gone\n"
	if err := os.WriteFile(filepath.Join(root, ".gitmodules"), []byte(gitmodules), 0o644); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(root, "vendor", "x", "audit.log")
	if err := os.WriteFile(own, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got := ProtectedPaths([]string{root, rel}, []string{".git", ".codex", ".agents", ".execd", "../escape", ""},
		[]string{own, filepath.Join(other, "outside.rules"), filepath.Join(root, "missing.rules")})
	want := []string{
		filepath.Join(root, ".git"), gitdir,
		filepath.Join(root, ".codex"), decoy,
		filepath.Join(root, ".agents"),
		filepath.Join(root, "lib", "sub", ".git"),
		filepath.Join(rel, ".git"), relGitdir,
		own,
	}
	if !slices.Equal(got, want) {
		t.Errorf("ProtectedPaths =\n%q\nwant\n%q", got, want)
	}
}
