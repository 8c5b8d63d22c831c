//go:build !linux

package orchestrator

import "time"

// probeTimer is the one-shot timer of a session's probes; see
// probetimer_linux.go. Elsewhere it is a runtime timer.
type probeTimer struct {
	c chan struct{} // one pending tick
	t *time.Timer
}

func newProbeTimer() *probeTimer {
	t := &probeTimer{c: make(chan struct{}, 1)}
	t.t = time.AfterFunc(time.Hour, func() {
		select {
		case t.c <- struct{}{}:
		default:
		}
	})
	t.t.Stop()
	return t
}

// C delivers a tick when the timer is due.
func (t *probeTimer) C() <-chan struct{} { return t.c }

// Reset makes the timer due in d from now; a tick not yet received is
// dropped.
func (t *probeTimer) Reset(d time.Duration) {
	select {
	case <-t.c:
	default:
	}
	t.t.Reset(d)
}

// Stop disarms the timer.
func (t *probeTimer) Stop() { t.t.Stop() }
