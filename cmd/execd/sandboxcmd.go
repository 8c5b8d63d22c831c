package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/execd/execd/internal/orchestrator"
	"github.com/execd/execd/internal/reaper"
	"github.com/execd/execd/internal/sandbox"
)

func sandboxFlags(fs *pflag.FlagSet) {
	fs.SetInterspersed(false)
	fs.String("mode", "", "sandbox mode (default: sandbox.mode of the configuration)")
	fs.Bool("network", false, "allow network access (default: sandbox.network_access)")
	fs.StringArray("writable", nil, "another writable root (repeatable)")
}

// sandboxCmd is `execd sandbox -- CMD`: one command under the sandbox
// only, with no policy or approval, to try a sandbox configuration.
func sandboxCmd(fs *pflag.FlagSet, argv []string) int {
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "execd sandbox: missing command (usage: execd sandbox [--mode M] [--network] [--writable DIR]... -- CMD...)")
		return exitUsage
	}
	cfg, err := loadConfig(fs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "execd: %v\n", err)
		return exitUsage
	}
	if err := applySandboxFlags(fs, cfg); err != nil {
		fmt.Fprintf(os.Stderr, "execd sandbox: %v\n", err)
		return exitUsage
	}
	return runOne(fs, cfg, "sandbox", argv, 0, nil)
}

// applySandboxFlags lays the flags of `execd sandbox` over cfg.
func applySandboxFlags(fs *pflag.FlagSet, cfg *config) error {
	if fs.Changed("mode") {
		m, _ := fs.GetString("mode")
		if _, err := sandbox.ParseMode(m); err != nil {
			return fmt.Errorf("--mode: %w", err)
		}
		if fs.Changed("sandbox") {
			if s, _ := fs.GetString("sandbox"); s != m {
				return fmt.Errorf("--mode %s and --sandbox %s disagree; give one", m, s)
			}
		}
		cfg.Sandbox.Mode = m
	}
	if fs.Changed("network") {
		cfg.Sandbox.NetworkAccess, _ = fs.GetBool("network")
	}
	dirs, _ := fs.GetStringArray("writable")
	for _, d := range dirs {
		abs := d
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(cfg.Cwd, d)
		}
		fi, err := os.Stat(abs)
		switch {
		case err != nil:
			return fmt.Errorf("--writable %s: %w", d, errors.Unwrap(err))
		case !fi.IsDir():
			return fmt.Errorf("--writable %s: not a directory", d)
		}
		cfg.Sandbox.WritableRoots = append(cfg.Sandbox.WritableRoots, abs)
	}
	return nil
}

// doctorCmd is `execd doctor`: what this host can enforce, and whether the
// configured sandbox works, shown by running a command in it. Exit 1 when
// it cannot be enforced.
func doctorCmd(fs *pflag.FlagSet, _ []string) int {
	cfg, err := loadConfig(fs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "execd: %v\n", err)
		return exitUsage
	}
	r := reaper.New()
	defer r.Close()
	// Probe even when the configured mode needs no sandbox: the report
	// is about the host.
	sup := sandbox.Probe(r.Run)
	orch, err := newOrchestrator(cfg, zap.NewNop(), r, &sup, nil, true)
	if err != nil {
		fmt.Fprintf(os.Stderr, "execd doctor: %v\n", err)
		return exitInternal
	}
	d := doctor{w: os.Stdout, cfg: cfg, orch: orch, containment: r.Containment(), budget: r.Budget()}
	code := d.report()
	// The self-test's sandbox launcher, like anything execd started, ends
	// with it.
	ctx, cancel := context.WithTimeout(context.Background(), shutdownLimit)
	defer cancel()
	_ = r.Shutdown(ctx, killGrace)
	orch.Close()
	return code
}

// doctor writes the report of `execd doctor`.
type doctor struct {
	w           io.Writer
	cfg         *config
	orch        *orchestrator.Orchestrator
	containment string // how nothing outlives execd (reaper.Containment)
	budget      string // the task budgets shared with commands (reaper.Budget)
	ok          bool
}

func (d *doctor) line(key, format string, args ...any) {
	fmt.Fprintf(d.w, "%-18s %s\n", key+":", fmt.Sprintf(format, args...))
}

func (d *doctor) report() int {
	sup := d.orch.Support()
	d.line("execd", "%s (commit %s)", version, buildCommit())
	switch sup.OS {
	case "linux":
		d.linux(sup)
	case "darwin":
		d.line("sandbox-exec", "%s", yesNo(sup.Seatbelt))
	default:
		d.line("platform", "%s: execd has no sandbox here", sup.OS)
	}
	d.ok = d.sandbox()
	d.line("containment", "%s", d.containment)
	d.line("process budget", "%s", d.budget)
	d.secrets()
	d.line("shell", "%s (%s)", d.orch.Shell().Path, d.orch.Shell().Kind)
	d.snapshot()
	if len(d.cfg.Files) > 0 {
		d.line("config files", "%s", strings.Join(d.cfg.Files, ", "))
	} else {
		d.line("config files", "none (defaults, flags and EXECD_* variables only)")
	}
	d.rules()
	if !d.ok {
		return 1
	}
	return 0
}

// rules reports the exec policy: the approval policy and each rules file
// found, with why one that fails to load is not used (a warning: execd
// still runs, without that file's rules).
func (d *doctor) rules() {
	d.line("approval policy", "%s", d.cfg.ApprovalPolicy)
	files := rulesFiles(d.cfg)
	if len(files) == 0 {
		d.line("rules files", "none (rules.files is empty and %s has no *.rules)", orNone(rulesDir()))
	}
	for _, l := range loadRules(files) {
		if l.err != nil {
			d.line("rules file", "NOT USED: %v", l.err)
			continue
		}
		d.line("rules file", "%s: %d prefix rules", l.path, len(l.file.Rules))
	}
	d.line("amend file", "%s", orNone(d.cfg.Rules.AmendFile))
	d.line("audit file", "%s", orNone(d.cfg.AuditPath))
	d.ownFiles()
	if roots, file := d.orch.TaintedRoots(); len(roots) > 0 {
		d.line("untrusted git", "no repository at the top of %s runs git outside the sandbox: a sandboxed command ran there "+
			"while it had no .git (remove a line from %s to trust a repository you made yourself)", strings.Join(roots, ", "), orNone(file))
	}
}

// ownFiles warns about execd's own files that lie inside a writable root
// (SPEC §8.2): kept read-only to commands where they exist, but better
// kept elsewhere; a missing one there could be created by a command.
func (d *doctor) ownFiles() {
	own := ownFiles(d.cfg)
	for _, f := range own {
		root := d.orch.WritableRootOf(f)
		inOwnDir := slices.ContainsFunc(own, func(o string) bool { return strings.HasPrefix(f, o+"/") })
		if root == "" || inOwnDir {
			continue // the directory's protection covers it
		}
		if _, err := os.Lstat(f); err != nil {
			d.line("own file", "WARNING: %s lies inside the writable root %s and does not exist: a sandboxed command could "+
				"create it (execd serve and run create their configuration directory; move the others out)", f, root)
			continue
		}
		d.line("own file", "warning: %s lies inside the writable root %s: commands cannot change it (it is kept "+
			"read-only to them), but execd's files are better kept outside the workspace", f, root)
	}
}

// secrets lists the variables of execd's environment that the default
// excludes keep from commands (SPEC §10): names only, never values.
func (d *doctor) secrets() {
	switch names := orchestrator.DroppedSecrets(os.Environ(), envPolicy(d.cfg)); {
	case d.cfg.Env.IgnoreDefaultExcludes:
		d.line("secrets", "passed to commands (shell_environment_policy.ignore_default_excludes is true)")
	case len(names) == 0:
		d.line("secrets", "none found in this environment (the default excludes would drop them)")
	default:
		d.line("secrets", "not passed to commands: %s", strings.Join(names, ", "))
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func (d *doctor) linux(sup sandbox.Support) {
	d.line("kernel", "%s", sup.Kernel)
	if sup.Landlock == 0 {
		d.line("landlock", "not available")
	} else {
		d.line("landlock", "ABI %d%s", sup.Landlock, landlockGaps(sup.Landlock))
	}
	d.line("seccomp", "%s", yesNo(sup.Seccomp))
	if sup.UserNS {
		d.line("user namespaces", "yes")
		if sup.PIDNS {
			d.line("pid namespace", "yes: sandboxed commands run in one per sandbox policy, whose init (the launcher that forks them) dies with execd, even by SIGKILL, and with it every process in it")
		} else {
			d.line("pid namespace", "no (%s): each sandboxed command has a helper of its own and shares the host's processes", sup.PIDNSErr)
		}
	} else if sup.UserNSErr != "" {
		d.line("user namespaces", "no (%s)", sup.UserNSErr)
	} else {
		d.line("user namespaces", "not probed (the configured mode needs no sandbox)")
	}
}

// landlockGaps names the rights this build uses that an older ABI lacks.
func landlockGaps(abi int) string {
	gaps := []struct {
		abi  int
		what string
	}{
		{2, "moving files between directories"},
		{3, "truncating files"},
		{4, "TCP bind/connect rules"},
		{5, "device ioctl rules"},
		{6, "abstract UNIX socket and signal scoping"},
	}
	var missing []string
	for _, g := range gaps {
		if abi < g.abi {
			missing = append(missing, fmt.Sprintf("%s (ABI %d)", g.what, g.abi))
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "; not enforced: " + strings.Join(missing, ", ")
}

// sandbox reports the configured mode and, when it is enforced, runs a
// command in it. It returns false when the mode cannot be enforced.
func (d *doctor) sandbox() bool {
	mode, sup := d.orch.SandboxMode(), d.orch.Support()
	network := "off"
	switch {
	case d.cfg.Sandbox.NetworkAccess && d.cfg.Sandbox.AllowUnixSockets:
		network = "on, with the user's UNIX sockets (sandbox.allow_unix_sockets: commands can reach tmux, the SSH agent, the session bus, a container engine)"
	case d.cfg.Sandbox.NetworkAccess:
		network = "on (every host and port the user can reach; the user's UNIX sockets stay closed)"
	}
	switch mode {
	case sandbox.DangerFullAccess:
		d.line("sandbox", "%s: commands run without a sandbox", mode)
		return true
	case sandbox.ExternalSandbox:
		d.line("sandbox", "%s: execd adds none, the container or VM confines commands; network %s", mode, network)
		return true
	}
	if err := sup.Check(mode); err != nil {
		d.line("sandbox", "%s: CANNOT BE ENFORCED: %v", mode, err)
		return false
	}
	d.line("sandbox", "%s, network %s", mode, network)
	if mode == sandbox.WorkspaceWrite {
		d.line("writable roots", "%s", strings.Join(d.orch.WritableRoots(), ", "))
		d.protected(sup)
	}
	if sup.OS == "linux" && !sup.UserNS {
		d.line("metadata", "NOT PROTECTED (warning): without user namespaces a command may change the mode, times and "+
			"extended attributes of files outside the writable roots, and reach the host's System V IPC")
	}
	return d.selfTest()
}

func (d *doctor) protected(sup sandbox.Support) {
	names := strings.Join(d.cfg.Sandbox.ProtectedPaths, ", ")
	switch {
	case len(d.cfg.Sandbox.ProtectedPaths) == 0:
		d.line("protected paths", "none configured")
	case sup.OS == "linux" && !sup.UserNS:
		d.line("protected paths", "%s: NOT ENFORCED (warning): they need user namespaces", names)
	default:
		d.line("protected paths", "%s: read-only where they exist", names)
	}
}

// selfTest runs `cat /proc/self/status` in the sandbox and checks that
// the helper set no_new_privs and a seccomp filter.
func (d *doctor) selfTest() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t0 := time.Now()
	res, err := d.orch.Exec(ctx, orchestrator.ExecRequest{Argv: []string{"cat", "/proc/self/status"}, SelfTest: true})
	elapsed := time.Since(t0)
	switch {
	case err != nil:
		d.line("self-test", "FAILED: %v", err)
		return false
	case res.ExitCode != 0:
		d.line("self-test", "FAILED: cat /proc/self/status exited %d: %s", res.ExitCode, res.Stderr.Data)
		return false
	}
	if d.orch.Support().OS == "linux" {
		status := string(res.Stdout.Data)
		if !strings.Contains(status, "NoNewPrivs:\t1") || !strings.Contains(status, "Seccomp:\t2") {
			d.line("self-test", "FAILED: the sandboxed command has no seccomp filter or no_new_privs")
			return false
		}
	}
	d.line("self-test", "a sandboxed command ran in %.1f ms", float64(elapsed.Microseconds())/1000)
	return true
}

// snapshot reports the shell snapshots (SPEC §9.1) of the user's shell:
// where they are kept, whether one stands in for its profile or why not,
// and what the profile costs: `SHELL -lc true` against `SHELL -c true`,
// and with the snapshot. These commands run like the self-test's.
func (d *doctor) snapshot() {
	sh := d.orch.Shell()
	if sh.Kind != orchestrator.Bash && sh.Kind != orchestrator.Zsh && sh.Kind != orchestrator.Sh {
		d.line("shell snapshot", "none: only bash, zsh and sh have them")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	login := sh.Argv("true", true)
	timed := func(argv []string, noSnapshot bool) (time.Duration, error) { // the fastest of 3
		var best time.Duration
		for i := range 3 {
			res, err := d.orch.Exec(ctx, orchestrator.ExecRequest{Argv: argv, SelfTest: true, NoSnapshot: noSnapshot})
			switch {
			case err != nil:
				return 0, err
			case res.ExitCode != 0:
				return 0, fmt.Errorf("%s exited %d", strings.Join(argv, " "), res.ExitCode)
			case i == 0 || res.Duration < best:
				best = res.Duration
			}
		}
		return best, nil
	}
	plain, err := timed(sh.Argv("true", false), false)
	var withProfile time.Duration
	if err == nil {
		withProfile, err = timed(login, true)
	}
	if err != nil {
		d.line("login profile", "not measured: %v", err)
		return
	}
	cost := fmt.Sprintf("%s -lc true %s, -c true %s: the profile costs about %s a command",
		sh.Path, ms(withProfile), ms(plain), ms(max(withProfile-plain, 0)))
	dir, ttl, timeout := d.orch.SnapshotSettings()
	if dir == "" {
		_, why, _ := d.orch.SnapshotStatus(login)
		d.line("shell snapshot", "none: %s", why)
		d.line("login profile", "%s", cost)
		return
	}
	_, _ = timed(login, false) // takes the snapshot
	path, why, _ := d.orch.SnapshotStatus(login)
	if path == "" {
		d.line("shell snapshot", "NOT USED for %s: %s; its login shells run the profile", sh.Path, why)
		d.line("login profile", "%s", cost)
		return
	}
	d.line("shell snapshot", "used, kept in a directory of each execd's own under %s, removed when it exits (taken again when "+
		"a startup file changes and after %s; taking one may last %s)", filepath.Dir(filepath.Dir(path)), ttl, timeout)
	if with, err := timed(login, false); err == nil {
		cost += "; with the snapshot " + ms(with)
	}
	d.line("login profile", "%s", cost)
}

// ms is d in milliseconds with one decimal.
func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
