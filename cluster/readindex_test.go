package cluster

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/presenced/presenced/store"
)

// gatedFn is a coalescer function whose calls each wait for the test:
// entered receives the call's number (from 1) when it starts, and the
// call returns that number, or err if set, once release is sent to.
type gatedFn struct {
	mu      sync.Mutex
	calls   uint64
	entered chan uint64
	release chan error
}

func newGatedFn() *gatedFn {
	return &gatedFn{entered: make(chan uint64), release: make(chan error)}
}

func (g *gatedFn) fn() (uint64, error) {
	g.mu.Lock()
	g.calls++
	n := g.calls
	g.mu.Unlock()
	g.entered <- n
	if err := <-g.release; err != nil {
		return 0, err
	}
	return n, nil
}

// arrivalCtx reports, on arrived, the first time do looks at its Done
// channel: do does so only after the caller joined a round, so the test
// knows which round is open when it joined.
type arrivalCtx struct {
	context.Context
	once    sync.Once
	arrived chan<- struct{}
}

func (c *arrivalCtx) Done() <-chan struct{} {
	c.once.Do(func() { c.arrived <- struct{}{} })
	return c.Context.Done()
}

// result is a coalescer caller's result.
type result struct {
	index uint64
	err   error
}

// call starts a caller of co and returns once it joined a round; its
// result arrives on the returned channel.
func call(ctx context.Context, co *coalescer) <-chan result {
	arrived := make(chan struct{})
	res := make(chan result, 1)
	go func() {
		index, err := co.do(&arrivalCtx{Context: ctx, arrived: arrived})
		res <- result{index, err}
	}()
	<-arrived
	return res
}

// TestCoalescerRounds checks that callers that arrive while a call runs
// share the next call, which starts after they arrived, and that errors
// and cancellations reach only their callers.
func TestCoalescerRounds(t *testing.T) {
	g := newGatedFn()
	co := &coalescer{fn: g.fn}
	ctx := context.Background()

	first := call(ctx, co)
	if n := <-g.entered; n != 1 {
		t.Fatalf("first call is number %d", n)
	}
	// Callers arriving while call 1 runs must not get its result: it may
	// predate their writes.
	var waiting []<-chan result
	for range 10 {
		waiting = append(waiting, call(ctx, co))
	}
	cancelled, cancel := context.WithCancel(ctx)
	gone := call(cancelled, co)
	cancel()
	if r := <-gone; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled caller: %+v", r)
	}
	g.release <- nil
	if r := <-first; r.index != 1 || r.err != nil {
		t.Fatalf("first caller: %+v", r)
	}
	// One call serves all ten.
	if n := <-g.entered; n != 2 {
		t.Fatalf("second call is number %d", n)
	}
	late := call(ctx, co)
	g.release <- nil
	for i, w := range waiting {
		if r := <-w; r.index != 2 || r.err != nil {
			t.Errorf("caller %d: %+v, want the second call's result", i, r)
		}
	}
	// The caller that arrived during call 2 waits for call 3, whose error
	// it gets.
	if n := <-g.entered; n != 3 {
		t.Fatalf("third call is number %d", n)
	}
	boom := errors.New("boom")
	g.release <- boom
	if r := <-late; r.err != boom {
		t.Fatalf("late caller: %+v, want the third call's error", r)
	}
	// Nobody waits: no call runs, and the next caller starts one.
	next := call(ctx, co)
	if n := <-g.entered; n != 4 {
		t.Fatalf("fourth call is number %d", n)
	}
	g.release <- nil
	if r := <-next; r.index != 4 || r.err != nil {
		t.Fatalf("next caller: %+v", r)
	}
}

// TestCoalescerConcurrent runs many callers at once against a function
// that counts its calls: every caller gets a call that started after it
// arrived, and the calls are far fewer than the callers.
func TestCoalescerConcurrent(t *testing.T) {
	var mu sync.Mutex
	calls := uint64(0)
	co := &coalescer{fn: func() (uint64, error) {
		// A leadership check takes a round trip: callers arrive during
		// it. The call yields so that they can here too.
		runtime.Gosched()
		mu.Lock()
		defer mu.Unlock()
		calls++
		return calls, nil
	}}
	const callers, rounds = 32, 50
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range rounds {
				mu.Lock()
				before := calls
				mu.Unlock()
				index, err := co.do(context.Background())
				if err != nil || index <= before {
					t.Errorf("got call %d (%v); call %d had started before the caller arrived", index, err, before)
					return
				}
			}
		})
	}
	wg.Wait()
	if calls >= callers*rounds {
		t.Errorf("%d calls for %d requests: none shared", calls, callers*rounds)
	}
}

// TestReadBarrierOnFollower writes on the leader and reads on a follower
// right after ReadBarrier returns, many times: the write is always there.
func TestReadBarrierOnFollower(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	l := c.leader()
	for _, f := range c.nodes {
		if f == l {
			continue
		}
		for i := range 100 {
			v := strconv.Itoa(i)
			var out store.Replies
			if err := l.node.Apply([]store.Command{cmd(1, "SET", "k", v), cmd(0, "SETBIT", "b", v, "1")}, &out); err != nil {
				t.Fatal(err)
			}
			if err := f.node.ReadBarrier(c.ctx); err != nil {
				t.Fatalf("%s: ReadBarrier: %v", f.id, err)
			}
			got := read(f.st, cmd(1, "GET", "k"), cmd(0, "BITCOUNT", "b"))
			if got[0] != "$"+strconv.Itoa(len(v))+"\r\n"+v+"\r\n" || got[1] != ":"+strconv.Itoa(i+1)+"\r\n" {
				t.Fatalf("%s after ReadBarrier: %q, leader wrote %s", f.id, got, v)
			}
		}
		var out store.Replies
		if err := l.node.Apply([]store.Command{cmd(0, "DEL", "b")}, &out); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadBarrierBehind holds a node's state machine while the leader
// commits a write, on a follower and then on the leader itself: the
// node's ReadBarrier fails with ErrBehind (a LOADING reply) within
// LeaderWait, not with an error that blames the leader; released, it
// passes and the write is there.
func TestReadBarrierBehind(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.LeaderWait = 500 * time.Millisecond })
	l := c.leader()
	f := c.nodes[0]
	if f == l {
		f = c.nodes[1]
	}
	for i, n := range []*testNode{f, l} {
		n.sm.armed.Store(true)
		released := false
		release := func() {
			if !released {
				released = true
				close(n.sm.release)
			}
		}
		defer release()
		v := strconv.Itoa(i)
		applied := make(chan error, 1)
		go func() { applied <- l.node.Apply([]store.Command{cmd(0, "SET", "k", v)}, new(store.Replies)) }()
		if n != l {
			if err := <-applied; err != nil {
				t.Fatal(err)
			}
		}
		<-n.sm.blocked
		begin := time.Now()
		err := n.node.ReadBarrier(c.ctx)
		if took, wait := time.Since(begin), n.node.Config().LeaderWait; took > wait+time.Second {
			t.Errorf("ReadBarrier on %s, behind, took %v; LeaderWait is %v", n.id, took, wait)
		}
		if !errors.Is(err, ErrBehind) || !strings.HasPrefix(redisError(err), "LOADING ") {
			t.Fatalf("ReadBarrier on %s, behind: %v (%q), want ErrBehind", n.id, err, redisError(err))
		}
		release()
		if n == l {
			if err := <-applied; err != nil {
				t.Fatal(err)
			}
		}
		if err := n.node.ReadBarrier(c.ctx); err != nil {
			t.Fatalf("ReadBarrier on %s once it may apply: %v", n.id, err)
		}
		if got, want := read(n.st, cmd(0, "GET", "k"))[0], "$1\r\n"+v+"\r\n"; got != want {
			t.Errorf("%s reads %q after ReadBarrier, want %q", n.id, got, want)
		}
	}
}

// TestIsolatedLeaderReadBarrier cuts the leader off: it fails ReadBarrier
// within LeaderWait, even though its own state is current for all it
// knows, so it never serves a read the majority's new leader has made
// stale; healed, it passes ReadBarrier and sees the new writes.
func TestIsolatedLeaderReadBarrier(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.LeaderWait = time.Second })
	cuts := guard(c)
	old := c.leader()
	var out store.Replies
	if err := old.node.Apply([]store.Command{cmd(0, "SET", "k", "before")}, &out); err != nil {
		t.Fatal(err)
	}
	if err := old.node.ReadBarrier(c.ctx); err != nil {
		t.Fatal(err)
	}
	cuts.isolate(old)
	old.dead = true // out of the majority's sight while cut off
	l := c.leader()
	if err := l.node.Apply([]store.Command{cmd(0, "SET", "k", "after")}, &out); err != nil {
		t.Fatal(err)
	}
	wait := old.node.Config().LeaderWait
	for range 2 {
		begin := time.Now()
		err := old.node.ReadBarrier(c.ctx)
		if took := time.Since(begin); took > wait+time.Second {
			t.Errorf("ReadBarrier on the cut-off leader took %v", took)
		}
		if err == nil {
			t.Fatalf("the cut-off leader passed ReadBarrier; its store says %q, the cluster's %q",
				read(old.st, cmd(0, "GET", "k")), read(l.st, cmd(0, "GET", "k")))
		}
		if !errors.Is(err, ErrNoLeader) && !errors.Is(err, ErrNotLeader) {
			t.Errorf("ReadBarrier on the cut-off leader: %v", err)
		}
	}
	cuts.heal()
	old.dead = false
	// Healing may cost an election; ReadBarrier waits for its end, or
	// fails after LeaderWait and is tried again.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := old.node.ReadBarrier(c.ctx)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("healed node fails ReadBarrier: %v", err)
		}
	}
	if got := read(old.st, cmd(0, "GET", "k"))[0]; got != "$5\r\nafter\r\n" {
		t.Errorf("healed node reads %q after ReadBarrier", got)
	}
}

// TestSoleVoterReadBarrier checks reads on a node that is its cluster's
// only voter, as a standalone node is: they pass ReadBarrier without a
// round through raft's leader loop and see every write applied before.
// Once a second voter joins, they take rounds again, so a leader cut off
// from it refuses reads; once it is removed, they stop again.
func TestSoleVoterReadBarrier(t *testing.T) {
	c := newTestCluster(t, 1, func(cfg *Config) { cfg.LeaderWait = time.Second })
	l := c.leader()
	// Rounds are counted per phase, in the phase in which they start.
	var mu sync.Mutex
	rounds := map[string]int{}
	phase := "alone"
	count := func(p string) int { mu.Lock(); defer mu.Unlock(); return rounds[p] }
	setPhase := func(p string) { mu.Lock(); phase = p; mu.Unlock() }
	inner := l.node.leaderReads.fn
	l.node.leaderReads.fn = func() (uint64, error) {
		mu.Lock()
		rounds[phase]++
		mu.Unlock()
		return inner()
	}
	// A leader reads through rounds until it has committed an entry in
	// its term (see becomeReady).
	waitReady := func() {
		t.Helper()
		if err := l.node.ready.wait(c.ctx, l.node.raft.CurrentTerm()); err != nil {
			t.Fatalf("n1 never ready to read: %v", err)
		}
	}
	readsAfterWrites := func(n int) {
		t.Helper()
		for i := range n {
			v := strconv.Itoa(i)
			if err := l.node.Apply([]store.Command{cmd(0, "SET", "k", v)}, new(store.Replies)); err != nil {
				t.Fatal(err)
			}
			if err := l.node.ReadBarrier(c.ctx); err != nil {
				t.Fatalf("ReadBarrier: %v", err)
			}
			if got := read(l.st, cmd(0, "GET", "k"))[0]; got != "$"+strconv.Itoa(len(v))+"\r\n"+v+"\r\n" {
				t.Fatalf("GET after ReadBarrier: %q, wrote %s", got, v)
			}
		}
	}

	waitReady()
	readsAfterWrites(50)
	if n := count("alone"); n != 0 {
		t.Errorf("a sole voter took %d read index rounds", n)
	}

	setPhase("pair")
	n2 := c.join("n2", func(cfg *Config) { cfg.LeaderWait = time.Second })
	readsAfterWrites(5)
	if count("pair") == 0 {
		t.Error("with two voters, reads took no read index round")
	}
	c.isolate(n2)
	if err := l.node.ReadBarrier(c.ctx); err == nil {
		t.Fatal("a leader cut off from the other voter passed ReadBarrier")
	}
	c.heal()
	c.leader()
	if err := c.leader().node.RemoveServer(c.ctx, "n2"); err != nil {
		t.Fatal(err)
	}
	c.kill(n2)
	if c.leader() != l {
		t.Fatal("n1 does not lead once n2 is removed")
	}
	waitReady()
	setPhase("alone again")
	readsAfterWrites(50)
	if n := count("alone again"); n != 0 {
		t.Errorf("a voter left alone took %d read index rounds", n)
	}
}

// laterTermPeers are Peers whose members at the addresses in later answer
// RAFT INFO with a term after their own, as members that have moved on to
// another leader's term do.
type laterTermPeers struct {
	Peers
	later map[string]bool
}

func (p laterTermPeers) Info(ctx context.Context, addr string) (map[string]string, error) {
	info, err := p.Peers.Info(ctx, addr)
	if err == nil && p.later[addr] {
		term, _ := strconv.ParseUint(info["term"], 10, 64)
		info["term"] = strconv.FormatUint(term+1, 10)
	}
	return info, err
}

// TestReadIndexCountsTerms checks the leader's confirmation of a read
// index: it stands while a majority of the voters, the leader among them,
// says the leader's term, and fails with ErrNotLeader once too many say a
// later one, as the members that elected another leader would.
func TestReadIndexCountsTerms(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.LeaderWait = time.Second })
	l := c.leader()
	var others []string
	for _, tn := range c.nodes {
		if tn != l {
			others = append(others, string(tn.addr))
		}
	}
	inner := l.node.peers
	for _, later := range [][]string{nil, others[:1], others} {
		set := map[string]bool{}
		for _, a := range later {
			set[a] = true
		}
		l.node.peers = laterTermPeers{Peers: inner, later: set}
		_, err := l.node.ReadIndex(c.ctx)
		if wantOK := len(later) < len(others); (err == nil) != wantOK {
			t.Errorf("%d of 2 followers in a later term: ReadIndex: %v", len(later), err)
		}
		if err != nil && !errors.Is(err, ErrNotLeader) {
			t.Errorf("ReadIndex with every follower in a later term: %v, want ErrNotLeader", err)
		}
	}
	l.node.peers = inner
}
