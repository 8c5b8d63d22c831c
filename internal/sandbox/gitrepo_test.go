package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The layouts of test/escape_test.go's TestEscapeGitIndirections, where
// real git confirms each answer.
func TestGitRepository(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	common := filepath.Join(base, "main", ".git")
	gitdir := filepath.Join(common, "worktrees", "w")
	mkdirs(t, gitdir, gitdir+" ", filepath.Join(base, "w", ".gitdir"), filepath.Join(base, "x", "y"))
	write := func(path, data string) string {
		t.Helper()
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write(filepath.Join(gitdir, "commondir"), "../..\n")
	write(filepath.Join(gitdir+" ", "commondir"), "../..\r\n")
	cdFile := write(filepath.Join(base, "cd"), common+"\n")
	if err := os.Symlink(filepath.Join(base, "x", "y"), filepath.Join(base, "via")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, content   string // of the .git file; "" for a directory
		wantFiles, dirs []string
	}{
		{"absolute gitdir", "gitdir: " + gitdir + "\n", []string{filepath.Join(gitdir, "commondir")}, []string{gitdir, common}},
		{"trailing space is part of the path", "gitdir: " + gitdir + " \n", []string{filepath.Join(gitdir+" ", "commondir")}, []string{gitdir + " ", common}},
		// The symlink passed is protected too: removing it would lead
		// the gitdir elsewhere.
		{"relative, with .. after a symlink (not cleaned as text)", "gitdir: ../via/../../main/.git/worktrees/w",
			[]string{filepath.Join(base, "via"), filepath.Join(gitdir, "commondir")}, []string{gitdir, common}},
		{"no space after the colon", "gitdir:" + gitdir, nil, nil},
		{"no path", "gitdir: \n", nil, nil},
		{"missing target", "gitdir: /nonexistent", nil, nil},
	}
	for _, tt := range tests {
		git := write(filepath.Join(base, "w", ".git-"+tt.name), tt.content)
		files, dirs := gitRepository(filepath.Join(base, "w"), git)
		if !slices.Equal(files, tt.wantFiles) || !slices.Equal(dirs, tt.dirs) {
			t.Errorf("%s: gitRepository = %q, %q; want %q, %q", tt.name, files, dirs, tt.wantFiles, tt.dirs)
		}
	}
	// A repository directory with a commondir that is a symlink.
	dotgit := filepath.Join(base, "w", ".gitdir")
	if err := os.Symlink(cdFile, filepath.Join(dotgit, "commondir")); err != nil {
		t.Fatal(err)
	}
	files, dirs := gitRepository(filepath.Join(base, "w"), dotgit)
	wantFiles := []string{filepath.Join(dotgit, "commondir"), cdFile}
	if !slices.Equal(files, wantFiles) || !slices.Equal(dirs, []string{common}) {
		t.Errorf(".git directory with a commondir symlink: %q, %q; want %q, %q", files, dirs, wantFiles, []string{common})
	}
}
