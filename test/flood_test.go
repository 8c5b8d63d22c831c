package test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A client that writes requests much faster than it reads the replies:
// execd stops reading at rpc.max_in_flight instead of growing, and still
// answers every request (SPEC §3.1).
func TestPingFloodIsBounded(t *testing.T) {
	const n = 100_000
	cmd, _ := execdCmd(t, "[rpc]\nmax_in_flight = 64\n")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	written := make(chan int, 1)
	progress := make(chan int, 1) // the number of lines written so far
	go func() {
		w := bufio.NewWriterSize(stdin, 4096)
		for i := range n {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i)
			if i%512 == 0 {
				if w.Flush() != nil {
					break
				}
				select {
				case progress <- i:
				default:
					<-progress
					progress <- i
				}
			}
		}
		_ = w.Flush()
		written <- n
	}()

	// Nobody reads stdout: once the pipes fill, the writer must stall well
	// short of n, because execd stops reading at the limit.
	last, still := -1, 0
	for still < 5 {
		select {
		case <-written:
			t.Fatalf("all %d requests were read while no reply was: execd reads without bound", n)
		case <-time.After(200 * time.Millisecond):
		}
		cur := last
		select {
		case cur = <-progress:
		default:
		}
		if cur == last {
			still++
		} else {
			last, still = cur, 0
		}
	}
	t.Logf("writer stalled after about %d requests", last)

	seen := make([]bool, n)
	sc := bufio.NewScanner(stdout)
	for got := 0; got < n; got++ {
		if !sc.Scan() {
			t.Fatalf("stdout ended after %d replies: %v", got, sc.Err())
		}
		var m message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.Error != nil || string(m.Result) != "{}" {
			t.Fatalf("reply %d: %s", got, sc.Bytes())
		}
		id, err := strconv.Atoi(string(m.ID))
		if err != nil || id < 0 || id >= n || seen[id] {
			t.Fatalf("reply with id %s: unknown or repeated", m.ID)
		}
		seen[id] = true
	}
	<-written
	hwm := procStatus(t, cmd.Process.Pid, "VmHWM")
	t.Logf("execd's peak RSS: %d KiB", hwm)
	if !raceEnabled && hwm > 64<<10 {
		t.Errorf("execd's peak RSS was %d KiB under the flood, over 64 MiB", hwm)
	}
	_ = stdin.Close()
}

// procStatus reads a numeric field of /proc/PID/status (kB for sizes).
func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return kb
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
