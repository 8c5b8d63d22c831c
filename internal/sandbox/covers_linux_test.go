package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// workspace is a repository as execd meets it: a root with .git, two
// submodules (one initialized, with a gitfile into .git/modules, one not),
// an .execd directory of execd's own files among the protected paths, and
// a shared temporary root; with the default protected names.
type workspace struct {
	root, tmp, home string
	policy          Policy
}

func newWorkspace(t testing.TB) *workspace {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &workspace{root: filepath.Join(base, "repo"), tmp: filepath.Join(base, "tmp"), home: filepath.Join(base, "home")}
	files := map[string]string{
		".git/HEAD":                        "ref: refs/heads/main\n",
		".git/config":                      "[core]\n\trepositoryformatversion = 0\n",
		".git/objects/info/packs":          "",
		".git/refs/heads/main":             "0123456789abcdef0123456789abcdef01234567\n",
		".git/modules/libs/a/HEAD":         "0123456789abcdef0123456789abcdef01234567\n",
		".git/modules/libs/a/config":       "[core]\n\tworktree = ../../../../libs/a\n",
		".gitmodules":                      "[submodule \"libs/a\"]\n\tpath = libs/a\n\turl = https://example.com/a.git\n[submodule \"libs/b\"]\n\tpath = libs/b\n\turl = https://example.com/b.git\n",
		"libs/a/.git":                      "gitdir: ../../.git/modules/libs/a\n",
		"libs/a/src/a.go":                  "package a\n",
		"libs/b/.keep":                     "",
		".execd/rules.star":                "",
		"src/main.go":                      "package main\n",
		"../home/.config/execd/state.json": "{}\n",
	}
	for name, data := range files {
		path := filepath.Join(w.root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(w.tmp, 0o1777); err != nil {
		t.Fatal(err)
	}
	rs := roots(t, w.root, w.tmp)
	rs[1].Shared = true
	w.policy = Policy{
		Mode:           WorkspaceWrite,
		Roots:          rs,
		ProtectedNames: []string{".git", ".codex", ".agents", ".execd"},
		ProtectedPaths: []string{filepath.Join(w.root, ".execd/rules.star"), filepath.Join(w.home, ".config/execd/state.json")},
		SubmodulePaths: []string{filepath.Join(w.root, "libs/a/.git"), filepath.Join(w.root, "libs/b")},
	}
	return w
}

// BenchmarkLauncherCovers measures the check made before each launch
// against the launch itself (a fork and exec of /bin/true by the
// launcher, to its exit), one after the other in each iteration so that
// both see the same load, and reports their medians and ratio.
func BenchmarkLauncherCovers(b *testing.B) {
	w := newWorkspace(b)
	l := startTestLauncher(b, w.policy)
	var covers, launch []time.Duration
	for b.Loop() {
		t0 := time.Now()
		ok := l.Covers(&w.policy)
		t1 := time.Now()
		_, st, err := launched(b, l, w.root, "/bin/true")
		t2 := time.Now()
		if !ok || err != nil || st != 0 {
			b.Fatal(ok, st, err)
		}
		covers, launch = append(covers, t1.Sub(t0)), append(launch, t2.Sub(t1))
	}
	c, la := median(covers), median(launch)
	b.ReportMetric(float64(c.Microseconds()), "covers-us")
	b.ReportMetric(float64(la.Microseconds()), "launch-us")
	b.ReportMetric(100*float64(c)/float64(la), "covers-%")
}

func median(ds []time.Duration) time.Duration {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}
