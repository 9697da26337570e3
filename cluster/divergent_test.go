package cluster

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/presenced/presenced/internal/proctest"
	"github.com/presenced/presenced/store"
)

// TestRestartMendsAFollowerStuckOnADivergentLog builds the state of
// hashicorp/raft#697: a leader, cut off, appends entries it cannot
// commit; another node leads and snapshots at the index of one of them;
// once the partition heals, the former leader installs that snapshot but
// keeps the entries of its own that follow the snapshot, or that are at
// its index, all of an older term, and rejects every append after it, so
// it never catches up. A restart must drop the divergent entries and let
// it catch up. past is how many of the cut-off leader's entries lie
// beyond the snapshot's index: with none, it keeps its entry at that
// index; with some, raft's compaction deletes that one and keeps them.
func TestRestartMendsAFollowerStuckOnADivergentLog(t *testing.T) {
	for _, past := range []uint64{0, 3} {
		t.Run(fmt.Sprintf("past=%d", past), func(t *testing.T) { testDivergentFollower(t, past) })
	}
}

func testDivergentFollower(t *testing.T, past uint64) {
	dirs := map[string]string{"n1": t.TempDir(), "n2": t.TempDir(), "n3": t.TempDir()}
	logs := map[string]*proctest.SyncBuffer{"n1": {}, "n2": {}, "n3": {}}
	configure := func(cfg *Config) {
		cfg.TrailingLogs = 1
		cfg.AppendOnly, cfg.Dir = true, dirs[cfg.NodeID]
		cfg.LogOutput = logs[cfg.NodeID]
	}
	c := newTestCluster(t, 3, configure)
	old := c.leader()
	before := old.node.raft.LastIndex()
	c.isolate(old)
	// Entries it cannot commit: a write, and barriers after it (a
	// leader has one entry of writes in flight at most).
	go old.node.Apply([]store.Command{cmd(0, "SETBIT", "lost", "1", "1")}, new(store.Replies))
	waitFor(t, c, "the cut-off leader's write entry", func() bool { return old.node.raft.LastIndex() > before })
	for i := uint64(2); i <= 6+past; i++ {
		go old.node.raft.Barrier(time.Second)
		waitFor(t, c, "the cut-off leader's barrier", func() bool { return old.node.raft.LastIndex() >= before+i })
	}
	snapIndex := old.node.raft.LastIndex() - past

	var next *testNode
	waitFor(t, c, "another leader", func() bool {
		for _, tn := range c.nodes {
			if tn != old && tn.node.IsLeader() {
				next = tn
			}
		}
		return next != nil
	})
	for i := 0; next.node.raft.LastIndex() < snapIndex; i++ {
		if err := next.node.Apply([]store.Command{cmd(0, "SETBIT", "kept", strconv.Itoa(i), "1")}, new(store.Replies)); err != nil {
			t.Fatal(err)
		}
	}
	if got := next.node.raft.LastIndex(); got != snapIndex {
		t.Fatalf("setup: the new leader's log reached %d, past %d", got, snapIndex)
	}
	var committed raft.Log
	if err := next.node.logWrites.GetLog(snapIndex, &committed); err != nil {
		t.Fatal(err)
	}
	if err := next.node.Snapshot(); err != nil {
		t.Fatal(err)
	}

	c.heal()
	waitFor(t, c, "the former leader's install of the snapshot", func() bool { return old.node.Stats().Restores > 0 })
	var stale raft.Log
	if err := old.node.logWrites.GetLog(snapIndex+past, &stale); err != nil || stale.Term >= committed.Term {
		t.Fatalf("setup: after the install the former leader's entry %d is %+v (%v), want one of a term before %d", snapIndex+past, stale, err, committed.Term)
	}
	if got := logs[old.id].String(); !strings.Contains(got, "cannot catch up until it restarts (hashicorp/raft#697)") {
		t.Errorf("the stuck node's log does not tell of it:\n%s", got)
	}

	if err := old.node.Close(); err != nil {
		t.Fatal(err)
	}
	old.st = store.New()
	c.start(old, false, configure)
	if err := c.leader().node.Apply([]store.Command{cmd(0, "SETBIT", "kept", "1000", "1")}, new(store.Replies)); err != nil {
		t.Fatal(err)
	}
	c.converge()
	if got := logs[old.id].String(); !strings.Contains(got, "dropped log entries that diverge from the newest snapshot") {
		t.Errorf("the restarted node's log does not tell of the entries it dropped:\n%s", got)
	}
	if got := read(old.st, cmd(0, "EXISTS", "lost")); got[0] != ":0\r\n" {
		t.Fatalf("the write the cut-off leader never committed: EXISTS %q", got)
	}
}

// waitFor polls cond until it holds, failing the test if the cluster's
// deadline passes first.
func waitFor(t *testing.T, c *testCluster, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if c.ctx.Err() != nil {
			t.Fatalf("waiting for %s: %v", what, c.ctx.Err())
		}
		time.Sleep(time.Millisecond)
	}
}

func TestDropDivergentLog(t *testing.T) {
	// A log of entries 1 to 9, entry 6 missing when gap is set: terms 1
	// up to entry 3, then 2.
	for _, tc := range []struct {
		name                string
		gap                 bool
		snapIndex, snapTerm uint64
		dropped, last       uint64
	}{
		{"no snapshot", false, 0, 0, 0, 9},
		{"the snapshot's entry of its term", false, 5, 2, 0, 9},
		{"the snapshot's entry of another term", false, 5, 3, 5, 4},
		{"no entry at the snapshot's index, the next of its term", true, 6, 2, 0, 9},
		{"no entry at the snapshot's index, the next of an older term", true, 6, 3, 3, 6},
		{"no entry at the snapshot's index nor after it", false, 12, 3, 0, 9},
	} {
		logs := raft.NewInmemStore()
		for i := uint64(1); i <= 9; i++ {
			term := uint64(1)
			if i >= 4 {
				term = 2
			}
			if tc.gap && i == 6 {
				continue
			}
			if err := logs.StoreLog(&raft.Log{Index: i, Term: term}); err != nil {
				t.Fatal(err)
			}
		}
		dropped, err := dropDivergentLog(logs, tc.snapIndex, tc.snapTerm)
		last, _ := logs.LastIndex()
		if err != nil || dropped != tc.dropped || last != tc.last {
			t.Errorf("%s: dropped %d (%v), log up to %d; want %d dropped, up to %d", tc.name, dropped, err, last, tc.dropped, tc.last)
		}
	}
}
