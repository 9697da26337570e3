package cluster

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/presenced/presenced/store"
)

// slowLogs is an in-memory log store whose writes take at least delay,
// as a flushed write does.
type slowLogs struct {
	*raft.InmemStore
	delay time.Duration
}

func (s slowLogs) StoreLogs(logs []*raft.Log) error {
	time.Sleep(s.delay)
	return s.InmemStore.StoreLogs(logs)
}

func TestTimedLogsCountWrites(t *testing.T) {
	const delay = 2 * time.Millisecond
	inner := slowLogs{raft.NewInmemStore(), delay}
	logs := &timedLogs{LogStore: inner}
	if err := logs.StoreLog(&raft.Log{Index: 1, Data: []byte("a")}); err != nil {
		t.Fatal(err)
	}
	if err := logs.StoreLogs([]*raft.Log{{Index: 2}, {Index: 3}}); err != nil {
		t.Fatal(err)
	}
	writes, took := logs.stats()
	if writes != 2 || took < 2*delay {
		t.Fatalf("2 writes of at least %v each: counted %d taking %v", delay, writes, took)
	}
	var got raft.Log
	if err := inner.GetLog(1, &got); err != nil || string(got.Data) != "a" {
		t.Fatalf("the store holds %+v (%v), want entry 1 with data a", got, err)
	}
	if last, _ := inner.LastIndex(); last != 3 {
		t.Fatalf("the store's last index is %d, want 3", last)
	}
}

// TestStatsTimeTheLog checks that every node counts the writes to its
// raft log, and the leader the entries it proposed and applied.
func TestStatsTimeTheLog(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	l := c.leader()
	before := map[*testNode]Stats{}
	for _, tn := range c.live() {
		before[tn] = tn.node.Stats()
	}
	const writes = 10
	for i := range writes {
		if err := l.node.Apply([]store.Command{cmd(0, "INCR", "k")}, new(store.Replies)); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	c.converge()
	for _, tn := range c.live() {
		b, a := before[tn], tn.node.Stats()
		if a.LogWrites <= b.LogWrites || a.LogWriteTime <= b.LogWriteTime {
			t.Errorf("%s: log writes went from %d (%v) to %d (%v) over %d entries", tn.id, b.LogWrites, b.LogWriteTime, a.LogWrites, a.LogWriteTime, writes)
		}
	}
	b, a := before[l], l.node.Stats()
	if a.LogWrites-b.LogWrites < writes {
		t.Errorf("the leader wrote its log %d times for %d entries proposed one after the other", a.LogWrites-b.LogWrites, writes)
	}
	if a.EntriesCommitted-b.EntriesCommitted < writes || a.EntryTime <= b.EntryTime {
		t.Errorf("the leader counted %d entries committed (%v) for %d writes", a.EntriesCommitted-b.EntriesCommitted, a.EntryTime-b.EntryTime, writes)
	}
}
