package sandbox

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// HelperArg makes execd run as the sandbox helper. It is not a user
// command; the helper only ever restricts itself before it execs.
const HelperArg = "__execd-sandbox-helper"

// ProbeArg makes execd exit 0 at once: Probe starts it in new namespaces
// to learn whether it may create them.
const ProbeArg = "__execd-sandbox-probe"

// Policy is what the helper enforces. It travels as JSON on an inherited
// descriptor, never on argv or in the environment.
type Policy struct {
	Mode    Mode `json:"mode"`
	Network bool `json:"network"` // network allowed
	// WritableRoots are the directories the command may write beneath.
	WritableRoots []string `json:"writable_roots"`
	// Protected are paths directly inside writable roots kept read-only,
	// with a symlink itself made unremovable.
	Protected []string `json:"protected"`
	// Namespaces: the helper runs in new user and mount namespaces (and a
	// network namespace when Network is false) and may mount.
	Namespaces bool `json:"namespaces"`

	Path string   `json:"path"` // the program, resolved
	Argv []string `json:"argv"`
	Dir  string   `json:"dir"`
	Env  []string `json:"env"`
}

// Settings is the sandbox configuration (SPEC §2, sandbox.*).
type Settings struct {
	Mode                Mode
	NetworkAccess       bool
	WritableRoots       []string
	ExcludeTmpdirEnvVar bool
	ExcludeSlashTmp     bool
	ProtectedNames      []string
}

// Roots returns the directories commands may write in mode workspace-write
// (SPEC §8.1): cwd, the configured roots, /tmp and $TMPDIR unless
// excluded, and /dev/shm with /tmp (shared memory is a temporary
// directory too). They are absolute, with symlinks resolved (Landlock
// grants by inode), existing and distinct. read-only has none.
func (s Settings) Roots(cwd string, env []string) []string {
	if s.Mode != WorkspaceWrite {
		return nil
	}
	candidates := append([]string{cwd}, s.WritableRoots...)
	if !s.ExcludeSlashTmp {
		candidates = append(candidates, "/tmp", "/dev/shm")
	}
	if !s.ExcludeTmpdirEnvVar {
		if d := envValue(env, "TMPDIR"); d != "" {
			candidates = append(candidates, d)
		}
	}
	var roots []string
	for _, c := range candidates {
		if !filepath.IsAbs(c) {
			c = filepath.Join(cwd, c)
		}
		r, err := filepath.EvalSymlinks(c)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(r); err == nil && fi.IsDir() && !slices.Contains(roots, r) {
			roots = append(roots, r)
		}
	}
	return roots
}

// ProtectedPaths lists what stays read-only inside roots (SPEC §8.2): for
// each name that exists directly in a root, the entry itself (a symlink
// included, so it cannot be swapped), its target when it is a symlink,
// and the gitdir a .git file points to.
func ProtectedPaths(roots, names []string) []string {
	var out []string
	add := func(p string) {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, root := range roots {
		for _, name := range names {
			if name == "" || strings.ContainsRune(name, '/') || name == "." || name == ".." {
				continue
			}
			p := filepath.Join(root, name)
			fi, err := os.Lstat(p)
			if err != nil {
				continue
			}
			add(p)
			if fi.Mode()&os.ModeSymlink != 0 {
				if t, err := filepath.EvalSymlinks(p); err == nil {
					add(t)
				}
				continue
			}
			if name == ".git" && fi.Mode().IsRegular() {
				if d, err := gitdir(p); err == nil {
					add(d)
				}
			}
		}
	}
	return out
}

// gitdir returns the directory a .git file names ("gitdir: X"), resolved
// relative to the file.
func gitdir(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if sc.Scan() {
		if d, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "gitdir:"); ok {
			d = strings.TrimSpace(d)
			if !filepath.IsAbs(d) {
				d = filepath.Join(filepath.Dir(file), d)
			}
			return filepath.EvalSymlinks(d)
		}
	}
	return "", errors.New("no gitdir line")
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
	case ProbeArg:
		return 0, true
	}
	return 0, false
}
