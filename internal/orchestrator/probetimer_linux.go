package orchestrator

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// probeTimer is the one-shot timer of a session's probes. The runtime's
// timers wake an idle process a millisecond late at best (its poller
// waits in whole milliseconds), while a shell answers a line in about
// 0.3 ms; a timerfd on the poller wakes it when due. Where no timerfd
// can be made it falls back to a runtime timer.
//
// One goroutine reads the timerfd; Stop closes it and waits for that
// goroutine. Reset and Stop are for the goroutine that owns the timer.
type probeTimer struct {
	c        chan struct{} // one pending tick
	tfd      *os.File      // the timerfd, non-blocking; nil when falling back
	fd       int           // tfd's descriptor (Fd would make tfd blocking)
	fallback *time.Timer
	done     chan struct{} // closed when the reader has returned
}

func newProbeTimer() *probeTimer {
	t := &probeTimer{c: make(chan struct{}, 1), done: make(chan struct{})}
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		close(t.done)
		t.fallback = time.AfterFunc(time.Hour, t.tick)
		t.fallback.Stop()
		return t
	}
	t.tfd, t.fd = os.NewFile(uintptr(fd), "probe-timerfd"), fd // non-blocking: on the poller
	go func() {                                                // the reader: ends when Stop closes the timerfd
		defer close(t.done)
		var b [8]byte // the count of expirations
		for {
			if _, err := t.tfd.Read(b[:]); err != nil {
				return
			}
			t.tick()
		}
	}()
	return t
}

func (t *probeTimer) tick() {
	select {
	case t.c <- struct{}{}:
	default:
	}
}

// C delivers a tick when the timer is due.
func (t *probeTimer) C() <-chan struct{} { return t.c }

// Reset makes the timer due in d from now, replacing any earlier due
// time; a tick already delivered but not received is dropped.
func (t *probeTimer) Reset(d time.Duration) {
	select {
	case <-t.c:
	default:
	}
	if d <= 0 {
		t.tick()
		return
	}
	if t.tfd == nil {
		t.fallback.Reset(d)
		return
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(d.Nanoseconds())}
	if err := unix.TimerfdSettime(t.fd, 0, &spec, nil); err != nil {
		t.tick() // probe now rather than never
	}
}

// Stop disarms the timer and releases it.
func (t *probeTimer) Stop() {
	if t.tfd == nil {
		t.fallback.Stop()
		return
	}
	_ = t.tfd.Close() // ends the reader's Read
	<-t.done
}
