package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/presenced/presenced/store"
)

// TestOneNodeRepliesMatchStore checks that batches committed through a
// one-node cluster get exactly the replies the store gives when applied
// directly, appended after whatever the caller's buffer held.
func TestOneNodeRepliesMatchStore(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	n := c.nodes[0].node
	ref := store.New()
	batches := [][]store.Command{
		{cmd(0, "SETBIT", "online", "100", "1"), cmd(0, "SETBIT", "online", "7", "1"), cmd(0, "BITCOUNT", "online")},
		{cmd(0, "SET", "s", "hello"), cmd(0, "APPEND", "s", " world"), cmd(0, "GET", "s")},
		{cmd(0, "INCR", "s"), cmd(0, "SETBIT", "s", "-1", "1"), cmd(0, "NOSUCH")},
		{cmd(3, "INCRBY", "n", "41"), cmd(3, "INCR", "n"), cmd(0, "GET", "n"), cmd(3, "GET", "n")},
		{cmd(0, "DEL", "online", "s"), cmd(0, "EXISTS", "online", "s")},
	}
	var out store.Replies
	out.Simple("prefix")
	out.Ends = append(out.Ends, out.Len())
	var want store.Replies
	want.Simple("prefix")
	want.Ends = append(want.Ends, want.Len())
	for _, b := range batches {
		if err := n.Apply(b, &out); err != nil {
			t.Fatal(err)
		}
		ref.Apply(b, time.Now().UnixMilli(), &want)
	}
	if got, exp := replies(&out), replies(&want); fmt.Sprint(got) != fmt.Sprint(exp) {
		t.Fatalf("replies through the node:\n%q\ndirect:\n%q", got, exp)
	}
	if string(out.B) != string(want.B) {
		t.Fatalf("reply bytes differ:\n%q\n%q", out.B, want.B)
	}
	if err := n.Apply(nil, &out); err != nil {
		t.Fatalf("empty batch: %v", err)
	}
}

// TestThreeNodesReplicate writes on the leader and checks that every
// replica ends with the same state, and that followers refuse writes.
func TestThreeNodesReplicate(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	l := c.leader()
	var out store.Replies
	for i := range 50 {
		b := []store.Command{
			cmd(0, "SETBIT", "online", strconv.Itoa(i*997), "1"),
			cmd(i%4, "INCR", "count"),
			cmd(1, "SET", "k"+strconv.Itoa(i), "v", "PX", "3600000"),
		}
		if err := l.node.Apply(b, &out); err != nil {
			t.Fatal(err)
		}
	}
	c.converge()
	for _, tn := range c.nodes {
		got := read(tn.st, cmd(0, "BITCOUNT", "online"), cmd(2, "GET", "count"), cmd(1, "EXISTS", "k49"))
		if want := []string{":50\r\n", "$2\r\n12\r\n", ":1\r\n"}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %q, want %q", tn.id, got, want)
		}
		if tn == l {
			continue
		}
		// A write on a follower is forwarded to the leader; a forwarded
		// write is not forwarded again.
		var fwd store.Replies
		if err := tn.node.Apply([]store.Command{cmd(3, "INCR", "forwarded")}, &fwd); err != nil {
			t.Errorf("write on follower %s: %v", tn.id, err)
		}
		err := tn.node.ApplyLocal([]store.Command{cmd(0, "SET", "x", "1")}, &out)
		if !errors.Is(err, ErrNotLeader) || !strings.HasPrefix(redisError(err), "TRYAGAIN ") {
			t.Errorf("local write on follower %s: %v (%q)", tn.id, err, redisError(err))
		}
	}
	c.converge()
	for _, tn := range c.nodes {
		if got := read(tn.st, cmd(3, "GET", "forwarded")); got[0] != "$1\r\n2\r\n" {
			t.Errorf("%s: forwarded counter %q, want 2", tn.id, got)
		}
	}
}

// TestLeaderFailover kills the leader while clients write and checks that
// a new leader takes over, writes continue, and no acknowledged write is
// lost.
func TestLeaderFailover(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	const writers, perWriter = 8, 60
	var mu sync.Mutex
	acked := map[int]bool{}   // SETBIT offsets acknowledged
	unknown := map[int]bool{} // SETBIT offsets with an unknown outcome
	killAt := make(chan struct{})
	var killed atomic.Bool
	afterKill := 0 // writes acknowledged after the leader died
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				if w == 0 && i == perWriter/3 {
					close(killAt)
				}
				bit := w*perWriter + i
				err := c.applyAnywhere([]store.Command{cmd(0, "SETBIT", "online", strconv.Itoa(bit), "1")})
				mu.Lock()
				switch {
				case err == nil:
					acked[bit] = true
					if killed.Load() {
						afterKill++
					}
				case errors.Is(err, ErrUnknownOutcome):
					unknown[bit] = true
				case errors.Is(err, ErrNoLeader):
					// No leader within LeaderWait, an election slowed by
					// a loaded machine: a definite failure, so the
					// counts below find the bit unset.
				default:
					t.Errorf("write %d: %v", bit, err)
				}
				mu.Unlock()
			}
		}()
	}
	<-killAt
	old := c.leader()
	c.kill(old)
	killed.Store(true)
	wg.Wait()
	if afterKill == 0 {
		t.Error("no write acknowledged after the leader died")
	}
	if l := c.leader(); l == old {
		t.Fatal("dead node still leads")
	}
	c.converge()
	if len(acked) < writers*perWriter*2/3 {
		t.Errorf("only %d of %d writes acknowledged", len(acked), writers*perWriter)
	}
	for _, tn := range c.live() {
		for bit := range acked {
			if got := read(tn.st, cmd(0, "GETBIT", "online", strconv.Itoa(bit)))[0]; got != ":1\r\n" {
				t.Fatalf("%s lost acknowledged bit %d", tn.id, bit)
			}
		}
		count := read(tn.st, cmd(0, "BITCOUNT", "online"))[0]
		n, _ := strconv.Atoi(strings.Trim(count, ":\r\n"))
		if n < len(acked) || n > len(acked)+len(unknown) {
			t.Errorf("%s counts %d bits; %d acknowledged, %d unknown", tn.id, n, len(acked), len(unknown))
		}
	}
}

// newStillCluster starts three nodes that wait an hour before they stand
// for election on their own: only a hand-over makes another node lead.
func newStillCluster(t *testing.T) *testCluster {
	return newTestCluster(t, 3, func(cfg *Config) {
		cfg.HeartbeatTimeout = time.Hour
		cfg.ElectionTimeout = time.Hour
		cfg.LeaderLeaseTimeout = time.Hour / 2 // shorter: see standNow
	})
}

// TestHandover hands the leadership over in a cluster whose nodes wait an
// hour before they stand for election on their own: only the hand-over
// can make another node lead, and it does so at once, with every
// acknowledged write kept.
func TestHandover(t *testing.T) {
	c := newStillCluster(t)
	old := c.leader()
	var followers []*testNode
	for _, tn := range c.nodes {
		if tn != old {
			followers = append(followers, tn)
		}
	}
	if err := followers[0].node.Handover(c.ctx, ""); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("hand-over from a follower: %v, want ErrNotLeader", err)
	}
	if err := old.node.Handover(c.ctx, old.id); err == nil || !strings.Contains(err.Error(), "is not another voter") {
		t.Fatalf("hand-over to itself: %v", err)
	}
	incr := []store.Command{cmd(0, "INCR", "handed")}
	if err := old.node.Apply(incr, new(store.Replies)); err != nil {
		t.Fatal(err)
	}
	to := followers[1]
	if err := old.node.Handover(c.ctx, to.id); err != nil {
		t.Fatal(err)
	}
	if l := c.leader(); l != to {
		t.Fatalf("%s leads after the hand-over to %s", l.id, to.id)
	}
	if err := to.node.Apply(incr, new(store.Replies)); err != nil {
		t.Fatal(err)
	}
	if err := to.node.Handover(c.ctx, ""); err != nil {
		t.Fatal(err)
	}
	if l := c.leader(); l == to {
		t.Fatalf("%s leads on after handing over to any voter", l.id)
	}
	// A follower asks the leader to hand over to it (CLUSTER FAILOVER).
	var asker *testNode
	for _, tn := range c.nodes {
		if tn != c.leader() {
			asker = tn
		}
	}
	if err := asker.node.Failover(c.ctx, "nosuch"); err == nil || !strings.Contains(err.Error(), "is not a member") {
		t.Fatalf("failover to a stranger: %v", err)
	}
	if err := asker.node.Failover(c.ctx, asker.id); err != nil {
		t.Fatal(err)
	}
	if l := c.leader(); l != asker {
		t.Fatalf("%s leads after %s asked for the leadership", l.id, asker.id)
	}
	c.converge()
	for _, tn := range c.nodes {
		if got := read(tn.st, cmd(0, "GET", "handed"))[0]; got != "$1\r\n2\r\n" {
			t.Errorf("%s: GET handed = %q, want 2", tn.id, got)
		}
	}
}

// TestHandoverBackAndForth hands the leadership back and forth between
// two nodes, each hand-over asked as soon as the one before returned:
// raft clears a leader's note of its last transfer a moment after the
// transfer's answer, so a node that leads again at once may still hold
// it, and the hand-over must wait it out rather than fail.
func TestHandoverBackAndForth(t *testing.T) {
	c := newStillCluster(t)
	a := c.leader()
	b := c.nodes[0]
	if b == a {
		b = c.nodes[1]
	}
	for i := range 20 {
		if err := a.node.Handover(c.ctx, b.id); err != nil {
			t.Fatalf("hand-over %d, %s to %s: %v", i, a.id, b.id, err)
		}
		if l := c.leader(); l != b {
			t.Fatalf("hand-over %d: %s leads, not %s", i, l.id, b.id)
		}
		a, b = b, a
	}
}

// TestHandoverAlone checks that a lone voter has nobody to hand its
// leadership to.
func TestHandoverAlone(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	if err := c.leader().node.Handover(c.ctx, ""); !errors.Is(err, ErrAlone) {
		t.Fatalf("hand-over of a lone voter: %v, want ErrAlone", err)
	}
}

// applyAnywhere applies cmds on the current leader, retrying while no
// node leads or the write went to a node that stopped leading before
// taking it: the retry is safe because those writes were not applied.
func (c *testCluster) applyAnywhere(cmds []store.Command) error {
	for {
		var out store.Replies
		err := c.leaderNow().Apply(cmds, &out)
		if !errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrClosed) {
			return err
		}
		if c.ctx.Err() != nil {
			return c.ctx.Err()
		}
	}
}

// leaderNow waits for a leader as leader does, but is safe to call from
// other goroutines than the test's.
func (c *testCluster) leaderNow() *Node {
	for {
		for _, tn := range c.nodes {
			if tn.node.IsLeader() {
				return tn.node
			}
		}
		var n *Node
		for _, tn := range c.nodes {
			if !tn.node.closed.Load() {
				n = tn.node
				break
			}
		}
		seen := n.leaders.get()
		for _, tn := range c.nodes {
			if tn.node.IsLeader() {
				return tn.node
			}
		}
		if n.leaders.wait(c.ctx, seen+1) != nil {
			return n // the test is over; Apply fails
		}
	}
}

// TestPartitionedLeader cuts the leader off while it commits a write: the
// write's outcome is unknown to its caller, the majority elects a new
// leader, and after healing the replicas agree (the cut-off write lost).
func TestPartitionedLeader(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	old := c.leader()
	var out store.Replies
	if err := old.node.Apply([]store.Command{cmd(0, "SET", "a", "1")}, &out); err != nil {
		t.Fatal(err)
	}
	c.isolate(old)
	err := old.node.Apply([]store.Command{cmd(0, "SET", "b", "lost")}, &out)
	if !errors.Is(err, ErrUnknownOutcome) || !strings.HasPrefix(redisError(err), "UNCERTAIN ") {
		t.Fatalf("write on a cut-off leader: %v (%q)", err, redisError(err))
	}
	old.dead = true // out of the majority's view while cut off
	l := c.leader()
	if err := l.node.Apply([]store.Command{cmd(0, "SET", "c", "3")}, &out); err != nil {
		t.Fatal(err)
	}
	old.dead = false
	c.heal()
	c.converge()
	for _, tn := range c.nodes {
		got := read(tn.st, cmd(0, "GET", "a"), cmd(0, "GET", "b"), cmd(0, "GET", "c"))
		if want := []string{"$1\r\n1\r\n", "$-1\r\n", "$1\r\n3\r\n"}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %q, want %q", tn.id, got, want)
		}
	}
}

// TestSnapshotInstall lets a follower fall behind a leader that compacted
// its log, so the follower catches up by installing a snapshot.
func TestSnapshotInstall(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.TrailingLogs = 2 })
	l := c.leader()
	var lagging *testNode
	for _, tn := range c.nodes {
		if tn != l {
			lagging = tn
		}
	}
	c.isolate(lagging)
	var out store.Replies
	for i := range 30 {
		b := []store.Command{cmd(0, "SETBIT", "online", strconv.Itoa(i*7919), "1"), cmd(2, "SET", "s"+strconv.Itoa(i), "v", "PX", "600000")}
		if err := l.node.Apply(b, &out); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.node.Snapshot(); err != nil {
		t.Fatal(err)
	}
	c.heal()
	c.converge()
	if lagging.node.Stats().Restores == 0 {
		t.Error("the lagging follower caught up without a snapshot")
	}
	if got := read(lagging.st, cmd(0, "BITCOUNT", "online"), cmd(2, "EXISTS", "s29")); fmt.Sprint(got) != fmt.Sprint([]string{":30\r\n", ":1\r\n"}) {
		t.Errorf("after snapshot install: %q", got)
	}
}

// TestRestartAfterSnapshotInstall restarts a follower whose log on disk
// has the gap that installing a snapshot leaves: what it had of the log
// before the snapshot, then the entries after it. It must start, and
// catch up.
func TestRestartAfterSnapshotInstall(t *testing.T) {
	dirs := map[string]string{}
	durable := func(cfg *Config) {
		cfg.TrailingLogs = 2
		cfg.AppendOnly = true
		if dirs[cfg.NodeID] == "" {
			dirs[cfg.NodeID] = t.TempDir()
		}
		cfg.Dir = dirs[cfg.NodeID]
	}
	c := newTestCluster(t, 3, durable)
	l := c.leader()
	var lagging *testNode
	for _, tn := range c.nodes {
		if tn != l {
			lagging = tn
		}
	}
	write := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if err := l.node.Apply([]store.Command{cmd(0, "SETBIT", "online", strconv.Itoa(i*7919), "1")}, new(store.Replies)); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(0, 10)
	c.converge()
	c.isolate(lagging)
	write(10, 40)
	if err := l.node.Snapshot(); err != nil {
		t.Fatal(err)
	}
	c.heal()
	write(40, 45)
	c.converge()
	if lagging.node.Stats().Restores == 0 {
		t.Fatal("the lagging follower caught up without a snapshot")
	}
	if err := lagging.node.Close(); err != nil {
		t.Fatal(err)
	}
	c.start(lagging, false, durable)
	write(45, 50)
	c.converge()
	if got := read(lagging.st, cmd(0, "BITCOUNT", "online")); fmt.Sprint(got) != fmt.Sprint([]string{":50\r\n"}) {
		t.Errorf("after the restart: %q", got)
	}
}

// TestBadEntrySkipped checks that an entry that does not decode changes
// nothing and reports the decoding error to its proposer.
func TestBadEntrySkipped(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	l := c.leader()
	term := l.node.Stats().Term
	before := l.st.Digest()
	f := l.node.raft.Apply([]byte("not an entry"), 0)
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	err, _ := f.Response().(error)
	if !errors.Is(err, ErrBadEntry) {
		t.Fatalf("response to a bad entry: %v", f.Response())
	}
	r := &request{cmds: []store.Command{cmd(0, "GET", "x")}, out: new(store.Replies), done: make(chan error, 1)}
	l.node.batch.finish([]*request{r}, f.Response(), nil)
	if err := <-r.done; !errors.Is(err, ErrBadEntry) {
		t.Fatalf("caller of a bad entry got %v", err)
	}
	// A new leader commits an entry, which moves the store's time: only
	// under the same leader must the digest be the same.
	if l.st.Digest() != before && c.leader() == l && l.node.Stats().Term == term {
		t.Error("a bad entry changed the store")
	}
	c.converge()
}

// gatedMachine holds the first Apply after it is armed until released, so
// a test can line up callers behind an entry in flight, or keep a node
// behind the others.
type gatedMachine struct {
	StateMachine
	armed   atomic.Bool
	once    sync.Once
	blocked chan struct{}
	release chan struct{}
}

func (g *gatedMachine) Apply(cmds []store.Command, now int64, out *store.Replies) {
	g.gate()
	g.StateMachine.Apply(cmds, now, out)
}

func (g *gatedMachine) ApplyEach(now int64, batches [][]store.Command, outs []*store.Replies, done func(i int)) {
	g.gate()
	g.StateMachine.ApplyEach(now, batches, outs, done)
}

func newGatedMachine(sm StateMachine) *gatedMachine {
	return &gatedMachine{StateMachine: sm, blocked: make(chan struct{}), release: make(chan struct{})}
}

// gate holds the first call after the machine is armed until released.
func (g *gatedMachine) gate() {
	if g.armed.Load() {
		g.once.Do(func() {
			close(g.blocked)
			<-g.release
		})
	}
}

// TestGroupCommit lines up many callers behind an entry in flight and
// checks that they ride in as few entries as the size bounds allow, and
// that each gets its own replies.
func TestGroupCommit(t *testing.T) {
	const callers = 64 // each sends a batch of 3 commands
	for _, tc := range []struct {
		maxCmds, entries int // entries, the gated one included
	}{
		{maxCmds: 16384, entries: 2},
		{maxCmds: 7, entries: 1 + callers/2},
		{maxCmds: 1, entries: 1 + callers}, // batches are never split
	} {
		t.Run(fmt.Sprint("MaxEntryCommands=", tc.maxCmds), func(t *testing.T) {
			n, outs, before := lineUp(t, callers, func(c *Config) { c.MaxEntryCommands = tc.maxCmds })
			if got := int(n.Stats().Entries - before); got != tc.entries {
				t.Errorf("%d callers took %d entries, want %d", callers+1, got, tc.entries)
			}
			// The batches were applied in some order, atomically: each
			// BITCOUNT equals the INCR before it, and INCRs are distinct.
			seen := map[string]bool{}
			for i := range outs {
				r := replies(&outs[i])
				if len(r) != 3 || r[1] != ":0\r\n" || r[0] != r[2] {
					t.Fatalf("caller %d: %q", i, r)
				}
				seen[r[0]] = true
			}
			if len(seen) != callers {
				t.Errorf("INCR replies not distinct: %d of %d", len(seen), callers)
			}
		})
	}
}

// lineUp starts a one-node cluster whose first entry is held in the state
// machine until callers more batches are queued behind it, then lets all
// commit and returns the node, each caller's replies, and the number of
// entries proposed before the callers'.
func lineUp(t *testing.T, callers int, configure func(*Config)) (*Node, []store.Replies, uint64) {
	t.Helper()
	g := newGatedMachine(FromStore(store.New()))
	cfg := testConfig("solo")
	cfg.Bootstrap = true
	cfg.MaxInflight = 1
	configure(&cfg)
	n := openTest(t, cfg, g)
	waitReady(t, n)
	base, entries := n.batch.enqueued.get(), n.Stats().Entries
	g.armed.Store(true)
	results := make(chan error, callers+1)
	outs := make([]store.Replies, callers)
	go func() { results <- n.Apply([]store.Command{cmd(0, "SET", "first", "1")}, new(store.Replies)) }()
	<-g.blocked
	for i := range callers {
		go func() {
			b := []store.Command{cmd(0, "INCR", "counter"), cmd(0, "SETBIT", "bits", strconv.Itoa(i), "1"), cmd(0, "BITCOUNT", "bits")}
			results <- n.Apply(b, &outs[i])
		}()
	}
	if err := n.batch.enqueued.wait(context.Background(), base+uint64(callers+1)); err != nil {
		t.Fatal(err)
	}
	close(g.release)
	for range callers + 1 {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	return n, outs, entries
}

// waitReady waits until a one-node cluster leads, applied its log and
// committed an entry of its own.
func waitReady(t testing.TB, n *Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := n.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.ready.wait(ctx, n.raft.CurrentTerm()); err != nil {
		t.Fatal(err)
	}
}

// openTest opens a node and closes it when the test ends.
func openTest(t *testing.T, cfg Config, sm StateMachine) *Node {
	t.Helper()
	n, err := Open(cfg, sm, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// TestTickExpires checks that the leader's ticks expire keys without any
// client write.
func TestTickExpires(t *testing.T) {
	c := newTestCluster(t, 1, func(cfg *Config) { cfg.TickInterval = 5 * time.Millisecond })
	tn := c.nodes[0]
	var out store.Replies
	if err := tn.node.Apply([]store.Command{cmd(0, "SET", "k", "v", "PX", "20")}, &out); err != nil {
		t.Fatal(err)
	}
	for tn.st.Stats().ExpiredKeys == 0 {
		applied := tn.node.Stats().AppliedIndex
		if err := tn.node.WaitApplied(c.ctx, applied+1); err != nil {
			t.Fatal("no tick expired the key:", err)
		}
	}
}

// TestQuietLeaderTicksWhenDue checks that a leader with nothing due
// proposes no ticks, though many of its intervals pass, and proposes one
// once a key's TTL passes: exactly one entry follows the writes, and it
// expires the key.
func TestQuietLeaderTicksWhenDue(t *testing.T) {
	c := newTestCluster(t, 1, func(cfg *Config) { cfg.TickInterval = 2 * time.Millisecond })
	tn := c.nodes[0]
	waitReady(t, tn.node)
	var out store.Replies
	cmds := []store.Command{cmd(0, "SET", "stays", "v"), cmd(0, "SET", "goes", "v", "PX", "100")}
	written := time.Now() // at or before the entry's stamp
	if err := tn.node.Apply(cmds, &out); err != nil {
		t.Fatal(err)
	}
	// The writes' entry: the applied index may not count it yet, since a
	// caller is answered before the rest of its entry is applied.
	writes := tn.node.CommitIndex()
	if err := tn.node.WaitApplied(c.ctx, writes+1); err != nil {
		t.Fatal("no tick expired the key:", err)
	}
	if waited := time.Since(written); tn.st.Stats().ExpiredKeys != 1 || waited < 90*time.Millisecond {
		t.Fatalf("the first entry after the writes, %v later, expired %d keys, want the key whose 100 ms passed",
			waited, tn.st.Stats().ExpiredKeys)
	}
}

// TestTick checks that Tick, on the leader and on a follower, moves the
// node's time to the leader's present though the leader proposes no ticks
// (its interval is an hour), and answers ErrNotLeader on a follower's
// TickLocal.
func TestTick(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	for _, tn := range c.nodes {
		before := time.Now().UnixMilli()
		if err := tn.node.Tick(c.ctx); err != nil {
			t.Fatalf("%s: %v", tn.id, err)
		}
		if now := tn.st.Now(); now < before {
			t.Fatalf("%s: time %d after Tick, before the call's %d", tn.id, now, before)
		}
		if !tn.node.IsLeader() {
			if _, err := tn.node.TickLocal(); err != ErrNotLeader {
				t.Fatalf("%s, a follower: TickLocal answered %v", tn.id, err)
			}
		}
	}
}

// TestMassExpiryTicksAtOnce arms more bits with one deadline than an
// entry expires and checks that, once a client write starts the expiry,
// the leader proposes ticks at once until every bit is gone, though its
// tick interval is an hour.
func TestMassExpiryTicksAtOnce(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	tn := c.nodes[0]
	const n = 50000
	var batch []store.Command
	for lo := 0; lo < n; lo += 1000 {
		args := []string{"BITPSETEX", "k", "1"}
		for off := lo; off < lo+1000; off++ {
			args = append(args, strconv.Itoa(off))
		}
		batch = append(batch, cmd(0, args...))
	}
	var out store.Replies
	if err := tn.node.Apply(batch, &out); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		var r store.Replies
		tn.st.Read([]store.Command{cmd(0, "BITCOUNT", "k")}, 0, &r)
		got, err := strconv.Atoi(strings.Trim(string(r.Reply(0)), ":\r\n"))
		if err != nil {
			t.Fatalf("BITCOUNT: %q", r.Reply(0))
		}
		return got
	}
	// Writes move log time on until one passes the deadlines.
	for count() == n {
		if err := tn.node.Apply([]store.Command{cmd(0, "SET", "clock", "x")}, &out); err != nil {
			t.Fatal(err)
		}
	}
	if left := count(); left == 0 {
		t.Fatalf("one entry expired all %d bits", n)
	}
	for {
		applied := tn.node.Stats().AppliedIndex
		left := count()
		if left == 0 {
			return
		}
		// The entries up to applied left bits due, so a tick follows.
		if err := tn.node.WaitApplied(c.ctx, applied+1); err != nil {
			t.Fatalf("%d bits left and no tick: %v", left, err)
		}
	}
}

// TestDurableRestart writes to a one-node cluster that keeps its log in a
// directory, restarts it, and reads the data back, in each fsync mode, from
// the log alone and from a snapshot plus the log after it.
func TestDurableRestart(t *testing.T) {
	for _, fsync := range []string{FsyncAlways, FsyncEverySec, FsyncNo} {
		for _, snapshot := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/snapshot=%v", fsync, snapshot), func(t *testing.T) {
				t.Parallel()
				cfg := testConfig("solo")
				cfg.Bootstrap = true
				cfg.AppendOnly = true
				cfg.AppendFsync = fsync
				cfg.Dir = t.TempDir()
				cfg.RaftAddr = "127.0.0.1:0"
				cfg.TrailingLogs = 1
				st := store.New()
				n := openTest(t, cfg, FromStore(st))
				waitReady(t, n)
				var out store.Replies
				for i := range 20 {
					b := []store.Command{cmd(i%16, "SETBIT", "online", strconv.Itoa(i*1000), "1"), cmd(0, "SET", "k", strconv.Itoa(i), "PX", "3600000")}
					if err := n.Apply(b, &out); err != nil {
						t.Fatal(err)
					}
					if snapshot && i == 10 {
						if err := n.Snapshot(); err != nil {
							t.Fatal(err)
						}
					}
				}
				if err := n.Close(); err != nil {
					t.Fatal(err)
				}
				if err := n.Close(); err != nil {
					t.Fatal("second Close:", err)
				}
				st2 := store.New()
				n2 := openTest(t, cfg, FromStore(st2))
				waitReady(t, n2)
				if got := read(st2, cmd(0, "GET", "k"), cmd(3, "GETBIT", "online", "3000")); fmt.Sprint(got) != fmt.Sprint([]string{"$2\r\n19\r\n", ":1\r\n"}) {
					t.Fatalf("after restart: %q", got)
				}
				// The restarted leader committed a tick of its own: bring
				// the old store to that time before comparing.
				st.Apply(nil, st2.Now(), new(store.Replies))
				if got, want := st2.Digest(), st.Digest(); got != want {
					t.Fatalf("digest after restart %x, before %x", got, want)
				}
				var ttl store.Replies
				st2.Read([]store.Command{cmd(0, "PTTL", "k")}, time.Now().UnixMilli(), &ttl)
				if v, _ := strconv.Atoi(strings.Trim(string(ttl.B), ":\r\n")); v <= 0 || v > 3600000 {
					t.Fatalf("TTL after restart: %q", ttl.B)
				}
				if !snapshot {
					return
				}
				// A damaged snapshot makes the node refuse to start
				// rather than start without the data.
				n2.Close()
				states, err := filepath.Glob(filepath.Join(cfg.Dir, "snapshots", "*", "state.bin"))
				if err != nil || len(states) == 0 {
					t.Fatalf("no snapshot file: %v", err)
				}
				for _, path := range states {
					damage(t, path, snapshotHeaderLen+10)
				}
				n3, err := Open(cfg, FromStore(store.New()), nil)
				if err == nil {
					n3.Close()
					t.Fatal("a node with a damaged snapshot started")
				}
				if !strings.Contains(err.Error(), filepath.Join(cfg.Dir, "snapshots")) {
					t.Fatalf("error does not name the snapshot: %v", err)
				}
			})
		}
	}
}

// damage flips a byte of the file at path.
func damage(t *testing.T, path string, at int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}

// TestCloseInFlight closes a node while callers write: every call returns
// (applied, ErrClosed, ErrNotLeader or ErrUnknownOutcome), none hangs.
func TestCloseInFlight(t *testing.T) {
	cfg := testConfig("solo")
	cfg.Bootstrap = true
	cfg.RaftAddr = "127.0.0.1:0"
	n := openTest(t, cfg, FromStore(store.New()))
	waitReady(t, n)
	var wg sync.WaitGroup
	started := make(chan struct{}, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			started <- struct{}{}
			for {
				err := n.Apply([]store.Command{cmd(0, "INCR", "n")}, new(store.Replies))
				switch {
				case err == nil:
				case errors.Is(err, ErrClosed), errors.Is(err, ErrNotLeader), errors.Is(err, ErrUnknownOutcome):
					return
				default:
					t.Errorf("unexpected error: %v", err)
					return
				}
			}
		}()
	}
	for range 16 {
		<-started
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := n.Apply([]store.Command{cmd(0, "INCR", "n")}, new(store.Replies)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Apply after Close: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (&Config{}).Validate(); err == nil {
		t.Fatal("zero Config is valid")
	}
	def := DefaultConfig()
	if err := def.Validate(); err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
	for name, change := range map[string]func(*Config){
		"no id":         func(c *Config) { c.NodeID = "" },
		"spaced id":     func(c *Config) { c.NodeID = "node 1" },
		"no dir":        func(c *Config) { c.Dir = "" },
		"fsync":         func(c *Config) { c.AppendFsync = "sometimes" },
		"tick":          func(c *Config) { c.TickInterval = 0 },
		"election":      func(c *Config) { c.ElectionTimeout = c.HeartbeatTimeout / 2 },
		"lease":         func(c *Config) { c.LeaderLeaseTimeout = 2 * c.HeartbeatTimeout },
		"entry bytes":   func(c *Config) { c.MaxEntryBytes = 0 },
		"inflight":      func(c *Config) { c.MaxInflight = 0 },
		"log level":     func(c *Config) { c.LogLevel = "loud" },
		"snapshot":      func(c *Config) { c.SnapshotThreshold = 0 },
		"commit":        func(c *Config) { c.CommitTimeout = 0 },
		"entry command": func(c *Config) { c.MaxEntryCommands = -1 },
	} {
		c := DefaultConfig()
		change(&c)
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "cluster: ") {
			t.Errorf("%s: Validate = %v", name, err)
		}
	}
	c := DefaultConfig()
	c.LogOutput = io.Discard
	c.NodeID = ""
	if _, err := Open(c, FromStore(store.New()), nil); err == nil {
		t.Fatal("Open accepted an invalid config")
	}
}

func TestErrorsReply(t *testing.T) {
	for err, prefix := range map[error]string{
		ErrNotLeader:      "TRYAGAIN ",
		ErrUnknownOutcome: "UNCERTAIN ",
		ErrClosed:         "CLUSTERDOWN ",
		ErrNoLeader:       "CLUSTERDOWN ",
		ErrBehind:         "LOADING ",
		outcomeError(errors.New("raft: leadership lost"), nil):                                                                         "UNCERTAIN ",
		outcomeError(errors.New("unable to store logs"), func() error { return errors.New("write raft.db: no space left on device") }): "UNCERTAIN The raft log could not be written while the write was being committed (write raft.db: no space left on device): ",
		&LogWriteError{Base: ErrNoLeader, Cause: "x"}:                                                                                  "MISCONF Errors writing to the raft log: x",
		&PasswordError{From: "a:1", To: "b:2"}:                                                                                         "CLUSTERDOWN The member at b:2 refused the password of the node at a:1: ",
		ErrRemoved:                                                                                                                     "CLUSTERDOWN This node is no longer a member",
	} {
		if got := redisError(err); !strings.HasPrefix(got, prefix) || strings.ContainsAny(got, "\r\n") {
			t.Errorf("%v replies %q, want prefix %q", err, got, prefix)
		}
	}
}

// redisError returns the reply text of err, as the server computes it.
func redisError(err error) string {
	var re interface{ RedisError() string }
	if errors.As(err, &re) {
		return re.RedisError()
	}
	return ""
}

// TestDirInUse checks that a second node on the same directory is refused
// instead of sharing the log.
func TestDirInUse(t *testing.T) {
	cfg := durableConfig(t, "solo")
	openTest(t, cfg, FromStore(store.New()))
	n, err := Open(cfg, FromStore(store.New()), nil)
	if err == nil {
		n.Close()
		t.Fatal("two nodes opened one directory")
	}
	if !strings.Contains(err.Error(), "locked") {
		t.Fatalf("error does not say the log is locked: %v", err)
	}
}

// TestSnapshotBySize checks that entries adding up to SnapshotBytes make
// a node snapshot and compact its log, however few they are.
func TestSnapshotBySize(t *testing.T) {
	c := newTestCluster(t, 1, func(cfg *Config) {
		cfg.SnapshotBytes = 64 << 10
		cfg.SnapshotThreshold = 1 << 30
		cfg.SnapshotInterval = 10 * time.Millisecond
		cfg.TrailingLogs = 1
	})
	n := c.leader().node
	big := strings.Repeat("x", 8<<10)
	var out store.Replies
	for i := range 16 {
		if err := n.Apply([]store.Command{cmd(0, "SET", "k"+strconv.Itoa(i), big)}, &out); err != nil {
			t.Fatal(err)
		}
	}
	// 128 KiB of entries: a snapshot is due; wait for raft to take it.
	for n.raft.Stats()["last_snapshot_index"] == "0" {
		// A tick a round: an entry to wait for, as the poll's pace.
		if err := n.Tick(c.ctx); err != nil {
			t.Fatal("no snapshot after 128 KiB of entries:", err)
		}
	}
	if idx, _ := strconv.ParseUint(n.raft.Stats()["last_snapshot_index"], 10, 64); idx < 8 {
		t.Errorf("snapshot at index %d, before the entries that made it due", idx)
	}
}

// TestSnapshotDueAfterASnapshot checks that a snapshot persisted sets
// when the next is due: by its size on a node whose log is in memory (a
// small one: memLogFloor), SnapshotBytes on a node whose log is on disk.
func TestSnapshotDueAfterASnapshot(t *testing.T) {
	mem := newTestCluster(t, 1, nil).leader().node
	disk := openTest(t, durableConfig(t, "solo"), FromStore(store.New()))
	waitReady(t, disk)
	for _, c := range []struct {
		n    *Node
		want int64
	}{{mem, memLogFloor}, {disk, DefaultConfig().SnapshotBytes}} {
		var out store.Replies
		if err := c.n.Apply([]store.Command{cmd(0, "SET", "k", "v")}, &out); err != nil {
			t.Fatal(err)
		}
		if err := c.n.Snapshot(); err != nil {
			t.Fatal(err)
		}
		if got := c.n.fsm.snapshotDue.Load(); got != c.want {
			t.Errorf("log in memory %v: the next snapshot is due after %d bytes, want %d", !c.n.cfg.AppendOnly, got, c.want)
		}
	}
}

// TestCheckpoint checks that Checkpoint snapshots a node's state when
// entries were applied since its latest snapshot, and only then, and not
// a node that keeps its log in memory.
func TestCheckpoint(t *testing.T) {
	cfg := durableConfig(t, "solo")
	n := openTest(t, cfg, FromStore(store.New()))
	waitReady(t, n)
	snaps, err := raft.NewFileSnapshotStore(cfg.Dir, snapshotsRetained, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	newest := func() uint64 {
		t.Helper()
		list, err := snaps.List()
		if err != nil || len(list) == 0 {
			t.Fatalf("snapshots: %v, %v", list, err)
		}
		return list[0].Index
	}
	var out store.Replies
	for step, value := range []string{"1", "2"} {
		if err := n.Apply([]store.Command{cmd(0, "SET", "k", value)}, &out); err != nil {
			t.Fatal(err)
		}
		for range 2 { // the second finds nothing new
			if err := n.Checkpoint(); err != nil {
				t.Fatal(err)
			}
		}
		list, _ := snaps.List()
		if len(list) != step+1 || newest() != n.Stats().AppliedIndex {
			t.Fatalf("after write %d: %d snapshots, the newest at %d, applied %d", step+1, len(list), newest(), n.Stats().AppliedIndex)
		}
	}
	mem := newTestCluster(t, 1, nil).leader().node
	if err := mem.Apply([]store.Command{cmd(0, "SET", "k", "1")}, &out); err != nil {
		t.Fatal(err)
	}
	if err := mem.Checkpoint(); err != nil || mem.raft.Stats()["last_snapshot_index"] != "0" {
		t.Errorf("in memory: Checkpoint %v, snapshot at %s", err, mem.raft.Stats()["last_snapshot_index"])
	}
}

// TestSoleVoterStandsAtOnce starts and restarts a one-node cluster whose
// heartbeat timeout is an hour: a node that waited it out before standing
// for election would not lead within the test.
func TestSoleVoterStandsAtOnce(t *testing.T) {
	cfg := durableConfig(t, "solo")
	cfg.HeartbeatTimeout = time.Hour
	cfg.ElectionTimeout = time.Hour
	for range 2 { // bootstrapped, then restarted on its log
		n := openTest(t, cfg, FromStore(store.New()))
		waitReady(t, n)
		if err := n.Apply([]store.Command{cmd(0, "INCR", "starts")}, new(store.Replies)); err != nil {
			t.Fatal(err)
		}
		if got := n.raft.ReloadableConfig().HeartbeatTimeout; got != time.Hour {
			t.Errorf("heartbeat timeout %v after standing, want the configured hour", got)
		}
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDirOfAnotherNode checks that a node refuses a data dir holding
// another node's raft state, naming the file that says whose it is.
func TestDirOfAnotherNode(t *testing.T) {
	cfg := durableConfig(t, "first")
	n := openTest(t, cfg, FromStore(store.New()))
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.NodeID = "second"
	n, err := Open(cfg, FromStore(store.New()), nil)
	if err == nil {
		n.Close()
		t.Fatal("a node opened another node's data dir")
	}
	if want := filepath.Join(cfg.Dir, nodeIDFile); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `"first"`) {
		t.Fatalf("error %q does not name the owner and %s", err, want)
	}
	cfg.NodeID = "first"
	openTest(t, cfg, FromStore(store.New()))
}

// TestDamagedLog checks that a node whose log has a damaged entry refuses
// to start, naming the log file, instead of skipping the entry.
func TestDamagedLog(t *testing.T) {
	cfg := durableConfig(t, "solo")
	n := openTest(t, cfg, FromStore(store.New()))
	waitReady(t, n)
	const marker = "a-value-to-find-in-the-log-file"
	if err := n.Apply([]store.Command{cmd(0, "SET", "k", marker)}, new(store.Replies)); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(cfg.Dir, "raft.db")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(data, []byte(marker))
	if at < 0 {
		t.Fatal("the entry is not in the log file")
	}
	damage(t, path, int64(at))
	n2, err := Open(cfg, FromStore(store.New()), nil)
	if err == nil {
		n2.Close()
		t.Fatal("a node with a damaged log started")
	}
	if !strings.Contains(err.Error(), path) || !errors.Is(err, ErrBadEntry) {
		t.Fatalf("error does not name the damaged log: %v", err)
	}
}

// TestVerifyLogGaps checks verifyLog on logs with gaps: those up to the
// snapshot's index are stepped over in a few lookups however long, the
// entries on either side are still checked, and an entry missing after
// the snapshot is damage.
func TestVerifyLogGaps(t *testing.T) {
	type span struct{ from, to uint64 }
	const far = 1 << 20
	cases := []struct {
		name      string
		spans     []span
		snapIndex uint64
		damaged   uint64 // an entry to damage, if not 0
		stale     uint64 // an entry that reads as the one before it, if not 0
		want      string // in the error; "" for none
	}{
		{"contiguous", []span{{1, 100}}, 0, 0, 0, ""},
		{"gap below the snapshot", []span{{1, 5}, {1000, 1100}}, 999, 0, 0, ""},
		{"two gaps", []span{{1, 5}, {500, 600}, {1000, 1100}}, 999, 0, 0, ""},
		{"a long gap", []span{{1, 5}, {far, far + 10}}, far - 1, 0, 0, ""},
		{"gap past the snapshot", []span{{1, 5}, {1000, 1100}}, 500, 0, 0, "entry 501: log not found"},
		{"damage after a gap", []span{{1, 5}, {far, far + 10}}, far - 1, far + 5, 0, "damaged at entry 1048581"},
		{"damage before a gap", []span{{1, 5}, {1000, 1100}}, 999, 3, 0, "damaged at entry 3"},
		{"an older entry in place", []span{{1, 100}}, 0, 0, 40, "damaged at entry 40, refusing to start: it holds entry 39"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			logs := &countingLogs{LogStore: raft.NewInmemStore(), stale: tc.stale}
			for _, sp := range tc.spans {
				for i := sp.from; i <= sp.to; i++ {
					b := []store.Command{cmd(0, "SET", "k", strconv.FormatUint(i, 10))}
					data := encodeEntry(1, [][]store.Command{b}, [][]byte{nil})
					if i == tc.damaged {
						data[len(data)/2] ^= 0x5a
					}
					if err := logs.StoreLog(&raft.Log{Index: i, Type: raft.LogCommand, Data: data}); err != nil {
						t.Fatal(err)
					}
				}
			}
			err := verifyLog(logs, tc.snapIndex, "raft.db")
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
			entries := uint64(0)
			for _, sp := range tc.spans {
				entries += sp.to - sp.from + 1
			}
			if logs.reads > entries+200 {
				t.Errorf("%d lookups for %d entries", logs.reads, entries)
			}
		})
	}
}

// countingLogs counts the entries read from a log store; if stale is not
// 0, that entry reads as the one before it, as a page of an older commit
// left in place would.
type countingLogs struct {
	raft.LogStore
	reads uint64
	stale uint64
}

func (c *countingLogs) GetLog(index uint64, l *raft.Log) error {
	c.reads++
	if index == c.stale {
		index--
	}
	return c.LogStore.GetLog(index, l)
}

// durableConfig is testConfig for a one-node cluster that keeps its log
// and snapshots in a fresh directory and listens on TCP.
func durableConfig(t *testing.T, id string) Config {
	cfg := testConfig(id)
	cfg.Bootstrap = true
	cfg.AppendOnly = true
	cfg.Dir = t.TempDir()
	return cfg
}

// TestWatchLeader checks that a follower hears of the leader elected
// after the one it knew died, once, and stops watching when told to.
func TestWatchLeader(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	old := c.leader()
	var watcher *testNode
	for _, tn := range c.live() {
		if tn != old {
			watcher = tn
		}
	}
	type seen struct{ addr, id string }
	heard := make(chan seen, 8)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		watcher.node.WatchLeader(ctx, func(addr, id string) { heard <- seen{addr, id} })
	}()
	c.kill(old)
	l := c.leader()
	select {
	case got := <-heard:
		if got.id != l.id || got.addr != string(l.addr) {
			t.Errorf("heard of leader %v, want %s at %s", got, l.id, l.addr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no leader heard of")
	}
	cancel()
	<-stopped
	select {
	case got := <-heard:
		t.Errorf("heard of leader %v twice", got)
	default:
	}
}

// TestLogWritten checks that Config.LogWritten is told of the writes to
// the raft log: of one at least for each batch applied, and never of more
// than the node counts.
func TestLogWritten(t *testing.T) {
	var told atomic.Int64
	c := newTestCluster(t, 1, func(cfg *Config) {
		cfg.LogWritten = func(time.Duration) { told.Add(1) }
	})
	n := c.nodes[0].node
	before := told.Load()
	var out store.Replies
	for i := range 5 {
		if err := n.Apply([]store.Command{cmd(0, "SET", "k", fmt.Sprint(i))}, &out); err != nil {
			t.Fatal(err)
		}
	}
	// A write is counted before LogWritten is told of it, and ticks
	// write meanwhile: read what it was told first.
	got := told.Load()
	if writes := n.Stats().LogWrites; got-before < 5 || uint64(got) > writes {
		t.Errorf("LogWritten told %d times (%d before 5 writes); the node counts %d log writes", got, before, writes)
	}
}

// TestApplyRefusesTooLargeBatch checks that a batch of writes over
// Config.MaxBatchBytes is refused, on the leader and on a follower (which
// does not forward it), with nothing applied, and that one at the bound
// commits; and that the only voter of a cluster takes a larger one.
func TestApplyRefusesTooLargeBatch(t *testing.T) {
	const limit = 1000
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.MaxBatchBytes = limit })
	set := func(key string, n int) store.Command { return cmd(0, "SET", key, strings.Repeat("v", n)) }
	// Sized so that the batch takes exactly limit bytes.
	fits := []store.Command{set("a", 400), set("b", limit-400-2*CommandSize(set("a", 0))-2)}
	if got := batchSize(fits); got != limit {
		t.Fatalf("batch of %d bytes, want %d", got, limit)
	}
	over := append(slices.Clone(fits), cmd(0, "INCR", "n"))
	c.leader()
	for _, tn := range c.nodes {
		var out store.Replies
		err := tn.node.Apply(over, &out)
		var tl *TooLargeError
		if !errors.As(err, &tl) || tl.Size != batchSize(over) || tl.Limit != limit || out.Len() != 0 {
			t.Fatalf("%s: batch of %d bytes: %v, replies %q", tn.id, batchSize(over), err, out.B)
		}
		if want := fmt.Sprintf("ERR write too large for the raft log: %d bytes in one batch", batchSize(over)); !strings.HasPrefix(redisError(err), want) {
			t.Errorf("%s: reply %q", tn.id, redisError(err))
		}
	}
	var out store.Replies
	if err := c.nodes[0].node.Apply(fits, &out); err != nil {
		t.Fatalf("batch of %d bytes: %v", limit, err)
	}
	c.converge()
	for _, tn := range c.nodes {
		if got := read(tn.st, cmd(0, "STRLEN", "b"), cmd(0, "EXISTS", "n")); fmt.Sprint(got) != fmt.Sprint([]string{":" + strconv.Itoa(len(fits[1].Args[2])) + "\r\n", ":0\r\n"}) {
			t.Errorf("%s: %q", tn.id, got)
		}
	}

	// The only voter of its cluster takes the batch.
	alone := newTestCluster(t, 1, func(cfg *Config) { cfg.MaxBatchBytes = limit })
	if err := alone.leader().node.Apply(over, &out); err != nil {
		t.Fatalf("the only voter refused a batch of %d bytes: %v", batchSize(over), err)
	}
	if got := read(alone.nodes[0].st, cmd(0, "GET", "n")); got[0] != "$1\r\n1\r\n" {
		t.Errorf("after the batch: n = %q", got)
	}
}

// TestRecoverAlone checks Config.Recover: the last node of three, whose
// two others are gone for good, restarted with it on its data dir, leads
// a cluster of itself with every write it had (those of its snapshot and
// those of its log after it) and takes writes again. Recover without
// state in the dir is refused.
func TestRecoverAlone(t *testing.T) {
	dirs := map[string]string{"n1": t.TempDir(), "n2": t.TempDir(), "n3": t.TempDir()}
	configure := withAttachments(nil, dirs)
	c := newTestCluster(t, 3, configure)
	writeAndSnapshot(t, c, 20)
	l := c.leader()
	for i := range 10 {
		if err := l.node.Apply([]store.Command{cmd(0, "SETBIT", "online", strconv.Itoa(1_000_000+i), "1")}, new(store.Replies)); err != nil {
			t.Fatal(err)
		}
	}
	c.converge()
	last := c.byID("n1")
	for _, tn := range c.live() {
		c.kill(tn)
	}

	cfg := testConfig("n1")
	configure(&cfg)
	cfg.Bootstrap, cfg.Recover = false, true
	st := store.New()
	node, err := Open(cfg, FromStore(st), &Network{Raft: last.trans})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	if got := read(st, cmd(0, "BITCOUNT", "online")); got[0] != ":30\r\n" {
		t.Fatalf("BITCOUNT after recovering: %q, want 30", got)
	}
	if err := node.Apply([]store.Command{cmd(0, "SETBIT", "online", "7", "1")}, new(store.Replies)); err != nil {
		t.Fatalf("a write after recovering: %v", err)
	}
	members, err := node.Members()
	if err != nil || len(members) != 1 || members[0].ID != "n1" {
		t.Fatalf("members after recovering: %v, %v", members, err)
	}

	empty := testConfig("n4")
	empty.AppendOnly, empty.Dir, empty.Bootstrap, empty.Recover = true, t.TempDir(), false, true
	_, trans := raft.NewInmemTransport("")
	if n, err := Open(empty, FromStore(store.New()), &Network{Raft: trans}); err == nil {
		n.Close()
		t.Fatal("Recover on an empty data dir started")
	} else if !strings.Contains(err.Error(), "nothing to recover") {
		t.Fatalf("Recover on an empty data dir: %v", err)
	}
}
