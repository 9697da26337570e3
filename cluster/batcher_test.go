package cluster

import (
	"runtime"
	"testing"
	"time"

	"github.com/presenced/presenced/store"
)

// TestGather checks when take waits for the callers the last entry
// answered (see batcher) and when it stops waiting.
func TestGather(t *testing.T) {
	// gatherer returns a batcher whose last commit took commit and
	// answered callers, with entries of at most 4 commands; wait bounds
	// its gathering.
	gatherer := func(t *testing.T, answered int, commit, wait time.Duration) *batcher {
		cfg := DefaultConfig()
		cfg.MaxEntryCommands = 4
		quit := make(chan struct{})
		t.Cleanup(func() { close(quit) })
		b := newBatcher(nil, nil, &cfg, quit, nil)
		b.bounds.max = wait
		b.answered.Store(int64(answered))
		b.commit.Store(int64(commit))
		return b
	}
	queue := func(b *batcher, n int) {
		for range n {
			b.enqueue(&request{cmds: []store.Command{cmd(0, "INCR", "x")}})
		}
	}
	// take runs b.take and fails the test if it does not return.
	take := func(t *testing.T, b *batcher) []*request {
		t.Helper()
		got := make(chan []*request, 1)
		go func() { got <- b.take() }()
		return receive(t, got, "take is still waiting")
	}

	t.Run("waits for the callers answered", func(t *testing.T) {
		b := gatherer(t, 3, time.Hour, time.Hour)
		queue(b, 1)
		got := make(chan []*request, 1)
		go func() { got <- b.take() }()
		// take consumes the wake of the batch queued once it has seen
		// that batch and chosen to wait for more.
		for len(b.wake) > 0 {
			select {
			case reqs := <-got:
				t.Fatalf("took %d batches before the other callers came back", len(reqs))
			default:
				runtime.Gosched()
			}
		}
		queue(b, 2)
		if reqs := receive(t, got, "take is still waiting with the 3 callers back"); len(reqs) != 3 {
			t.Fatalf("took %d batches, want the 3 callers answered", len(reqs))
		}
	})
	for _, tc := range []struct {
		name               string
		answered, queued   int
		commit, wait, from time.Duration // from 0: the default gatherFrom
		want               int
	}{
		{name: "takes a full entry at once", answered: 10, queued: 5, commit: time.Hour, wait: time.Hour, want: 4},
		{name: "stops when no caller comes", answered: 3, queued: 1, commit: 8 * time.Millisecond, wait: time.Hour, want: 1},
		{name: "stops at the bound", answered: 3, queued: 1, commit: time.Hour, wait: time.Millisecond, want: 1},
		{name: "no wait after a fast commit", answered: 3, queued: 1, commit: time.Hour, wait: time.Hour, from: 2 * time.Hour, want: 1},
		{name: "no wait for one caller", answered: 1, queued: 1, commit: time.Hour, wait: time.Hour, want: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := gatherer(t, tc.answered, tc.commit, tc.wait)
			if tc.from > 0 {
				b.bounds.from = tc.from
			}
			queue(b, tc.queued)
			if got := take(t, b); len(got) != tc.want {
				t.Fatalf("took %d batches, want %d", len(got), tc.want)
			}
		})
	}
}

// receive returns the value ch delivers, or fails the test with stuck if
// none comes within 10 s.
func receive[T any](t *testing.T, ch <-chan T, stuck string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal(stuck)
		var zero T
		return zero
	}
}
