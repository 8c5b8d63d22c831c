package procfs

import (
	"os"
	"runtime"
	"testing"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		line string
		want Stat
		ok   bool
	}{
		{"42 (bash) S 1 42 42 34816 42 4194560 ...", Stat{'S', 1, 42, 42}, true},
		{"7 (a b) (c)) Z 6 5 4 0", Stat{'Z', 6, 5, 4}, true},
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
	if err != nil || s.PPID != os.Getppid() || s.Zombie() {
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
