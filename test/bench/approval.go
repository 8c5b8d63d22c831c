package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// approvalLatency measures what an approval adds to a call: shell
// ["true"] through a daemon whose rule says prompt and whose client
// accepts each elicitation/create at once, against the same call through
// a daemon without rules, interleaved. codex-shell-tool-mcp adds about
// 2.4 ms here.
func approvalLatency(bin, dir string, n int) error {
	plain, err := daemonWith(bin, dir, "unasked", "[sandbox]\nmode = \"danger-full-access\"\n")
	if err != nil {
		return err
	}
	defer plain.stop()
	rules := filepath.Join(dir, "prompt.rules")
	if err := os.WriteFile(rules, []byte(`prefix_rule(pattern=["true"], decision="prompt")`), 0o644); err != nil {
		return err
	}
	cfg, work, err := configured(dir, "asked", fmt.Sprintf("[sandbox]\nmode = \"danger-full-access\"\n[rules]\nfiles = [%q]\n", rules))
	if err != nil {
		return err
	}
	var asked atomic.Int64
	asking, err := startWith(bin, cfg, work, map[string]any{"elicitation": map[string]any{}},
		func(method string) any {
			if method != "elicitation/create" {
				return map[string]any{}
			}
			asked.Add(1)
			return map[string]any{"action": "accept", "content": map[string]any{"decision": "allow_once"}}
		})
	if err != nil {
		return err
	}
	defer asking.stop()
	args := map[string]any{"command": []string{"true"}}
	call := func(d *daemon) func() error {
		return func() error {
			res, err := d.tool("shell", args)
			var r struct {
				IsError bool `json:"isError"`
			}
			if err == nil && (json.Unmarshal(res, &r) != nil || r.IsError) {
				err = fmt.Errorf("shell true: %s", res)
			}
			return err
		}
	}
	times, err := interleave(max(n/2, 50), call(plain), call(asking))
	if err != nil {
		return err
	}
	if want := int64(max(n/2, 50) + 3); asked.Load() != want { // with three rounds of warm-up
		return fmt.Errorf("the client was asked %d times, want %d", asked.Load(), want)
	}
	added := pct(times[1], 50) - pct(times[0], 50)
	report("auto-answered approval", fmt.Sprintf("p50 %v p95 %v; without a rule p50 %v; added p50 %v",
		pct(times[1], 50), pct(times[1], 95), pct(times[0], 50), added), "< 2.4 ms added (codex-shell-tool-mcp)",
		added < 2400*time.Microsecond)
	return nil
}
