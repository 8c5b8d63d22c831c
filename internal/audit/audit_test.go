package audit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestRecordAppendsWholeLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, []byte(`{"kept":true}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Two logs on one file, as two execd processes would have.
	a, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 64<<10) // longer than a pipe buffer: still one write
	var wg sync.WaitGroup
	for i := range 50 {
		l := a
		if i%2 == 1 {
			l = b
		}
		wg.Go(func() {
			code := i
			l.Record(Entry{Kind: KindExec, CallID: "c", Command: []string{"echo", long}, ExitCode: &code})
		})
	}
	wg.Wait()
	_ = a.Close()
	_ = b.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 51 || lines[0] != `{"kept":true}` {
		t.Fatalf("%d lines, first %.40q; want the old line kept and 50 more", len(lines), lines[0])
	}
	for _, line := range lines[1:] {
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("a torn line (%v): %.80q", err, line)
		}
		if e["ts"] == nil || e["kind"] != "exec" || e["decision"] != nil {
			t.Fatalf("entry %.200v", e)
		}
	}
}

func TestOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.jsonl")
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("created %v, %v; want mode 0600", fi.Mode(), err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing", "a.jsonl"), nil); err == nil {
		t.Fatal("opening in a missing directory succeeded")
	}
	var none *Log
	none.Record(Entry{Kind: KindDecision}) // a nil Log records nothing
	if err := none.Close(); err != nil {
		t.Fatal(err)
	}
}
