package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/execd/execd/internal/orchestrator"
	"github.com/execd/execd/internal/rpc"
)

// progressInterval caps notifications at 10 per second (SPEC §3.4).
const progressInterval = 100 * time.Millisecond

// progressLineRunes is the longest line a progress message carries.
const progressLineRunes = 200

// keepAliveInterval is how long a call with a progress token goes without
// a notification while no output comes: hosts that reset their timeout on
// progress then keep waiting for a long poll (SPEC §3.4).
const keepAliveInterval = 5 * time.Second

// progress sends notifications/progress for one tool call: the output
// bytes so far plus the keep-alives sent (strictly increasing) and the
// latest complete line.
type progress struct {
	ctx       context.Context
	conn      *rpc.Conn
	token     json.RawMessage
	keepAlive time.Duration

	mu      sync.Mutex
	total   int64                          // guarded by mu
	line    string                         // guarded by mu: latest complete line
	partial map[orchestrator.Stream][]byte // guarded by mu: unfinished line per stream

	stopCh chan struct{}
	loop   sync.WaitGroup
}

// startProgress starts reporting for a call that carries a progress token;
// it returns nil when there is none.
func startProgress(ctx context.Context, conn *rpc.Conn, token json.RawMessage) *progress {
	if len(token) == 0 || string(token) == "null" {
		return nil
	}
	p := &progress{ctx: ctx, conn: conn, token: token, keepAlive: keepAliveInterval,
		partial: map[orchestrator.Stream][]byte{}, stopCh: make(chan struct{})}
	p.loop.Go(p.run)
	return p
}

// observe is the orchestrator.OutputFunc of the call.
func (p *progress) observe(s orchestrator.Stream, chunk []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total += int64(len(chunk))
	buf := append(p.partial[s], chunk...)
	if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
		complete := buf[:i]
		if j := bytes.LastIndexByte(complete, '\n'); j >= 0 {
			complete = complete[j+1:]
		}
		p.line = progressLine(complete)
		buf = buf[i+1:]
	}
	// Only the start of an unfinished line can be shown: keep it bounded.
	if len(buf) > progressLineRunes*utf8.UTFMax {
		buf = buf[:progressLineRunes*utf8.UTFMax]
	}
	p.partial[s] = bytes.Clone(buf)
}

func progressLine(b []byte) string {
	s := strings.TrimSuffix(toValidUTF8(b), "\r")
	if utf8.RuneCountInString(s) <= progressLineRunes {
		return s
	}
	return string([]rune(s)[:progressLineRunes])
}

// run sends at most one notification per interval while output grows,
// and a keep-alive after each keepAlive without one. It exits when stop
// is called.
func (p *progress) run() {
	t := time.NewTicker(progressInterval)
	defer t.Stop()
	var sent, keepAlives int64
	last := time.Now() // of the last notification, or the start
	for {
		select {
		case <-p.stopCh:
			return
		case <-t.C:
		}
		p.mu.Lock()
		total, line := p.total, p.line
		p.mu.Unlock()
		msg := line
		switch {
		case total > sent:
			sent = total
		case time.Since(last) >= p.keepAlive:
			keepAlives++
			msg = fmt.Sprintf("still running, no new output for %ds", int(time.Since(last).Seconds()))
		default:
			continue
		}
		last = time.Now()
		_ = p.conn.Notify(p.ctx, "notifications/progress",
			progressParams{ProgressToken: p.token, Progress: sent + keepAlives, Message: msg}) // best effort
	}
}

// stop ends reporting; no notification is sent after it returns.
func (p *progress) stop() {
	close(p.stopCh)
	p.loop.Wait()
}
