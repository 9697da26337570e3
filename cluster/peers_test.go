package cluster

import (
	"runtime"
	"slices"
	"testing"
	"time"
)

// TestForwardGather checks when a follower's forwarding call waits for
// the callers the last call answered (see forwardGroup.take) and when it
// does not.
func TestForwardGather(t *testing.T) {
	// afterCall returns a forward group whose last call forwarded
	// answered batches in took; wait bounds its gathering.
	afterCall := func(t *testing.T, answered int, took, wait time.Duration) *forwardGroup {
		g := newForwardGroup()
		g.bounds.max = wait
		g.senders = 1
		g.called(answered, took)
		g.handOff()
		if g.senders != 0 {
			t.Fatalf("%d senders after the only call ended", g.senders)
		}
		return g
	}
	batch := func() *forward { return &forward{wake: make(chan bool, 1)} }
	// send has a batch join g, make the call, and take the queue, in a
	// goroutine; it returns the batches the call carries.
	send := func(t *testing.T, g *forwardGroup) <-chan []*forward {
		t.Helper()
		first := batch()
		if !g.join(first) {
			t.Fatal("the first caller back may not make a call")
		}
		got := make(chan []*forward, 1)
		go func() { got <- g.take([]*forward{first}) }()
		return got
	}
	wait := func(t *testing.T, got <-chan []*forward) []*forward {
		t.Helper()
		return receive(t, got, "the call is still gathering")
	}
	gathering := func(g *forwardGroup) bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.gathering
	}

	t.Run("waits for the callers answered", func(t *testing.T) {
		g := afterCall(t, 3, time.Hour, time.Hour)
		got := send(t, g)
		for !gathering(g) {
			select {
			case fs := <-got:
				t.Fatalf("called with %d batches before the other callers came back", len(fs))
			default:
				runtime.Gosched()
			}
		}
		for range 2 {
			if g.join(batch()) {
				t.Fatal("a caller made a call of its own while another gathers")
			}
		}
		if fs := wait(t, got); len(fs) != 3 {
			t.Fatalf("called with %d batches, want the 3 callers answered", len(fs))
		}
	})
	for _, tc := range []struct {
		name          string
		answered      int
		took, wait    time.Duration
		from          time.Duration // 0: the default gatherFrom
		queued, calls int           // batches queued before the call; want a call of calls batches
	}{
		{name: "stops when no caller comes", answered: 3, took: 8 * time.Millisecond, wait: time.Hour, calls: 1},
		{name: "stops at the bound", answered: 3, took: time.Hour, wait: time.Millisecond, calls: 1},
		{name: "no wait after a fast call", answered: 3, took: time.Hour, wait: time.Hour, from: 2 * time.Hour, calls: 1},
		{name: "no wait for one caller", answered: 1, took: time.Hour, wait: time.Hour, calls: 1},
		{name: "no wait for callers already queued", answered: 3, took: time.Hour, wait: time.Hour, queued: 2, calls: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := afterCall(t, tc.answered, tc.took, tc.wait)
			if tc.from > 0 {
				g.bounds.from = tc.from
			}
			// Batches that came while the last call was in flight: the
			// senders' seats were taken.
			g.senders = maxForwardSenders
			for range tc.queued {
				g.join(batch())
			}
			g.senders = 0
			if fs := wait(t, send(t, g)); len(fs) != tc.calls {
				t.Fatalf("called with %d batches, want %d", len(fs), tc.calls)
			}
		})
	}
}

// TestForwardCallBytes checks that a forwarding call takes the batches
// queued, in order, only while their sizes add up to the group's bound,
// and leaves the rest queued for the next call.
func TestForwardCallBytes(t *testing.T) {
	g := newForwardGroup()
	g.maxBytes = 100
	batch := func(size int) *forward { return &forward{size: size, wake: make(chan bool, 1)} }
	first := batch(30)
	if !g.join(first) {
		t.Fatal("the first batch may not make a call")
	}
	queued := []*forward{batch(50), batch(20), batch(10), batch(40)}
	for _, f := range queued {
		g.senders = maxForwardSenders // each waits for a call
		if g.join(f) {
			t.Fatal("a batch made a call with every sender busy")
		}
	}
	got := g.take([]*forward{first})
	if want := []*forward{first, queued[0], queued[1]}; !slices.Equal(got, want) {
		t.Fatalf("the call took %d batches, want the first three (100 bytes)", len(got))
	}
	if !slices.Equal(g.queue, queued[2:]) {
		t.Fatalf("%d batches left queued, want the last two", len(g.queue))
	}
	g.maxBytes = 0 // unbounded
	if got := g.take(nil); !slices.Equal(got, queued[2:]) {
		t.Fatalf("an unbounded call took %d batches, want 2", len(got))
	}
}
