package procfs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Cgroup is where this process sits in one cgroup hierarchy.
type Cgroup struct {
	Mount string // where the hierarchy is mounted
	Dir   string // the process's cgroup directory, Mount or below it
}

// OwnCgroup returns this process's cgroup in the hierarchy that holds
// controller: for "", the cgroup v2 hierarchy (on a hybrid layout mounted
// at /sys/fs/cgroup/unified); for a name such as "pids", the cgroup v1
// hierarchy of that controller. It fails, saying why, where there is no
// such hierarchy, the process's cgroup was removed, or the mount shows
// only a part of the hierarchy that does not hold the process.
func OwnCgroup(controller string) (Cgroup, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return Cgroup{}, err
	}
	path, ok := cgroupPath(string(b), controller)
	if !ok {
		return Cgroup{}, fmt.Errorf("this process is in no %s hierarchy", hierarchy(controller))
	}
	if strings.HasSuffix(path, " (deleted)") {
		return Cgroup{}, errors.New("this process's cgroup was removed")
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return Cgroup{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		root, mount, ok := cgroupMount(sc.Text(), controller)
		if !ok {
			continue
		}
		rel, ok := strings.CutPrefix(path, root)
		if !ok || (rel != "" && root != "/" && rel[0] != '/') {
			continue // this mount shows another part of the hierarchy
		}
		return Cgroup{Mount: mount, Dir: filepath.Join(mount, rel)}, nil
	}
	return Cgroup{}, fmt.Errorf("no mount of the %s hierarchy holds this process's cgroup %s", hierarchy(controller), path)
}

func hierarchy(controller string) string {
	if controller == "" {
		return "cgroup v2"
	}
	return "cgroup v1 " + controller
}

// cgroupPath finds, in /proc/PID/cgroup's lines (ID:CONTROLLERS:PATH),
// the path in controller's hierarchy ("" for v2's "0::PATH").
func cgroupPath(text, controller string) (string, bool) {
	for line := range strings.SplitSeq(text, "\n") {
		id, rest, ok1 := strings.Cut(line, ":")
		ctls, path, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 {
			continue
		}
		if controller == "" && id == "0" && ctls == "" {
			return path, true
		}
		if controller != "" && slices.Contains(strings.Split(ctls, ","), controller) {
			return path, true
		}
	}
	return "", false
}

// cgroupMount reports whether a mountinfo line mounts controller's
// hierarchy, and its root within the hierarchy and mount point.
func cgroupMount(line, controller string) (root, mount string, ok bool) {
	// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
	m, ok := parseMount(line)
	if !ok {
		return "", "", false
	}
	_, post, _ := strings.Cut(line, " - ")
	tail := strings.Fields(post)
	switch {
	case controller == "" && m.FSType == "cgroup2":
	case controller != "" && m.FSType == "cgroup" && len(tail) >= 3 &&
		slices.Contains(strings.Split(tail[2], ","), controller):
	default:
		return "", "", false
	}
	return m.Root, m.Point, true
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Mount is one line of /proc/PID/mountinfo, the fields execd uses.
type Mount struct {
	Dev    string // MAJ:MIN of the filesystem
	Root   string // the part of the filesystem mounted
	Point  string // where
	FSType string
}

// Mounts returns this process's mounts (/proc/self/mountinfo), as its
// mount namespace has them.
func Mounts() ([]Mount, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []Mount
	for line := range strings.SplitSeq(string(b), "\n") {
		if m, ok := parseMount(line); ok {
			out = append(out, m)
		}
	}
	return out, nil
}

// parseMount parses a mountinfo line:
// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER.
func parseMount(line string) (Mount, bool) {
	pre, post, ok := strings.Cut(line, " - ")
	fields, tail := strings.Fields(pre), strings.Fields(post)
	if !ok || len(fields) < 5 || len(tail) < 1 {
		return Mount{}, false
	}
	return Mount{Dev: fields[2], Root: unescapeMount(fields[3]), Point: unescapeMount(fields[4]), FSType: tail[0]}, true
}
