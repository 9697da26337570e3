package cluster

import (
	"context"
	"sync"
)

// coalescer runs one call of a function at a time and shares each result
// among the callers that arrived before that call started: a caller that
// arrives while a call runs waits for the next one, which therefore
// starts after the caller arrived. Read index requests are batched so:
// one leadership check serves every read waiting for it.
type coalescer struct {
	fn func() (uint64, error)

	mu      sync.Mutex
	next    *round // the round new callers join; nil until one arrives
	running bool
}

// round is one call of the function and the callers it serves.
type round struct {
	done  chan struct{}
	index uint64
	err   error
}

// do waits for a call of the function that started after do was called,
// and returns its result.
func (c *coalescer) do(ctx context.Context) (uint64, error) {
	c.mu.Lock()
	if c.next == nil {
		c.next = &round{done: make(chan struct{})}
	}
	r := c.next
	if !c.running {
		c.running, c.next = true, nil
		go c.run(r)
	}
	c.mu.Unlock()
	select {
	case <-r.done:
		return r.index, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// run calls the function for r, then for the rounds that gathered
// meanwhile, until none is waiting.
func (c *coalescer) run(r *round) {
	for r != nil {
		r.index, r.err = c.fn()
		close(r.done)
		c.mu.Lock()
		r, c.next = c.next, nil
		c.running = r != nil
		c.mu.Unlock()
	}
}
