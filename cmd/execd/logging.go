package main

import (
	"io"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newLogger builds the one logger: JSON or console lines on stderr (SPEC
// §11), through a drainer so that a host that never reads stderr never
// stalls execd. extra cores (the MCP log forwarder) are teed in.
func newLogger(cfg *config, extra ...zapcore.Core) (*zap.Logger, zap.AtomicLevel) {
	level := zap.NewAtomicLevel()
	_ = level.UnmarshalText([]byte(cfg.Log.Level)) // validated by the config loader
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.TimeKey = "ts"
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder = zapcore.NewJSONEncoder(encCfg)
	if cfg.Log.Format == "console" {
		encCfg.EncodeLevel = zapcore.CapitalLevelEncoder
		enc = zapcore.NewConsoleEncoder(encCfg)
	}
	core := zapcore.NewCore(enc, newDrainer(os.Stderr, enc.Clone(), logQueue), level)
	if len(extra) > 0 {
		core = zapcore.NewTee(append([]zapcore.Core{core}, extra...)...)
	}
	return zap.New(core), level
}

// Bounds of the drainer: lines queued for stderr, and how long Sync waits
// for them at exit.
const (
	logQueue     = 1024
	logSyncLimit = 500 * time.Millisecond
)

// drainer hands log lines to one goroutine that writes them to w, so that
// no call, shutdown step or signal path waits on w. When w does not drain
// (a host that never reads execd's stderr) and the queue is full, lines
// are dropped and counted; the count is written as a line of its own,
// "N log lines dropped", once w takes lines again. The goroutine blocked
// on such a w is abandoned at exit.
type drainer struct {
	w       io.Writer
	enc     zapcore.Encoder // the loop's own, for the count line
	lines   chan []byte
	dropped atomic.Int64
	pending atomic.Int64 // lines queued and not yet written
}

func newDrainer(w io.Writer, enc zapcore.Encoder, queue int) *drainer {
	d := &drainer{w: w, enc: enc, lines: make(chan []byte, queue)}
	go d.loop()
	return d
}

// Write queues a copy of p (zap reuses its buffer), or drops it when the
// queue is full. It never fails and never waits.
func (d *drainer) Write(p []byte) (int, error) {
	d.pending.Add(1)
	select {
	case d.lines <- append([]byte(nil), p...):
	default:
		d.pending.Add(-1)
		d.dropped.Add(1)
	}
	return len(p), nil
}

// Sync waits, at most logSyncLimit, for the lines queued so far to be
// written: the last lines of a run are not lost to a stderr that drains.
func (d *drainer) Sync() error {
	for deadline := time.Now().Add(logSyncLimit); d.pending.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	return nil
}

func (d *drainer) loop() {
	for b := range d.lines {
		if n := d.dropped.Swap(0); n > 0 {
			if line, err := d.enc.EncodeEntry(zapcore.Entry{Level: zapcore.WarnLevel, Time: time.Now(),
				Message: strconv.FormatInt(n, 10) + " log lines dropped: stderr was not draining"}, nil); err == nil {
				_, _ = d.w.Write(line.Bytes())
				line.Free()
			}
		}
		_, _ = d.w.Write(b)
		d.pending.Add(-1)
	}
}
