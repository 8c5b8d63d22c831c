package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Idle memory release: execd spends most of its life waiting between model
// turns. After a burst of calls the Go scavenger keeps the heap it grew
// (about its goal plus 10%), so once allocation has stopped for a whole
// period the freed pages are returned to the OS at once.
const (
	idleCheck = 2 * time.Second
	// idleAllocs is the allocation per period that still counts as idle:
	// the reaper's orphan checks allocate a little every second.
	idleAllocs = 256 << 10
)

// releaseWhenIdle returns freed memory to the OS after each busy period,
// once a full period passes with almost no allocation. It returns when
// ctx is done.
func releaseWhenIdle(ctx context.Context) {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(sample)
	last := sample[0].Value.Uint64()
	busy := false
	t := time.NewTicker(idleCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(sample)
		n := sample[0].Value.Uint64()
		switch {
		case n-last > idleAllocs:
			busy = true
		case busy:
			debug.FreeOSMemory()
			busy = false
		}
		last = n
	}
}
