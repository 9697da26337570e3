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
		b.gatherMax = wait
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
		select {
		case reqs := <-got:
			return reqs
		case <-time.After(10 * time.Second):
			t.Fatal("take is still waiting")
			return nil
		}
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
		select {
		case reqs := <-got:
			if len(reqs) != 3 {
				t.Fatalf("took %d batches, want the 3 callers answered", len(reqs))
			}
		case <-time.After(10 * time.Second):
			t.Fatal("take is still waiting with the 3 callers back")
		}
	})
	t.Run("takes a full entry at once", func(t *testing.T) {
		b := gatherer(t, 10, time.Hour, time.Hour)
		queue(b, 5)
		if got := take(t, b); len(got) != 4 {
			t.Fatalf("took %d batches, want a full entry of 4", len(got))
		}
	})
	t.Run("stops when no caller comes", func(t *testing.T) {
		b := gatherer(t, 3, 8*time.Millisecond, time.Hour)
		queue(b, 1)
		if got := take(t, b); len(got) != 1 {
			t.Fatalf("took %d batches, want 1", len(got))
		}
	})
	t.Run("stops at the bound", func(t *testing.T) {
		b := gatherer(t, 3, time.Hour, time.Millisecond)
		queue(b, 1)
		if got := take(t, b); len(got) != 1 {
			t.Fatalf("took %d batches, want 1", len(got))
		}
	})
	t.Run("no wait after a fast commit", func(t *testing.T) {
		b := gatherer(t, 3, time.Hour, time.Hour)
		b.gatherFrom = 2 * time.Hour
		queue(b, 1)
		if got := take(t, b); len(got) != 1 {
			t.Fatalf("took %d batches, want 1", len(got))
		}
	})
	t.Run("no wait for one caller", func(t *testing.T) {
		b := gatherer(t, 1, time.Hour, time.Hour)
		queue(b, 1)
		if got := take(t, b); len(got) != 1 {
			t.Fatalf("took %d batches, want 1", len(got))
		}
	})
}
