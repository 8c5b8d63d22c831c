package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/execd/execd/internal/gitrepo"
)

// HelperArg makes execd run as the sandbox helper. It is not a user
// command; the helper only ever restricts itself before it execs.
const HelperArg = "__execd-sandbox-helper"

// LauncherArg makes execd run as a resident sandbox launcher
// (LauncherMain).
const LauncherArg = "__execd-sandbox-launcher"

// ProbeArg makes execd try, in the new namespaces Probe starts it in, the
// mount operations the helper needs, and exit 0 when they work.
const ProbeArg = "__execd-sandbox-probe"

// Policy is what the helper enforces. It travels as JSON on an inherited
// descriptor, never on argv or in the environment.
type Policy struct {
	Mode    Mode `json:"mode"`
	Network bool `json:"network"` // network allowed
	// UnixSockets: with the network on, socket(AF_UNIX) is allowed too,
	// which reaches the user's own daemons (sandbox.allow_unix_sockets).
	UnixSockets bool `json:"unix_sockets,omitempty"`
	// Roots are the directories the command may write beneath.
	Roots []Root `json:"writable_roots"`
	// ProtectedNames stay read-only directly inside each root (SPEC
	// §8.2); the helper looks them up itself, with the .git of the
	// submodules each root's .gitmodules lists when .git is among them.
	ProtectedNames []string `json:"protected_names"`
	// ProtectedPaths are absolute paths kept read-only like protected
	// names wherever they lie inside a root: execd's own files (rules,
	// amend, audit, config and state files; SPEC §8.2).
	ProtectedPaths []string `json:"protected_paths,omitempty"`
	// SubmodulePaths are kept read-only likewise: the .git of the
	// submodules execd found at start (or their directory, when not
	// initialized), whatever .gitmodules says now. Each may add fewer
	// mounts than a protected path, and none takes from another's.
	SubmodulePaths []string `json:"submodule_paths,omitempty"`
	// Namespaces: the helper runs in new user, mount and IPC namespaces
	// (and a network namespace when Network is false), where it makes
	// every mount read-only but the roots and their protected paths.
	Namespaces bool `json:"namespaces"`
	// Terminal: the helper makes the command's terminal, of this size,
	// in the sandbox's own devpts (with Namespaces) and sends its master
	// to execd ([Launch.Terminal]); nil leaves stdio as it came.
	Terminal *Terminal `json:"terminal,omitempty"`

	Path string   `json:"path"` // the program, resolved
	Argv []string `json:"argv"`
	Dir  string   `json:"dir"`
	Env  []string `json:"env"`
}

// Terminal is the size of a terminal the helper makes.
type Terminal struct {
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

// Root is a writable root and the directory it was when execd started.
// The helper refuses to run when the path leads elsewhere: a sandboxed
// command that could write the root's parent could have swapped the root
// for a symlink to /.
type Root struct {
	Path string `json:"path"`
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
	// Shared: a temporary directory (/tmp, /dev/shm, $TMPDIR) that was
	// world-writable with the sticky bit when execd started, and is not
	// the cwd or a configured root. Other users make its entries, so
	// protected names are not looked up in it. Decided at start and never
	// for the workspace: a command may chmod the roots it writes.
	Shared bool `json:"shared,omitempty"`
}

// RootPaths returns the roots' paths.
func RootPaths(roots []Root) []string {
	paths := make([]string, len(roots))
	for i, r := range roots {
		paths[i] = r.Path
	}
	return paths
}

// Settings is the sandbox configuration (SPEC §2, sandbox.*).
type Settings struct {
	Mode                Mode
	NetworkAccess       bool
	AllowUnixSockets    bool // with NetworkAccess, host UNIX sockets too
	WritableRoots       []string
	ExcludeTmpdirEnvVar bool
	ExcludeSlashTmp     bool
	ProtectedNames      []string
}

// Roots returns the directories commands may write in mode workspace-write
// (SPEC §8.1): cwd, the configured roots, /tmp and $TMPDIR unless
// excluded, and /dev/shm with /tmp (shared memory is a temporary
// directory too). They are absolute, with symlinks resolved (Landlock
// grants by inode), existing, distinct, and never / (a workspace that
// is the whole filesystem is danger-full-access by another name).
// read-only has none.
func (s Settings) Roots(cwd string, env []string) []Root {
	if s.Mode != WorkspaceWrite {
		return nil
	}
	candidates := append([]string{cwd}, s.WritableRoots...)
	temporary := len(candidates) // from here on
	if !s.ExcludeSlashTmp {
		candidates = append(candidates, "/tmp", "/dev/shm")
	}
	if !s.ExcludeTmpdirEnvVar {
		if d := envValue(env, "TMPDIR"); d != "" {
			candidates = append(candidates, d)
		}
	}
	var roots []Root
	for i, c := range candidates {
		if !filepath.IsAbs(c) {
			c = filepath.Join(cwd, c)
		}
		r, err := filepath.EvalSymlinks(c)
		if err != nil || r == "/" || slices.ContainsFunc(roots, func(x Root) bool { return x.Path == r }) {
			continue
		}
		if fi, err := os.Stat(r); err == nil && fi.IsDir() {
			dev, ino := FileID(fi)
			shared := i >= temporary && fi.Mode()&os.ModeSticky != 0 && fi.Mode().Perm()&0o002 != 0
			roots = append(roots, Root{Path: r, Dev: dev, Ino: ino, Shared: shared})
		}
	}
	return roots
}

// ProtectedPaths lists what stays read-only inside roots (SPEC §8.2), for
// the macOS profile and execd's own checks (the Linux helper looks them
// up itself, through descriptors): for each name that exists directly in
// a root, and each .git of a submodule its .gitmodules lists (when .git
// is a name), the entry itself (a symlink included, so it cannot be
// swapped), its target when it is a symlink, and behind .git the
// repository git would use and its common directory (gitRepository),
// with every symlink passed on the way to each, which the helper pins;
// then the same for each absolute path of paths that lies in a root.
func ProtectedPaths(roots, names, paths []string) []string {
	var out []string
	add := func(p string) {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	entry := func(dir, p string) {
		fi, err := os.Lstat(p)
		if err != nil {
			return
		}
		add(p)
		final := p
		if fi.Mode()&os.ModeSymlink != 0 {
			var links []string
			final, links, err = evalLinks(p)
			for _, l := range links {
				add(l)
			}
			if err != nil {
				return
			}
			add(final)
		}
		if filepath.Base(p) == ".git" {
			files, dirs := gitRepository(dir, final)
			for _, f := range append(files, dirs...) {
				add(f)
			}
		}
	}
	left := 0 // submodules that may still be protected, as the helper (maxSubmodules)
	var submodules func(dir string, depth int)
	submodules = func(dir string, depth int) {
		subs, _ := gitrepo.Submodules(dir)
		for _, sub := range subs {
			if depth < 3 {
				if left--; left < 0 {
					return
				}
				if _, err := os.Lstat(filepath.Join(dir, sub, ".git")); errors.Is(err, os.ErrNotExist) {
					entry(dir, filepath.Join(dir, sub)) // uninitialized: its directory, as the helper
					continue
				}
				entry(filepath.Join(dir, sub), filepath.Join(dir, sub, ".git"))
				submodules(filepath.Join(dir, sub), depth+1)
			}
		}
	}
	for _, root := range roots {
		for _, name := range names {
			if name == "" || strings.ContainsRune(name, '/') || name == "." || name == ".." {
				continue
			}
			entry(root, filepath.Join(root, name))
		}
		if slices.Contains(names, ".git") {
			left = 64
			submodules(root, 0)
		}
	}
	for _, p := range paths {
		if filepath.IsAbs(p) && slices.ContainsFunc(roots, func(r string) bool { return p == r || strings.HasPrefix(p, r+"/") }) {
			entry(filepath.Dir(p), filepath.Clean(p))
		}
	}
	return out
}

func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// Dispatch runs the helper or the probe when this process was started as
// one (os.Args[1] is HelperArg or ProbeArg) and returns its exit code
// with ok set; otherwise it returns ok false at once. main calls it before
// anything else; so do the TestMains of packages whose tests start
// sandboxed commands, since /proc/self/exe is then the test binary.
func Dispatch() (code int, ok bool) {
	if len(os.Args) < 2 {
		return 0, false
	}
	switch os.Args[1] {
	case HelperArg:
		return HelperMain(), true
	case LauncherArg:
		return LauncherMain(), true
	case ProbeArg:
		return probeMain(), true
	}
	return 0, false
}
