package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/execd/execd/internal/patch"
)

// Patch benchmark sizes (issue #6): a 2,000-line patch of 200 chunks on
// a 100,000-line file.
const (
	patchFileLines = 100000
	patchChunks    = 200
	patchRounds    = 25 // forward and back per method
)

// patchBench applies the patch through the apply_patch tool of a
// workspace-write daemon and in process (patch.Apply), against `git
// apply` of the same change as a unified diff (a process of its own, as
// the tool is a round trip of its own), interleaved: each round applies
// the change and its reverse with every method.
func patchBench(bin, dir string) error {
	cfg, work, err := configured(dir, "patch", "[sandbox]\nmode = \"workspace-write\"\nfail_closed = false\n")
	if err != nil {
		return err
	}
	d, err := start(bin, cfg, work)
	if err != nil {
		return err
	}
	defer d.stop()
	target := filepath.Join(work, "big.txt")
	orig, changed, fwd, back, diffFwd := patchInputs()
	if err := os.WriteFile(target, []byte(orig), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(work, "fwd.diff"), []byte(diffFwd), 0o644); err != nil {
		return err
	}
	tool := func(text string) error {
		res, err := d.tool("apply_patch", map[string]any{"input": text})
		var r struct {
			IsError bool `json:"isError"`
		}
		if err == nil && (json.Unmarshal(res, &r) != nil || r.IsError) {
			err = fmt.Errorf("apply_patch: %.300s", res)
		}
		return err
	}
	inProcess := func(text string) error { _, err := patch.Apply(context.Background(), text, work); return err }
	git := func(args ...string) error {
		cmd := exec.Command("git", append([]string{"apply"}, args...)...)
		cmd.Dir = work
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git apply %v: %v: %s", args, err, out)
		}
		return nil
	}
	var viaTool, viaLib, viaGit []time.Duration
	timed := func(samples *[]time.Duration, f func() error) error {
		start := time.Now()
		err := f()
		*samples = append(*samples, time.Since(start))
		return err
	}
	for i := range patchRounds {
		steps := []struct {
			samples *[]time.Duration
			fwd     func() error
			back    func() error
		}{
			{&viaTool, func() error { return tool(fwd) }, func() error { return tool(back) }},
			{&viaLib, func() error { return inProcess(fwd) }, func() error { return inProcess(back) }},
			{&viaGit, func() error { return git("fwd.diff") }, func() error { return git("-R", "fwd.diff") }},
		}
		for _, s := range steps {
			if err := timed(s.samples, s.fwd); err != nil {
				return err
			}
			if i == 0 {
				if b, _ := os.ReadFile(target); string(b) != changed {
					return fmt.Errorf("the patched file is not what the patch says")
				}
			}
			if err := timed(s.samples, s.back); err != nil {
				return err
			}
		}
	}
	if b, _ := os.ReadFile(target); string(b) != orig {
		return fmt.Errorf("forward and back did not restore the file")
	}
	p50 := pct(viaTool, 50)
	report("apply_patch, 200 chunks/100k lines", fmt.Sprintf("p50 %v p95 %v; in process p50 %v; git apply p50 %v; ratio of medians to git %.2f",
		p50, pct(viaTool, 95), pct(viaLib, 50), pct(viaGit, 50), float64(p50)/float64(pct(viaGit, 50))),
		"report (issue #6)", true)
	return smallPatch(d, work, tool, git)
}

// smallPatch times the common case, a one-line change of a small file,
// through the tool (in the sandbox: the applier's launch is most of it)
// against git apply of the same change, interleaved.
func smallPatch(d *daemon, work string, tool func(string) error, git func(...string) error) error {
	if err := os.WriteFile(filepath.Join(work, "small.txt"), []byte("a\nb\nc\n"), 0o644); err != nil {
		return err
	}
	diff := "--- a/small.txt\n+++ b/small.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
	if err := os.WriteFile(filepath.Join(work, "small.diff"), []byte(diff), 0o644); err != nil {
		return err
	}
	fwd := "*** Begin Patch\n*** Update File: small.txt\n@@\n a\n-b\n+B\n c\n*** End Patch"
	back := "*** Begin Patch\n*** Update File: small.txt\n@@\n a\n-B\n+b\n c\n*** End Patch"
	var viaTool, viaGit []time.Duration
	for range 2 * patchRounds {
		for _, s := range []struct {
			samples   *[]time.Duration
			fwd, back func() error
		}{
			{&viaTool, func() error { return tool(fwd) }, func() error { return tool(back) }},
			{&viaGit, func() error { return git("small.diff") }, func() error { return git("-R", "small.diff") }},
		} {
			for _, f := range []func() error{s.fwd, s.back} {
				start := time.Now()
				if err := f(); err != nil {
					return err
				}
				*s.samples = append(*s.samples, time.Since(start))
			}
		}
	}
	report("apply_patch, one line", fmt.Sprintf("p50 %v p95 %v; git apply p50 %v; ratio of medians %.2f",
		pct(viaTool, 50), pct(viaTool, 95), pct(viaGit, 50), float64(pct(viaTool, 50))/float64(pct(viaGit, 50))),
		"report (issue #12: written in the sandbox)", true)
	return nil
}

// patchInputs builds the file, the file as the patch leaves it, the
// patch and its reverse (each chunk "@@", 3 lines of context, 2 removed,
// 2 added, 2 of context: 10 lines), and the forward change as a unified
// diff.
func patchInputs() (orig, changed, fwd, back, diff string) {
	lines := make([]string, patchFileLines)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %06d: the quick brown fox jumps over the lazy dog", i)
	}
	newLines := append([]string(nil), lines...)
	var f, b, u strings.Builder
	f.WriteString("*** Begin Patch\n*** Update File: big.txt\n")
	b.WriteString("*** Begin Patch\n*** Update File: big.txt\n")
	u.WriteString("--- a/big.txt\n+++ b/big.txt\n")
	step := patchFileLines / patchChunks
	for c := range patchChunks {
		at := c*step + step/2 // first context line
		ctx := func(w *strings.Builder, from, to int, mark string) {
			for i := from; i < to; i++ {
				w.WriteString(mark + lines[i] + "\n")
			}
		}
		added := []string{fmt.Sprintf("changed %d: first", c), fmt.Sprintf("changed %d: second", c)}
		newLines[at+3], newLines[at+4] = added[0], added[1]
		for _, w := range []*strings.Builder{&f, &b} {
			w.WriteString("@@\n")
			ctx(w, at, at+3, " ")
			rem, add := lines[at+3:at+5], added
			if w == &b {
				rem, add = added, lines[at+3:at+5]
			}
			for _, l := range rem {
				w.WriteString("-" + l + "\n")
			}
			for _, l := range add {
				w.WriteString("+" + l + "\n")
			}
			ctx(w, at+5, at+7, " ")
		}
		fmt.Fprintf(&u, "@@ -%d,7 +%d,7 @@\n", at+1, at+1)
		ctx(&u, at, at+3, " ")
		u.WriteString("-" + lines[at+3] + "\n-" + lines[at+4] + "\n+" + added[0] + "\n+" + added[1] + "\n")
		ctx(&u, at+5, at+7, " ")
	}
	f.WriteString("*** End Patch\n")
	b.WriteString("*** End Patch\n")
	return strings.Join(lines, "\n") + "\n", strings.Join(newLines, "\n") + "\n", f.String(), b.String(), u.String()
}
