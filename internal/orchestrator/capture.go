package orchestrator

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// CaptureLimit is how much of each stream a one-shot command keeps (SPEC
// §5.1); the rest is read and discarded so the command never blocks.
const CaptureLimit = 1 << 20

// pumpBufferBytes is the read size of an output pump: a pipe holds 64 KiB.
const pumpBufferBytes = 64 << 10

// pumpBuffers recycles read buffers: every command needs two, and making
// them garbage per call would let the heap, and so the idle RSS, float up.
var pumpBuffers = sync.Pool{New: func() any { return new([pumpBufferBytes]byte) }}

// Stream names an output stream of a command.
type Stream int

// The streams.
const (
	Stdout Stream = iota + 1
	Stderr
)

func (s Stream) String() string {
	if s == Stderr {
		return "stderr"
	}
	return "stdout"
}

// OutputFunc observes output as it is read, for progress and live
// printing. It is called from the stream's reader goroutine, concurrently
// for the two streams of a command, and must not retain chunk.
type OutputFunc func(s Stream, chunk []byte)

// Capture is what was kept of one stream.
type Capture struct {
	// Data is the first bytes of the stream, at most the limit, cut on a
	// UTF-8 boundary when the stream was longer.
	Data []byte
	// Total is the number of bytes the command wrote to the stream.
	Total int64
}

// Dropped reports whether part of the stream was discarded.
func (c *Capture) Dropped() bool { return c.Total > int64(len(c.Data)) }

// capture accumulates one stream up to limit bytes. It is written by one
// pump goroutine and read only after that goroutine has finished.
type capture struct {
	Capture
	limit int
}

func (c *capture) add(b []byte) {
	c.Total += int64(len(b))
	if room := c.limit - len(c.Data); room > 0 {
		if len(b) > room {
			b = b[:room]
		}
		c.Data = append(c.Data, b...)
	}
}

// result returns the capture, with an incomplete UTF-8 sequence at the cut
// removed, so the cut does not read as invalid output.
func (c *capture) result() Capture {
	out := c.Capture
	if out.Dropped() {
		out.Data = trimIncompleteRune(out.Data)
	}
	return out
}

// trimIncompleteRune drops a trailing incomplete UTF-8 sequence.
func trimIncompleteRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax-1 && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < utf8.RuneSelf { // ASCII: complete
			return b
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}

// pump reads r into c until EOF or an error, showing every chunk to
// observe. It reports true when it stopped because detached was set and
// the read deadline hit: the file is then still open for reading.
func (c *capture) pump(r *os.File, s Stream, observe OutputFunc, detached *atomic.Bool) (more bool) {
	arr := pumpBuffers.Get().(*[pumpBufferBytes]byte)
	defer pumpBuffers.Put(arr)
	buf := arr[:]
	for {
		n, err := r.Read(buf)
		if n > 0 {
			c.add(buf[:n])
			if observe != nil {
				observe(s, buf[:n])
			}
		}
		if err != nil {
			return errors.Is(err, os.ErrDeadlineExceeded) && detached.Load()
		}
	}
}
