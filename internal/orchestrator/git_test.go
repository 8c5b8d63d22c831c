package orchestrator

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

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
		log:     zap.NewNop(),
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

// gitHere runs git in dir for a test, failing it on error.
func gitHere(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com",
		"-c", "protocol.file.allow=always", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// Through the process's Reaper, as every child: its orphan scan reaps
	// a child it did not start ("waitid: no child processes").
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := testReaper.Run(cmd); err != nil {
		t.Fatalf("git %q: %v\n%s", args, err, out.String())
	}
}

// Repositories protected since start but possibly made by a sandboxed
// command before that are not trusted (SPEC §7.2): a nested repository
// listed in .gitmodules, one in a root where a sandboxed command ran
// without a .git, a .git that is a writable root, submodules deeper
// than the helper protects. And what git clone and git init take
// GIT_DIR for decides how they are named.
func TestGitTrustMadeEarlier(t *testing.T) {
	base := gitTempDir(t)
	work := filepath.Join(base, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	gitHere(t, base, "init", "-q", "work")
	gitHere(t, work, "commit", "-q", "--allow-empty", "-m", "init")
	gitHere(t, work, "init", "-q", "sub")
	if err := os.WriteFile(filepath.Join(work, ".gitmodules"), []byte("[submodule \"sub\"]\n\tpath = sub\n\turl = ./sub\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitHere(t, work, "init", "-q", "--bare", "x/repo.git")
	o := gitTestOrchestrator(t, work, "/usr/bin:/bin")

	why := func(o *Orchestrator, dir string, argv ...string) (string, []string) {
		env, why := o.liftGit(call{argv: argv, cwd: dir})
		return why, env
	}
	if w, _ := why(o, filepath.Join(work, "sub"), "git", "status"); !strings.Contains(w, "neither a root's own nor a submodule's") {
		t.Errorf("git status in a nested repository listed as a submodule: %q; want it kept in the sandbox", w)
	}
	if w, _ := why(o, work, "git", "status"); !strings.Contains(w, "keeps its repository in its working tree") {
		t.Errorf("git status above it: %q; want it kept in the sandbox", w)
	}
	if err := os.Remove(filepath.Join(work, ".gitmodules")); err != nil {
		t.Fatal(err)
	}
	if w, env := why(o, work, "git", "status"); w != "" || !slices.Contains(env, "GIT_WORK_TREE="+work) {
		t.Errorf("git status in the root's own repository: %q, %q; want it named to git and lifted", w, env)
	}
	left := maxSubmodules
	if err := os.WriteFile(filepath.Join(work, ".gitmodules"), []byte("[submodule \"s\"]\n\tpath = s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	top, _ := gitrepo.Find(work)
	if w := o.gitTrust(top, nil, work, "status", maxGitDepth, &left); !strings.Contains(w, "deeper than") {
		t.Errorf("a repository %d levels down with submodules of its own: %q; want it kept in the sandbox", maxGitDepth, w)
	}
	if err := os.Remove(filepath.Join(work, ".gitmodules")); err != nil {
		t.Fatal(err)
	}

	// git clone refuses a GIT_WORK_TREE that exists; git init takes
	// GIT_DIR for the repository to make.
	if w, env := why(o, work, "git", "clone", "-q", work, "c"); w != "" || !slices.Equal(env, []string{"GIT_DIR=" + filepath.Join(work, ".git")}) {
		t.Errorf("git clone: %q, %q; want GIT_DIR alone", w, env)
	}
	if w, _ := why(o, work, "sh", "-c", "git clone -q x c && git status"); !strings.Contains(w, "clones a repository") {
		t.Errorf("git clone and git status: %q; want it kept in the sandbox", w)
	}
	if w, _ := why(o, work, "git", "init", "-q", "n"); !strings.Contains(w, "git init inside a repository") {
		t.Errorf("git init inside a repository: %q; want it kept in the sandbox", w)
	}

	// A root where a sandboxed command ran without a .git: nothing kept
	// in it is trusted, a bare repository its new .git file names
	// included.
	fresh := filepath.Join(base, "fresh")
	gitHere(t, base, "init", "-q", "--bare", "fresh/x/repo.git")
	if err := os.WriteFile(filepath.Join(fresh, ".git"), []byte("gitdir: x/repo.git\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	of := gitTestOrchestrator(t, fresh, "/usr/bin:/bin")
	if w, _ := why(of, filepath.Join(fresh, "x", "repo.git"), "git", "log"); w != "" {
		t.Errorf("git log in the bare repository behind a root's .git: %q; want it lifted", w)
	}
	of.tainted = map[string]bool{fresh: true}
	if w, _ := why(of, filepath.Join(fresh, "x", "repo.git"), "git", "log"); !strings.Contains(w, "where a sandboxed command ran while there was no .git") {
		t.Errorf("git log in that bare repository, the root recorded: %q; want it kept in the sandbox", w)
	}

	// .git a writable root of its own: the helper leaves it writable.
	o = gitTestOrchestrator(t, work, "/usr/bin:/bin")
	fi, err := os.Stat(filepath.Join(work, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	dev, ino := sandbox.FileID(fi)
	o.roots = append(o.roots, sandbox.Root{Path: filepath.Join(work, ".git"), Dev: dev, Ino: ino})
	o.recordGit()
	if w, _ := why(o, work, "git", "status"); !strings.Contains(w, "was not a protected repository") {
		t.Errorf("git status with .git a writable root: %q; want it kept in the sandbox", w)
	}
}

// The file of untrusted roots is read and appended to without blocking
// on a FIFO or following a symlink put in its place: a start that would
// hang, or a root never recorded, are both worse than distrusting all.
func TestGitStateFileIsRegular(t *testing.T) {
	dir := t.TempDir()
	fifo, link := filepath.Join(dir, "fifo"), filepath.Join(dir, "link")
	if err := errors.Join(unix.Mkfifo(fifo, 0o600), os.Symlink(filepath.Join(dir, "elsewhere"), link)); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{fifo, link} {
		o := &Orchestrator{gitState: f, log: zap.NewNop()}
		o.loadTaint() // returns
		if !o.tainted["/"] {
			t.Errorf("%s: tainted %v; want every root distrusted", f, o.tainted)
		}
		if err := appendLine(f, "/w"); err == nil {
			t.Errorf("%s: appended to it", f)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "elsewhere")); err == nil {
		t.Error("appendLine followed the symlink")
	}
}

// A submodule buried deeper than a launch protects (its .git past the
// helper's budget of pins) is not taken for protected since start: execd
// records what a launch protects, as the helper plans it.
func TestGitDeepSubmodule(t *testing.T) {
	base := gitTempDir(t)
	work := filepath.Join(base, "work")
	gitHere(t, base, "init", "-q", "lib")
	gitHere(t, filepath.Join(base, "lib"), "commit", "-q", "--allow-empty", "-m", "lib")
	gitHere(t, base, "init", "-q", "work")
	gitHere(t, work, "commit", "-q", "--allow-empty", "-m", "init")
	for _, sub := range []string{"shallow", "a/b/c/d/e/f/g/h/i/deep"} {
		gitHere(t, work, "submodule", "add", "-q", filepath.Join(base, "lib"), sub)
	}
	gitHere(t, work, "commit", "-q", "-m", "subs")
	o := gitTestOrchestrator(t, work, "/usr/bin:/bin")
	if !slices.Contains(o.submodulePaths, filepath.Join(work, "shallow", ".git")) ||
		slices.Contains(o.submodulePaths, filepath.Join(work, "a/b/c/d/e/f/g/h/i/deep", ".git")) {
		t.Errorf("submodules protected in every launch: %q; want shallow's, not deep's", o.submodulePaths)
	}
	if _, why := o.liftGit(call{argv: []string{"git", "status"}, cwd: work}); !strings.Contains(why, "a/b/c/d/e/f/g/h/i/deep was not protected") {
		t.Errorf("git status with a submodule past the pins a launch gives it: %q; want it kept in the sandbox", why)
	}
	if _, why := o.liftGit(call{argv: []string{"git", "status"}, cwd: filepath.Join(work, "shallow")}); why != "" {
		t.Errorf("git status in the shallow submodule: %q; want it lifted", why)
	}
	// A submodule whose .git execd does not take for a repository (git
	// may: it is git's to say) keeps git in the sandbox.
	gitHere(t, work, "rm", "-q", "-r", "--cached", "a")
	if err := errors.Join(os.RemoveAll(filepath.Join(work, "a")), os.MkdirAll(filepath.Join(work, "odd"), 0o755),
		os.WriteFile(filepath.Join(work, "odd", ".git"), []byte("not a gitdir line\n"), 0o644),
		os.WriteFile(filepath.Join(work, ".gitmodules"), []byte("[submodule \"odd\"]\n\tpath = odd\n"), 0o644)); err != nil {
		t.Fatal(err)
	}
	o = gitTestOrchestrator(t, work, "/usr/bin:/bin")
	if _, why := o.liftGit(call{argv: []string{"git", "status"}, cwd: work}); !strings.Contains(why, "does not take for a repository") {
		t.Errorf("git status with a submodule .git that is no repository to execd: %q; want it kept in the sandbox", why)
	}
}

// A root whose .git leads nowhere yet is recorded like one without: a
// sandboxed command may make what it leads to.
func TestTaintDanglingGit(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(base, "work")
	if err := errors.Join(os.MkdirAll(work, 0o755), os.Symlink("elsewhere/repo", filepath.Join(work, ".git"))); err != nil {
		t.Fatal(err)
	}
	o := gitTestOrchestrator(t, work, "/usr/bin:/bin")
	o.loadTaint()
	o.taintRoots()
	if !o.tainted[work] {
		t.Errorf("a root whose .git leads nowhere: tainted %v; want it recorded", o.tainted)
	}
}

// gitTempDir returns a temporary directory, by its physical path, for a
// test that runs git, which it skips without one.
func gitTempDir(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return base
}
