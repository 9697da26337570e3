// Package gctune keeps the garbage collector from running more often than
// a server's garbage calls for.
//
// GOGC sets how much the heap may grow past the live heap before the next
// collection, as a share of the live heap. A server whose heap is mostly
// long-lived data wants a small share, so that memory stays near the data;
// but while its live heap is small, a small share of it is a few megabytes,
// and a server handling a few hundred thousand writes a second allocates
// that in milliseconds: it then collects dozens of times a second, each
// collection paying its fixed costs (stacks, globals, the phases' pauses).
// Tune sets the share anew after every collection so that the heap may
// grow by the share or by a headroom, whichever is more, within a bound.
// The headroom is fixed, or what the server allocated in a given spacing
// at the pace it allocated since the last collection, when that is more:
// one writing large values allocates 16 MiB in under 10 ms.
package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// liveHeap is the runtime metric of the heap the last collection marked,
// and allocated that of every byte the heap ever allocated.
const (
	liveHeap  = "/gc/heap/live:bytes"
	allocated = "/gc/heap/allocs:bytes"
)

// maxPercent bounds the GOGC values Percent returns. A collection's goal
// for the next one is set by the runtime from the GOGC of the moment, and
// the tune after a collection runs a little later: while the live heap
// grows fast (a load), the next collection applies the value tuned for a
// smaller heap to a larger one. The bound keeps that overshoot, and the
// heap metadata the runtime keeps for the peak, to a few times the live
// heap.
const maxPercent = 400

// Percent returns the GOGC value that lets a heap of live bytes grow by
// percent of itself or by headroom bytes, whichever is more (but by no
// more than maxPercent of itself), before the next collection.
func Percent(live uint64, percent int, headroom uint64) int {
	if live == 0 || live*uint64(percent)/100 >= headroom {
		return percent
	}
	return max(percent, min(maxPercent, int((headroom*100+live-1)/live)))
}

// paced returns the bytes a heap that allocated allocated bytes in
// elapsed allocates in spacing at that pace.
func paced(allocated uint64, elapsed, spacing time.Duration) uint64 {
	if elapsed <= 0 {
		return 0
	}
	return uint64(float64(allocated) * float64(spacing) / float64(elapsed))
}

// tuner re-tunes the collector after each collection.
type tuner struct {
	percent  int
	headroom uint64
	spacing  time.Duration // the least time between collections the headroom is paced for (0: fixed)
	mu       sync.Mutex    // serialises tune, which cleanups may run concurrently
	set      int           // the GOGC value set last
	sample   []metrics.Sample
	// lastAt and lastAllocs are when the last tune ran and the heap's
	// allocated bytes then.
	lastAt     time.Time
	lastAllocs uint64
	now        func() time.Time // time.Now, but in tests
	stopped    atomic.Bool      // ends the re-arming (tests set it)
}

// Tune sets GOGC to Percent of the live heap now, and again after every
// collection, for the life of the process, with a headroom of at least
// headroom bytes, or what the heap allocates in spacing at the pace it
// allocated since the collection before.
func Tune(percent int, headroom uint64, spacing time.Duration) {
	t := newTuner(percent, headroom, spacing)
	t.tune()
	t.arm()
}

// newTuner returns a tuner of Tune's arguments that has not tuned yet.
func newTuner(percent int, headroom uint64, spacing time.Duration) *tuner {
	return &tuner{percent: percent, headroom: headroom, spacing: spacing, now: time.Now,
		sample: []metrics.Sample{{Name: liveHeap}, {Name: allocated}}}
}

// arm attaches the next tune to an object that becomes garbage at once,
// so that the collection that finds it runs the tune (and arms again).
func (t *tuner) arm() {
	// Large enough not to share a tiny-allocator block with other objects.
	sentinel := new([32]byte)
	runtime.AddCleanup(sentinel, func(t *tuner) {
		if !t.stopped.Load() {
			t.tune()
			t.arm()
		}
	}, t)
}

// tune sets GOGC for the live heap the last collection marked. A value
// above percent within an eighth of the one set last is left as it is: the
// live heap moves a little at every collection, and the goal need not
// follow it exactly.
func (t *tuner) tune() {
	t.mu.Lock()
	defer t.mu.Unlock()
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 || t.sample[1].Value.Kind() != metrics.KindUint64 {
		return
	}
	now, allocs := t.now(), t.sample[1].Value.Uint64()
	headroom := t.headroom
	if !t.lastAt.IsZero() {
		headroom = max(headroom, paced(allocs-t.lastAllocs, now.Sub(t.lastAt), t.spacing))
	}
	t.lastAt, t.lastAllocs = now, allocs
	p := Percent(t.sample[0].Value.Uint64(), t.percent, headroom)
	if p == t.set || p != t.percent && t.set != 0 && p >= t.set-t.set/8 && p <= t.set+t.set/8 {
		return
	}
	debug.SetGCPercent(p)
	t.set = p
}
