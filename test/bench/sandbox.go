package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/execd/execd/internal/sandbox"
)

// sandboxBench measures the Linux sandbox (issues #4 and #15):
//   - the launch overhead of `true` through a resident launcher, and of
//     the helper it replaced without and with namespaces, against a plain
//     spawn, interleaved, from this small process with execd's own binary
//     as launcher and helper (its package inits run at every helper
//     launch);
//   - a sandboxed `shell ["true"]` round trip against an unsandboxed one,
//     two daemons interleaved, and both daemons' calls/s with 8 calls in
//     flight;
//   - what the seccomp filter costs a syscall-bound command (dd with
//     1-byte blocks).
func sandboxBench(bin, dir string, n int) error {
	sup := sandbox.Probe(func(cmd *exec.Cmd) error { return cmd.Run() })
	if err := sup.Check(sandbox.WorkspaceWrite); err != nil {
		report("sandbox", "skipped: "+err.Error(), "(none)", true)
		return nil
	}
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(filepath.Join(work, ".git"), 0o755); err != nil {
		return err
	}
	fi, err := os.Stat(work)
	if err != nil {
		return err
	}
	st := fi.Sys().(*syscall.Stat_t)
	policy := sandbox.Policy{Mode: sandbox.WorkspaceWrite, ProtectedNames: []string{".git", ".codex", ".agents", ".execd"},
		Roots: []sandbox.Root{{Path: work, Dev: uint64(st.Dev), Ino: st.Ino}}} //nolint:unconvert // Dev varies by architecture
	noNS := sup
	noNS.UserNS = false
	launch := func(s sandbox.Support, argv ...string) func() error {
		return func() error { return runSandboxed(bin, work, policy, s, argv) }
	}
	truePath, err := exec.LookPath("true")
	if err != nil {
		return err
	}
	plain := func() error { return exec.Command(truePath).Run() }
	fns := []func() error{plain, launch(noNS, truePath), launch(sup, truePath)}
	if sup.PIDNS {
		l, err := startLauncher(bin, policy, sup)
		if err != nil {
			return err
		}
		defer stopLauncher(l)
		fns = append(fns, func() error { return runLaunched(l, work, truePath) })
	}
	samples := max(n/2, 50)
	times, err := interleave(samples, fns...)
	if err != nil {
		return err
	}
	base := pct(times[0], 50)
	over := func(i int) time.Duration { return pct(times[i], 50) - base }
	// The helper is the path only where the host has no PID namespace for
	// a launcher: its rows are informational since issue #15.
	report("sandbox launch, helper, no ns", fmt.Sprintf("p50 %v, overhead %v over a plain spawn (p50 %v)", pct(times[1], 50), over(1), base),
		"(none: the fallback; issue #4 asked ≤ 2.7 ms)", true)
	nsOverhead := over(2)
	report("sandbox launch, helper, ns", fmt.Sprintf("p50 %v, overhead %v (user, mount, IPC, net; read-only mounts; .git)", pct(times[2], 50), nsOverhead),
		"(none: the fallback; issue #4 asked ≤ 4.4 ms)", true)
	if sup.PIDNS {
		ratio := float64(over(3)) / float64(base)
		report("sandbox launch, launcher", fmt.Sprintf("p50 %v, overhead %v = %.2f× a plain spawn (a resident launcher in those namespaces and a PID namespace forks it: %.1f× faster than the helper)",
			pct(times[3], 50), over(3), ratio, float64(pct(times[2], 50))/float64(pct(times[3], 50))),
			"overhead ≤ 0.3× a plain spawn", ratio <= 0.3)
	}

	if err := sandboxedRoundTrip(bin, dir, n); err != nil {
		return err
	}

	const count = 200000 // dd makes two calls per block
	dd := []string{"dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=" + fmt.Sprint(count)}
	ddPath, err := exec.LookPath("dd")
	if err != nil {
		return err
	}
	dd[0] = ddPath
	times, err = interleave(7, func() error { return exec.Command(dd[0], dd[1:]...).Run() }, launch(sup, dd...))
	if err != nil {
		return err
	}
	plainDD, boxedDD := pct(times[0], 50), pct(times[1], 50)
	perCall := (boxedDD - plainDD - nsOverhead) / (2 * count)
	report("seccomp filter cost", fmt.Sprintf("dd of %d 1-byte blocks: %v sandboxed vs %v plain (%.2f×), about %v per system call",
		count, boxedDD.Round(time.Millisecond), plainDD.Round(time.Millisecond), float64(boxedDD)/float64(plainDD), perCall),
		"(no target)", true)
	return nil
}

// runSandboxed runs argv through the helper (execd's binary at bin) and
// waits for it.
func runSandboxed(bin, dir string, p sandbox.Policy, sup sandbox.Support, argv []string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, []string{"PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	l, err := sandbox.Wrap(cmd, p, sup)
	if err != nil {
		return err
	}
	cmd.Path = bin // execd itself is the helper, as in production
	err = cmd.Start()
	l.Started(err)
	if err != nil {
		return err
	}
	if err := l.Await(10 * time.Second); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	return cmd.Wait()
}

// startLauncher starts a resident launcher for p (execd's binary at bin).
func startLauncher(bin string, p sandbox.Policy, sup sandbox.Support) (*sandbox.Launcher, error) {
	l, err := sandbox.NewLauncher(p, sup)
	if err != nil {
		return nil, err
	}
	l.Cmd.Path = bin // execd itself is the launcher, as in production
	err = l.Cmd.Start()
	l.Started(err)
	if err != nil {
		return nil, err
	}
	if err := l.Ready(10 * time.Second); err != nil {
		_ = l.Cmd.Process.Kill()
		_ = l.Cmd.Wait()
		return nil, err
	}
	return l, nil
}

func stopLauncher(l *sandbox.Launcher) {
	l.Stop()
	_ = l.Cmd.Wait()
}

// runLaunched has l run program in dir and waits for it.
func runLaunched(l *sandbox.Launcher, dir, program string) error {
	cmd := exec.Command(program)
	cmd.Dir, cmd.Env = dir, []string{"PATH=/usr/bin:/bin"}
	proc, _, err := l.Launch(cmd, nil)
	if err != nil {
		return err
	}
	<-proc.Done()
	if st := proc.Status(); st != 0 {
		return fmt.Errorf("%s: wait status %d", program, st)
	}
	return nil
}

// interleave runs each function samples times, in turn, and returns the
// durations of each.
func interleave(samples int, fns ...func() error) ([][]time.Duration, error) {
	times := make([][]time.Duration, len(fns))
	for i := -3; i < samples; i++ { // three rounds of warm-up
		for j, f := range fns {
			t0 := time.Now()
			if err := f(); err != nil {
				return nil, err
			}
			if i >= 0 {
				times[j] = append(times[j], time.Since(t0))
			}
		}
	}
	return times, nil
}

// sandboxedRoundTrip compares shell ["true"] through a daemon in the
// default workspace-write sandbox with one in danger-full-access: one
// call at a time, interleaved, then 8 in flight.
func sandboxedRoundTrip(bin, dir string, n int) error {
	open, err := daemonWith(bin, dir, "open", "[sandbox]\nmode = \"danger-full-access\"\n")
	if err != nil {
		return err
	}
	defer open.stop()
	boxed, err := daemonWith(bin, dir, "boxed", "")
	if err != nil {
		return err
	}
	defer boxed.stop()
	args := map[string]any{"command": []string{"true"}}
	call := func(d *daemon) func() error {
		return func() error {
			_, err := d.tool("shell", args)
			return err
		}
	}
	times, err := interleave(max(n/2, 50), call(open), call(boxed))
	if err != nil {
		return err
	}
	ratio := float64(pct(times[1], 50)) / float64(pct(times[0], 50))
	report(`sandboxed shell ["true"]`, fmt.Sprintf("p50 %v p95 %v; unsandboxed p50 %v p95 %v; ratio of medians %.2f",
		pct(times[1], 50), pct(times[1], 95), pct(times[0], 50), pct(times[0], 95), ratio), "≤ 1.5× unsandboxed", ratio <= 1.5)

	// 8 in flight on each daemon in turn, twice, so drift hits both alike:
	// the launcher must not serialize launches.
	per := max(n/inFlightWorkers, 10)
	var rate [2]float64 // calls/s: unsandboxed, sandboxed
	var lat [2][]time.Duration
	for range 2 {
		for i, d := range []*daemon{open, boxed} {
			all, wall, err := parallel(per, call(d))
			if err != nil {
				return err
			}
			rate[i] += float64(len(all)) / wall.Seconds() / 2
			lat[i] = append(lat[i], all...)
		}
	}
	ratio = rate[1] / rate[0]
	report("8 in flight, sandboxed", fmt.Sprintf("%.0f calls/s (p50 %v p95 %v); unsandboxed %.0f calls/s (p50 %v p95 %v); ratio %.2f",
		rate[1], pct(lat[1], 50), pct(lat[1], 95), rate[0], pct(lat[0], 50), pct(lat[0], 95), ratio),
		"≥ 0.7× unsandboxed calls/s", ratio >= 0.7)
	return nil
}

// daemonWith starts execd with its own config and workspace.
func daemonWith(bin, dir, name, config string) (*daemon, error) {
	cfg, work, err := configured(dir, name, config)
	if err != nil {
		return nil, err
	}
	return start(bin, cfg, work)
}

// configured makes dir/name/ with config in config.toml and an empty
// workspace, work, for a daemon.
func configured(dir, name, config string) (cfg, work string, err error) {
	sub := filepath.Join(dir, name)
	work = filepath.Join(sub, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return "", "", err
	}
	cfg = filepath.Join(sub, "config.toml")
	return cfg, work, os.WriteFile(cfg, []byte(config), 0o644)
}
