package test

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// These tests run the real sandbox helper on this kernel through `execd
// sandbox`, as root and as nobody (SPEC §8).

// sandboxCase is a script run under `execd sandbox`.
type sandboxCase struct {
	name   string
	config string
	flags  []string
	script string
	ok     bool   // exit 0
	say    string // in stdout or stderr; "a|b" means either
}

// denied is what a refused write says: the read-only mount refuses it
// first, or Landlock where there are no namespaces.
const denied = "Read-only file system|Permission denied"

func says(out, want string) bool {
	for _, w := range strings.Split(want, "|") {
		if strings.Contains(out, w) {
			return true
		}
	}
	return false
}

func runCases(t *testing.T, h *sandboxHost, cases []sandboxCase) {
	t.Helper()
	for _, c := range cases {
		r := h.sh(c.config, c.script, c.flags...)
		if (r.code == 0) != c.ok || !says(r.stdout+r.stderr, c.say) {
			t.Errorf("%s: `%s` exited %d, stdout %q, stderr %q; want success %v saying %q",
				c.name, c.script, r.code, r.stdout, r.stderr, c.ok, c.say)
		}
	}
}

// noTmp leaves cwd the only writable root.
const noTmp = "[sandbox]\nexclude_slash_tmp = true\nexclude_tmpdir_env_var = true\n"

func TestSandboxWrites(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		outside := h.path("outside")
		h.mkdir(outside)
		tmpFile := filepath.Join("/tmp", "execd-sbx-"+strconv.Itoa(os.Getpid())+"-"+filepath.Base(h.dir))
		t.Cleanup(func() { os.Remove(tmpFile) })
		runCases(t, h, []sandboxCase{
			{name: "write in the workspace", script: "echo x > f && cat f && rm f", ok: true, say: "x"},
			{name: "write outside the roots", config: noTmp, script: "echo x > " + outside + "/f", say: denied},
			{name: "mkdir outside the roots", config: noTmp, script: "mkdir " + outside + "/d", say: denied},
			{name: "/tmp is a root", script: "echo x > " + tmpFile, ok: true},
			{name: "/tmp excluded", config: noTmp, script: "echo x > " + tmpFile + ".2", say: denied},
			{name: "an extra root", config: noTmp, flags: []string{"--writable", outside}, script: "echo x > " + outside + "/g", ok: true},
			{name: "read-only denies the workspace", flags: []string{"--mode", "read-only"}, script: "echo x > f", say: denied},
			{name: "read-only keeps the devices", flags: []string{"--mode", "read-only"},
				script: "echo x > /dev/null && head -c 4 /dev/urandom | wc -c", ok: true, say: "4"},
		})
		h.absent(outside+"/f", outside+"/d", tmpFile+".2", filepath.Join(h.work, "f"))
	})
}

func TestSandboxProtectedPaths(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		h.needProtection()
		git := filepath.Join(h.work, ".git")
		h.mkdir(filepath.Join(git, "hooks"))
		h.writeFile(filepath.Join(git, "config"), "[core]\n")
		decoy := h.path("x/decoy") // under /tmp: writable but for the protection
		h.mkdir(h.path("x"), decoy, filepath.Join(h.work, ".agents"))
		if err := os.Symlink(decoy, filepath.Join(h.work, ".codex")); err != nil {
			t.Fatal(err)
		}
		h.chown(filepath.Join(h.work, ".codex"))
		// A worktree: its .git file names a gitdir in /tmp, whose
		// commondir names the main repository's .git, with the hooks.
		wt, common := h.worktree("wt")
		gitdir := filepath.Join(common, "worktrees", "wt")
		h.mkdir(filepath.Join(wt, ".agents"))
		runCases(t, h, []sandboxCase{
			{name: ".git/config", script: "echo x >> .git/config", say: "Read-only file system"},
			{name: ".git/hooks/x", script: "echo x > .git/hooks/x", say: "Read-only file system"},
			{name: "rename .git", script: "mv .git .git.old", say: "busy"},
			{name: "replace .git", script: "rm -rf .git; mkdir -p .git/hooks && echo x > .git/hooks/pre-commit", say: "Read-only file system"},
			{name: "the workspace stays writable", script: "echo x > notes && rm notes", ok: true},
			{name: "swap the .codex symlink", script: "ln -sfn /tmp .codex", say: "busy"},
			{name: "remove the .codex symlink", script: "rm .codex", say: "busy"},
			{name: "write through the .codex symlink", script: "echo x > .codex/f", say: "Read-only file system"},
			{name: "write the decoy directly", script: "echo x > " + decoy + "/f", say: "Read-only file system"},
			{name: "a .git file's gitdir", flags: []string{"--writable", h.path("wt")}, script: "echo x > " + gitdir + "/HEAD", say: "Read-only file system"},
			{name: "a worktree's common dir", flags: []string{"--writable", h.path("wt")}, script: "echo x > " + common + "/hooks/post-checkout",
				say: "Read-only file system"},
			{name: "move the repository a worktree's gitdir is in", flags: []string{"--writable", h.path("wt")},
				script: "mv " + h.path("main") + " " + h.path("main-x"), say: "busy"},
			// Pins for one root must not undo the protection in another.
			{name: ".git with another root beside", flags: []string{"--writable", h.path("wt")}, script: "echo x > .git/hooks/y",
				say: "Read-only file system"},
			{name: "the other root's .agents", flags: []string{"--writable", h.path("wt")}, script: "echo x > " + h.path("wt/.agents/f"),
				say: "Read-only file system"},
			{name: "move the directory a symlink's target is in", script: "mv " + h.path("x") + " " + h.path("y"), say: "busy"},
			{name: "an explicit writable root wins", flags: []string{"--writable", filepath.Join(h.work, ".agents")},
				script: "echo x > .agents/notes && rm .agents/notes", ok: true},
		})
		if b, _ := os.ReadFile(filepath.Join(git, "config")); string(b) != "[core]\n" {
			t.Errorf(".git/config = %q after the attempts", b)
		}
		if b, _ := os.ReadFile(filepath.Join(gitdir, "HEAD")); string(b) != "ref: refs/heads/main\n" {
			t.Errorf("the gitdir's HEAD = %q after the attempts", b)
		}
		h.absent(filepath.Join(git, "hooks", "x"), filepath.Join(git, "hooks", "pre-commit"), filepath.Join(git, "hooks", "y"),
			filepath.Join(decoy, "f"), filepath.Join(common, "hooks", "post-checkout"))
		if target, err := os.Readlink(filepath.Join(h.work, ".codex")); err != nil || target != decoy {
			t.Errorf(".codex -> %q (%v), want the decoy", target, err)
		}
	})
}

// Programs that allocate terminals work in the sandbox.
func TestSandboxTerminals(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		runCases(t, h, []sandboxCase{
			{name: "script", script: "script -qc 'echo in-script' /dev/null", ok: true, say: "in-script"},
			{name: "python pty", ok: true, say: "child on /dev/pts/",
				// The child waits for a line, so that its output is read
				// before its end closes the terminal (reads then fail
				// with EIO).
				script: `python3 -c 'import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    print("child on", os.ttyname(0), flush=True); sys.stdin.readline(); os._exit(0)
out = b""
while b"\n" not in out:
    out += os.read(fd, 100)
print(out.decode()); os.write(fd, b"\n"); os.waitpid(pid, 0)'`},
		})
	})
}

// listener counts the connections and datagrams that reach it.
type listener struct {
	addr string
	hits atomic.Int32
}

func listenTCP(t *testing.T) *listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	l := &listener{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.hits.Add(1)
			c.Close()
		}
	}()
	return l
}

func listenUDP(t *testing.T) *listener {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	l := &listener{addr: pc.LocalAddr().String()}
	go func() {
		buf := make([]byte, 64)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			l.hits.Add(1)
		}
	}()
	return l
}

func (l *listener) hostPort() (string, string) {
	host, port, _ := net.SplitHostPort(l.addr)
	return host, port
}

func TestSandboxNetwork(t *testing.T) {
	tcp, udp := listenTCP(t), listenUDP(t)
	th, tp := tcp.hostPort()
	uh, up := udp.hostPort()
	py := func(code string) string { return "python3 -c '" + code + "'" }
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		runCases(t, h, []sandboxCase{
			{name: "bash /dev/tcp", script: "echo x > /dev/tcp/" + th + "/" + tp, say: "Operation not permitted"},
			{name: "python TCP", script: py("import socket; socket.create_connection((\"" + th + "\", " + tp + "))"), say: "Operation not permitted"},
			{name: "bash /dev/udp", script: "echo x > /dev/udp/" + uh + "/" + up, say: "Operation not permitted"},
			{name: "python UDP", script: py("import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b\"x\", (\"" + uh + "\", " + up + "))"),
				say: "Operation not permitted"},
			{name: "AF_UNIX socketpair", script: py("import socket; a, b = socket.socketpair(); a.sendall(b\"ping\"); print(b.recv(4).decode())"),
				ok: true, say: "ping"},
			{name: "strace", script: "strace -o /dev/null true", say: "Operation not permitted"},
			{name: "no_new_privs and seccomp", script: "grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status", ok: true,
				say: "NoNewPrivs:\t1\nSeccomp:\t2\n"},
			{name: "markers", script: "env | grep ^EXECD_ | sort", ok: true,
				say: "EXECD_SANDBOX=linux\nEXECD_SANDBOX_NETWORK_DISABLED=1\n"},
			{name: "network on", flags: []string{"--network"}, script: "echo x > /dev/tcp/" + th + "/" + tp + " && env | grep ^EXECD_", ok: true,
				say: "EXECD_SANDBOX=linux\n"},
		})
		if r := h.sh("", "env", "--network"); strings.Contains(r.stdout, "NETWORK_DISABLED") {
			t.Errorf("network on, yet marked disabled: %q", r.stdout)
		}
	})
	deadline := time.Now().Add(time.Second) // the allowed connection may still be counting
	for tcp.hits.Load() != 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := tcp.hits.Load(); n != 2 {
		t.Errorf("the TCP listener saw %d connections; want 2, those with the network on (root, nobody)", n)
	}
	if n := udp.hits.Load(); n != 0 {
		t.Errorf("the UDP listener got %d datagrams from the sandbox", n)
	}
}

// The MCP server sandboxes one-shots and sessions alike; a PTY session
// can use its terminal, and results say when the sandbox denied something.
func TestSandboxThroughTheTools(t *testing.T) {
	asEachUser(t, func(t *testing.T, h *sandboxHost) {
		cmd := h.command("", "serve")
		cmd.Stderr = &testLog{t: t}
		cs := connect(t, cmd, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
		id := start(t, cs, map[string]any{"cmd": "bash --norc --noprofile -i", "tty": true, "yield_time_ms": 10000})
		_, st := write(t, cs, id, "tty; echo via-tty > /dev/tty; exit 3\n", 10000)
		if !strings.Contains(st.Output, "/dev/pts/") || !strings.Contains(st.Output, "via-tty") ||
			st.ExitCode == nil || *st.ExitCode != 3 || st.SandboxDenied {
			t.Errorf("terminal session: %+v", st)
		}
		res, text, est := callTool(t, cs, "shell_command", map[string]any{"command": "echo x > /etc/execd-it-denied", "login": false})
		if !res.IsError || est == nil || !est.SandboxDenied || !says(text, denied) {
			t.Errorf("a denied write: isError %v %q %+v; want sandbox_denied", res.IsError, text, est)
		}
		for _, plain := range []string{"exit 1", "echo 'FAIL internal/sandbox (seccomp, landlock)'; exit 1"} {
			_, _, est = callTool(t, cs, "shell_command", map[string]any{"command": plain, "login": false})
			if est == nil || est.SandboxDenied {
				t.Errorf("a plain failure %q: %+v; want no sandbox_denied", plain, est)
			}
		}
		_, st2, _ := session(t, cs, "exec_command", map[string]any{"cmd": "touch /etc/execd-it-denied", "login": false})
		if !st2.SandboxDenied {
			t.Errorf("a denied session command: %+v; want sandbox_denied", st2)
		}
	})
}
