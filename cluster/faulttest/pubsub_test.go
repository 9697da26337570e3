//go:build unix

package faulttest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// pubsubChannel is the channel the fault test's publishers use.
const pubsubChannel = "chaos:pubsub"

// publishInterval paces each node's publisher: pub/sub rides beside the
// linearizability workload, not over it.
const publishInterval = 5 * time.Millisecond

// pubsubCheck publishes numbered messages on every node while one
// subscriber on every node listens, through the faults: a message may be
// lost (pub/sub is at most once, and a node that is down or cut off
// misses what is published meanwhile) but never heard twice, nor after a
// later one that its publisher sent on the same connection, and every
// node hears messages published on every node. A PUBLISH that failed (a
// node stopped or killed, a timeout) starts a new run of its publisher:
// its connection is replaced, and the node may still run the failed
// command after later ones of the new connection, as Redis may.
type pubsubCheck struct {
	mu    sync.Mutex
	heard [][]bitset      // [listener][origin]: the sequence numbers heard
	last  [][]map[int]int // [listener][origin][run]: the latest sequence number heard
	count [][]int         // [listener][origin]: how many
	wrong []string        // messages heard twice, out of order or of no publisher
}

func newPubSubCheck(nodes int) *pubsubCheck {
	p := &pubsubCheck{heard: make([][]bitset, nodes), last: make([][]map[int]int, nodes), count: make([][]int, nodes)}
	for i := range nodes {
		p.heard[i], p.last[i], p.count[i] = make([]bitset, nodes), make([]map[int]int, nodes), make([]int, nodes)
		for o := range p.last[i] {
			p.last[i][o] = map[int]int{}
		}
	}
	return p
}

// run starts a publisher and a subscriber on every node of c until ctx
// ends, and waits for them.
func (p *pubsubCheck) run(ctx context.Context, c *cluster) {
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Go(func() { p.publish(ctx, n, i) })
		wg.Go(func() { p.listen(ctx, n, i) })
	}
	wg.Wait()
}

// publish publishes "origin:run:seq" on n every publishInterval, seq
// counting up whether or not the node answered, and run after each
// failure.
func (p *pubsubCheck) publish(ctx context.Context, n *node, origin int) {
	rdb := newClient(n, 1)
	defer rdb.Close()
	t := time.NewTicker(publishInterval)
	defer t.Stop()
	for run, seq := 0, 0; ; seq++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if rdb.Publish(ctx, pubsubChannel, fmt.Sprintf("%d:%d:%d", origin, run, seq)).Err() != nil {
			run++
		}
	}
}

// listen records what a subscriber on n hears until ctx ends. go-redis
// subscribes again on a new connection after an error.
func (p *pubsubCheck) listen(ctx context.Context, n *node, listener int) {
	rdb := newClient(n, 1)
	defer rdb.Close()
	ps := rdb.Subscribe(ctx, pubsubChannel)
	defer ps.Close()
	for ctx.Err() == nil {
		m, err := ps.ReceiveTimeout(ctx, time.Second)
		if err != nil {
			continue // a timeout, or the node down: go-redis reconnects
		}
		if msg, ok := m.(*redis.Message); ok {
			p.record(listener, msg.Payload)
		}
	}
}

// record notes that listener heard payload.
func (p *pubsubCheck) record(listener int, payload string) {
	var origin, run, seq int
	_, err := fmt.Sscanf(payload, "%d:%d:%d", &origin, &run, &seq)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil || origin < 0 || origin >= len(p.heard) || seq < 0 {
		p.wrong = append(p.wrong, fmt.Sprintf("n%d heard %q, published by no one", listener+1, payload))
		return
	}
	last, heard := p.last[listener][origin][run]
	switch {
	case !p.heard[listener][origin].add(seq):
		p.wrong = append(p.wrong, fmt.Sprintf("n%d heard %q twice", listener+1, payload))
	case heard && seq < last:
		p.wrong = append(p.wrong, fmt.Sprintf("n%d heard %q after %d:%d:%d", listener+1, payload, origin, run, last))
	default:
		p.last[listener][origin][run] = seq
	}
	p.count[listener][origin]++
}

// check fails t if a message was heard twice, out of order or was no
// publisher's, or if a node heard nothing published on some node.
func (p *pubsubCheck) check(t *testing.T) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.wrong[:min(len(p.wrong), 10)] {
		t.Errorf("pub/sub: %s", w)
	}
	var counts []string
	for l, row := range p.count {
		for o, n := range row {
			if n == 0 {
				t.Errorf("pub/sub: n%d heard no message published on n%d", l+1, o+1)
			}
			counts = append(counts, fmt.Sprintf("n%d from n%d: %d", l+1, o+1, n))
		}
	}
	t.Logf("pub/sub messages heard: %s", strings.Join(counts, ", "))
}

// bitset is a set of small non-negative integers.
type bitset []uint64

// add adds i and reports whether it was not in the set.
func (b *bitset) add(i int) bool {
	w := i / 64
	for len(*b) <= w {
		*b = append(*b, 0)
	}
	bit := uint64(1) << (i % 64)
	had := (*b)[w]&bit != 0
	(*b)[w] |= bit
	return !had
}
