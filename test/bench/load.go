package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// concurrency runs n one-shot `sleep 1` calls at once (exec.max_concurrent
// raised to n so that all of them run together) and reports execd's
// threads and descriptors at the peak.
func concurrency(bin, dir string, n int) error {
	cfg := filepath.Join(dir, "concurrency.toml")
	conf := fmt.Sprintf("[sandbox]\nmode = \"danger-full-access\"\n[exec]\nmax_concurrent = %d\n", n)
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		return err
	}
	d, err := start(bin, cfg, dir)
	if err != nil {
		return err
	}
	defer d.stop()
	pid := d.cmd.Process.Pid
	fds0, threads0 := fdCount(pid), status(pid, "Threads")
	stop := make(chan struct{})
	var peakFDs, peakThreads int64
	var fdsPerCmd float64 // at the sample with the most commands running
	peakRunning := 0
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			fds, running := fdCount(pid), children(pid)
			peakFDs = max(peakFDs, int64(fds))
			peakThreads = max(peakThreads, status(pid, "Threads"))
			if running > peakRunning {
				peakRunning = running
				fdsPerCmd = float64(fds-fds0) / float64(running)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	t0 := time.Now()
	for range n {
		wg.Go(func() {
			res, err := d.tool("shell", map[string]any{"command": []string{"sleep", "1"}, "timeout_ms": 60000})
			if err == nil && bytes.Contains(res, []byte(`"isError":true`)) {
				err = fmt.Errorf("sleep 1: %s", res)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	took := time.Since(t0)
	close(stop)
	sampler.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if failed == 0 {
			fmt.Println("   first failure:", err)
		}
		failed++
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d concurrent calls failed", failed, n)
	}
	report(fmt.Sprintf("%d concurrent sleep 1: threads", n), fmt.Sprintf("%d at the peak (%d idle); up to %d running at once; all done in %v",
		peakThreads, threads0, peakRunning, took.Round(time.Millisecond)), "≤ 24", peakThreads <= 24)
	// Per command as the issue counted them: the peak over the calls in
	// flight. Per running command is higher: commands still starting hold
	// their four pipe ends and os/exec's /dev/null for a moment.
	perCall := float64(peakFDs-int64(fds0)) / float64(n)
	report(fmt.Sprintf("%d concurrent sleep 1: descriptors", n), fmt.Sprintf("%.2f per command (%d at the peak, %d idle; %.2f per running command)",
		perCall, peakFDs, fds0, fdsPerCmd), "≤ 3 per command", perCall <= 3)
	return nil
}

// flood writes n pings and reads no reply until the writing stalls (or
// is done), then reads them all, and reports execd's peak RSS.
func flood(bin, cfg, dir string, n int) error {
	cmd := exec.Command(bin, "--config", cfg, "--cwd", dir)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+dir, "HOME="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var written atomic.Int64
	writeErr := make(chan error, 1)
	go func() {
		w := bufio.NewWriter(stdin)
		for i := range n {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i)
			written.Store(int64(i))
		}
		writeErr <- w.Flush()
	}()
	for last := int64(-1); ; { // until the writer stalls or is done
		time.Sleep(500 * time.Millisecond)
		now := written.Load()
		if now == last || now == int64(n-1) {
			break
		}
		last = now
	}
	stalled := written.Load()
	sc := bufio.NewScanner(stdout)
	got := 0
	for got < n && sc.Scan() {
		if bytes.Contains(sc.Bytes(), []byte(`"result":{}`)) {
			got++
		}
	}
	if err := <-writeErr; err != nil {
		return err
	}
	hwm := status(cmd.Process.Pid, "VmHWM")
	_ = stdin.Close()
	report(fmt.Sprintf("RSS under a %d-ping flood", n), fmt.Sprintf("%.1f MiB peak; %d answered; the writer stalled after %d unread", float64(hwm)/1024, got, stalled),
		"< 64 MiB, all answered", hwm < 64<<10 && got == n)
	return nil
}

// children counts the processes whose parent is pid.
func children(pid int) int {
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
		if len(f) > 1 && string(f[1]) == strconv.Itoa(pid) {
			n++
		}
	}
	return n
}

func fdCount(pid int) int {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}
