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
// launcher, to its exit), and reports their medians and ratio. Each
// check follows a launch, as in use (a launch leaves the caches cold),
// so that all see the same load: "plan" is a plan looking each path up
// as often as the planner asks, the check before memory; "covers" is
// Covers.
func BenchmarkLauncherCovers(b *testing.B) {
	w := newWorkspace(b)
	l := startTestLauncher(b, w.policy)
	all := make([]openRoot, len(w.policy.Roots))
	for i, r := range w.policy.Roots {
		all[i] = openRoot{Root: r, fd: -1}
	}
	outer, inner := splitNested(all)
	checks := []struct {
		name string
		run  func() bool
	}{
		{"plan", func() bool {
			_, err := planProtection(&w.policy, outer, all, inner, &lookups{})
			return err == nil
		}},
		{"covers", func() bool { return l.Covers(&w.policy) }},
	}
	took := make([][]time.Duration, len(checks))
	var launch []time.Duration
	for b.Loop() {
		for i, c := range checks {
			t0 := time.Now()
			_, st, err := launched(b, l, w.root, "/bin/true")
			t1 := time.Now()
			ok := c.run()
			t2 := time.Now()
			if !ok || err != nil || st != 0 {
				b.Fatal(c.name, ok, st, err)
			}
			launch, took[i] = append(launch, t1.Sub(t0)), append(took[i], t2.Sub(t1))
		}
	}
	la := median(launch)
	b.ReportMetric(float64(la.Microseconds()), "launch-us")
	for i, c := range checks {
		d := median(took[i])
		b.ReportMetric(float64(d.Microseconds()), c.name+"-us")
		b.ReportMetric(100*float64(d)/float64(la), c.name+"-%")
	}
}

func median(ds []time.Duration) time.Duration {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}
