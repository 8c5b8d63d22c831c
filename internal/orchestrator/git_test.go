package orchestrator

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/execd/execd/internal/gitrepo"
	"github.com/execd/execd/internal/sandbox"
)

// gitTestOrchestrator is an Orchestrator enforcing workspace-write with
// the writable root work, whose commands' PATH is path.
func gitTestOrchestrator(t *testing.T, work, path string) *Orchestrator {
	t.Helper()
	fi, err := os.Stat(work)
	if err != nil {
		t.Fatal(err)
	}
	dev, ino := sandbox.FileID(fi)
	o := &Orchestrator{
		sandbox: SandboxPolicy{Settings: sandbox.Settings{Mode: sandbox.WorkspaceWrite, ProtectedNames: []string{".git"}}},
		support: sandbox.Support{OS: "linux", UserNS: true},
		roots:   []sandbox.Root{{Path: work, Dev: dev, Ino: ino}},
		env:     []string{"PATH=" + path, "HOME=" + filepath.Join(filepath.Dir(work), "home")},
	}
	o.recordGit()
	return o
}

func TestGitDirs(t *testing.T) {
	o := &Orchestrator{env: []string{"HOME=/home/u"}}
	tests := []struct {
		cmds [][]string
		want []string // nil: refused
	}{
		{[][]string{{"git", "status"}}, []string{"/w"}},
		{[][]string{{"cd", "sub"}, {"git", "status"}}, []string{"/w", "/w/sub"}},
		{[][]string{{"cd", "/abs"}, {"cd", "x"}}, []string{"/abs", "/abs/x", "/w", "/w/x"}},
		{[][]string{{"cd"}}, []string{"/home/u", "/w"}},
		{[][]string{{"cd", "-"}}, nil},
		{[][]string{{"cd", "-P", "x"}}, nil},
		{[][]string{{"popd"}}, nil},
		{[][]string{{"cd", "a"}, {"cd", "b"}, {"cd", "c"}, {"cd", "d"}}, nil}, // 16 directories
	}
	for _, tt := range tests {
		got, why := o.gitDirs("/w", tt.cmds)
		if (why != "") != (tt.want == nil) || !slices.Equal(got, tt.want) {
			t.Errorf("gitDirs(%q) = %q, %q; want %q", tt.cmds, got, why, tt.want)
		}
	}
}

func TestGitArgs(t *testing.T) {
	tests := []struct {
		args    []string
		dir     string
		refused bool
		extra   int
	}{
		{[]string{"status"}, "/w", false, 0},
		{[]string{"-C", "a", "-C", "b", "status"}, "/w/a/b", false, 0},
		{[]string{"-C", "/x", "log"}, "/x", false, 0},
		{[]string{"-c", "core.fsmonitor=./x", "status"}, "/w", false, 1},
		{[]string{"--git-dir=/x", "status"}, "", true, 0},
		{[]string{"--work-tree", "/x", "status"}, "", true, 0},
		{[]string{"--no-pager", "-P", "diff"}, "/w", false, 0},
	}
	for _, tt := range tests {
		dir, extra, why := gitArgs("/w", tt.args)
		if (why != "") != tt.refused || (!tt.refused && (dir != tt.dir || len(extra) != tt.extra)) {
			t.Errorf("gitArgs(%q) = %q, %v, %q", tt.args, dir, extra, why)
		}
	}
	if got := subcommand([]string{"-C", "x", "-c", "a=b", "--no-pager", "commit", "-m", "x"}); got != "commit" {
		t.Errorf("subcommand = %q, want commit", got)
	}
}

// What a repository's configuration names decides whether git may run
// outside the sandbox: programs and files within the writable root, or
// reached through a PATH entry there, keep it in.
func TestGitEntry(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	work, tools := filepath.Join(base, "work"), filepath.Join(base, "tools")
	for _, d := range []string{filepath.Join(work, "scripts"), tools} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "fsmon"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	o := gitTestOrchestrator(t, work, "/usr/bin:/bin")
	r := gitrepo.Repo{GitDir: filepath.Join(work, ".git"), CommonDir: filepath.Join(work, ".git"), Worktree: work}
	tests := []struct {
		key, value string
		steered    bool
	}{
		{"core.fsmonitor", "true", false},
		{"core.fsmonitor", "./fsmon", true},
		{"core.fsmonitor", "sh fsmon", true}, // a file of the working tree
		{"core.fsmonitor", tools + "/fsmon", false},
		{"core.sshcommand", "ssh -i ~/.ssh/key", false},
		{"filter.lfs.process", "git-lfs filter-process", false},
		{"diff.x.textconv", "scripts/conv", true},
		{"core.pager", "less -R", false},
		{"alias.st", "!sh -c 'scripts/x'", true},
		{"core.worktree", "../", false},
		{"include.path", "x", false}, // read by gitConfig, not here
		{"user.name", "./x", false},
	}
	for _, tt := range tests {
		e := gitrepo.Entry{Key: tt.key, Value: tt.value}
		if got := o.gitEntry(r, e) != ""; got != tt.steered {
			t.Errorf("%s = %s: steered %v, want %v", tt.key, tt.value, got, tt.steered)
		}
	}
	// A PATH entry in the workspace can supply any bare program.
	o = gitTestOrchestrator(t, work, filepath.Join(work, "node_modules/.bin")+":/usr/bin")
	if why := o.gitEntry(r, gitrepo.Entry{Key: "core.pager", Value: "less"}); !strings.Contains(why, "PATH") {
		t.Errorf("a pager found on a PATH with a writable entry: %q; want it kept in the sandbox", why)
	}
}

func TestShellStartup(t *testing.T) {
	tests := []struct {
		argv  []string
		name  string
		login bool
	}{
		{[]string{"/bin/bash", "-lc", "x"}, "bash", true},
		{[]string{"bash", "-c", "x"}, "bash", false},
		{[]string{"bash", "-O", "globstar", "-lc", "x"}, "bash", true},
		{[]string{"bash", "-o", "pipefail", "-c", "x"}, "bash", false},
		{[]string{"bash", "--login", "-c", "x"}, "bash", true},
		{[]string{"-bash"}, "bash", true},
		{[]string{"zsh", "-c", "x"}, "zsh", false},
		{[]string{"dash", "-l"}, "sh", true},
		{[]string{"bash", "script.sh", "-l"}, "bash", false},
		{[]string{"python3", "-l"}, "", false},
	}
	for _, tt := range tests {
		if name, login := shellStartup(tt.argv); name != tt.name || login != tt.login {
			t.Errorf("shellStartup(%q) = %q, %v; want %q, %v", tt.argv, name, login, tt.name, tt.login)
		}
	}
}
