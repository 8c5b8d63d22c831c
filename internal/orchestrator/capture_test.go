package orchestrator

import (
	"bytes"
	"testing"
)

func TestCaptureKeepsTheHeadAndCountsAll(t *testing.T) {
	c := &capture{limit: 10}
	for _, chunk := range []string{"0123", "4567", "89AB", "CDEF"} {
		c.add([]byte(chunk))
	}
	got := c.result()
	if string(got.Data) != "0123456789" || got.Total != 16 || !got.Dropped() {
		t.Fatalf("capture = %q total %d dropped %v", got.Data, got.Total, got.Dropped())
	}
	small := &capture{limit: 10}
	small.add([]byte("abc"))
	if r := small.result(); string(r.Data) != "abc" || r.Dropped() {
		t.Fatalf("small capture = %q dropped %v", r.Data, r.Dropped())
	}
}

func TestCaptureCutsOnRuneBoundary(t *testing.T) {
	euro := "€" // 3 bytes
	tests := []struct {
		in    string
		limit int
		want  string
	}{
		{"ab" + euro, 3, "ab"}, // cut after 1 byte of €
		{"ab" + euro, 4, "ab"}, // cut after 2 bytes of €
		{"ab" + euro + "x", 5, "ab" + euro},
		{"😀😀", 7, "😀"},               // 4-byte rune cut after 3
		{"abc\xffdef", 4, "abc\xff"}, // invalid input stays: it is replaced later, not hidden
	}
	for _, tt := range tests {
		c := &capture{limit: tt.limit}
		c.add([]byte(tt.in))
		if got := c.result().Data; !bytes.Equal(got, []byte(tt.want)) {
			t.Errorf("capture(%q, %d) = %q, want %q", tt.in, tt.limit, got, tt.want)
		}
	}
}
