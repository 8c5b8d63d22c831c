package tools

import (
	"context"
	"slices"
	"sync/atomic"

	"go.uber.org/zap/zapcore"

	"github.com/execd/execd/internal/rpc"
)

// logQueue bounds the entries waiting to be forwarded; more are dropped
// rather than slowing the daemon down.
const logQueue = 256

// mcpLevels are the RFC 5424 levels of logging/setLevel.
var mcpLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

func parseMCPLevel(s string) (zapcore.Level, bool) {
	switch s {
	case "debug":
		return zapcore.DebugLevel, true
	case "info", "notice":
		return zapcore.InfoLevel, true
	case "warning":
		return zapcore.WarnLevel, true
	case "error":
		return zapcore.ErrorLevel, true
	case "critical", "alert", "emergency":
		return zapcore.DPanicLevel, true
	}
	return 0, false
}

func mcpLevel(l zapcore.Level) string {
	switch {
	case l <= zapcore.DebugLevel:
		return "debug"
	case l == zapcore.InfoLevel:
		return "info"
	case l == zapcore.WarnLevel:
		return "warning"
	case l == zapcore.ErrorLevel:
		return "error"
	case l == zapcore.FatalLevel:
		return "emergency"
	}
	return "critical"
}

// LogForwarder is a zapcore.Core that forwards log entries to the client
// as notifications/message (SPEC §3.2). It forwards nothing until the
// client sends logging/setLevel. Tee it with the stderr core for every
// logger except the rpc package's, whose frame traces would otherwise
// feed back into the stream.
type LogForwarder struct {
	shared *logShared
	fields []zapcore.Field
}

type logShared struct {
	on      atomic.Bool
	min     atomic.Int32 // zapcore.Level
	queue   chan logMessageParams
	dropped atomic.Int64
}

// NewLogForwarder returns a forwarder that is off until setLevel.
func NewLogForwarder() *LogForwarder {
	return &LogForwarder{shared: &logShared{queue: make(chan logMessageParams, logQueue)}}
}

func (f *LogForwarder) setLevel(l zapcore.Level) {
	f.shared.min.Store(int32(l))
	f.shared.on.Store(true)
}

// Enabled implements zapcore.Core.
func (f *LogForwarder) Enabled(l zapcore.Level) bool {
	return f.shared.on.Load() && l >= zapcore.Level(f.shared.min.Load())
}

// With implements zapcore.Core.
func (f *LogForwarder) With(fields []zapcore.Field) zapcore.Core {
	return &LogForwarder{shared: f.shared, fields: append(slices.Clip(f.fields), fields...)}
}

// Check implements zapcore.Core.
func (f *LogForwarder) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if f.Enabled(e.Level) {
		return ce.AddCore(e, f)
	}
	return ce
}

// Write implements zapcore.Core; it never blocks.
func (f *LogForwarder) Write(e zapcore.Entry, fields []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, fl := range f.fields {
		fl.AddTo(enc)
	}
	for _, fl := range fields {
		fl.AddTo(enc)
	}
	enc.Fields["message"] = e.Message
	select {
	case f.shared.queue <- logMessageParams{Level: mcpLevel(e.Level), Logger: e.LoggerName, Data: enc.Fields}:
	default:
		f.shared.dropped.Add(1)
	}
	return nil
}

// Sync implements zapcore.Core.
func (f *LogForwarder) Sync() error { return nil }

// forward sends queued entries until stop is closed; none logged after
// that is sent.
func (f *LogForwarder) forward(ctx context.Context, conn *rpc.Conn, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case m := <-f.shared.queue:
			select { // select picks at random when both are ready
			case <-stop:
				return
			default:
			}
			_ = conn.Notify(ctx, "notifications/message", m) // best effort: the client may be gone
		}
	}
}
