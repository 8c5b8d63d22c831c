package main

import (
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newLogger builds the one logger: JSON or console lines on stderr (SPEC
// §11). extra cores (the MCP log forwarder) are teed in.
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
	core := zapcore.NewCore(enc, zapcore.Lock(os.Stderr), level)
	if len(extra) > 0 {
		core = zapcore.NewTee(append([]zapcore.Core{core}, extra...)...)
	}
	return zap.New(core), level
}
