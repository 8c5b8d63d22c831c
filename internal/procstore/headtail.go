package procstore

import (
	"sync"
	"unicode/utf8"
)

// HeadTail keeps the first and the last bytes written to it within a
// budget: the head half is filled first, then the tail half holds the
// most recent bytes and the ones in between are dropped (counted as
// omitted). Drain hands out what is kept and starts over. Memory grows
// with what is written, up to the budget.
type HeadTail struct {
	mu      sync.Mutex
	headCap int
	tailCap int
	head    []byte // guarded by mu
	tail    []byte // guarded by mu: a ring once full
	tailPos int    // guarded by mu: next write position in a full tail ring
	omitted int64  // guarded by mu
	total   int64  // guarded by mu: bytes written since the last Drain
	carry   []byte // guarded by mu: an incomplete UTF-8 sequence held for the next Drain
}

// NewHeadTail returns a buffer keeping budget bytes: ⌊budget/2⌋ of head
// and the rest of tail.
func NewHeadTail(budget int) *HeadTail {
	budget = max(budget, 0)
	return &HeadTail{headCap: budget / 2, tailCap: budget - budget/2}
}

// Write keeps b's bytes within the budget. It never fails.
func (h *HeadTail) Write(b []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.write(b)
	return len(b), nil
}

func (h *HeadTail) write(b []byte) {
	h.total += int64(len(b))
	if room := h.headCap - len(h.head); room > 0 {
		n := min(room, len(b))
		h.head = append(grow(h.head, n, h.headCap), b[:n]...)
		b = b[n:]
	}
	if len(b) == 0 {
		return
	}
	if h.tailCap == 0 {
		h.omitted += int64(len(b))
		return
	}
	if len(b) >= h.tailCap { // b alone fills the tail
		h.omitted += int64(len(h.tail)) + int64(len(b)-h.tailCap)
		h.tail = append(grow(h.tail[:0], h.tailCap, h.tailCap), b[len(b)-h.tailCap:]...)
		h.tailPos = 0
		return
	}
	if room := h.tailCap - len(h.tail); room > 0 { // still growing
		n := min(room, len(b))
		h.tail = append(grow(h.tail, n, h.tailCap), b[:n]...)
		b = b[n:]
	}
	for len(b) > 0 { // full: overwrite the oldest bytes
		n := copy(h.tail[h.tailPos:], b)
		h.omitted += int64(n)
		h.tailPos = (h.tailPos + n) % h.tailCap
		b = b[n:]
	}
}

// Drain returns the bytes kept since the last Drain, head then tail, how
// many were dropped between them, and where in data that was (gapAt), and
// empties the buffer. Unless final is set, an incomplete UTF-8 sequence at
// the very end is held back for the next Drain, so a character split
// across reads is not broken.
func (h *HeadTail) Drain(final bool) (data []byte, gapAt int, omitted int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	data = make([]byte, 0, len(h.carry)+len(h.head)+len(h.tail))
	data = append(data, h.carry...)
	data = append(data, h.head...)
	omitted = h.omitted
	if omitted > 0 { // a character cut by the gap goes with the dropped bytes
		cut := incompleteSuffix(data)
		data, omitted = data[:len(data)-cut], omitted+int64(cut)
	}
	gapAt = len(data)
	tailStart := len(data)
	data = append(data, h.tail[h.tailPos:]...)
	data = append(data, h.tail[:h.tailPos]...)
	if omitted > 0 {
		skip := 0
		for skip < utf8.UTFMax-1 && tailStart+skip < len(data) && !utf8.RuneStart(data[tailStart+skip]) {
			skip++
		}
		data = append(data[:tailStart], data[tailStart+skip:]...)
		omitted += int64(skip)
	}
	h.carry, h.head, h.tail, h.tailPos, h.omitted, h.total = nil, h.head[:0], h.tail[:0], 0, 0, 0
	if !final {
		if cut := incompleteSuffix(data); cut > 0 {
			h.carry = append([]byte(nil), data[len(data)-cut:]...)
			data = data[:len(data)-cut]
		}
	}
	return data, min(gapAt, len(data)), omitted
}

// Buffered reports the bytes written since the last Drain.
func (h *HeadTail) Buffered() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total + int64(len(h.carry))
}

// grow makes room for n more bytes in b, doubling its capacity but never
// beyond limit (append's own growth would overshoot the budget).
func grow(b []byte, n, limit int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := make([]byte, len(b), min(limit, max(2*cap(b), len(b)+n, 512)))
	copy(nb, b)
	return nb
}

// incompleteSuffix returns the length of an incomplete UTF-8 sequence at
// the end of b (0 if there is none).
func incompleteSuffix(b []byte) int {
	for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < utf8.RuneSelf {
			return 0
		}
		if utf8.RuneStart(c) {
			if utf8.FullRune(b[len(b)-i:]) {
				return 0
			}
			return i
		}
	}
	return 0
}
