package main

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// gate is a writer that blocks until opened, like a pipe nobody reads.
type gate struct {
	open chan struct{}
	mu   sync.Mutex
	buf  bytes.Buffer
}

func (g *gate) Write(p []byte) (int, error) {
	<-g.open
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.Write(p)
}

func (g *gate) String() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.String()
}

// Writes to a drainer never wait on its writer; what the queue cannot
// hold is dropped and counted in a line of its own once the writer
// drains again, and Sync waits for the rest.
func TestDrainerDropsAndCounts(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	d := newDrainer(g, enc, 4)
	var _ io.Writer = d
	for i := range 20 { // the queue holds four (the loop may hold one more): the rest is dropped
		if n, err := d.Write([]byte("line\n")); n != 5 || err != nil {
			t.Fatalf("write %d: %d, %v", i, n, err)
		}
	}
	close(g.open)
	_ = d.Sync() // the queue drains
	if _, err := d.Write([]byte("after\n")); err != nil {
		t.Fatal(err)
	}
	_ = d.Sync()
	out := g.String()
	if !strings.Contains(out, "log lines dropped: stderr was not draining") || !strings.HasSuffix(out, "after\n") {
		t.Errorf("drained: %q; want the count of dropped lines and the last line", out)
	}
	if got := strings.Count(out, "line\n"); got < 4 || got > 5 {
		t.Errorf("%d lines written; want the queued ones (4 or 5)", got)
	}
}
