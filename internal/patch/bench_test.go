package patch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkApplyLargePatch applies 200 one-line changes with context
// (2,000 patch lines) to a 100,000-line file and back.
func BenchmarkApplyLargePatch(b *testing.B) {
	root := b.TempDir()
	lines := make([]string, 100000)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %06d: the quick brown fox jumps over the lazy dog", i)
	}
	if err := os.WriteFile(filepath.Join(root, "big.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	var fwd, back strings.Builder
	fwd.WriteString("*** Begin Patch\n*** Update File: big.txt\n")
	back.WriteString("*** Begin Patch\n*** Update File: big.txt\n")
	for c := range 200 {
		at := c*500 + 250
		for _, w := range []*strings.Builder{&fwd, &back} {
			w.WriteString("@@\n")
			for _, l := range lines[at : at+3] {
				w.WriteString(" " + l + "\n")
			}
		}
		fmt.Fprintf(&fwd, "-%s\n+changed %d\n", lines[at+3], c)
		fmt.Fprintf(&back, "-changed %d\n+%s\n", c, lines[at+3])
	}
	fwd.WriteString("*** End Patch\n")
	back.WriteString("*** End Patch\n")
	b.ResetTimer()
	for b.Loop() {
		for _, p := range []string{fwd.String(), back.String()} {
			if _, err := Apply(context.Background(), p, root); err != nil {
				b.Fatal(err)
			}
		}
	}
}
