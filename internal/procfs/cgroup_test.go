package procfs

import "testing"

func TestCgroupPath(t *testing.T) {
	text := "12:pids:/user.slice/a\n4:cpu,cpuacct:/x\n1:name=systemd:/s\n0::/user.slice/b\n"
	for _, c := range []struct{ controller, want string }{
		{"", "/user.slice/b"}, {"pids", "/user.slice/a"}, {"cpuacct", "/x"},
	} {
		if got, ok := cgroupPath(text, c.controller); !ok || got != c.want {
			t.Errorf("%q: got %q %v, want %q", c.controller, got, ok, c.want)
		}
	}
	if _, ok := cgroupPath(text, "memory"); ok {
		t.Error("found a memory hierarchy that is not there")
	}
}

func TestCgroupMount(t *testing.T) {
	for _, c := range []struct {
		line, controller, root, mount string
		ok                            bool
	}{
		{"35 25 0:30 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw,nsdelegate", "", "/", "/sys/fs/cgroup/unified", true},
		{"40 25 0:35 / /sys/fs/cgroup/pids rw shared:17 - cgroup cgroup rw,pids", "pids", "/", "/sys/fs/cgroup/pids", true},
		{"40 25 0:35 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids", "", "", "", false},
		{"41 25 0:36 /ns /c\\040g rw - cgroup2 none rw", "", "/ns", "/c g", true},
		{"42 25 0:37 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu,cpuacct", "pids", "", "", false},
		{"garbage", "", "", "", false},
	} {
		root, mount, ok := cgroupMount(c.line, c.controller)
		if root != c.root || mount != c.mount || ok != c.ok {
			t.Errorf("%q %q: got %q %q %v", c.line, c.controller, root, mount, ok)
		}
	}
}

func FuzzCgroupLines(f *testing.F) {
	f.Add("0::/a\n", "40 25 0:35 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids")
	f.Fuzz(func(t *testing.T, cgroup, mountinfo string) {
		for _, c := range []string{"", "pids"} {
			_, _ = cgroupPath(cgroup, c)
			_, _, _ = cgroupMount(mountinfo, c)
			_, _ = parseMount(mountinfo)
		}
	})
}
