package procstore

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func push(h *HeadTail, parts ...string) {
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
	}
}

// COMPAT-CASES §17.4 (budget 10: head 5, tail 5).
func TestHeadTailCompat(t *testing.T) {
	tests := []struct {
		budget  int
		parts   []string
		want    string
		omitted int64
	}{
		{10, []string{"01", "234", "567", "89"}, "0123456789", 0},
		{10, []string{"01", "234", "567", "89", "a"}, "012346789a", 1},
		{10, []string{"0123456789", "ABCDEFGHIJK"}, "01234GHIJK", 11},
		{1, []string{"abc"}, "c", 2},
		{0, []string{"abc"}, "", 3},
		{10, []string{"0123456789ABCDEFGHIJK"}, "01234GHIJK", 11},
		{10, []string{"0123456", "7", "8", "9", "ABC"}, "0123489ABC", 3},
		{10, []string{}, "", 0},
	}
	for _, tt := range tests {
		h := NewHeadTail(tt.budget)
		push(h, tt.parts...)
		got, _, omitted := h.Drain(true)
		if string(got) != tt.want || omitted != tt.omitted {
			t.Errorf("budget %d, push %q: got %q omitted %d; want %q omitted %d", tt.budget, tt.parts, got, omitted, tt.want, tt.omitted)
		}
		if again, _, o := h.Drain(true); len(again) != 0 || o != 0 {
			t.Errorf("second Drain = %q %d, want empty", again, o)
		}
	}
}

func TestHeadTailKeepsSplitCharactersForTheNextDrain(t *testing.T) {
	h := NewHeadTail(100)
	push(h, "caf\xc3") // é is c3 a9
	if got, _, _ := h.Drain(false); string(got) != "caf" {
		t.Fatalf("first drain %q", got)
	}
	push(h, "\xa9!")
	if got, _, _ := h.Drain(false); string(got) != "é!" {
		t.Fatalf("second drain %q", got)
	}
	push(h, "x\xe2\x82")
	if got, _, _ := h.Drain(true); string(got) != "x\xe2\x82" {
		t.Fatalf("final drain must flush: %q", got)
	}
	if h.Buffered() != 0 {
		t.Fatal("not empty after the final drain")
	}
}

// A character split by the gap between head and tail is dropped with the
// bytes in the gap, not shown as a broken sequence (SPEC §5.1).
func TestHeadTailDropsCharactersCutByTheGap(t *testing.T) {
	h := NewHeadTail(10)             // head 5, tail 5
	push(h, strings.Repeat("€", 10)) // 30 bytes, € is 3
	got, gapAt, omitted := h.Drain(true)
	if !utf8.Valid(got) || string(got) != "€€" || gapAt != 3 || omitted != 24 {
		t.Fatalf("got %q gap at %d omitted %d", got, gapAt, omitted)
	}
}

func TestHeadTailBoundedMemory(t *testing.T) {
	h := NewHeadTail(1 << 20)
	chunk := []byte(strings.Repeat("x", 4096))
	for range 10000 { // 40 MB
		_, _ = h.Write(chunk)
	}
	if h.Buffered() != 40960000 {
		t.Fatalf("Buffered = %d", h.Buffered())
	}
	got, gapAt, omitted := h.Drain(true)
	if gapAt != 1<<19 {
		t.Fatalf("gap at %d, want after the 512 KiB head", gapAt)
	}
	if len(got) != 1<<20 || omitted != 40960000-(1<<20) || cap(h.head) > 1<<19 || cap(h.tail) > 1<<19 {
		t.Fatalf("kept %d omitted %d caps %d %d", len(got), omitted, cap(h.head), cap(h.tail))
	}
}

func FuzzHeadTail(f *testing.F) {
	f.Add(10, []byte("0123456789abcdef"), 3)
	f.Fuzz(func(t *testing.T, budget int, data []byte, split int) {
		budget %= 64
		if budget < 0 {
			budget = -budget
		}
		h := NewHeadTail(budget)
		if split <= 0 {
			split = 1
		}
		for i := 0; i < len(data); i += split {
			_, _ = h.Write(data[i:min(len(data), i+split)])
		}
		got, gapAt, omitted := h.Drain(true)
		if int64(len(got))+omitted != int64(len(data)) {
			t.Fatalf("kept %d + omitted %d != written %d", len(got), omitted, len(data))
		}
		if omitted == 0 {
			if string(got) != string(data) {
				t.Fatalf("nothing omitted but %q != %q", got, data)
			}
			return
		}
		// The head is a prefix and the tail a suffix of what was written;
		// the gap moves back by at most a cut character.
		if gapAt > budget/2 || gapAt < budget/2-(utf8.UTFMax-1) {
			t.Fatalf("gap at %d with a head of %d", gapAt, budget/2)
		}
		if string(got[:gapAt]) != string(data[:gapAt]) {
			t.Fatalf("head %q, want %q", got[:gapAt], data[:gapAt])
		}
		tail := got[gapAt:]
		if string(tail) != string(data[len(data)-len(tail):]) {
			t.Fatalf("tail %q, want a suffix of %q", tail, data)
		}
	})
}
