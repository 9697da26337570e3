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
	h *history // the clock, and the faults to report beside a wrong message

	mu    sync.Mutex
	heard [][]bitset        // [listener][origin]: the sequence numbers heard
	last  [][]map[int]heard // [listener][origin][run]: the latest message heard
	count [][]int           // [listener][origin]: how many
	acked [][]int64         // [origin][seq]: when its PUBLISH was answered; 0 if it failed
	wrong []wrongMessage    // messages heard twice, out of order or of no publisher
}

// heard is a message a listener heard, and when.
type heard struct {
	seq int
	at  int64
}

// wrongMessage is a message heard that should not have been: twice,
// out of order (after the message before), or of no publisher.
type wrongMessage struct {
	what     string
	listener int
	payload  string
	origin   int
	seq      int
	at       int64
	before   heard // for a message out of order: the later one heard first
}

func newPubSubCheck(nodes int, h *history) *pubsubCheck {
	p := &pubsubCheck{h: h, heard: make([][]bitset, nodes), last: make([][]map[int]heard, nodes), count: make([][]int, nodes), acked: make([][]int64, nodes)}
	for i := range nodes {
		p.heard[i], p.last[i], p.count[i] = make([]bitset, nodes), make([]map[int]heard, nodes), make([]int, nodes)
		for o := range p.last[i] {
			p.last[i][o] = map[int]heard{}
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
		err := rdb.Publish(ctx, pubsubChannel, fmt.Sprintf("%d:%d:%d", origin, run, seq)).Err()
		at := p.h.now()
		if err != nil {
			run++
			at = 0
		}
		p.mu.Lock()
		p.acked[origin] = append(p.acked[origin], at)
		p.mu.Unlock()
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
	at := p.h.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	w := wrongMessage{listener: listener, payload: payload, origin: origin, seq: seq, at: at}
	if err != nil || origin < 0 || origin >= len(p.heard) || seq < 0 {
		w.what = "published by no one"
		p.wrong = append(p.wrong, w)
		return
	}
	last, seen := p.last[listener][origin][run]
	switch {
	case !p.heard[listener][origin].add(seq):
		w.what = "twice"
		p.wrong = append(p.wrong, w)
	case seen && seq < last.seq:
		w.what, w.before = "out of order", last
		p.wrong = append(p.wrong, w)
	default:
		p.last[listener][origin][run] = heard{seq, at}
	}
	p.count[listener][origin]++
}

// describe tells what was wrong with w, when its messages were published
// and heard (seconds into the history), and the faults around them.
func (p *pubsubCheck) describe(w wrongMessage) string {
	sec := func(ns int64) string { return fmt.Sprintf("%.3fs", float64(ns)/1e9) }
	published := func(seq int) int64 {
		if seq < len(p.acked[w.origin]) {
			return p.acked[w.origin][seq]
		}
		return 0
	}
	s := fmt.Sprintf("n%d heard %q %s at %s", w.listener+1, w.payload, w.what, sec(w.at))
	if w.what == "published by no one" {
		return s
	}
	from := published(w.seq)
	s += fmt.Sprintf(", published on n%d (answered at %s)", w.origin+1, sec(from))
	if w.what == "out of order" {
		s += fmt.Sprintf(", after seq %d (answered at %s, heard at %s)", w.before.seq, sec(published(w.before.seq)), sec(w.before.at))
	}
	var faults []string
	p.h.mu.Lock()
	defer p.h.mu.Unlock()
	for _, e := range p.h.events {
		if e.end >= from-10e9 && e.start <= w.at {
			faults = append(faults, fmt.Sprintf("%s %s %s-%s", e.kind, e.node, sec(e.start), sec(e.end)))
		}
	}
	return s + "; faults around: " + strings.Join(faults, ", ")
}

// check fails t if a message was heard twice, out of order or was no
// publisher's, or if a node heard nothing published on some node.
func (p *pubsubCheck) check(t *testing.T) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.wrong[:min(len(p.wrong), 10)] {
		t.Errorf("pub/sub: %s", p.describe(w))
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
