//go:build unix

package faulttest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// digestInterval is how often replicaDigests asks each node for its
// digest while the faults run.
const digestInterval = 100 * time.Millisecond

// replicaDigests gathers what RAFT DIGEST says on every node, during the
// faults and after them: the index of the latest entry a node applied,
// with the digest of its state then (the keys' versions included).
// Replicas that applied the same entries hold the same state, so every
// index two nodes reported must come with one digest. Sampling all along
// catches a replica that diverged and was later made equal again by a
// snapshot it installed, which a look at the end alone would miss.
type replicaDigests struct {
	h *history // the clock the samples are stamped with

	mu   sync.Mutex
	seen []map[uint64]digestSample // per node: applied index -> what it reported first
}

// digestSample is a node's digest at an applied index, with its parts
// (the data's digest, and the Applies that number WATCH's versions), and
// when the node reported it.
type digestSample struct {
	digest, data, applies string
	at                    int64
}

func newReplicaDigests(nodes int, h *history) *replicaDigests {
	d := &replicaDigests{h: h, seen: make([]map[uint64]digestSample, nodes)}
	for i := range d.seen {
		d.seen[i] = map[uint64]digestSample{}
	}
	return d
}

// run asks every node of c for its digest every digestInterval until ctx
// ends; a node that does not answer (stopped, killed) is asked again at
// the next turn.
func (d *replicaDigests) run(ctx context.Context, c *cluster) {
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Go(func() {
			t := time.NewTicker(digestInterval)
			defer t.Stop()
			for {
				d.ask(ctx, n, i)
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		})
	}
	wg.Wait()
}

// ask records the digest of n, node i, if it answers within a second.
func (d *replicaDigests) ask(ctx context.Context, n *node, i int) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	info, err := n.raftFields(ctx, "DIGEST")
	if err != nil {
		return
	}
	index, err := strconv.ParseUint(info["applied_index"], 10, 64)
	if err != nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.seen[i][index]; !ok {
		d.seen[i][index] = digestSample{info["digest"], info["data_digest"], info["applies"], d.h.now()}
	}
}

// common returns the latest applied index every node reported.
func (d *replicaDigests) common() (uint64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var latest uint64
	found := false
	for index := range d.seen[0] {
		all := true
		for _, seen := range d.seen[1:] {
			_, ok := seen[index]
			all = all && ok
		}
		if all && (!found || index > latest) {
			latest, found = index, true
		}
	}
	return latest, found
}

// disagreements describes the applied indexes, in order, at which two
// nodes reported different digests, and returns how many indexes two or
// more nodes reported.
func (d *replicaDigests) disagreements() (wrong []string, compared int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	indexes := map[uint64]bool{}
	for _, seen := range d.seen {
		for index := range seen {
			indexes[index] = true
		}
	}
	sorted := slices.Sorted(func(yield func(uint64) bool) {
		for index := range indexes {
			if !yield(index) {
				return
			}
		}
	})
	for _, index := range sorted {
		var reports []string
		digests := map[string]bool{}
		for i, seen := range d.seen {
			if s, ok := seen[index]; ok {
				reports = append(reports, fmt.Sprintf("n%d %s (data %s, applies %s) at %.3fs", i+1, s.digest, s.data, s.applies, float64(s.at)/1e9))
				digests[s.digest] = true
			}
		}
		if len(reports) < 2 {
			continue
		}
		compared++
		if len(digests) > 1 {
			wrong = append(wrong, fmt.Sprintf("applied index %d: %v", index, reports))
		}
	}
	return wrong, compared
}

// checkConverged samples the nodes' digests until all three reported the
// same applied index (writes and ticks may advance the log meanwhile, so
// every reply is kept), then checks that no two nodes ever reported different
// digests at one index, during the faults or after.
func checkConverged(t *testing.T, c *cluster, d *replicaDigests) {
	err := poll(60*time.Second, func(ctx context.Context) bool {
		var wg sync.WaitGroup
		for i, n := range c.nodes {
			wg.Go(func() { d.ask(ctx, n, i) })
		}
		wg.Wait()
		_, ok := d.common()
		return ok
	})
	if err != nil {
		t.Errorf("the nodes never reported the same applied index: %v", err)
	}
	wrong, compared := d.disagreements()
	for _, w := range wrong[:min(len(wrong), 10)] {
		t.Errorf("replicas diverged: digests differ at %s", w)
	}
	if len(wrong) > 10 {
		t.Errorf("replicas diverged at %d of the %d indexes compared, the last %s", len(wrong), compared, wrong[len(wrong)-1])
	}
	if index, ok := d.common(); ok && len(wrong) == 0 {
		t.Logf("replicas converged: the same digest at each of %d applied indexes two or three nodes reported, the last at %d on all three",
			compared, index)
	}
}
