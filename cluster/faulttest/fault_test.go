//go:build unix

package faulttest

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"
)

const (
	// keyPeriod is how long the clients use one set of keys before moving
	// to fresh ones: it bounds the length of each key's history, and so
	// the checker's work, however long the test runs.
	keyPeriod = 5 * time.Second
	// clientsPerNode is the number of concurrent clients of each node.
	clientsPerNode = 3
	// bitsRange is the offsets SETBIT and GETBIT use on the bits keys,
	// few so that operations conflict.
	bitsRange = 16
	// growRange is the offsets of the grow keys, where bits are only ever
	// set to 1.
	growRange = 128
	// opTimeout bounds a client's wait for a reply.
	opTimeout = 4 * time.Second
)

// duration returns how long the nemesis runs: PRESENCED_CHAOS_DURATION,
// or a default that fits the test in `make test`.
func duration(t *testing.T) time.Duration {
	if s := os.Getenv("PRESENCED_CHAOS_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("PRESENCED_CHAOS_DURATION: %v", err)
		}
		return d
	}
	if testing.Short() {
		return 20 * time.Second
	}
	return 60 * time.Second
}

// TestFault runs clients against all three nodes of a cluster of real
// processes while a nemesis kills, stops and partitions nodes, then checks
// that the history is linearizable, that no acknowledged write was lost,
// and that the replicas converge to the same state; beside them, pub/sub
// messages published on every node must reach every node, never twice.
func TestFault(t *testing.T) {
	dur := duration(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("PRESENCED_CHAOS_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("PRESENCED_CHAOS_SEED: %v", err)
		}
	}
	t.Logf("nemesis for %v, seed %d (PRESENCED_CHAOS_SEED replays the schedule)", dur, seed)
	c := startCluster(t, t.TempDir())
	universe := hllUniverse(t, c.nodes[0].admin)
	h := newHistory()
	t.Logf("the history's times (in seconds) count from %s, the nodes' logs' clock", h.begin.UTC().Format(time.RFC3339Nano))

	ctx, stopClients := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		for j := range clientsPerNode {
			w := i*clientsPerNode + j
			wg.Go(func() { h.add(runClient(ctx, h, n, w, seed+uint64(w)+1, universe)) })
		}
	}
	pubsub := newPubSubCheck(len(c.nodes), h)
	wg.Go(func() { pubsub.run(ctx, c) })
	digests := newReplicaDigests(len(c.nodes), h)
	wg.Go(func() { digests.run(ctx, c) })
	nemErr := runNemesis(c, h, time.Now().Add(dur), rand.New(rand.NewPCG(seed, 0)))
	stopClients()
	wg.Wait()
	if nemErr != nil {
		t.Fatalf("nemesis: %v", nemErr)
	}
	if err := c.healAll(); err != nil {
		t.Fatalf("healing: %v", err)
	}
	healed := time.Now()
	finals := finalReads(t, c, h)
	t.Logf("faults healed %v after the start; final reads took %v", healed.Sub(h.begin).Round(time.Millisecond),
		time.Since(healed).Round(time.Millisecond))
	t.Logf("history: %d records\n%s", len(h.records), h.stats())
	for _, u := range h.unexpected[1] {
		t.Errorf("unexpected error reply to a write, outcome unknown: %s", u)
	}
	for _, u := range h.unexpected[0] {
		t.Errorf("unexpected error reply to a read: %s", u)
	}
	checkLinearizable(t, h, 60*time.Second+dur)
	checkNoLostWrites(t, h, finals)
	checkConverged(t, c, digests)
	pubsub.check(t)
	for _, n := range c.nodes {
		if n.exitedUnexpectedly() {
			t.Errorf("%s exited on its own", n.id)
		}
	}
}

// runClient issues random operations to n until ctx ends and returns
// their records; universe is the HyperLogLog elements (see hllUniverse).
func runClient(ctx context.Context, h *history, n *node, w int, seed uint64, universe []string) []record {
	rdb := newClient(n, 1)
	defer rdb.Close()
	rng := rand.New(rand.NewPCG(seed, 0))
	client := h.newClient()
	var recs []record
	for seq := 0; ctx.Err() == nil; seq++ {
		in := randomInput(rng, int(time.Since(h.begin)/keyPeriod), fmt.Sprintf("w%d.%d", w, seq), universe)
		r := invoke(h, rdb, in)
		r.client, r.node = client, n.id
		recs = append(recs, r)
		if r.outcome == unknown {
			// Like a crashed Jepsen process: the operation stays open to
			// the end of the history, so the client takes a new identity.
			client = h.newClient()
		}
		if r.outcome != ok {
			// Pace retries against a node that is down.
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(20+rng.IntN(30)) * time.Millisecond):
			}
		}
	}
	return recs
}

// newClient returns a client of n that never retries, with timeouts
// longer than a node's own wait for a leader (so that an answering node's
// refusals are seen as refusals and not as timeouts).
func newClient(n *node, conns int) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: n.clientAddr, MaxRetries: -1, Protocol: 2, DisableIdentity: true, PoolSize: conns,
		DialTimeout: time.Second, ReadTimeout: opTimeout, WriteTimeout: opTimeout, PoolTimeout: opTimeout,
	})
}

// randomInput picks an operation on one of the keys of generation gen:
// two counters (INCR, GET), two registers (SET, GET), two bitmaps (SETBIT
// of 0 or 1, GETBIT, BITCOUNT), one bitmap whose bits are only set
// (SETBIT 1, GETBIT, BITCOUNT) and one HyperLogLog (PFADD of one to three
// elements of universe, PFCOUNT). SET writes the unique value val.
func randomInput(rng *rand.Rand, gen int, val string, universe []string) input {
	p := rng.IntN(100)
	switch k := rng.IntN(8); {
	case k == 7:
		in := input{kind: opPFCount, key: fmt.Sprintf("hll:%d", gen)}
		if p < 50 {
			in.kind = opPFAdd
			for range 1 + rng.IntN(3) {
				i := rng.IntN(len(universe))
				in.elems, in.mask = append(in.elems, universe[i]), in.mask|1<<i
			}
		}
		return in
	case k < 2:
		in := input{kind: opIncr, key: fmt.Sprintf("counter:%d:%d", gen, k)}
		if p < 40 {
			in.kind = opGet
		}
		return in
	case k < 4:
		in := input{kind: opSet, key: fmt.Sprintf("register:%d:%d", gen, k-2), value: val}
		switch {
		case p < 40:
			in.kind = opGet
		case p < 70:
			in.kind = opCas
		}
		return in
	case k < 6:
		in := input{key: fmt.Sprintf("bits:%d:%d", gen, k-4), offset: rng.Int64N(bitsRange)}
		switch {
		case p < 40:
			in.kind, in.bit = opSetBit, rng.IntN(2)
		case p < 80:
			in.kind = opGetBit
		default:
			in.kind = opBitCount
		}
		return in
	}
	in := input{key: fmt.Sprintf("grow:%d", gen), offset: rng.Int64N(growRange)}
	switch {
	case p < 50:
		in.kind, in.bit = opSetBit, 1
	case p < 75:
		in.kind = opGetBit
	default:
		in.kind = opBitCount
	}
	return in
}

// invoke runs in and records it.
func invoke(h *history, rdb *redis.Client, in input) record {
	ctx := context.Background()
	r := record{in: in, call: h.now()}
	var err error
	switch in.kind {
	case opGet:
		r.out.s, err = rdb.Get(ctx, in.key).Result()
		r.out.missing = err == redis.Nil
	case opSet:
		err = rdb.Set(ctx, in.key, in.value, 0).Err()
	case opIncr:
		r.out.n, err = rdb.Incr(ctx, in.key).Result()
	case opSetBit:
		r.out.n, err = rdb.SetBit(ctx, in.key, in.offset, in.bit).Result()
	case opGetBit:
		r.out.n, err = rdb.GetBit(ctx, in.key, in.offset).Result()
	case opBitCount:
		r.out.n, err = rdb.BitCount(ctx, in.key, nil).Result()
	case opPFAdd:
		r.out.n, err = rdb.PFAdd(ctx, in.key, anys(in.elems)...).Result()
	case opPFCount:
		r.out.n, err = rdb.PFCount(ctx, in.key).Result()
	case opCas:
		return invokeCas(h, rdb, r)
	}
	r.ret = h.now()
	r.outcome, r.reason = classify(err)
	return r
}

// anys returns ss as go-redis's arguments.
func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// invokeCas runs a CAS, go-redis's optimistic transaction: WATCH, GET,
// MULTI, SET, EXEC. An error before EXEC was sent is a definite failure;
// an EXEC that fails for the watch is a CAS that returned false.
func invokeCas(h *history, rdb *redis.Client, r record) record {
	ctx := context.Background()
	sent := false
	err := rdb.Watch(ctx, func(tx *redis.Tx) error {
		v, err := tx.Get(ctx, r.in.key).Result()
		if err != nil && err != redis.Nil {
			return err
		}
		r.out.s, r.out.missing = v, err == redis.Nil
		sent = true
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, r.in.key, r.in.value, 0)
			return nil
		})
		return err
	}, r.in.key)
	r.ret = h.now()
	r.out.swapped = err == nil
	if errors.Is(err, redis.TxFailedErr) {
		err = nil
	}
	r.outcome, r.reason = classify(err)
	if err != nil && !sent {
		r.outcome = failed
	}
	return r
}

// runNemesis injects faults in turn until the deadline: it kills the
// leader and restarts it, stops the leader and resumes it, and cuts a
// random node off, each for a random while, and has the leader hand its
// leadership over, with a quiet while between faults. Every fault is
// healed before the next.
func runNemesis(c *cluster, h *history, until time.Time, rng *rand.Rand) error {
	faults := []func(*cluster, *history, *rand.Rand) error{killLeader, stopLeader, partitionNode, handOver}
	for i := rng.IntN(len(faults)); time.Now().Before(until); i++ {
		if err := faults[i%len(faults)](c, h, rng); err != nil {
			return err
		}
		for _, n := range c.nodes {
			if n.exitedUnexpectedly() {
				return fmt.Errorf("%s exited on its own", n.id)
			}
		}
		time.Sleep(randDuration(rng, time.Second, 2500*time.Millisecond))
	}
	return nil
}

// leaderTimeout bounds the wait for a leader while all nodes are up and
// connected: much longer than an election.
const leaderTimeout = 20 * time.Second

func killLeader(c *cluster, h *history, rng *rand.Rand) error {
	l, err := c.waitLeader(leaderTimeout)
	if err != nil {
		return fmt.Errorf("no leader before a kill: %w", err)
	}
	e := event{kind: "kill", node: l.id, start: h.now()}
	l.kill()
	time.Sleep(randDuration(rng, 300*time.Millisecond, 2500*time.Millisecond))
	if err := l.restart(); err != nil {
		return err
	}
	e.end = h.now()
	h.addEvent(e)
	return nil
}

func stopLeader(c *cluster, h *history, rng *rand.Rand) error {
	l, err := c.waitLeader(leaderTimeout)
	if err != nil {
		return fmt.Errorf("no leader before a stop: %w", err)
	}
	e := event{kind: "stop", node: l.id, start: h.now()}
	if err := l.stop(); err != nil {
		return err
	}
	time.Sleep(randDuration(rng, 500*time.Millisecond, 4*time.Second))
	if err := l.resume(); err != nil {
		return err
	}
	e.end = h.now()
	h.addEvent(e)
	return nil
}

func partitionNode(c *cluster, h *history, rng *rand.Rand) error {
	n := c.nodes[rng.IntN(len(c.nodes))]
	e := event{kind: "partition", node: n.id, start: h.now()}
	n.proxy.partition()
	time.Sleep(randDuration(rng, time.Second, 5*time.Second))
	err := n.proxy.heal()
	e.end = h.now()
	h.addEvent(e)
	return err
}

// handOver has a random node ask for a failover, as an operator does,
// while clients write: with SENTINEL FAILOVER (the leader hands its
// leadership to the follower furthest ahead), REPLICAOF NO ONE (to the
// node asked) or REPLICAOF of a random node's client address (to that
// node); a follower asks the leader. A failover refused (another under
// way, say) is no failure of the test.
func handOver(c *cluster, h *history, rng *rand.Rand) error {
	if _, err := c.waitLeader(leaderTimeout); err != nil {
		return fmt.Errorf("no leader before a hand-over: %w", err)
	}
	n := c.nodes[rng.IntN(len(c.nodes))]
	rdb := redis.NewClient(&redis.Options{
		Addr: n.clientAddr, MaxRetries: -1, Protocol: 2, DisableIdentity: true,
		DialTimeout: time.Second, ReadTimeout: opTimeout, WriteTimeout: opTimeout,
	})
	defer rdb.Close()
	e := event{kind: "handover", node: n.id, start: h.now()}
	args := []any{"SENTINEL", "FAILOVER", "mymaster"}
	switch to := c.nodes[rng.IntN(len(c.nodes))]; rng.IntN(3) {
	case 1:
		args = []any{"REPLICAOF", "NO", "ONE"}
	case 2:
		host, port, _ := net.SplitHostPort(to.clientAddr)
		args = []any{"REPLICAOF", host, port}
	}
	err := rdb.Do(context.Background(), args...).Err()
	e.end = h.now()
	h.addEvent(e)
	if err != nil {
		c.t.Logf("hand-over asked of %s with %v: %v", n.id, args, err)
	}
	return nil
}

// restart starts a killed node and, once it answers, lets other nodes
// reach it again.
func (n *node) restart() error {
	if err := n.start(); err != nil {
		return err
	}
	if err := n.waitReady(30 * time.Second); err != nil {
		return err
	}
	return n.proxy.setDown(false)
}

// randDuration returns a random duration in [lo, hi).
func randDuration(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

// healAll heals every proxy, resumes stopped nodes and restarts killed
// ones.
func (c *cluster) healAll() error {
	for _, n := range c.nodes {
		if err := n.proxy.heal(); err != nil {
			return err
		}
		n.mu.Lock()
		cmd, stopped := n.mu.cmd, n.mu.stopped
		n.mu.Unlock()
		switch {
		case cmd == nil:
			if err := n.restart(); err != nil {
				return err
			}
		case stopped:
			if err := n.resume(); err != nil {
				return err
			}
		}
	}
	for _, n := range c.nodes {
		if err := n.waitReady(30 * time.Second); err != nil {
			return err
		}
	}
	return nil
}

// finalReads reads every key the clients used through every node, once
// the faults are healed, adding the reads to the history, and returns
// the values read through the first node.
func finalReads(t *testing.T, c *cluster, h *history) map[string]output {
	// A HyperLogLog is read with PFCOUNT, the rest with GET.
	keys := map[string]opKind{}
	for _, r := range h.records {
		if _, seen := keys[r.in.key]; !seen {
			keys[r.in.key] = opGet
		}
		if r.in.kind == opPFAdd || r.in.kind == opPFCount {
			keys[r.in.key] = opPFCount
		}
	}
	finals := map[string]output{}
	for i, n := range c.nodes {
		rdb := newClient(n, 1)
		defer rdb.Close()
		client := h.newClient()
		var recs []record
		for key, kind := range keys {
			in := input{kind: kind, key: key}
			var r record
			err := poll(30*time.Second, func(context.Context) bool {
				r = invoke(h, rdb, in)
				return r.outcome == ok
			})
			if err != nil {
				t.Fatalf("final read of %s through %s: %s (%v): the cluster did not recover", key, n.id, r.reason, err)
			}
			r.client, r.node, r.final = client, n.id, true
			recs = append(recs, r)
			if i == 0 {
				finals[key] = r.out
			}
		}
		h.add(recs)
	}
	return finals
}

// checkLinearizable checks the history with porcupine; on failure it
// writes a visualization and a listing of each failing key's history.
func checkLinearizable(t *testing.T, h *history, timeout time.Duration) {
	ops := h.operations()
	begin := time.Now()
	res := porcupine.CheckOperationsTimeout(model, ops, timeout)
	t.Logf("linearizability check of %d operations on %d keys: %s in %v",
		len(ops), len(partitionByKey(ops)), res, time.Since(begin).Round(time.Millisecond))
	if res == porcupine.Ok {
		return
	}
	if res == porcupine.Unknown {
		t.Errorf("linearizability check timed out after %v: result unknown (history too long or too concurrent)", timeout)
	}
	dir := outDir(t)
	for _, part := range partitionByKey(ops) {
		key := part[0].Input.(input).key
		begin := time.Now()
		res := porcupine.CheckOperationsTimeout(model, part, timeout/4)
		if res == porcupine.Ok {
			continue
		}
		open := 0
		for _, op := range part {
			if op.Output.(output).unknown {
				open++
			}
		}
		t.Logf("key %s: %d operations, %d of unknown outcome: %s in %v", key, len(part), open, res, time.Since(begin).Round(time.Millisecond))
		if res == porcupine.Unknown {
			continue
		}
		res, info := porcupine.CheckOperationsVerbose(model, part, timeout)
		info.AddAnnotations(h.annotations())
		name := strings.ReplaceAll(key, ":", "_")
		html := filepath.Join(dir, name+".html")
		if err := porcupine.VisualizePath(model, info, html); err != nil {
			t.Logf("visualizing %s: %v", key, err)
		}
		txt := filepath.Join(dir, name+".txt")
		if err := os.WriteFile(txt, []byte(h.dump(key)), 0o644); err != nil {
			t.Logf("writing %s: %v", txt, err)
		}
		t.Errorf("history of key %s (%d operations) is not linearizable (%s); visualization %s, listing %s",
			key, len(part), res, html, txt)
	}
}

// outDir returns the directory for the artifacts of a failed check:
// PRESENCED_CHAOS_OUT, or a new directory that outlives the test.
func outDir(t testing.TB) string {
	if d := os.Getenv("PRESENCED_CHAOS_OUT"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	d, err := os.MkdirTemp("", "presenced-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// checkNoLostWrites checks the final values against the acknowledged
// writes: a counter holds at least its acknowledged INCRs and at most
// those and the unknown ones; a grow key has every bit an acknowledged
// SETBIT set, and no bit that no SETBIT may have set; a HyperLogLog counts
// at least the elements acknowledged PFADDs added, and at most those and
// the unknown ones'.
func checkNoLostWrites(t *testing.T, h *history, finals map[string]output) {
	acked, maybe := map[string]int64{}, map[string]int64{}
	setBits, maybeBits := map[string]map[int64]bool{}, map[string]map[int64]bool{}
	added, maybeAdded := map[string]uint64{}, map[string]uint64{}
	for _, r := range h.records {
		if r.final || !r.in.kind.write() || r.outcome == failed {
			continue
		}
		key := r.in.key
		switch {
		case r.in.kind == opIncr && r.outcome == ok:
			acked[key]++
		case r.in.kind == opIncr:
			maybe[key]++
		case r.in.kind == opPFAdd:
			maybeAdded[key] |= r.in.mask
			if r.outcome == ok {
				added[key] |= r.in.mask
			}
		case strings.HasPrefix(key, "grow:"):
			if maybeBits[key] == nil {
				setBits[key], maybeBits[key] = map[int64]bool{}, map[int64]bool{}
			}
			maybeBits[key][r.in.offset] = true
			if r.outcome == ok {
				setBits[key][r.in.offset] = true
			}
		}
	}
	var incrs, bitsSet int64
	for key, n := range acked {
		incrs += n
		got, err := strconv.ParseInt(finals[key].s, 10, 64)
		if err != nil || got < n || got > n+maybe[key] {
			t.Errorf("counter %s is %q after %d acknowledged and %d unknown INCRs", key, finals[key].s, n, maybe[key])
		}
	}
	for key, want := range setBits {
		v := finals[key].s
		var lost, extra []int64
		for off := range int64(len(v) * 8) {
			if bitAt(v, off) == 1 && !maybeBits[key][off] {
				extra = append(extra, off)
			}
		}
		for off := range want {
			bitsSet++
			if bitAt(v, off) == 0 {
				lost = append(lost, off)
			}
		}
		if len(lost)+len(extra) > 0 {
			slices.Sort(lost)
			t.Errorf("%s: acknowledged SETBITs lost at offsets %v; bits set that no SETBIT set: %v", key, lost, extra)
		}
	}
	var elems int
	for key, mask := range added {
		least, most := bits.OnesCount64(mask), bits.OnesCount64(maybeAdded[key])
		elems += least
		if got := finals[key].n; got < int64(least) || got > int64(most) {
			t.Errorf("%s counts %d after acknowledged PFADDs of %d elements, and unknown ones of %d more",
				key, got, least, most-least)
		}
	}
	t.Logf("lost-write check: %d counters (%d acknowledged INCRs), %d grow bitmaps (%d acknowledged bits), "+
		"%d HyperLogLogs (%d acknowledged elements)", len(acked), incrs, len(setBits), bitsSet, len(added), elems)
}
