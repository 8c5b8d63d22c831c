// Package audit appends the audit trail of SPEC §11: one JSON object per
// line for every approval decision and every finished command, written
// with O_APPEND to a file that is never truncated, so several execd
// processes may share it and a crash loses at most the line being
// written.
//
// A nil *Log records nothing; [Log.Record] is safe for concurrent use.
package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Kinds of entries.
const (
	KindDecision = "decision"
	KindExec     = "exec"
	KindPatch    = "patch" // an applied patch; its command is apply_patch and the real paths
)

// Entry is one line of the audit file. Decision entries leave ExitCode
// and DurationMS nil; exec entries leave Decision and Reason empty.
type Entry struct {
	Time       time.Time `json:"ts"`
	Kind       string    `json:"kind"`
	CallID     string    `json:"call_id"`
	Command    []string  `json:"command"`
	Cwd        string    `json:"cwd"`
	Sandbox    string    `json:"sandbox"`
	Decision   string    `json:"decision,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	ExitCode   *int      `json:"exit_code,omitempty"`
	DurationMS *int64    `json:"duration_ms,omitempty"`
}

// Log is an open audit file.
type Log struct {
	log *zap.Logger
	mu  sync.Mutex
	f   *os.File
}

// Open opens (creating it with mode 0600 if needed; Go opens files
// close-on-exec, so commands never inherit it) the audit file at
// path for appending. Failures to write later are logged to log, never
// returned: a full disk must not stop commands.
func Open(path string, log *zap.Logger) (*Log, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit file: %w", err)
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Log{log: log, f: f}, nil
}

// Record appends e as one line, stamping its time if unset.
func (l *Log) Record(e Entry) {
	if l == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	if e.Command == nil {
		e.Command = []string{}
	}
	b, err := json.Marshal(e)
	if err != nil { // cannot happen: every field marshals
		l.log.Error("audit entry", zap.Error(err))
		return
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	// One write per line: with O_APPEND each lands whole at the end.
	if _, err := l.f.Write(b); err != nil {
		l.log.Error("write audit file", zap.String("path", l.f.Name()), zap.Error(err))
	}
}

// Close closes the file.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}
