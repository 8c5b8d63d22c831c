package procfs

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		line string
		want Stat
		ok   bool
	}{
		{"42 (bash) S 1 42 42 34816 42 4194560 ...", Stat{'S', 1, 42, 42, 0}, true},
		{"7 (a b) (c)) Z 6 5 4 0", Stat{'Z', 6, 5, 4, 0}, true},
		{"25171 (cat) R 25162 25162 3795 0 -1 4194304 101 0 0 0 0 0 0 0 20 0 1 0 7893979 3133440 389", Stat{'R', 25162, 25162, 3795, 1}, true},
		{"9 (node) S 1 9 9 0 -1 4194304 101 0 0 0 0 0 0 0 20 0 11 0 7893979", Stat{'S', 1, 9, 9, 11}, true},
		{"9 (x) S 1 9 9 0 -1 4194304 101 0 0 0 0 0 0 0 20 0 many 0", Stat{}, false},
		{"7 no name here", Stat{}, false},
		{"7 (x) S 1 2", Stat{}, false},
		{"7 (x) S one 2 3", Stat{}, false},
	}
	for _, tt := range tests {
		got, err := parseStat([]byte(tt.line))
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("parseStat(%q) = %+v, %v; want %+v (ok %v)", tt.line, got, err, tt.want, tt.ok)
		}
	}
}

func TestSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("no /proc")
	}
	s, err := ReadStat(os.Getpid())
	if err != nil || s.PPID != os.Getppid() || s.Zombie() || s.Threads < 1 {
		t.Fatalf("own stat %+v, %v", s, err)
	}
	found := false
	if err := Each(func(pid int, _ Stat) { found = found || pid == os.Getpid() }); err != nil || !found {
		t.Fatalf("Each did not see this process: %v", err)
	}
}

func TestReadCharsAdvances(t *testing.T) {
	before, err := ReadChars(os.Getpid())
	if err != nil {
		t.Skipf("no /proc/self/io here: %v", err)
	}
	if _, err := os.ReadFile("/proc/self/stat"); err != nil {
		t.Fatal(err)
	}
	after, err := ReadChars(os.Getpid())
	if err != nil || after <= before {
		t.Fatalf("rchar went from %d to %d (%v) across a read", before, after, err)
	}
	if _, err := parseRChar([]byte("wchar: 3\n")); err == nil {
		t.Fatal("a file without rchar parsed")
	}
}

func TestReadFile(t *testing.T) {
	// Longer than the first buffer, so that it has to grow.
	want := bytes.Repeat([]byte("0123456789abcdef"), 300)
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, want, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadFile(path); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("ReadFile = %d bytes, %v; want %d bytes", len(got), err, len(want))
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadFile of a missing file: %v; want fs.ErrNotExist", err)
	}
}
