package test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

// The escape list: each known way out of the sandbox is a named test that
// tries it, as root and as nobody, and expects it to fail. Add one for
// every new idea.

// probeFails runs test/sandboxprobe under the sandbox and expects the
// attempt to fail saying want. args are the probe's, or, when they start
// with flags of execd sandbox, those flags, "--", the probe and its args.
func (h *sandboxHost) probeFails(config string, want string, args ...string) {
	h.t.Helper()
	argv := append([]string{"sandbox", "--", h.probe}, args...)
	if i := slices.Index(args, "--"); i >= 0 && strings.HasPrefix(args[0], "-") {
		argv = append([]string{"sandbox"}, args...)
	}
	r := h.run(config, argv...)
	if r.code != 1 || !strings.Contains(r.stdout, want) {
		h.t.Errorf("sandboxprobe %s: exit %d, stdout %q, stderr %q; want it refused with %q", strings.Join(args, " "), r.code, r.stdout, r.stderr, want)
	}
}

// outsider starts a process outside the sandbox as the host's user, to be
// a target; it is killed at cleanup.
func (h *sandboxHost) outsider() *exec.Cmd {
	h.t.Helper()
	argv := []string{"sleep", "7801.5"}
	if h.nobody {
		argv = append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

func TestEscapeI386Syscalls(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("int 0x80 is an amd64 (i386 compat) entry")
	}
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		// Some kernels have no 32-bit entry at all (no IA32 emulation):
		// int 0x80 faults everywhere, and there is nothing to refuse.
		if r := h.outside(h.probe, "i386-socket"); strings.Contains(r.stdout, "no i386 system call entry") {
			t.Skipf("outside the sandbox: %s", strings.TrimSpace(r.stdout))
		}
		h.probeFails("", "operation not permitted", "i386-socket")
	})
}

func TestEscapeX32Syscalls(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("x32 is an amd64 ABI")
	}
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		h.probeFails("", "x32 socket: operation not permitted", "x32-socket")
	})
}

func TestEscapeIoUring(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		h.probeFails("", "operation not permitted", "io-uring")
		h.probeFails("", "operation not permitted", "io-uring") // with the network on too:
		r := h.run("", "sandbox", "--network", "--", h.probe, "io-uring")
		if r.code != 1 || !strings.Contains(r.stdout, "operation not permitted") {
			t.Errorf("io_uring with the network on: %+v", r)
		}
	})
}

func TestEscapeNetlink(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		h.probeFails("", "operation not permitted", "netlink")
	})
}

// A daemon's control socket on the filesystem (a container engine's, the
// session bus): a read-only mount would not stop connect.
func TestEscapeHostUnixSocket(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		sock := h.path("daemon.sock")
		hits := listenUnix(t, "unix", sock)
		_ = os.Chmod(sock, 0o777)
		h.probeFails("", "operation not permitted", "connect-unix", sock)
		if n := hits.Load(); n != 0 {
			t.Errorf("the host socket accepted %d connections from the sandbox", n)
		}
	})
}

func TestEscapeAbstractUnixSocket(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		name := fmt.Sprintf("execd-it-%d-%s", os.Getpid(), filepath.Base(h.dir))
		hits := listenUnix(t, "unix", "@"+name)
		h.probeFails("", "operation not permitted", "connect-abstract", name)
		// The network namespace hides abstract sockets too; without it,
		// Landlock's scope and seccomp still refuse.
		r := h.run("", "sandbox", "--network", "--", h.probe, "connect-abstract", name)
		if r.code != 1 || !strings.Contains(r.stdout, "operation not permitted") {
			t.Errorf("abstract socket with the network on: %+v; want Landlock's scope to refuse", r)
		}
		if n := hits.Load(); n != 0 {
			t.Errorf("the abstract socket accepted %d connections from the sandbox", n)
		}
	})
}

// A datagram socket, or one end of a datagram or raw socketpair (raw is
// datagram for AF_UNIX), could send to any socket by path.
func TestEscapeDatagramToHostSocket(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		sock := h.path("log.sock")
		hits := listenUnix(t, "unixgram", sock)
		_ = os.Chmod(sock, 0o777)
		for _, want := range []string{"socket: operation", "socketpair type 2: operation", "socketpair type 3: operation"} {
			h.probeFails("", want, "sendto-unix", sock)
		}
		if n := hits.Load(); n != 0 {
			t.Errorf("the host socket got %d datagrams from the sandbox", n)
		}
	})
}

// outsideRefusal is how the sandbox refuses a system call aimed at a
// process outside it: Landlock's scope (EPERM), or, sooner, the PID
// namespace, where the process has no number (ESRCH).
func (h *sandboxHost) outsideRefusal() string {
	if hasPIDNamespace(h) {
		return "no such process"
	}
	return "operation not permitted"
}

// Taking a descriptor (a connected socket, say) from a process outside.
func TestEscapePidfdGetfd(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		target := h.outsider()
		h.probeFails("", h.outsideRefusal(), "pidfd-getfd", strconv.Itoa(target.Process.Pid), "1")
	})
}

func TestEscapeProcessMemory(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		target := h.outsider()
		h.probeFails("", h.outsideRefusal(), "vm-read", strconv.Itoa(target.Process.Pid))
		pid := strconv.Itoa(target.Process.Pid)
		r := h.sh("", "head -c 1 /proc/"+pid+"/mem; ls /proc/"+pid+"/cwd/ || ls /proc/"+pid+"/root/")
		if r.code == 0 {
			t.Errorf("reached an outside process through /proc: %+v", r)
		}
	})
}

// Changing another process's limits, priority or scheduling: execd
// itself is one (an address-space limit crashes it).
func TestEscapeResourceLimitsOfOthers(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		pid := strconv.Itoa(h.outsider().Process.Pid)
		h.probeFails("", "operation not permitted", "prlimit", pid)
		h.probeFails("", "operation not permitted", "renice", pid)
		r := h.run("", "sandbox", "--", "sh", "-c", h.probe+" prlimit 0 && "+h.probe+" renice 0")
		if r.code != 0 {
			t.Errorf("a command may still set its own limits and priority: %+v", r)
		}
	})
}

// The kernel keyrings are shared with the user's processes outside.
func TestEscapeKeyrings(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		h.probeFails("", "operation not permitted", "keyring")
	})
}

// A set-user-ID file would give whoever runs it outside the sandbox the
// owner's rights (root's, when execd runs as root).
func TestEscapeSetUserID(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		file := filepath.Join(h.work, "tool")
		h.writeFile(file, "#!/bin/sh\n")
		h.probeFails("", "operation not permitted", "chmod-suid", file)
		r := h.sh("", "chmod u+s tool; chmod g+s tool; cp -p tool copy && chmod 6755 copy")
		for _, f := range []string{file, filepath.Join(h.work, "copy")} {
			if fi, err := os.Stat(f); err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
				t.Errorf("%s got mode %v: %+v", f, fi.Mode(), r)
			}
		}
	})
}

// Pushing input into a terminal runs it in the shell that reads it.
func TestEscapeTIOCSTI(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		h.probeFails("", "operation not permitted", "tiocsti")
	})
}

// System V shared memory is shared by every process of the host's IPC
// namespace.
func TestEscapeSysVSharedMemory(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		h.needProtection() // the IPC namespace comes with the user namespace
		key := 0x7e5d0000 + os.Getpid()%0x10000
		id, err := unix.SysvShmGet(key, 4096, unix.IPC_CREAT|0o666)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil) })
		h.probeFails("", "no such file or directory", "shm", strconv.Itoa(key))
	})
}

func TestEscapeSignalOutside(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		target := h.outsider()
		h.probeFails("", h.outsideRefusal(), "kill", strconv.Itoa(target.Process.Pid))
		if err := target.Process.Signal(syscall.Signal(0)); err != nil {
			t.Errorf("the outside process is gone: %v", err)
		}
	})
}

// Unmounting the read-only bind mount of a protected path, directly or
// from a new user namespace where the command would be root. (A Go
// program cannot unshare a user namespace, being multithreaded: the
// nested attempt uses unshare(1).)
func TestEscapeUnmountProtectedPath(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		h.needProtection()
		git := filepath.Join(h.work, ".git")
		h.mkdir(git)
		h.probeFails("", "operation not permitted", "umount", git)
		for _, script := range []string{
			"unshare -Urm sh -c 'umount -l .git; echo x > .git/config'",
			"unshare -Um --propagation unchanged sh -c 'umount -l .git; mount -o remount,rw,bind .git; echo x > .git/config'",
		} {
			r := h.sh("", script)
			if _, err := os.Stat(filepath.Join(git, "config")); r.code == 0 || err == nil {
				t.Errorf("%s: %+v", script, r)
			}
		}
	})
}

// Writing somewhere else through an alias of a path: /proc/self/root,
// /proc/self/cwd, a hard link.
func TestEscapeAliases(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		outside := h.path("outside")
		h.mkdir(outside)
		runCases(t, h, []sandboxCase{
			{name: "/proc/self/root", config: noTmp, script: "echo x > /proc/self/root" + outside + "/f", say: denied},
			{name: "/proc/self/cwd/..", config: noTmp, script: "echo x > /proc/self/cwd/../outside/f", say: denied},
			{name: "hard link out of the workspace", config: noTmp, script: "echo x > f && ln f " + outside + "/f", say: denied},
			{name: "rename out of the workspace", config: noTmp, script: "echo x > g && mv g " + outside + "/g", say: denied},
		})
		h.absent(filepath.Join(outside, "f"))
	})
}

// Landlock has no right for changing modes, times or extended
// attributes: outside the writable roots a read-only mount refuses them.
func TestEscapeMetadataOutsideRoots(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		h.needProtection() // the read-only mounts come with the mount namespace
		outside := h.path("outside")
		h.mkdir(outside)
		file := filepath.Join(outside, "f")
		h.writeFile(file, "x")
		before, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		runCases(t, h, []sandboxCase{
			{name: "chmod", config: noTmp, script: "chmod 777 " + file, say: denied},
			{name: "touch -d", config: noTmp, script: "touch -d 2001-01-01 " + file, say: denied},
			{name: "setxattr", config: noTmp, script: "python3 -c 'import os; os.setxattr(\"" + file + "\", \"user.x\", b\"1\")'", say: denied},
			{name: "chmod in a root", script: "touch g && chmod 600 g && touch -d 2001-01-01 g", ok: true},
		})
		after, err := os.Stat(file)
		if err != nil || after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) {
			t.Errorf("%s changed: %v %v -> %v %v", file, before.Mode(), before.ModTime(), after.Mode(), after.ModTime())
		}
	})
}

// A command that can write a root's parent (the workspace is under /tmp)
// would rename it and put a symlink to /, or a fresh directory whose .git
// is not protected, in its place. It cannot: every directory from /tmp
// down to the workspace is a mount point in the sandbox. And when
// something outside does it, the next launch is refused rather than given
// / or an unprotected repository as its root.
func TestEscapeSwappedRoot(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		for _, swap := range []func() error{
			func() error { return errors.Join(os.Mkdir(h.dir, 0o777), os.Symlink("/", h.work)) },
			func() error { return errors.Join(os.Mkdir(h.dir, 0o777), os.Mkdir(h.work, 0o777)) },
			// A magic link back to the real directory: execd's cwd is the
			// workspace, wherever it went.
			func() error { return os.Symlink("/proc/self/cwd/..", h.dir) },
		} {
			cmd := h.command("", "serve")
			cmd.Stderr = &testLog{t: t}
			cs := connect(t, cmd, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
			for _, mv := range []string{`mv "$PWD" "$PWD.moved"`, `d=$(dirname "$PWD"); mv "$d" "$d.old"`} {
				res, text, _ := callTool(t, cs, "shell_command", map[string]any{"login": false, "command": mv})
				if !res.IsError || !strings.Contains(text, "busy") {
					t.Errorf("%s in the sandbox: %q; want it refused", mv, text)
				}
			}
			// As another process of the user's, outside the sandbox.
			if err := os.Rename(h.dir, h.dir+".old"); err != nil {
				t.Fatal(err)
			}
			if err := swap(); err != nil {
				t.Fatal(err)
			}
			res, text, _ := callTool(t, cs, "shell_command", map[string]any{"command": "touch /etc/execd-swapped-root", "login": false})
			if !res.IsError || !strings.Contains(text, "sandbox setup failed at roots") || !strings.Contains(text, "not the directory it was") {
				t.Errorf("after the swap: %q; want the launch refused", text)
			}
			if _, err := os.Stat("/etc/execd-swapped-root"); err == nil {
				os.Remove("/etc/execd-swapped-root")
				t.Error("after the swap: a command wrote /etc")
			}
			// Put the directory back for the next round.
			if err := os.RemoveAll(h.dir); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(h.dir+".old", h.dir); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// Protected names planted to break every later launch, or to make a
// root read-only: execd must keep running commands, with the workspace
// writable. In /tmp (world-writable, sticky) other users make the
// entries: they are not looked up there.
func TestEscapeProtectedNameDenialOfService(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		h.needProtection()
		plants := []struct {
			name  string
			plant func() error
		}{
			{"a symlink to a magic link", func() error { return os.Symlink("/proc/self/fd/1", filepath.Join(h.work, ".codex")) }},
			{"a FIFO", func() error { return unix.Mkfifo(filepath.Join(h.work, ".agents"), 0o644) }},
			{"a .git file naming the root", func() error { return os.WriteFile(filepath.Join(h.work, ".git"), []byte("gitdir: .\n"), 0o644) }},
			{"a .git file naming /tmp", func() error { return os.WriteFile(filepath.Join(h.work, ".git"), []byte("gitdir: /tmp\n"), 0o644) }},
			{"a .execd symlink to /dev/shm", func() error { return os.Symlink("/dev/shm", filepath.Join(h.work, ".execd")) }},
		}
		for _, p := range plants {
			if err := p.plant(); err != nil {
				t.Fatal(err)
			}
		}
		r := h.sh("", "echo x > f && cat f && echo y > /tmp/execd-it-dos-$$ && rm /tmp/execd-it-dos-$$")
		if r.code != 0 || r.stdout != "x\n" {
			t.Errorf("with the plants: %+v; want the workspace and /tmp writable", r)
		}
		// Targets no command of the user's could reach either, and mazes:
		// the target is left alone, the launch goes on, and a maze costs
		// no more than a handful of mounts.
		alien := h.path("alien")
		if err := errors.Join(os.Mkdir(alien, 0o700), os.Chown(alien, 12345, 12345)); err != nil {
			t.Fatal(err)
		}
		var maze strings.Builder
		for i := range 300 {
			d := fmt.Sprintf("m%d", i)
			h.mkdir(filepath.Join(h.work, d))
			fmt.Fprintf(&maze, "%s/../", d)
		}
		bound := mountBound(t, 20)
		later := []struct{ name, entry, script string }{
			{"a symlink into another user's private directory", ".codex", "ln -s " + alien + "/x .codex"},
			{"a symlink to itself", ".codex", "ln -s .codex .codex"},
			{"a symlink with an overlong name", ".agents", "ln -s " + strings.Repeat("a", 300) + " .agents"},
			{"a gitdir behind a loop", ".git", "printf 'gitdir: x\\n' > .git && ln -s loop x && ln -s x loop"},
			{"a maze of 300 directories", ".codex", "ln -s " + maze.String() + "end .codex && mkdir end"},
		}
		for _, l := range later {
			if err := os.RemoveAll(filepath.Join(h.work, l.entry)); err != nil {
				t.Fatal(err)
			}
			if r := h.sh("", l.script); r.code != 0 {
				t.Fatalf("%s: planting: %+v", l.name, r)
			}
			r := h.sh("", "echo x > f && cat f && wc -l < /proc/self/mountinfo")
			lines := strings.Fields(r.stdout)
			if r.code != 0 || len(lines) != 2 || lines[0] != "x" {
				t.Errorf("with %s: %+v; want the workspace writable", l.name, r)
				continue
			}
			if n, _ := strconv.Atoi(lines[1]); n > bound {
				t.Errorf("with %s: %d mounts in the sandbox, want at most %d", l.name, n, bound)
			}
		}
		// Another user's /tmp/.git naming /tmp, and /tmp/.agents open to
		// all: neither is the user's to protect.
		gitFile, agents := filepath.Join("/tmp", ".git"), filepath.Join("/tmp", ".agents")
		for _, p := range []string{gitFile, agents} {
			if _, err := os.Lstat(p); err == nil {
				t.Skipf("%s exists already", p)
			}
		}
		if err := os.WriteFile(gitFile, []byte("gitdir: /tmp\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(gitFile)
		if err := os.Mkdir(agents, 0o777); err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(agents)
		_ = os.Chmod(agents, 0o777) // whatever the umask
		if r := h.sh("", "echo y > /tmp/execd-it-dos-$$ && rm /tmp/execd-it-dos-$$ && echo z > /tmp/.agents/f$$"); r.code != 0 {
			t.Errorf("with /tmp/.git and /tmp/.agents planted: %+v; want /tmp writable", r)
		}
	})
}

// A user namespace made inside the sandbox would give the command every
// capability over fresh network and mount namespaces: kernel code
// (netfilter) that is the usual way to attack the kernel.
func TestEscapeNestedUserNamespace(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		h.needProtection() // turned off from the helper's own user namespace
		for _, flags := range [][]string{nil, {"--network"}} {
			r := h.sh("", "unshare -U true", flags...)
			if r.code == 0 || !strings.Contains(r.stderr, "No space left on device") {
				t.Errorf("%v: unshare -U: %+v; want it refused", flags, r)
			}
		}
	})
}

// Root keeps no capability: Landlock and seccomp do not stop what
// capabilities allow (loading a kernel module, say).
func TestEscapeRootCapabilities(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		for _, flags := range [][]string{nil, {"--network", "--mode", "read-only"}} {
			r := h.sh("", "grep -E '^Cap(Inh|Prm|Eff|Amb):' /proc/self/status", flags...)
			for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				if !strings.HasSuffix(line, "0000000000000000") {
					t.Errorf("%v: %q: the command has capabilities", flags, line)
				}
			}
			if !h.nobody {
				if r := h.sh("", "grep CapBnd /proc/self/status", flags...); !strings.Contains(r.stdout, "0000000000000000") {
					t.Errorf("%v: root's bounding set %q would let exec grant capabilities", flags, r.stdout)
				}
			}
		}
	})
}

// The command inherits only its stdio: no policy, status pipe or
// descriptor of execd's.
func TestEscapeInheritedDescriptors(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		r := h.run("", "sandbox", "--", "ls", "/proc/self/fd")
		if r.stdout != "0\n1\n2\n3\n" { // 3 is ls's own
			t.Errorf("descriptors: %q", r.stdout)
		}
	})
}

// mountBound is the most mounts a sandbox may have when the helper adds
// at most added of its own: the host's, plus a second copy of each host
// mount below the shared temporary roots (/tmp, /dev/shm), which the
// helper copies whole to keep them writable. Other software's mounts
// under /tmp must not fail the count.
func mountBound(t *testing.T, added int) int {
	t.Helper()
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(info)), "\n") {
		n++
		if f := strings.Fields(line); len(f) > 4 {
			// The mount point, with spaces and such as octal escapes,
			// which do not matter for a prefix of /tmp/ or /dev/shm/.
			if strings.HasPrefix(f[4], "/tmp/") || strings.HasPrefix(f[4], "/dev/shm/") {
				n++
			}
		}
	}
	return n + added
}

func listenUnix(t *testing.T, network, addr string) *atomic.Int32 {
	t.Helper()
	var hits atomic.Int32
	if network == "unixgram" {
		pc, err := net.ListenPacket(network, addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pc.Close() })
		go func() {
			buf := make([]byte, 64)
			for {
				if _, _, err := pc.ReadFrom(buf); err != nil {
					return
				}
				hits.Add(1)
			}
		}()
		return &hits
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			hits.Add(1)
			c.Close()
		}
	}()
	return &hits
}

// A command that makes the workspace world-writable and sticky, like
// /tmp, must not turn off the protection of its .git (names are not
// looked up in shared temporary directories) for later launches.
func TestEscapeStickyWorkspace(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		h.needProtection()
		h.mkdir(filepath.Join(h.work, ".git", "hooks"))
		h.chown(filepath.Join(h.work, ".git"))
		if r := h.sh("", "chmod 1777 ."); r.code != 0 {
			t.Fatalf("chmod 1777 .: %+v", r)
		}
		runCases(t, h, []sandboxCase{
			{name: "hooks in a sticky workspace", script: "echo x > .git/hooks/pre-commit", say: "Read-only file system"},
		})
	})
}

// A directory on the way to a protected target that the command made
// unreadable (chmod 000) must not hide the target from the next launch,
// which would then leave it writable.
func TestEscapeUnreadableWayToGitdir(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		h.needProtection()
		wt, common := h.worktree("wt")
		writable := []string{"--writable", wt}
		if r := h.sh("", "chmod 000 "+h.path("main"), writable...); r.code != 0 {
			t.Fatalf("chmod 000: %+v", r)
		}
		hook := filepath.Join(common, "hooks", "post-checkout")
		runCases(t, h, []sandboxCase{
			{name: "write the hooks after opening the way", flags: writable, script: "chmod 755 " + h.path("main") + " && echo x > " + hook,
				say: "Read-only file system"},
		})
		h.absent(hook)
	})
}

// A symlink half way to a protected target (.git -> cur/.git, cur ->
// real) is pinned too: pointing it elsewhere would make .git lead to an
// unprotected directory.
func TestEscapeSymlinkOnTheWay(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		h.needProtection()
		real := filepath.Join(h.work, "real")
		h.mkdir(filepath.Join(real, ".git", "hooks"), filepath.Join(h.work, "evil", ".git", "hooks"))
		for link, target := range map[string]string{"cur": "real", ".git": "cur/.git"} {
			if err := os.Symlink(target, filepath.Join(h.work, link)); err != nil {
				t.Fatal(err)
			}
		}
		h.chown(filepath.Join(h.work, "cur"), filepath.Join(h.work, ".git"), real, filepath.Join(real, ".git"),
			filepath.Join(h.work, "evil"), filepath.Join(h.work, "evil", ".git"))
		runCases(t, h, []sandboxCase{
			{name: "repoint the link on the way", script: "ln -sfn evil cur", say: "busy"},
			{name: "rename the link on the way", script: "mv cur cur.old", say: "busy"},
			{name: "write through .git", script: "echo x > .git/hooks/x", say: "Read-only file system"},
			{name: "write the target", script: "echo x > real/.git/hooks/x", say: "Read-only file system"},
			{name: "the rest stays writable", script: "echo x > evil/.git/hooks/x", ok: true},
		})
		if target, err := os.Readlink(filepath.Join(h.work, "cur")); err != nil || target != "real" {
			t.Errorf("cur -> %q (%v), want real", target, err)
		}
	})
}

// Pins are made once each, parents first: their number grows with the
// protected paths, not with their product (a copy of every mount below
// each re-pinned parent once made tens of thousands).
func TestEscapeMountCount(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		h.needProtection()
		var flags []string
		for _, name := range []string{"wt1", "wt2", "wt3", "wt4", "wt5"} {
			wt, _ := h.worktree(name)
			h.mkdir(filepath.Join(wt, ".agents"), filepath.Join(wt, ".codex"))
			flags = append(flags, "--writable", wt)
		}
		h.mkdir(filepath.Join(h.work, ".git"), filepath.Join(h.work, ".agents"))
		r := h.sh("", "wc -l < /proc/self/mountinfo", flags...)
		n, err := strconv.Atoi(strings.TrimSpace(r.stdout))
		if err != nil {
			t.Fatalf("%+v", r)
		}
		// The copies of /tmp and /dev/shm; pins of the 6 roots nested in
		// /tmp, of the directory above them and of main on the way to
		// main/.git; read-only: main/.git (the worktrees' common dir, with
		// their gitdirs inside), 5 .git files, 10 .agents and .codex in the
		// worktrees, .git and .agents in the workspace; execd's config
		// file; its state directory, with the 3 directories on the way
		// to it pinned (an empty .git is no repository: execd records
		// the workspace in untrusted-git before the launch); the devpts
		// of the sandbox's own and its ptmx on /dev/ptmx; the /proc of
		// its PID namespace (a launcher's): 36 at most.
		if bound := mountBound(t, 36); n > bound {
			t.Errorf("%d mounts in the sandbox: want at most %d", n, bound)
		}
	})
}

// A command that makes its workspace, or a directory above a writable
// root, unreadable must still be able to run the command that undoes it:
// the helper looks roots up whatever their modes.
func TestEscapeLockout(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		h.needProtection() // the helper reads past modes with a capability of its user namespace
		extra := h.path("a/b")
		h.mkdir(extra)
		h.chown(h.path("a"))
		cmd := h.command(fmt.Sprintf("[sandbox]\nwritable_roots = [%q]\n", extra), "serve")
		cmd.Stderr = &testLog{t: t}
		cs := connect(t, cmd, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
		for _, c := range []struct{ lock, unlock string }{
			{"chmod 000 " + h.path("a"), "chmod 755 " + h.path("a") + " && echo x > " + extra + "/f && echo unlocked"},
			{"chmod 000 .", `chmod 755 "$PWD" && echo x > f && echo unlocked`}, // "." needs search permission
		} {
			if res, text, _ := callTool(t, cs, "shell_command", map[string]any{"login": false, "command": c.lock}); res.IsError {
				t.Fatalf("%s: %q", c.lock, text)
			}
			if res, text, _ := callTool(t, cs, "shell_command", map[string]any{"login": false, "command": c.unlock}); res.IsError || !strings.Contains(text, "unlocked") {
				t.Errorf("after %s: %q; want the next command to run", c.lock, text)
			}
		}
	})
}

// The ways git itself finds a worktree's repository, each a way to lead
// the protection astray if execd resolved them differently: a .git
// symlink to the gitdir file, a commondir that is a symlink, a .git
// directory with a commondir, a gitdir line with a trailing space (git
// strips only line ends). Real git confirms where each leads before the
// sandbox is asked to protect it.
func TestEscapeGitIndirections(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		h.needProtection()
		main := h.path("main")
		common := filepath.Join(main, ".git")
		h.hostSh(h.dir, "git init -q main && git -C main commit -q --allow-empty -m init")
		// reads is the file git reads to find the common dir, relative
		// to the worktree; it must stay as it is.
		twists := []struct{ name, script, reads string }{
			{"a .git symlink to the gitdir file", "mv .git gitfile && ln -s gitfile .git", "gitfile"},
			{"a commondir symlink", `echo "$COMMON" > ../cd-$NAME && rm "$GITDIR/commondir" && ln -s "$PWD/../cd-$NAME" "$GITDIR/commondir"`, "../cd-wt1"},
			{"a .git directory with a commondir", `rm .git && cp -r "$GITDIR" .git && echo "$COMMON" > .git/commondir`, ".git/commondir"},
			{"a gitdir line with a trailing space", `mv "$GITDIR" "$GITDIR " && printf 'gitdir: %s \n' "$GITDIR" > .git`, ".git"},
		}
		for i, tw := range twists {
			name := fmt.Sprintf("wt%d", i)
			wt, gitdir := h.path(name), filepath.Join(common, "worktrees", name)
			h.hostSh(main, "git worktree add -q ../"+name)
			h.hostSh(wt, tw.script, "COMMON="+common, "GITDIR="+gitdir, "NAME="+name)
			if got := h.hostSh(wt, "git rev-parse --path-format=absolute --git-common-dir"); got != common {
				t.Fatalf("%s: git's common dir is %q, want %q", tw.name, got, common)
			}
			hook := filepath.Join(common, "hooks", "post-checkout")
			writable := []string{"--writable", wt}
			runCases(t, h, []sandboxCase{
				{name: tw.name + ": the hooks", flags: writable, script: "echo x > " + hook, say: "Read-only file system"},
				{name: tw.name + ": what git reads", flags: writable, script: "cd " + wt + " && echo x >> " + tw.reads, say: "Read-only file system"},
			})
			if _, err := os.Lstat(hook); err == nil {
				t.Errorf("%s: %s was created", tw.name, hook)
			}
		}
	})
}

// Credentials in execd's environment are not the command's to read or
// use (SPEC §10): the names and values of the default excludes, and the
// sockets of agents that sign for the user. doctor names them.
func TestEscapeSecrets(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		secrets := []string{
			"API_KEY=v1", "GITHUB_TOKEN=v2", "AWS_SECRET_ACCESS_KEY=v3", "DB_PASSWORD=v4", "LDAP_PASSWD=v5", "MYSQL_PWD=v6",
			"GOOGLE_APPLICATION_CREDENTIALS=/v7.json", "SIGNING_PRIVATE=v8", "GITLAB_PAT=v9", "SSH_AUTH_SOCK=/tmp/v10.sock",
			"GPG_AGENT_INFO=/run/v11:0:1", "DATABASE_URL=postgres://app:v12@db/app", "UPSTREAM=https://:v13@github.com/o/r",
			"BW_SESSION=v14", "OP_SESSION_me=v15", "SMTP_PASS=v16", "REDIS_PWD=v17", "NPM_CONFIG__AUTH=v18",
			"DOCKER_AUTH_CONFIG=v19", "MYSQL_DSN=root:v20@tcp(db)/x",
		}
		kept := []string{"PWD", "OLDPWD", "EXECD_IT_PLAIN", "GIT_URL"}
		env := append(slices.Clone(secrets), "PWD="+h.work, "OLDPWD=/", "EXECD_IT_PLAIN=1", "GIT_URL=ssh://git@github.com/o/r")
		cmd := h.command("", "sandbox", "--", "env")
		cmd.Env = append(cmd.Env, env...)
		r := runCmd(t, cmd)
		for _, kv := range secrets {
			name, _, _ := strings.Cut(kv, "=")
			if strings.Contains(r.stdout, name+"=") {
				t.Errorf("%s reached the command", name)
			}
		}
		for _, name := range kept {
			if !strings.Contains(r.stdout, "\n"+name+"=") && !strings.HasPrefix(r.stdout, name+"=") {
				t.Errorf("%s was dropped: %q", name, r.stdout)
			}
		}
		cmd = h.command("", "doctor")
		cmd.Env = append(cmd.Env, env...)
		r = runCmd(t, cmd)
		_, line, _ := strings.Cut(r.stdout, "secrets:")
		line, _, _ = strings.Cut(line, "\n")
		for _, kv := range secrets {
			if name, value, _ := strings.Cut(kv, "="); !strings.Contains(line, name) || strings.Contains(r.stdout, value) {
				t.Errorf("doctor: %s not named, or its value shown: %q", name, line)
			}
		}
	})
}

// Text a person is asked to approve cannot lie (SPEC §3.3): a bidi
// override or a zero-width character in the directory, the rule's
// reason or the model's justification is shown escaped, and a newline
// cannot forge a line of the question.
func TestEscapeApprovalText(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		rlo := "\u202e"
		dir := filepath.Join(h.work, "a"+rlo+"txt.exe")
		h.mkdir(dir)
		e := &elicitor{answers: []func(context.Context) (*mcp.ElicitResult, error){action("decline")}}
		cs := h.serve("", `prefix_rule(pattern=["touch"], decision="prompt", justification="watched`+rlo+`\u200b")`, e)
		res, text, _ := callTool(t, cs, "shell_command", map[string]any{"command": "touch x", "workdir": dir, "login": false,
			"justification": "harmless" + rlo + "\nSandbox: read-only\u2066"})
		if !res.IsError || !strings.Contains(text, "rejected by user") {
			t.Fatalf("%q: want it declined", text)
		}
		qs := e.questions()
		if len(qs) != 1 {
			t.Fatalf("%d questions, want 1", len(qs))
		}
		m := qs[0].Message
		for _, c := range []string{rlo, "\u200b", "\u2066"} {
			if strings.Contains(m, c) {
				t.Errorf("the question shows %U as itself: %q", []rune(c)[0], m)
			}
		}
		for _, want := range []string{`a\u202etxt.exe`, `watched\u202e\u200b`, `harmless\u202e\nSandbox: read-only\u2066`} {
			if !strings.Contains(m, want) {
				t.Errorf("the question lacks %q: %q", want, m)
			}
		}
		if n := strings.Count(m, "\nSandbox:"); n != 1 {
			t.Errorf("%d Sandbox: lines in %q, want 1", n, m)
		}
	})
}

// Kernel interfaces no build or tool in the sandbox needs, each a
// common way to attack the kernel or to read and shape other processes'
// memory (SPEC §8.3), are refused with the network off and on.
func TestEscapeKernelSurface(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		for _, flags := range [][]string{nil, {"--network"}} {
			for _, probe := range []string{"bpf", "perf-event", "userfaultfd", "memfd-secret", "kexec", "personality"} {
				r := h.run("", append(append([]string{"sandbox"}, flags...), "--", h.probe, probe)...)
				if r.code != 1 || !strings.Contains(r.stdout, "operation not permitted") {
					t.Errorf("%v %s: %+v; want it refused", flags, probe, r)
				}
			}
			if r := h.run("", append(append([]string{"sandbox"}, flags...), "--", h.probe, "personality-query")...); r.code != 0 {
				t.Errorf("%v: reading the personality: %+v; want it to work", flags, r)
			}
		}
	})
}

// With the network on, a command still cannot reach the user's own
// daemons by their UNIX sockets (SPEC §8.3): tmux's server socket would
// let it type into a shell outside the sandbox (send-keys), the SSH agent
// sign for the user, a container engine start a privileged container.
// sandbox.allow_unix_sockets opens them, and socketpairs keep working.
func TestEscapeUnixSocketsWithNetwork(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		net := []string{"--network"}
		sock := h.path("daemon.sock")
		hits := listenUnix(t, "unix", sock)
		_ = os.Chmod(sock, 0o777)
		h.probeFails("", "operation not permitted", append(net, "--", h.probe, "connect-unix", sock)...)
		dgram := h.path("log.sock")
		dhits := listenUnix(t, "unixgram", dgram)
		_ = os.Chmod(dgram, 0o777)
		for _, want := range []string{"socket: operation", "socketpair type 2: operation", "socketpair type 3: operation"} {
			h.probeFails("", want, append(net, "--", h.probe, "sendto-unix", dgram)...)
		}
		if n, d := hits.Load(), dhits.Load(); n != 0 || d != 0 {
			t.Errorf("the host sockets got %d connections and %d datagrams from the sandbox", n, d)
		}
		if r := h.run("", append(append([]string{"sandbox"}, net...), "--", h.probe, "socketpair")...); r.code != 0 {
			t.Errorf("a stream socketpair with the network on: %+v; want it to work", r)
		}
		// The attack itself: a tmux server of the user's, outside.
		tsock := h.path("tmux.sock")
		pwned := h.path("pwned")
		h.outside("tmux", "-S", tsock, "-f", "/dev/null", "new-session", "-d", "-s", "x", "sh")
		t.Cleanup(func() { h.outside("tmux", "-S", tsock, "kill-server") })
		r := h.sh("", "tmux -S "+tsock+" send-keys -t x 'touch "+pwned+"' Enter", net...)
		if r.code == 0 {
			t.Errorf("tmux send-keys from the sandbox: %+v; want it refused", r)
		}
		// Keys typed from outside come after any that arrived: once the
		// shell has run them, it would have run the sandbox's too.
		marker := h.path("marker")
		h.outside("tmux", "-S", tsock, "send-keys", "-t", "x", "touch "+marker, "Enter")
		for deadline := time.Now().Add(waitLimit); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(marker); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the tmux shell outside never ran the marker command")
			}
		}
		h.absent(pwned)
		// Opened on purpose.
		r = h.run("[sandbox]\nallow_unix_sockets = true\n", "sandbox", "--network", "--", h.probe, "connect-unix", sock)
		if r.code != 0 || hits.Load() != 1 {
			t.Errorf("with allow_unix_sockets: %+v, %d connections; want one", r, hits.Load())
		}
	})
}

// An allow rule lifts the sandbox only from commands it saw whole (SPEC
// §7.2): a heredoc that appends to any file, a redirection to a file, an
// option that writes one, all run in the sandbox (still without asking).
func TestEscapeAllowRuleRedirections(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		outside := h.path("outside")
		h.mkdir(outside)
		h.writeFile(filepath.Join(h.work, "in"), "b\na\n")
		cs := h.serve(noTmp, `prefix_rule(pattern=[["cat", "echo", "sort", "tee", "sed", "dd", "awk", "curl"]], decision="allow")
prefix_rule(pattern=["git", ["diff", "grep"]], decision="allow")`, nil)
		attacks := []string{
			"cat >> " + outside + "/heredoc <<'EOF'\nx\nEOF",
			"cat <<EOF > " + outside + "/heredoc2\nx\nEOF",
			"echo x > " + outside + "/redirect",
			"sort -o " + outside + "/sort in",
			"cat in | tee " + outside + "/tee",
			"sed -n 'w " + outside + "/sed' in",
			"dd if=in of=" + outside + "/dd",
			"git diff --no-index --output=" + outside + "/git in in",
			"sort --out=" + outside + "/sortabbrev in",
			"sed --in-pl -e 's/a/b/' " + outside + "/../work/in && sed -n -e p -ne 'w " + outside + "/sedcluster' in",
			"awk -W interactive 'BEGIN{system(\"touch " + outside + "/awk\")}'",
			"git grep -O'touch " + outside + "/gitgrep #' b",
		}
		for _, a := range attacks {
			res, text, _ := callTool(t, cs, "shell_command", map[string]any{"command": a, "login": false})
			if !res.IsError && !strings.Contains(text, "Exit code: 1") {
				t.Logf("%s: %q", a, text)
			}
		}
		entries, _ := os.ReadDir(outside)
		for _, e := range entries {
			t.Errorf("%s was written outside the sandbox's roots", e.Name())
		}
		// What the rules saw whole still runs outside the sandbox.
		_, text, _ := callTool(t, cs, "shell_command", map[string]any{"command": "cat /proc/self/status 2>/dev/null", "login": false})
		if !strings.Contains(text, "Seccomp:\t0") {
			t.Errorf("cat allowed by a rule, with stderr to /dev/null: %q; want it unsandboxed", text)
		}
	})
}

// An allow rule names a program, not whatever file of that name a
// sandboxed command put first on PATH (an activated virtualenv,
// node_modules/.bin in the workspace): such a program runs in the
// sandbox (SPEC §7.2).
func TestEscapePlantedProgram(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		outside := h.path("outside")
		h.mkdir(outside, filepath.Join(h.work, "bin"))
		h.env = []string{"PATH=" + filepath.Join(h.work, "bin") + ":/usr/local/bin:/usr/bin:/bin"}
		cs := h.serve(noTmp, `prefix_rule(pattern=[["cat", "git"]], decision="allow")`, nil)
		// Planted by a sandboxed command, in the workspace.
		plant := "printf '#!/bin/sh\\necho pwned > " + outside + "/$(basename $0)\\n' > bin/cat && cp bin/cat bin/git && chmod +x bin/cat bin/git"
		if res, text, _ := callTool(t, cs, "shell_command", map[string]any{"command": plant, "login": false}); res.IsError || !strings.Contains(text, "Exit code: 0") {
			t.Fatalf("planting: %q", text)
		}
		for _, c := range []string{"cat README", "git status"} {
			callTool(t, cs, "shell_command", map[string]any{"command": c, "login": false})
			callTool(t, cs, "shell", map[string]any{"command": strings.Fields(c)})
		}
		h.absent(filepath.Join(outside, "cat"), filepath.Join(outside, "git"))
		// A PATH of the call's own making (env PATH=…), and a relative
		// PATH entry resolved after a cd.
		if res, text, _ := callTool(t, cs, "shell_command", map[string]any{"login": false,
			"command": "mkdir -p rel/tools && printf '#!/bin/sh\\necho pwned > " + outside + "/$(basename $0)\\n' > rel/tools/ls && cp rel/tools/ls bin/ls && chmod +x rel/tools/ls bin/ls"}); res.IsError {
			t.Fatalf("planting: %q", text)
		}
		h.env = []string{"PATH=rel/tools:/usr/local/bin:/usr/bin:/bin"}
		cs2 := h.serve(noTmp, `prefix_rule(pattern=[["ls", "env", "cd"]], decision="allow")`, nil)
		callTool(t, cs2, "shell_command", map[string]any{"login": false, "command": "env PATH=" + filepath.Join(h.work, "bin") + " ls"})
		callTool(t, cs2, "shell_command", map[string]any{"login": false, "workdir": "/", "command": "cd " + h.work + " && ls"})
		h.absent(filepath.Join(outside, "ls"))
	})
}

// A forbidden rule is not run past by spelling the script so that the
// parser does not see it (SPEC §7.1): every such form is looked into, or
// counted as opaque, which asks (here: nobody can be asked, so it is
// refused).
func TestEscapeHiddenScripts(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		precious := filepath.Join(h.work, "precious")
		bash, err := exec.LookPath("bash")
		if err != nil {
			t.Fatal(err)
		}
		copyFile(t, bash, filepath.Join(h.work, "bash")) // a shell the model chose, in the workspace
		h.chown(filepath.Join(h.work, "bash"))
		cs := h.serve("", `prefix_rule(pattern=["rm"], decision="forbidden")`, nil)
		calls := []struct {
			tool string
			args map[string]any
		}{
			{"shell", map[string]any{"command": []string{"bash", "-c", "--", "rm precious"}}},
			{"shell", map[string]any{"command": []string{"bash", "-o", "errexit", "-c", "rm precious"}}},
			{"shell", map[string]any{"command": []string{"bash", "-O", "extglob", "-c", "rm precious"}}},
			{"shell", map[string]any{"command": []string{"bash", "+O", "extglob", "-c", "rm precious"}}},
			{"shell", map[string]any{"command": []string{"bash", "--rcfile", "/dev/null", "-c", "rm precious"}}},
			{"shell", map[string]any{"command": []string{"bash", "--norc", "--noprofile", "-c", "rm precious"}}},
			{"shell", map[string]any{"command": []string{"sh", "-ec", "rm precious"}}},
			{"shell_command", map[string]any{"command": "bash -c 'rm precious'", "login": false}},
			{"shell_command", map[string]any{"command": "true && sh -ec 'rm precious'", "login": false}},
			{"shell_command", map[string]any{"command": "env rm precious", "login": false}},
			{"shell_command", map[string]any{"command": "echo precious | xargs rm", "login": false}},
			{"shell_command", map[string]any{"command": "find . -name precious -exec rm {} +", "login": false}},
			{"shell_command", map[string]any{"command": "eval 'rm precious'", "login": false}},
			{"shell_command", map[string]any{"command": "env -S 'rm precious'", "login": false}},
			{"exec_command", map[string]any{"cmd": "rm precious", "shell": "./bash", "login": false}},
			{"exec_command", map[string]any{"cmd": "rm prec''ious", "shell": "./bash", "login": false}},
		}
		for _, c := range calls {
			h.writeFile(precious, "x")
			res, text, _ := callTool(t, cs, c.tool, c.args)
			if !res.IsError || !strings.Contains(text, "rejected") {
				t.Errorf("%s %v: %q; want it refused", c.tool, c.args, text)
			}
			if _, err := os.Stat(precious); err != nil {
				t.Errorf("%s %v removed precious", c.tool, c.args)
			}
		}
	})
}

// A git that runs outside the sandbox (an allow rule for git status, an
// approved escalation) must not use a repository a sandboxed command
// could have written: its fsmonitor, hooks and the rest are programs
// (SPEC §7.2). Each attack writes a marker outside the roots when it
// works.
func TestEscapeGitRepositories(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		outside := h.path("outside")
		h.mkdir(outside)
		// The workspace is a repository from the start, with a
		// submodule whose repository is absorbed into the top one's.
		h.hostSh(h.work, "git init -q && git config user.name t && git config user.email t@example.com && "+
			"git commit -q --allow-empty -m init && "+
			"git init -q sub && git -C sub commit -q --allow-empty -m sub && "+
			"printf '[submodule \"sub\"]\\n\\tpath = sub\\n\\turl = ./sub\\n' > .gitmodules && "+
			"git add .gitmodules sub && git commit -q -m sub && git submodule absorbgitdirs 2>/dev/null")
		// A submodule the index records but neither .gitmodules lists
		// nor anyone initialized.
		h.hostSh(h.work, "git update-index --add --cacheinfo 160000,$(git -C sub rev-parse HEAD),lib2 && git commit -q -m lib2")
		rules := `prefix_rule(pattern=["git", ["status", "commit", "-C", "-c"]], decision="allow")
prefix_rule(pattern=["cd"], decision="allow")`
		cs := h.serve(noTmp, rules, nil)
		sandboxed := func(script string) {
			t.Helper()
			if res, text, _ := callTool(t, cs, "shell_command", map[string]any{"command": script, "login": false}); res.IsError {
				t.Fatalf("%s: %q", script, text)
			}
		}
		hook := func(marker string) string { return "touch " + filepath.Join(outside, marker) + "; false" }
		// A nested repository the sandbox made, with an fsmonitor.
		sandboxed("mkdir nested && cd nested && git init -q && git config core.fsmonitor '" + hook("nested") + "'")
		callTool(t, cs, "shell_command", map[string]any{"command": "cd nested && git status", "login": false})
		callTool(t, cs, "shell", map[string]any{"command": []string{"git", "-C", "nested", "status"}})
		// The submodule's repository, written by the sandbox: protected.
		sandboxed("git -C sub config core.fsmonitor '" + hook("submodule") + "' || true")
		callTool(t, cs, "shell_command", map[string]any{"command": "git status", "login": false})
		// A repository made at the gitlink's path, which git status
		// looks into.
		sandboxed("git init -q lib2 && git -C lib2 config core.fsmonitor '" + hook("gitlink") + "'")
		callTool(t, cs, "shell_command", map[string]any{"command": "git status", "login": false})
		// A configuration file of the sandbox's, included from the
		// command line.
		sandboxed("printf '[core]\\n\\tfsmonitor = " + hook("include") + "\\n' > evil.cfg")
		callTool(t, cs, "shell", map[string]any{"command": []string{"git", "-c", "include.path=" + filepath.Join(h.work, "evil.cfg"), "status"}})
		// -C as git follows it: past a symlink, .. leaves its target.
		sandboxed("git init -q evil2 && git -C evil2 config core.fsmonitor '" + hook("dotdot") + "' && mkdir -p evil2/a/b && ln -s " +
			filepath.Join(h.work, "evil2/a/b") + " lnk")
		callTool(t, cs, "shell", map[string]any{"command": []string{"git", "-C", "lnk/../..", "status"}})
		// Hooks kept in the workspace by configuration (husky).
		h.hostSh(h.work, "git config core.hooksPath .husky")
		cs2 := h.serve(noTmp, rules, nil) // a new execd: the repository is as it was at start
		if res, text, _ := callTool(t, cs2, "shell_command", map[string]any{"login": false,
			"command": "mkdir -p .husky && printf '#!/bin/sh\\n" + hook("husky") + "\\n' > .husky/pre-commit && chmod +x .husky/pre-commit"}); res.IsError {
			t.Fatalf("planting the hook: %q", text)
		}
		callTool(t, cs2, "shell_command", map[string]any{"command": "git commit -q --allow-empty -m x", "login": false})
		for _, m := range []string{"nested", "submodule", "husky", "gitlink", "include", "dotdot"} {
			h.absent(filepath.Join(outside, m))
		}
		// A repository the sandbox made at the top of a workspace that had
		// none when execd started.
		fresh := h.path("fresh")
		h.mkdir(fresh)
		cmd := h.command(noTmp+"\n[rules]\nfiles = ["+strconvQuote(h.path("test.rules"))+"]\n", "serve")
		cmd.Args[len(cmd.Args)-1] = fresh // --cwd
		cmd.Stderr = &testLog{t: t}
		cs3 := connect(t, cmd, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
		callTool(t, cs3, "shell_command", map[string]any{"login": false,
			"command": "git init -q && git config core.fsmonitor '" + hook("fresh") + "'"})
		_, text, _ := callTool(t, cs3, "shell_command", map[string]any{"command": "git status", "login": false})
		h.absent(filepath.Join(outside, "fresh"))
		if !strings.Contains(text, "Note: execd ran git in the sandbox: its repository") {
			t.Errorf("git status in a repository made by the sandbox: %q; want a note that says why it ran in the sandbox", text)
		}
		// Nor at the next start of execd, which finds the repository
		// there (and protected) from the start.
		cmd = h.command(noTmp+"\n[rules]\nfiles = ["+strconvQuote(h.path("test.rules"))+"]\n", "serve")
		cmd.Args[len(cmd.Args)-1] = fresh // --cwd
		cmd.Stderr = &testLog{t: t}
		cs5 := connect(t, cmd, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
		_, text, _ = callTool(t, cs5, "shell_command", map[string]any{"command": "git status", "login": false})
		h.absent(filepath.Join(outside, "fresh"))
		if !strings.Contains(text, "where a sandboxed command ran while there was no .git") {
			t.Errorf("git status at the next start: %q; want it in the sandbox, saying why", text)
		}
		// A repository protected since execd started, configured by the
		// user with a program outside the roots: git runs without the
		// sandbox, as the rule says.
		tool := h.path("tools/fsmon")
		h.mkdir(filepath.Dir(tool))
		h.writeFile(tool, "#!/bin/sh\ngrep Seccomp: /proc/self/status > "+filepath.Join(outside, "trusted")+"\nexit 1\n")
		if err := os.Chmod(tool, 0o755); err != nil {
			t.Fatal(err)
		}
		// ... with the attacks' gitlink gone, and a submodule listed but
		// not initialized (its empty directory is kept read-only).
		h.hostSh(h.work, "git config --unset core.hooksPath; git config core.fsmonitor "+tool+
			" && git rm -q --cached lib2 && rm -rf lib2 && mkdir opt && git update-index --add --cacheinfo 160000,$(git -C sub rev-parse HEAD),opt"+
			" && printf '[submodule \"opt\"]\n\tpath = opt\n\turl = ./opt\n' >> .gitmodules && git add .gitmodules && git commit -q -m opt")
		cs4 := h.serve(noTmp, rules, nil)
		if res, text, _ := callTool(t, cs4, "shell_command", map[string]any{"command": "git init -q opt", "login": false}); !res.IsError {
			t.Errorf("git init in an uninitialized submodule's directory: %q; want it refused", text)
		}
		callTool(t, cs4, "shell_command", map[string]any{"command": "git status", "login": false})
		if b, err := os.ReadFile(filepath.Join(outside, "trusted")); err != nil || !strings.Contains(string(b), "\t0") {
			t.Errorf("git status in a trusted repository: %q, %v; want it run without the sandbox", b, err)
		}
	})
}

// execd's own files steer its next start (a rules file that allows rm,
// a config.toml that turns the sandbox off) and record what happened
// (the audit file): where they lie inside a writable root, sandboxed
// commands can neither change nor add them (SPEC §8.2), and doctor warns.
func TestEscapeOwnFiles(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		h.needProtection()
		cfgHome := filepath.Join(h.work, ".config")
		rules := filepath.Join(cfgHome, "execd", "rules")
		h.mkdir(rules)
		h.writeFile(filepath.Join(rules, "a.rules"), "prefix_rule(pattern=[\"rm\"], decision=\"forbidden\")\n")
		h.env = []string{"XDG_CONFIG_HOME=" + cfgHome}
		cs := h.serve("[audit]\npath = \"audit.log\"\n", "", nil)
		attacks := []string{
			`echo 'prefix_rule(pattern=["rm"], decision="allow")' >> .config/execd/rules/a.rules`,
			`echo 'prefix_rule(pattern=["rm"], decision="allow")' > .config/execd/rules/b.rules`,
			`printf '[sandbox]\nmode = "danger-full-access"\n' > .config/execd/config.toml`,
			`echo '{"kind":"decision","decision":"allow_once"}' >> audit.log`,
			`mv audit.log audit.old`,
			`rm -rf .config/execd`,
		}
		for _, a := range attacks {
			if res, text, _ := callTool(t, cs, "shell_command", map[string]any{"command": a, "login": false}); !res.IsError {
				t.Errorf("%s: %q; want it refused", a, text)
			}
		}
		h.absent(filepath.Join(rules, "b.rules"), filepath.Join(cfgHome, "execd", "config.toml"), filepath.Join(h.work, "audit.old"))
		if b, _ := os.ReadFile(filepath.Join(rules, "a.rules")); strings.Contains(string(b), "allow") {
			t.Errorf("a.rules was changed: %q", b)
		}
		if b, _ := os.ReadFile(filepath.Join(h.work, "audit.log")); strings.Contains(string(b), `"allow_once"`) {
			t.Errorf("the audit file was forged: %q", b)
		}
		// Missing, inside the workspace: execd makes its directory so that
		// it can keep it read-only.
		h.env = []string{"XDG_CONFIG_HOME=" + filepath.Join(h.work, "cfg2")}
		cs2 := h.serve("", "", nil)
		callTool(t, cs2, "shell_command", map[string]any{"login": false,
			"command": `mkdir -p cfg2/execd/rules && echo 'prefix_rule(pattern=["rm"], decision="allow")' > cfg2/execd/rules/x.rules`})
		h.absent(filepath.Join(h.work, "cfg2", "execd", "rules"))
		if fi, err := os.Stat(filepath.Join(h.work, "cfg2", "execd")); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("execd's configuration directory: %v, %v; want it made, mode 0700", fi, err)
		}
		h.env = []string{"XDG_CONFIG_HOME=" + cfgHome}
		report := h.run("[audit]\npath = \"audit.log\"\n", "doctor")
		if !strings.Contains(report.stdout, "own file:") || !strings.Contains(report.stdout, filepath.Join(h.work, "audit.log")+" lies inside the writable root") {
			t.Errorf("doctor does not warn about execd's files in the workspace: %q", report.stdout)
		}
	})
}

// apply_patch reads and writes with exactly the rights of a sandboxed
// command (SPEC §7.6): when execd runs as root, a patch of another user's
// private files in /tmp (which a sandboxed root, without capabilities,
// may not read) is asked for, like a write outside the roots, rather
// than written with root's rights.
func TestEscapePatchRights(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		other := 12345
		private := h.path("private") // another user's directory, 0700
		h.mkdir(private)
		shared := filepath.Join("/tmp", "execd-it-other-"+filepath.Base(h.dir))
		t.Cleanup(func() { os.Remove(shared) })
		if err := errors.Join(os.WriteFile(filepath.Join(private, "notes"), []byte("a\n"), 0o644), os.Chmod(private, 0o700),
			os.WriteFile(shared, []byte("a\n"), 0o600), os.Lchown(shared, other, other),
			os.Lchown(filepath.Join(private, "notes"), other, other), os.Lchown(private, other, other)); err != nil {
			t.Fatal(err)
		}
		_ = os.Chmod(h.dir, 0o755)
		e := &elicitor{answers: []func(context.Context) (*mcp.ElicitResult, error){action("decline"), action("decline"), action("decline"), action("decline")}}
		cs := h.serve("", "", e)
		patches := []string{
			"*** Begin Patch\n*** Update File: " + shared + "\n@@\n-a\n+b\n*** End Patch",
			"*** Begin Patch\n*** Update File: " + shared + "\n*** Move to: " + shared + ".moved\n@@\n-a\n+b\n*** End Patch",
			"*** Begin Patch\n*** Add File: " + filepath.Join(private, "planted") + "\n+x\n*** End Patch",
			"*** Begin Patch\n*** Update File: " + filepath.Join(private, "notes") + "\n@@\n-a\n+b\n*** End Patch",
		}
		for _, p := range patches {
			res, text, _ := callTool(t, cs, "apply_patch", map[string]any{"input": p})
			if !res.IsError {
				t.Errorf("%q: %q; want it refused", p, text)
			}
		}
		if b, err := os.ReadFile(shared); err != nil || string(b) != "a\n" {
			t.Errorf("another user's file in /tmp: %q, %v; want it untouched", b, err)
		}
		if b, _ := os.ReadFile(filepath.Join(private, "notes")); string(b) != "a\n" {
			t.Errorf("another user's private file: %q; want it untouched", b)
		}
		h.absent(filepath.Join(private, "planted"))
		h.absent(shared + ".moved")
		// (Unprivileged, execd can do no more than the sandbox: the
		// patches fail without a question.)
		if !h.nobody && len(e.questions()) != len(patches) {
			t.Errorf("%d questions for %d patches the sandbox may not write; want each asked", len(e.questions()), len(patches))
		}
	})
}

// A .gitmodules that lists hundreds of submodules must not make every
// later launch slow or fail: the helper protects a bounded number.
func TestEscapeSubmoduleMaze(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		h.needProtection()
		h.mkdir(filepath.Join(h.work, ".git"))
		// 100 buried 40 directories deep, then 300 more: each would add
		// pins of its own.
		r := h.sh("", `deep=$(printf 'd/%.0s' $(seq 40)); for i in $(seq 100); do mkdir -p m$i/$deep.git; printf '[submodule "m%d"]\n\tpath = m%d/%s\n' $i $i "$deep" >> .gitmodules; done
			for i in $(seq 300); do mkdir -p s$i/.git; printf '[submodule "s%d"]\n\tpath = s%d\n' $i $i >> .gitmodules; done`)
		if r.code != 0 {
			t.Fatalf("planting: %+v", r)
		}
		bound := mountBound(t, 64*8+10)
		r = h.sh("", "echo x > f && cat f && wc -l < /proc/self/mountinfo")
		lines := strings.Fields(r.stdout)
		if r.code != 0 || len(lines) != 2 || lines[0] != "x" {
			t.Fatalf("with 300 submodules: %+v; want the workspace writable", r)
		}
		if n, _ := strconv.Atoi(lines[1]); n > bound {
			t.Errorf("%d mounts in the sandbox, want at most %d", n, bound)
		}
		if r := h.sh("", "echo x > s1/.git/config"); r.code != 0 {
			t.Logf("s1 is past the bound of protected submodules here: %+v", r)
		}
	})
}

// A session with a terminal takes input the rules never see: an allow
// rule for a pager does not let a model type `!cmd` into it outside the
// sandbox (SPEC §7.2).
func TestEscapeTerminalSession(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		outside := h.path("outside")
		h.mkdir(outside)
		h.writeFile(filepath.Join(h.work, "in.txt"), strings.Repeat("line\n", 200))
		cs := h.serve(noTmp, `prefix_rule(pattern=["less"], decision="allow")`, nil)
		id := start(t, cs, map[string]any{"cmd": "less in.txt", "tty": true, "login": false, "yield_time_ms": 1000})
		session(t, cs, "write_stdin", map[string]any{"session_id": id, "chars": "!touch " + outside + "/less\n", "yield_time_ms": 1000})
		session(t, cs, "write_stdin", map[string]any{"session_id": id, "chars": "\nq", "yield_time_ms": 1000})
		h.absent(filepath.Join(outside, "less"))
	})
}

// A shell lifted out of the sandbox must not read a profile a sandboxed
// command could have written: with HOME in the workspace, a rule that
// allows ls does not run ~/.bash_profile outside the sandbox (SPEC §7.2).
func TestEscapeLoginProfile(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		outside := h.path("outside")
		home := filepath.Join(h.work, "home")
		h.mkdir(outside, home)
		h.env = []string{"HOME=" + home}
		cs := h.serve(noTmp, `prefix_rule(pattern=["ls"], decision="allow")`, nil)
		if res, text, _ := callTool(t, cs, "shell_command", map[string]any{"login": false,
			"command": "echo 'touch " + outside + "/profile' > home/.bash_profile"}); res.IsError {
			t.Fatalf("planting: %q", text)
		}
		_, text, _ := callTool(t, cs, "shell_command", map[string]any{"command": "ls"}) // a login shell, by default
		h.absent(filepath.Join(outside, "profile"))
		if !strings.Contains(text, "Note: execd ran this in the sandbox: its shell reads") {
			t.Errorf("ls through a login shell: %q; want a note saying why it ran in the sandbox", text)
		}
		// HOME outside the roots, but a profile sourcing a file in one,
		// as rustup's `. "$HOME/.cargo/env"` with ~/.cargo writable.
		home = h.path("home2")
		cargo := filepath.Join(home, ".cargo")
		h.mkdir(cargo)
		h.writeFile(filepath.Join(home, ".profile"), `. "$HOME/.cargo/env"`+"\n")
		h.writeFile(filepath.Join(cargo, "env"), `export PATH="$HOME/.cargo/bin:$PATH"`+"\n")
		h.env = []string{"HOME=" + home}
		cs = h.serve(noTmp+"writable_roots = ["+strconvQuote(cargo)+"]\n", `prefix_rule(pattern=["ls"], decision="allow")`, nil)
		if res, text, _ := callTool(t, cs, "shell_command", map[string]any{"login": false,
			"command": "echo 'touch " + outside + "/cargo' >> " + filepath.Join(cargo, "env")}); res.IsError {
			t.Fatalf("planting: %q", text)
		}
		_, text, _ = callTool(t, cs, "shell_command", map[string]any{"command": "ls"})
		h.absent(filepath.Join(outside, "cargo"))
		if !strings.Contains(text, "Note: execd ran this in the sandbox: its shell reads "+filepath.Join(home, ".profile")+", which names") {
			t.Errorf("ls through a login shell whose profile sources a writable file: %q; want a note saying why it ran in the sandbox", text)
		}
	})
}

// A repository a sandboxed command made while nothing protected it is
// not trusted by a later execd that finds it protected (SPEC §7.2): a
// nested repository listed in .gitmodules only afterwards, a bare
// repository a root's new .git file points to, and a .git that is
// itself a writable root, which the helper leaves writable.
func TestEscapeGitMadeEarlier(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		h.needProtection()
		outside := h.path("outside")
		h.mkdir(outside)
		hook := func(marker string) string { return "touch " + filepath.Join(outside, marker) + "; false" }
		rules := `prefix_rule(pattern=["git", ["status", "log"]], decision="allow")`
		call := func(cs *mcp.ClientSession, workdir, command string) string {
			t.Helper()
			args := map[string]any{"command": command, "login": false}
			if workdir != "" {
				args["workdir"] = workdir
			}
			_, text, _ := callTool(t, cs, "shell_command", args)
			return text
		}
		h.hostSh(h.work, "git init -q && git config user.name t && git config user.email t@example.com && git commit -q --allow-empty -m init")

		// A nested repository, then listed as a submodule.
		cs := h.serve(noTmp, rules, nil)
		call(cs, "", "git init -q sub && git -C sub config core.fsmonitor '"+hook("nested")+"' && "+
			"printf '[submodule \"sub\"]\\n\\tpath = sub\\n\\turl = ./sub\\n' > .gitmodules")
		cs = h.serve(noTmp, rules, nil) // the next start: sub/.git is protected now
		if text := call(cs, "sub", "git status"); !strings.Contains(text, "neither a root's own nor a submodule's kept in one") {
			t.Errorf("git status in a nested repository listed later: %q; want it in the sandbox, saying why", text)
		}
		h.absent(filepath.Join(outside, "nested"))

		// .git a writable root of its own.
		cs = h.serve(noTmp+"writable_roots = ["+strconvQuote(filepath.Join(h.work, ".git"))+"]\n", rules, nil)
		call(cs, "", "git config core.fsmonitor '"+hook("writable")+"'")
		call(cs, "", "git status")
		h.absent(filepath.Join(outside, "writable"))

		// A root without .git, given one pointing to a bare repository
		// the sandbox made inside it.
		fresh := h.path("fresh")
		h.mkdir(fresh)
		serveIn := func(dir string) *mcp.ClientSession {
			cmd := h.command(noTmp+"\n[rules]\nfiles = ["+strconvQuote(h.path("test.rules"))+"]\n", "serve")
			cmd.Args[len(cmd.Args)-1] = dir // --cwd
			cmd.Stderr = &testLog{t: t}
			return connect(t, cmd, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
		}
		cs = serveIn(fresh)
		call(cs, "", "git init -q --bare x/repo.git && mkdir t && echo hi > t/a && "+
			"git --git-dir=x/repo.git --work-tree=t add a && git --git-dir=x/repo.git --work-tree=t -c user.name=t -c user.email=t@e commit -qm a && "+
			"echo '* diff=x' > x/repo.git/info/attributes && git --git-dir=x/repo.git config diff.x.textconv '"+hook("bare")+"' && "+
			"echo 'gitdir: x/repo.git' > .git")
		cs = serveIn(fresh)
		if text := call(cs, "x/repo.git", "git log -p"); !strings.Contains(text, "where a sandboxed command ran while there was no .git") {
			t.Errorf("git log in a bare repository made in a root without .git: %q; want it in the sandbox, saying why", text)
		}
		h.absent(filepath.Join(outside, "bare"))
	})
}

// A missing own file that a sandboxed command makes into a symlink
// buried hundreds of directories deep is left unprotected, and only it:
// the audit file after it stays read-only (each protected path has its
// own budget of mounts).
func TestEscapeOwnFileMaze(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		h.needProtection()
		cs := h.serve("[audit]\npath = \"audit.log\"\n[rules]\namend_file = \"a-amend.rules\"\n", "", nil)
		maze := "m/" + strings.Repeat("d/", 300)
		if res, text, _ := callTool(t, cs, "shell_command", map[string]any{"login": false,
			"command": "mkdir -p " + maze + " && touch " + maze + "x && ln -s " + maze + "x a-amend.rules"}); res.IsError {
			t.Fatalf("the maze: %q", text)
		}
		if res, text, _ := callTool(t, cs, "shell_command", map[string]any{"login": false,
			"command": `echo '{"kind":"decision","decision":"allow_once"}' >> audit.log`}); !res.IsError {
			t.Errorf("forging the audit file past the maze: %q; want it refused", text)
		}
		if b, _ := os.ReadFile(filepath.Join(h.work, "audit.log")); strings.Contains(string(b), "\n"+`{"kind":"decision","decision":"allow_once"}`) {
			t.Error("the audit file was forged past the maze")
		}
	})
}
