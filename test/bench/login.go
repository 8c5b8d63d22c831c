package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// loginBench measures exec_command "true" as a login shell (the default)
// whose profile costs 0.2 s (`sleep 0.2`, as pyenv or nvm set-up costs)
// against the same call with login: false, interleaved on one daemon, in
// the default sandbox and without one (issue 15: the login call p50 ≤
// 1.2× the other, which shell snapshots make possible). A few calls on a
// daemon with shell.snapshot = false show what the profile costs each
// call without them.
func loginBench(bin, dir string, n int) error {
	for _, mode := range []string{"workspace-write", "danger-full-access"} {
		cfg, work, err := configured(dir, "login-"+mode, fmt.Sprintf("[sandbox]\nmode = %q\n", mode))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(work, ".bash_profile"), []byte("sleep 0.2\n"), 0o644); err != nil {
			return err
		}
		d, err := start(bin, cfg, work) // HOME is work: the profile is this one
		if err != nil {
			return err
		}
		call := func(login bool) func() error {
			return func() error {
				_, err := d.tool("exec_command", map[string]any{"cmd": "true", "shell": "bash", "login": login, "yield_time_ms": 10000})
				return err
			}
		}
		times, err := interleave(max(n/4, 50), call(true), call(false))
		d.stop()
		if err != nil {
			return err
		}
		off := cfg + ".off"
		if err := os.WriteFile(off, []byte(fmt.Sprintf("[sandbox]\nmode = %q\n[shell]\nsnapshot = false\n", mode)), 0o644); err != nil {
			return err
		}
		d, err = start(bin, off, work)
		if err != nil {
			return err
		}
		without, err := interleave(10, call(true))
		d.stop()
		if err != nil {
			return err
		}
		ratio := float64(pct(times[0], 50)) / float64(pct(times[1], 50))
		report(`exec_command "true" login, `+mode, fmt.Sprintf("p50 %v p95 %v with a profile of sleep 0.2; login: false p50 %v; ratio %.2f; without snapshots p50 %v",
			pct(times[0], 50), pct(times[0], 95), pct(times[1], 50), ratio, pct(without[0], 50)), "≤ 1.2× login: false", ratio <= 1.2)
	}
	return nil
}
