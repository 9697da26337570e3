package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		live, headroom uint64
		percent, want  int
	}{
		{live: 0, headroom: 32 * mb, percent: 25, want: 25},        // nothing marked yet
		{live: 512 * mb, headroom: 32 * mb, percent: 25, want: 25}, // the share is more
		{live: 128 * mb, headroom: 32 * mb, percent: 25, want: 25}, // equal
		{live: 64 * mb, headroom: 32 * mb, percent: 25, want: 50},  // the headroom is more
		{live: 30 * mb, headroom: 32 * mb, percent: 25, want: 107}, // rounded up
		{live: 8 * mb, headroom: 32 * mb, percent: 25, want: 400},  // at the bound
		{live: 3 * mb, headroom: 32 * mb, percent: 25, want: 400},  // bounded
		{live: 1, headroom: 32 * mb, percent: 100, want: 400},      // a tiny heap
		{live: 1, headroom: 32 * mb, percent: 500, want: 500},      // a share above the bound
	} {
		got := Percent(tc.live, tc.percent, tc.headroom)
		if got != tc.want {
			t.Errorf("Percent(%d, %d, %d) = %d, want %d", tc.live, tc.percent, tc.headroom, got, tc.want)
		}
		if grow := tc.live * uint64(got) / 100; tc.live > 0 && grow < tc.headroom && got != tc.percent && got != maxPercent {
			t.Errorf("Percent(%d, %d, %d) = %d lets the heap grow %d bytes, less than the headroom", tc.live, tc.percent, tc.headroom, got, grow)
		}
	}
}

func TestPaced(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		allocated        uint64
		elapsed, spacing time.Duration
		want             uint64
	}{
		{allocated: 64 * mb, elapsed: 10 * time.Millisecond, spacing: 25 * time.Millisecond, want: 160 * mb},
		{allocated: 64 * mb, elapsed: time.Second, spacing: 25 * time.Millisecond, want: 64 * mb / 40},
		{allocated: 64 * mb, elapsed: 10 * time.Millisecond, spacing: 0, want: 0}, // not paced
		{allocated: 64 * mb, elapsed: 0, spacing: 25 * time.Millisecond, want: 0}, // no pace to tell
		{allocated: 0, elapsed: time.Second, spacing: 25 * time.Millisecond, want: 0},
	} {
		if got := paced(tc.allocated, tc.elapsed, tc.spacing); got != tc.want {
			t.Errorf("paced(%d, %v, %v) = %d, want %d", tc.allocated, tc.elapsed, tc.spacing, got, tc.want)
		}
	}
}

// sink keeps the test's allocations from being optimised away.
var sink []byte

func TestTuneHeadroomFollowsThePace(t *testing.T) {
	defer debug.SetGCPercent(gcPercent())
	runtime.GC()
	clock := time.Now()
	tn := newTuner(25, 1, 25*time.Millisecond)
	tn.now = func() time.Time { return clock }
	tn.tune()
	if got := gcPercent(); got != 25 {
		t.Fatalf("GOGC = %d after a first tune with no headroom, want 25", got)
	}
	// 64 MiB in 10 ms: at that pace 160 MiB come in the spacing, far
	// more than a quarter of the test's live heap.
	for range 64 {
		sink = make([]byte, 1<<20)
	}
	clock = clock.Add(10 * time.Millisecond)
	tn.tune()
	if got := gcPercent(); got != maxPercent {
		t.Errorf("GOGC = %d after 64 MiB allocated in 10 ms, with a live heap of %d bytes, want %d", got, liveBytes(), maxPercent)
	}
	// A quiet second after: the share is enough again.
	clock = clock.Add(time.Second)
	tn.tune()
	if got := gcPercent(); got != 25 {
		t.Errorf("GOGC = %d after a second with next to no allocation, want 25", got)
	}
}

// gcPercent reads GOGC (setting it back at once).
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func liveBytes() uint64 {
	s := []metrics.Sample{{Name: liveHeap}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func TestTuneSetsPercentForLiveHeap(t *testing.T) {
	defer debug.SetGCPercent(gcPercent())
	runtime.GC()
	live := liveBytes()
	tn := newTuner(25, 64<<20, 0)
	tn.tune()
	want := Percent(live, 25, 64<<20)
	if want <= 25 {
		t.Fatalf("the test's live heap (%d bytes) is too large to need the headroom", live)
	}
	if got := gcPercent(); got != want {
		t.Errorf("GOGC = %d after tune with a live heap of %d bytes, want %d", got, live, want)
	}
	// A heap that needs no headroom gets the plain share back.
	tn.headroom = 1
	tn.tune()
	if got := gcPercent(); got != 25 {
		t.Errorf("GOGC = %d with a headroom the share exceeds, want 25", got)
	}
}

func TestTuneKeepsNearbyValue(t *testing.T) {
	defer debug.SetGCPercent(gcPercent())
	tn := newTuner(25, 64<<20, 0)
	runtime.GC()
	tn.tune()
	set := tn.set
	debug.SetGCPercent(set + 1) // a mark of whether tune sets it again
	tn.tune()                   // the live heap moved by far less than an eighth
	if got := gcPercent(); got != set+1 {
		t.Errorf("tune set GOGC to %d for a live heap within an eighth of the last one, want it left at %d", got, set+1)
	}
}

func TestTuneRunsAfterCollections(t *testing.T) {
	defer debug.SetGCPercent(gcPercent())
	tn := newTuner(100, 1<<40, 0)
	tn.arm()
	defer tn.stopped.Store(true)
	for round := range 2 {
		// Each round starts as if nothing was set, and the next
		// collections must tune: the tuner re-arms after each.
		tn.mu.Lock()
		tn.set = 0
		tn.mu.Unlock()
		debug.SetGCPercent(100)
		deadline := time.Now().Add(10 * time.Second)
		for gcPercent() == 100 {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: no tune ran after collections", round)
			}
			runtime.GC() // the armed sentinel is garbage: its cleanup tunes
			runtime.Gosched()
		}
		if got, want := gcPercent(), Percent(liveBytes(), 100, 1<<40); got < want-want/8 || got > want+want/8 {
			t.Errorf("round %d: GOGC = %d after collections, want about %d", round, got, want)
		}
	}
}
