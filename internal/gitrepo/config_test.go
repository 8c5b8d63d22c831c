package gitrepo

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// configCases are configuration files that git reads; each is compared
// with what git itself lists.
var configCases = []string{
	"[core]\n\tfsmonitor = ./x\n\thooksPath=.husky\n",
	"[core]\nbare\n[Core]\n  Editor = vim  -f  # comment\n",
	"[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n\tprocess = \"git-lfs filter-process\"\n",
	"[alias]\n\tst = \"!f() { echo \\\"hi\\\"; }; f\"\n",
	"[diff.Old]\n\ttextconv = a\\\n b\n",
	"; top\n# comment\n[includeIf \"gitdir:~/work/\"]\n\tpath = ~/w.gitconfig\n",
	"[x \"a b\\\"c\\\\\"]\n\tk = v ; c\n\tk2 = \"v ; not c\"\n",
	"[a]\r\n\tb = c\r\n\td = \"e\tf\"\r\n",
	"[sec]\n\tk = a \"b\" c\n\tn = a\\tb\\nc\n",
	"[s]k=v\n",
	"[s] k = v\n",
	"[.]\na=1\n[a.]\nb=1\n[a.b.c]\nd=1\n[A.B]\nc=1\n",
	"[s]\nk = v\\",
}

func TestConfigLikeGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	for i, src := range configCases {
		f := filepath.Join(dir, "c"+strings.Repeat("x", i))
		if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(git, "config", "--file", f, "--list", "-z")
		cmd.Env = []string{"HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git config on %q: %v", src, err)
		}
		var want []Entry
		for _, item := range bytes.Split(bytes.TrimSuffix(out, []byte{0}), []byte{0}) {
			k, v, ok := strings.Cut(string(item), "\n")
			want = append(want, Entry{Key: k, Value: v, Bare: !ok})
		}
		got, err := ParseConfig([]byte(src))
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%q:\n got %+v, %v\nwant %+v", src, got, err, want)
		}
	}
	for _, bad := range []string{"k = v\n", "[s\n", "[]\n", "[s]\nk = v\\", "[s \"x]\n", "[s]\nk = \"open\n", "[s]\nk = a\\q\n", "[s]\n9k = v\n"} {
		f := filepath.Join(dir, "bad")
		if err := os.WriteFile(f, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		gitErr := exec.Command(git, "config", "--file", f, "--list").Run()
		if _, err := ParseConfig([]byte(bad)); (err == nil) != (gitErr == nil) {
			t.Errorf("%q: ours %v, git's %v", bad, err, gitErr)
		}
	}
}

func TestKindOf(t *testing.T) {
	tests := []struct {
		e    Entry
		want Kind
	}{
		{Entry{Key: "core.fsmonitor", Value: "true"}, Other},
		{Entry{Key: "core.fsmonitor", Value: "./fsmon.sh"}, Command},
		{Entry{Key: "core.hookspath", Value: ".husky"}, Path},
		{Entry{Key: "core.worktree", Value: "../../../sub"}, Other},
		{Entry{Key: "filter.lfs.process", Value: "git-lfs filter-process"}, Command},
		{Entry{Key: "diff.a.b.textconv", Value: "x"}, Command},
		{Entry{Key: "diff.textconv", Value: "x"}, Other},
		{Entry{Key: "alias.st", Value: "status"}, Other},
		{Entry{Key: "alias.x", Value: " !rm -rf ~"}, Command},
		{Entry{Key: "pager.log", Value: "false"}, Other},
		{Entry{Key: "pager.log", Value: "less -S"}, Command},
		{Entry{Key: "includeif.gitdir:~/w/.path", Value: "x"}, Include},
		{Entry{Key: "include.path", Value: "x"}, Include},
		{Entry{Key: "credential.https://example.com.helper", Value: "store"}, Command},
		{Entry{Key: "user.name", Value: "x"}, Other},
	}
	for _, tt := range tests {
		if got := KindOf(tt.e); got != tt.want {
			t.Errorf("KindOf(%+v) = %d, want %d", tt.e, got, tt.want)
		}
	}
}

// FuzzConfig: any input parses or fails without panic, and what parses
// has keys that end in a variable name. (Section names may be odd: git
// takes [.] and [a.], so the key of a in [.] is "..a".)
func FuzzConfig(f *testing.F) {
	for _, s := range configCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := ParseConfig(b)
		if err != nil {
			return
		}
		for _, e := range entries {
			if e.Key == "" || strings.HasSuffix(e.Key, ".") {
				t.Fatalf("%q: key %q", b, e.Key)
			}
			if e.Bare && e.Value != "" {
				t.Fatalf("%q: bare %q has a value", b, e.Key)
			}
		}
	})
}

// Submodules lists each path git would take once, and reads no more
// than a bounded .gitmodules: a sandboxed command writes it, and every
// launch reads it.
func TestSubmodulesBounded(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(dir, ".gitmodules"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("[submodule \"x\"]\n" + strings.Repeat("\tpath = .\n", 64) + "\tpath = a/\n\tpath = a\n\tpath = /abs\n\tpath = ../up\n\tpath = b/../../c\n\tpath = lib/d\n")
	if got, err := Submodules(dir); err != nil || !slices.Equal(got, []string{"a", "lib/d"}) {
		t.Errorf("Submodules = %q, %v; want [a lib/d]", got, err)
	}
	write(strings.Repeat("x\n", maxGitmodules))
	if got, err := Submodules(dir); err == nil {
		t.Errorf("a .gitmodules of %d bytes: %q; want an error", 2*maxGitmodules, got)
	}
}
