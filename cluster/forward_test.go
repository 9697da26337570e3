package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/presenced/presenced/store"
)

// peerCuts cuts nodes off while other goroutines make peer calls. The
// harness's isolate and kill write testNode.cut, which testPeers reads
// without a lock: safe only while no call is in flight. guard routes a
// cluster's peer calls through peerCuts, whose marks are locked.
type peerCuts struct {
	c  *testCluster
	mu sync.Mutex
	// down holds the raft addresses of the nodes cut off.
	down map[raft.ServerAddress]bool
}

// guard makes every node of c call its peers through the returned
// peerCuts. Call it before any peer call is made: nodes read their Peers
// only in calls.
func guard(c *testCluster) *peerCuts {
	pc := &peerCuts{c: c, down: map[raft.ServerAddress]bool{}}
	for _, tn := range c.nodes {
		tn.node.peers = guardedPeers{inner: testPeers{c, tn}, from: tn.addr, cuts: pc}
	}
	return pc
}

// blocked reports whether a call between a and b is cut.
func (pc *peerCuts) blocked(a, b raft.ServerAddress) bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.down[a] || pc.down[b]
}

// isolate cuts tn's raft links and peer calls.
func (pc *peerCuts) isolate(tn *testNode) {
	pc.mu.Lock()
	pc.down[tn.addr] = true
	pc.mu.Unlock()
	tn.trans.DisconnectAll()
	for _, o := range pc.c.nodes {
		if o != tn {
			o.trans.Disconnect(tn.addr)
		}
	}
}

// kill isolates tn and closes its node. The caller marks it dead once no
// other goroutine uses the cluster.
func (pc *peerCuts) kill(tn *testNode) {
	pc.isolate(tn)
	tn.node.Close()
}

// heal restores every link between live nodes.
func (pc *peerCuts) heal() {
	pc.mu.Lock()
	clear(pc.down)
	pc.mu.Unlock()
	for _, a := range pc.c.nodes {
		for _, b := range pc.c.nodes {
			if a != b {
				a.trans.Connect(b.addr, b.trans)
			}
		}
	}
}

// guardedPeers is testPeers behind peerCuts: a cut call fails before
// being sent.
type guardedPeers struct {
	inner testPeers
	from  raft.ServerAddress
	cuts  *peerCuts
}

func (g guardedPeers) check(addr string) error {
	if g.cuts.blocked(g.from, raft.ServerAddress(addr)) {
		return fmt.Errorf("%w: %s unreachable", errNotSent, addr)
	}
	return nil
}

func (g guardedPeers) Forward(ctx context.Context, addr string, cmds []store.Command, out *store.Replies) error {
	if err := g.check(addr); err != nil {
		return err
	}
	return g.inner.Forward(ctx, addr, cmds, out)
}

func (g guardedPeers) ReadIndex(ctx context.Context, addr string) (uint64, error) {
	if err := g.check(addr); err != nil {
		return 0, err
	}
	return g.inner.ReadIndex(ctx, addr)
}

func (g guardedPeers) Tick(ctx context.Context, addr string) (uint64, error) {
	if err := g.check(addr); err != nil {
		return 0, err
	}
	return g.inner.Tick(ctx, addr)
}

func (g guardedPeers) AddVoter(ctx context.Context, addr, id, raftAddr string, joining bool) error {
	if err := g.check(addr); err != nil {
		return err
	}
	return g.inner.AddVoter(ctx, addr, id, raftAddr, joining)
}

func (g guardedPeers) RemoveServer(ctx context.Context, addr, id string) error {
	if err := g.check(addr); err != nil {
		return err
	}
	return g.inner.RemoveServer(ctx, addr, id)
}

func (g guardedPeers) Handover(ctx context.Context, addr, to string) error {
	if err := g.check(addr); err != nil {
		return err
	}
	return g.inner.Handover(ctx, addr, to)
}

func (g guardedPeers) Applied(ctx context.Context, addr string) (uint64, error) {
	if err := g.check(addr); err != nil {
		return 0, err
	}
	return g.inner.Applied(ctx, addr)
}

func (g guardedPeers) Members(ctx context.Context, addr string) ([]Member, error) {
	if err := g.check(addr); err != nil {
		return nil, err
	}
	return g.inner.Members(ctx, addr)
}

func (g guardedPeers) Info(ctx context.Context, addr string) (map[string]string, error) {
	if err := g.check(addr); err != nil {
		return nil, err
	}
	return g.inner.Info(ctx, addr)
}

func (g guardedPeers) Relay(ctx context.Context, addr string, cmds net.Buffers, n int) error {
	if err := g.check(addr); err != nil {
		return err
	}
	return g.inner.Relay(ctx, addr, cmds, n)
}

// outcome is what a caller learnt of one write.
type outcome int

const (
	outApplied   outcome = iota // Apply returned nil
	outRefused                  // a definite error: not applied
	outUncertain                // ErrUnknownOutcome: maybe applied
)

// classify sorts the result of an Apply; an unexpected error fails t.
func classify(t *testing.T, err error) outcome {
	switch {
	case err == nil:
		return outApplied
	case errors.Is(err, ErrUnknownOutcome):
		return outUncertain
	case errors.Is(err, ErrNoLeader), errors.Is(err, ErrNotLeader), errors.Is(err, ErrClosed):
		return outRefused
	}
	t.Errorf("unexpected error: %v", err)
	return outUncertain
}

// TestForwardDuringFailover writes through the followers while the
// leader dies: every call returns, with success, a definite error or an
// unknown outcome; each acknowledged INCR is applied exactly once and each
// refused one not at all.
func TestForwardDuringFailover(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	cuts := guard(c)
	old := c.leader()
	var writers []*testNode
	for _, tn := range c.nodes {
		if tn != old {
			writers = append(writers, tn)
		}
	}
	const perWriter = 150
	results := make([][]outcome, len(writers))
	killAt := make(chan struct{})
	var wg sync.WaitGroup
	for w, tn := range writers {
		results[w] = make([]outcome, perWriter)
		wg.Go(func() {
			for i := range perWriter {
				if w == 0 && i == perWriter/3 {
					close(killAt)
				}
				var out store.Replies
				err := tn.node.Apply([]store.Command{cmd(0, "INCR", key(w, i))}, &out)
				results[w][i] = classify(t, err)
				if err == nil && string(out.B) != ":1\r\n" {
					t.Errorf("INCR %s replied %q", key(w, i), out.B)
				}
			}
		})
	}
	<-killAt
	cuts.kill(old)
	wg.Wait()
	old.dead = true
	if l := c.leader(); l == old {
		t.Fatal("the dead node still leads")
	}
	c.converge()
	count := map[outcome]int{}
	for w := range writers {
		for i, o := range results[w] {
			count[o]++
			got := read(c.live()[0].st, cmd(0, "GET", key(w, i)))[0]
			switch {
			case o == outApplied && got != "$1\r\n1\r\n",
				o == outRefused && got != "$-1\r\n",
				o == outUncertain && got != "$1\r\n1\r\n" && got != "$-1\r\n":
				t.Errorf("%s: outcome %d, value %q", key(w, i), o, got)
			}
		}
	}
	t.Logf("outcomes: %d applied, %d refused, %d uncertain", count[outApplied], count[outRefused], count[outUncertain])
	if count[outApplied] < len(writers)*perWriter/2 {
		t.Errorf("only %d of %d writes applied", count[outApplied], len(writers)*perWriter)
	}
	// The writes after the kill went to the new leader.
	for w := range writers {
		if results[w][perWriter-1] != outApplied {
			t.Errorf("writer %d: last write not applied", w)
		}
	}
}

// key names the key of writer w's i-th write.
func key(w, i int) string { return "w" + strconv.Itoa(w) + ":" + strconv.Itoa(i) }

// TestMembershipRefusals checks that AddVoter and RemoveServer refuse a
// duplicate ID, a duplicate address, an unknown ID and the last voter,
// on the leader and through a follower, and change nothing when they do.
func TestMembershipRefusals(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	l := c.leader()
	f, other := c.followers(l)
	before, err := l.node.Members()
	if err != nil || len(before) != 3 {
		t.Fatalf("members %v, %v", before, err)
	}
	ctx := c.ctx
	for _, via := range []*testNode{l, f} {
		for name, tc := range map[string]struct {
			call func() error
			want string
		}{
			"duplicate id": {func() error { return via.node.AddVoter(ctx, other.id, "elsewhere", false) },
				"ERR node " + other.id + " is already a member, at " + string(other.addr)},
			"duplicate address": {func() error { return via.node.AddVoter(ctx, "n9", string(other.addr), false) },
				"ERR address " + string(other.addr) + " is already node " + other.id + "'s"},
			"unknown id": {func() error { return via.node.RemoveServer(ctx, "n9") },
				"ERR node n9 is not a member"},
		} {
			if got := redisError(tc.call()); got != tc.want {
				t.Errorf("%s through %s: %q, want %q", name, via.id, got, tc.want)
			}
		}
	}
	after, err := l.node.Members()
	if err != nil || fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("members changed by refused calls: %v, was %v (%v)", after, before, err)
	}

	solo := newTestCluster(t, 1, nil).nodes[0]
	err = solo.node.RemoveServer(ctx, solo.id)
	if got := redisError(err); !strings.HasPrefix(got, "ERR node "+solo.id+" is the last voter") {
		t.Errorf("removing the last voter: %v (%q)", err, got)
	}
	if m, _ := solo.node.Members(); len(m) != 1 {
		t.Errorf("members after refusing to remove the last voter: %v", m)
	}
}

// TestRemovedFollower checks that a follower removed from the cluster,
// still running, refuses writes and linearizable reads with ErrRemoved
// once it knows no leader, rather than waiting LeaderWait for one that
// never comes (ErrNoLeader), and serves them again once added back.
func TestRemovedFollower(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.LeaderWait = time.Minute })
	l := c.leader()
	var f *testNode
	for _, tn := range c.nodes {
		if tn != l {
			f = tn
		}
	}
	if err := l.node.RemoveServer(c.ctx, f.id); err != nil {
		t.Fatal(err)
	}
	write := []store.Command{cmd(0, "INCR", "k")}
	// Until its heartbeat timeout the follower still knows the leader,
	// which takes the writes it forwards.
	err := f.node.Apply(write, new(store.Replies))
	for err == nil && c.ctx.Err() == nil {
		err = f.node.Apply(write, new(store.Replies))
	}
	if err != ErrRemoved {
		t.Fatalf("a write on the removed follower: %v, want %v", err, ErrRemoved)
	}
	if err := f.node.ReadBarrier(c.ctx); err != ErrRemoved {
		t.Fatalf("a read barrier on the removed follower: %v, want %v", err, ErrRemoved)
	}
	if err := l.node.AddVoter(c.ctx, f.id, string(f.addr), false); err != nil {
		t.Fatal(err)
	}
	c.formed()
	var out store.Replies
	if err := f.node.Apply(write, &out); err != nil {
		t.Fatalf("a write on the follower added back: %v", err)
	}
	if err := f.node.ReadBarrier(c.ctx); err != nil {
		t.Fatalf("a read barrier on the follower added back: %v", err)
	}
	c.converge()
}

// TestRemoveLeaderItself checks that a leader asked to remove itself,
// through itself or through a follower, hands its leadership over and is
// removed by the new leader: the call returns (hashicorp/raft shuts down
// a leader that removed itself, sometimes before it answers the
// removal), and the others go on without it.
func TestRemoveLeaderItself(t *testing.T) {
	for _, through := range []string{"leader", "follower"} {
		t.Run(through, func(t *testing.T) {
			c := newTestCluster(t, 3, nil)
			l := c.leader()
			via := l
			for _, tn := range c.nodes {
				if through == "follower" && tn != l {
					via = tn
				}
			}
			if err := via.node.RemoveServer(c.ctx, l.id); err != nil {
				t.Fatalf("removing leader %s through %s: %v", l.id, via.id, err)
			}
			c.kill(l)
			next := c.leader()
			members, err := next.node.Members()
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range members {
				if m.ID == l.id {
					t.Fatalf("members after removing %s: %v", l.id, members)
				}
			}
			if len(members) != 2 {
				t.Fatalf("members after removing %s: %v, want the other two", l.id, members)
			}
		})
	}
}
