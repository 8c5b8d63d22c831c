package sandbox

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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
// as often as the planner asks, the check before memory; "replan" is
// Covers made to plan (as when a lookup's answer changed), "covers"
// Covers as it is, answered by the last plan's lookups.
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
		{"replan", func() bool {
			l.coverMu.Lock()
			l.covered = nil
			l.coverMu.Unlock()
			return l.Covers(&w.policy)
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

// nest adds a writable root inside the workspace's root.
func (w *workspace) nest(t testing.TB) {
	t.Helper()
	out := filepath.Join(w.root, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	w.policy.Roots = append(w.policy.Roots, roots(t, out)...)
}

func (w *workspace) path(name string) string { return filepath.Join(w.root, name) }

// A launcher set up for the workspace covers it, the second time by
// replaying the lookups of the first plan: the launcher, in its
// namespace, and execd plan the same entries.
func TestLauncherCoversByReplay(t *testing.T) {
	w := newWorkspace(t)
	w.nest(t)
	l := startTestLauncher(t, w.policy)
	first, second := l.Covers(&w.policy), l.Covers(&w.policy)
	if !first || !second || l.replays() != 1 {
		t.Fatalf("covered %v, %v, replays %d; want covered twice, the second time by replay", first, second, l.replays())
	}
	if want := plannedLauncher(t, w.policy).entries; !maps.Equal(l.entries, want) {
		t.Errorf("the launcher protects %v, execd plans %v", l.entries, want)
	}
}

// Covers answers from the last plan's lookups only while a plan would be
// the same: each change a sandboxed command (or anyone) can make between
// two launches that changes what a launch protects makes Covers plan
// again and find the launcher short; a change that protects nothing new
// leaves it covering, by replay or by planning again. The launchers here
// have no process (plannedLauncher): Covers looks at none.
func TestLauncherCoversAfterChanges(t *testing.T) {
	tests := []coversCase{
		{name: "nothing changed", covered: true, replayed: true},
		{name: "files written elsewhere, in .git too, and a .gitmodules url", covered: true, replayed: true, change: func(t *testing.T, w *workspace) {
			write(t, w.path("src/new.go"), "package main\n")
			write(t, w.path("src/main.go"), "package main // changed\n")
			write(t, w.path(".git/index.lock"), "index")
			rename(t, w.path(".git/index.lock"), w.path(".git/index"))
			rewrite(t, w.path(".gitmodules"), "https://example.com/a.git", "https://example.org/a.git")
		}},
		{name: ".gitmodules removed: less to protect", covered: true, change: func(t *testing.T, w *workspace) {
			remove(t, w.path(".gitmodules"))
		}},
		{name: "a submodule's .gitmodules listing nothing there", covered: true, change: func(t *testing.T, w *workspace) {
			write(t, w.path("libs/a/.gitmodules"), "[submodule \"x\"]\n\tpath = x\n")
		}},
		{name: "a protected name made", change: func(t *testing.T, w *workspace) {
			mkdir(t, w.path(".codex"))
		}},
		{name: "a protected name made a symlink to a directory", change: func(t *testing.T, w *workspace) {
			mkdir(t, w.path("docs"))
			symlink(t, "docs", w.path(".agents"))
		}},
		{name: "a protected name made in a nested root", change: func(t *testing.T, w *workspace) {
			mkdir(t, w.path("out/.git"))
		}},
		{name: "a symlink pointed elsewhere", before: func(t *testing.T, w *workspace) {
			mkdir(t, w.path("agents-a"))
			mkdir(t, w.path("agents-b"))
			symlink(t, "agents-a", w.path(".agents"))
		}, change: func(t *testing.T, w *workspace) {
			remove(t, w.path(".agents"))
			symlink(t, "agents-b", w.path(".agents"))
		}},
		{name: ".gitmodules listing another directory, size and mtime kept", before: func(t *testing.T, w *workspace) {
			mkdir(t, w.path("libs/c"))
		}, change: func(t *testing.T, w *workspace) {
			keepTimes(t, w.path(".gitmodules"), func() { rewrite(t, w.path(".gitmodules"), "libs/b", "libs/c") })
		}},
		mappedGitmodules(),
		{name: "a submodule's .gitmodules listing a repository", change: func(t *testing.T, w *workspace) {
			mkdir(t, w.path("libs/a/deps/x/.git"))
			write(t, w.path("libs/a/.gitmodules"), "[submodule \"x\"]\n\tpath = deps/x\n")
		}},
		{name: "a gitfile pointed elsewhere, size and mtime kept", before: func(t *testing.T, w *workspace) {
			mkdir(t, w.path(".git/modules/libs/b"))
		}, change: func(t *testing.T, w *workspace) {
			keepTimes(t, w.path("libs/a/.git"), func() { rewrite(t, w.path("libs/a/.git"), "libs/a", "libs/b") })
		}},
		{name: "a commondir file made", change: func(t *testing.T, w *workspace) {
			mkdir(t, w.path("shared"))
			write(t, w.path(".git/modules/libs/a/commondir"), "../../../../shared\n")
		}},
		{name: ".git replaced by a gitfile", change: func(t *testing.T, w *workspace) {
			rename(t, w.path(".git"), w.path(".git.real"))
			write(t, w.path(".git"), "gitdir: .git.real\n")
		}},
		{name: "an uninitialized submodule initialized", change: func(t *testing.T, w *workspace) {
			write(t, w.path("libs/b/.git"), "gitdir: ../../.git/modules/libs/a\n")
		}},
		{name: "a directory on the way replaced by a symlink", change: func(t *testing.T, w *workspace) {
			rename(t, w.path("libs"), w.path("libs.real"))
			symlink(t, "libs.real", w.path("libs"))
		}},
		{name: "two submodules swapped by renames", change: func(t *testing.T, w *workspace) {
			rename(t, w.path("libs/a"), w.path("libs/x"))
			rename(t, w.path("libs/b"), w.path("libs/a"))
			rename(t, w.path("libs/x"), w.path("libs/b"))
		}},
		{name: "a protected file replaced by a hard link", change: func(t *testing.T, w *workspace) {
			remove(t, w.path(".execd/rules.star"))
			if err := os.Link(w.path("src/main.go"), w.path(".execd/rules.star")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a protected path outside the roots led into one", change: func(t *testing.T, w *workspace) {
			write(t, w.path("state/state.json"), "{}\n")
			rename(t, filepath.Join(w.home, ".config/execd"), filepath.Join(w.home, ".config/execd.old"))
			symlink(t, w.path("state"), filepath.Join(w.home, ".config/execd"))
		}},
		{name: "one more protected path in the policy", change: func(t *testing.T, w *workspace) {
			w.policy.ProtectedPaths = append(w.policy.ProtectedPaths, w.path("src/main.go"))
		}},
		{name: "a root replaced", change: func(t *testing.T, w *workspace) {
			rename(t, w.root, w.root+".old")
			mkdir(t, w.root)
		}},
		{name: "a directory on the way made unsearchable", change: func(t *testing.T, w *workspace) {
			if os.Geteuid() == 0 {
				t.Skip("root searches every directory")
			}
			if err := os.Chmod(w.path("libs"), 0); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Chmod(w.path("libs"), 0o755) })
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorkspace(t)
			w.nest(t)
			if tt.before != nil {
				tt.before(t, w)
			}
			l := plannedLauncher(t, w.policy)
			first, second := l.Covers(&w.policy), l.Covers(&w.policy)
			if !first || !second || l.replays() != 1 {
				t.Fatalf("before the change: covered %v, %v, replays %d; want covered twice, the second time by replay", first, second, l.replays())
			}
			if tt.change != nil {
				tt.change(t, w)
			}
			got := l.Covers(&w.policy)
			replayed := l.replays() == 2
			if got != tt.covered || replayed != tt.replayed {
				t.Fatalf("Covers = %v, by replay %v; want %v, %v", got, replayed, tt.covered, tt.replayed)
			}
			// Covered, the next check replays the new plan.
			if n := l.replays(); got && (!l.Covers(&w.policy) || l.replays() != n+1) {
				t.Errorf("the check after: replays %d; want covered by replay", l.replays())
			}
		})
	}
}

// plannedLauncher is a launcher as Ready leaves one set up for p, without
// its process: it protects the entries execd plans for p now, as a
// launcher set up now would (TestLauncherCoversByReplay).
func plannedLauncher(t *testing.T, p Policy) *Launcher {
	t.Helper()
	all := make([]openRoot, len(p.Roots))
	for i, r := range p.Roots {
		all[i] = openRoot{Root: r, fd: -1}
	}
	outer, inner := splitNested(all)
	pl, err := planProtection(&p, outer, all, inner, &lookups{})
	if err != nil || pl.blind {
		t.Fatalf("plan: %v (blind %v)", err, pl.blind)
	}
	l := &Launcher{roots: p.Roots, entries: map[string]plannedEntry{}}
	for path, e := range pl.entries {
		l.entries[path] = plannedEntry{Path: path, Dev: e.dev, Ino: e.ino, ReadOnly: e.readOnly}
	}
	return l
}

type coversCase struct {
	name     string
	before   func(t *testing.T, w *workspace) // before the launcher starts
	change   func(t *testing.T, w *workspace)
	covered  bool // after the change
	replayed bool // and answered without planning
}

// mappedGitmodules changes .gitmodules through a shared mapping whose
// page was dirtied before the launcher started: the kernel then changes
// neither its size nor its mtime nor its ctime.
func mappedGitmodules() (c coversCase) {
	var m []byte
	c.name = ".gitmodules changed through a dirty shared mapping"
	c.before = func(t *testing.T, w *workspace) {
		mkdir(t, w.path("libs/c"))
		f, err := os.OpenFile(w.path(".gitmodules"), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fi, _ := f.Stat()
		if m, err = unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = unix.Munmap(m) })
		m[0] = '[' // dirties the page (it is a '[' already)
	}
	c.change = func(t *testing.T, w *workspace) {
		var before, after unix.Stat_t
		_ = unix.Stat(w.path(".gitmodules"), &before)
		i := bytes.LastIndex(m, []byte("libs/b"))
		copy(m[i:], "libs/c")
		_ = unix.Stat(w.path(".gitmodules"), &after)
		if before.Size != after.Size || before.Mtim != after.Mtim || before.Ctim != after.Ctim {
			t.Logf("the write through the mapping changed the stat: %+v, %+v", before, after)
		}
	}
	return c
}

func write(t *testing.T, path, data string) {
	t.Helper()
	mkdir(t, filepath.Dir(path))
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// rewrite replaces old by new in the file at path, in place.
func rewrite(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s: %v, or no %q in %q", path, err, old, b)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err == nil {
		_, err = f.Write(bytes.ReplaceAll(b, []byte(old), []byte(new)))
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
}

// keepTimes runs change, then sets the file's times back to what they
// were, and checks that its size is what it was.
func keepTimes(t *testing.T, path string, change func()) {
	t.Helper()
	var before, after unix.Stat_t
	if err := unix.Stat(path, &before); err != nil {
		t.Fatal(err)
	}
	change()
	ts := []unix.Timespec{before.Atim, before.Mtim}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, path, ts, 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(path, &after); err != nil || after.Size != before.Size || after.Mtim != before.Mtim || after.Ino != before.Ino {
		t.Fatalf("%s: size, mtime or inode not kept: %+v, %+v (%v)", path, before, after, err)
	}
}

func mkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

func rename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}
