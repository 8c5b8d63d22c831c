package budget

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/execd/execd/internal/procfs"
)

// Shared returns the finite budgets of tasks execd shares with its
// commands, least room first: RLIMIT_NPROC where it applies to this
// process, and every pids.max on its cgroup and the cgroup's ancestors,
// in the cgroup v2 hierarchy and in a cgroup v1 pids hierarchy.
func Shared() ([]Limit, error) {
	var limits []Limit
	nproc, err := nprocLimit()
	if err != nil {
		return nil, err
	}
	if nproc != nil {
		limits = append(limits, *nproc)
	}
	for _, controller := range []string{"", "pids"} {
		cg, err := procfs.OwnCgroup(controller)
		if err != nil {
			continue // no such hierarchy: no limit from it
		}
		limits = append(limits, pidsLimits(cg)...)
	}
	slices.SortStableFunc(limits, func(a, b Limit) int { return int(a.Room() - b.Room()) })
	return limits, nil
}

// nprocLimit returns RLIMIT_NPROC as it applies to this process, or nil:
// the kernel does not enforce it for the root user and for holders of
// CAP_SYS_RESOURCE or CAP_SYS_ADMIN in the initial user namespace.
func nprocLimit() (*Limit, error) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &rl); err != nil {
		return nil, err
	}
	if rl.Cur == unix.RLIM_INFINITY {
		return nil, nil
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil, err
	}
	uid := os.Getuid()
	if initialUserNS() {
		caps, _ := strconv.ParseUint(statusField(status, "CapEff"), 16, 64)
		if uid == 0 || caps&(1<<unix.CAP_SYS_RESOURCE|1<<unix.CAP_SYS_ADMIN) != 0 {
			return nil, nil
		}
	}
	l := &Limit{Name: "RLIMIT_NPROC", Where: "uid " + strconv.Itoa(uid), Max: int64(rl.Cur)}
	l.Used, l.AtMost = userTasks(uid, l.Max/2) // half the limit free is room enough for Keep
	return l, nil
}

// reread returns l with Used read again: for RLIMIT_NPROC, the system's
// task count (AtMost) where that is below bound, else the user's.
func reread(l Limit, bound int64) Limit {
	switch l.Name {
	case "RLIMIT_NPROC":
		l.Used, l.AtMost = userTasks(os.Getuid(), bound)
	case "pids.max":
		b, err := os.ReadFile(filepath.Join(l.Where, "pids.current"))
		if err == nil {
			l.Used, _ = strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
		}
	}
	return l
}

// initialUserNS reports whether this process is in the initial user
// namespace (its uid_map maps all ids to themselves).
func initialUserNS() bool {
	b, err := os.ReadFile("/proc/self/uid_map")
	return err == nil && slices.Equal(strings.Fields(string(b)), []string{"0", "0", "4294967295"})
}

// userTasks counts the tasks (threads included, as RLIMIT_NPROC counts)
// whose real uid is uid. Where the system as a whole runs fewer than
// bound, it returns that total instead, as an upper bound (atMost): the
// user's count cannot matter then, and a scan of /proc (which costs
// milliseconds per thousand processes) is saved.
func userTasks(uid int, bound int64) (n int64, atMost bool) {
	if total := systemTasks(); total > 0 && total < bound {
		return total, true
	}
	pids, err := procfs.PIDs()
	if err != nil {
		return 0, false
	}
	for _, pid := range pids {
		status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		if err != nil {
			continue
		}
		ids := strings.Fields(statusField(status, "Uid"))
		if len(ids) > 0 && ids[0] == strconv.Itoa(uid) {
			t, _ := strconv.ParseInt(statusField(status, "Threads"), 10, 64)
			n += max(t, 1)
		}
	}
	return n, false
}

// systemTasks returns the number of tasks on the system, from
// /proc/loadavg's fourth field (RUNNING/TOTAL), or 0.
func systemTasks() int64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return 0
	}
	_, total, _ := strings.Cut(f[3], "/")
	n, _ := strconv.ParseInt(total, 10, 64)
	return n
}

// pidsLimits returns the finite pids.max of cg's directory and of each
// ancestor up to the hierarchy's mount.
func pidsLimits(cg procfs.Cgroup) []Limit {
	var limits []Limit
	for dir := cg.Dir; ; dir = filepath.Dir(dir) {
		if l, ok := pidsLimit(dir); ok {
			limits = append(limits, l)
		}
		if dir == cg.Mount || !strings.HasPrefix(dir, cg.Mount) || dir == filepath.Dir(dir) {
			return limits
		}
	}
}

func pidsLimit(dir string) (Limit, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "pids.max"))
	if err != nil {
		return Limit{}, false // the root cgroup has none, nor a cgroup without the controller
	}
	max, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return Limit{}, false // "max"
	}
	b, err = os.ReadFile(filepath.Join(dir, "pids.current"))
	if err != nil {
		return Limit{}, false
	}
	cur, _ := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	return Limit{Name: "pids.max", Where: dir, Max: max, Used: cur}, true
}

// statusField returns the value of a "Name:\tvalue" line of
// /proc/PID/status.
func statusField(status []byte, name string) string {
	for line := range bytes.SplitSeq(status, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte(name+":")); ok {
			return string(bytes.TrimSpace(v))
		}
	}
	return ""
}

// threads returns this process's number of OS threads, or 0.
func threads() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(statusField(b, "Threads"))
	return n
}

// capNproc lowers pid's soft RLIMIT_NPROC to n where it is above.
func capNproc(pid int, n uint64) error {
	var old unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_NPROC, nil, &old); err != nil {
		return err
	}
	if old.Cur <= n {
		return nil
	}
	rl := unix.Rlimit{Cur: n, Max: old.Max}
	return unix.Prlimit(pid, unix.RLIMIT_NPROC, &rl, nil)
}
