package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/presenced/presenced/store"
)

// restartEmpty stops tn and starts in its place a node of the same ID and
// raft address with nothing of its state (but what its Dir holds, if
// configure gives it one), as a member with --appendonly no restarts: the
// cluster still counts it as a voter. The new node is cut off until heal.
func (c *testCluster) restartEmpty(tn *testNode, configure func(*Config)) *testNode {
	c.t.Helper()
	c.kill(tn)
	fresh := &testNode{id: tn.id, st: store.New()}
	fresh.addr, fresh.trans = raft.NewInmemTransport(tn.addr)
	for i := range c.nodes {
		if c.nodes[i] == tn {
			c.nodes[i] = fresh
		}
	}
	c.start(fresh, false, configure)
	return fresh
}

// TestRestartedEmptyWaitsToVote commits a write with the leader and one
// follower while the other follower is cut off, restarts the first
// follower without its log (in memory, or on disk in a dir emptied), and
// cuts the leader off: the stale follower stands for election, and the
// votes of the empty node would elect it without the acknowledged write.
// The empty node refuses them until it has caught up, so no node leads
// until the leader comes back; then the write is everywhere, and the
// restarted node votes again (it and the stale node elect a leader once
// the old one dies).
func TestRestartedEmptyWaitsToVote(t *testing.T) {
	for name, configure := range map[string]func(*Config){
		"log in memory":       nil,
		"log in an empty dir": func(cfg *Config) { cfg.AppendOnly, cfg.Dir = true, t.TempDir() },
	} {
		t.Run(name, func(t *testing.T) { testRestartedEmptyWaitsToVote(t, configure) })
	}
}

// testRestartedEmptyWaitsToVote is TestRestartedEmptyWaitsToVote with the
// restarted node configured by configure.
func testRestartedEmptyWaitsToVote(t *testing.T, configure func(*Config)) {
	c := newTestCluster(t, 3, nil)
	leader := c.leader()
	stale, restarted := c.followers(leader)
	c.isolate(stale)
	if err := leader.node.Apply([]store.Command{cmd(0, "SET", "k", "acked")}, new(store.Replies)); err != nil {
		t.Fatal(err)
	}
	restarted = c.restartEmpty(restarted, configure)
	c.heal()
	c.isolate(leader)

	ctx, cancel := context.WithTimeout(c.ctx, 20*time.Second)
	defer cancel()
	const refusals = 3
	guard := restarted.node.catchUp
	if guard == nil {
		guard = new(catchUpTransport) // none: it refuses nothing
	}
	refused, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		guard.refused.wait(ctx, refusals)
		stop()
	}()
	for refused.Err() == nil && !stale.node.IsLeader() {
		stale.node.leaders.wait(refused, stale.node.leaders.get()+1)
	}
	switch {
	case stale.node.IsLeader():
		t.Fatalf("%s was elected with the votes of %s, which restarted without its log: it lacks the acknowledged write (GET k: %q)",
			stale.id, restarted.id, read(stale.st, cmd(0, "GET", "k")))
	case ctx.Err() != nil:
		t.Fatalf("%s refused %d vote requests, want %d", restarted.id, guard.refused.get(), refusals)
	}

	c.heal()
	c.converge()
	for _, tn := range c.live() {
		if got := read(tn.st, cmd(0, "GET", "k"))[0]; got != "$5\r\nacked\r\n" {
			t.Errorf("%s: GET k = %q, want the acknowledged write", tn.id, got)
		}
	}
	if restarted.node.CatchingUp() {
		t.Fatalf("%s has not caught up after converging", restarted.id)
	}
	c.kill(c.leader())
	if l := c.leader(); l != stale && l != restarted {
		t.Fatalf("leader %s after the old one died", l.id)
	}
}

// TestRestartedEmptyKeepsTerm restarts a follower with its log in memory
// and its Dir on disk: it starts at the term it had reached, not at 0, so
// it neither votes again in a term it voted in nor follows a leader of an
// older term.
func TestRestartedEmptyKeepsTerm(t *testing.T) {
	dirs := map[string]string{}
	inDir := func(cfg *Config) {
		if dirs[cfg.NodeID] == "" {
			dirs[cfg.NodeID] = t.TempDir()
		}
		cfg.Dir = dirs[cfg.NodeID]
	}
	c := newTestCluster(t, 3, inDir)
	leader := c.leader()
	term := leader.node.raft.CurrentTerm()
	follower, _ := c.followers(leader)
	restarted := c.restartEmpty(follower, inDir)
	if got := restarted.node.raft.CurrentTerm(); got != term {
		t.Errorf("%s restarted at term %d, want %d", restarted.id, got, term)
	}
	c.heal()
	if err := leader.node.Apply([]store.Command{cmd(0, "SET", "k", "v")}, new(store.Replies)); err != nil {
		t.Fatal(err)
	}
	c.converge()
}
