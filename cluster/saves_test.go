package cluster

import (
	"errors"
	"strconv"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/presenced/presenced/store"
)

// TestSavesRecord follows the record of snapshots through one persisted,
// one that failed, and one raft released without persisting it.
func TestSavesRecord(t *testing.T) {
	f, _ := newTestFSM()
	record := func() SaveStats { return f.saves.stats(f.commands.Load()) }
	started := record().Last
	f.commands.Store(10)
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if record().Since.IsZero() {
		t.Fatal("a snapshot captured is not in progress")
	}
	sink := &discardSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	s := record()
	if s.Count != 1 || s.Failed || s.Changes != 0 || !s.Last.After(started) || s.Took < 0 || !s.Since.IsZero() || !sink.closed {
		t.Fatalf("after a snapshot persisted: %+v", s)
	}

	f.commands.Store(15)
	snap, _ = f.Snapshot()
	sink = &discardSink{fail: errors.New("disk full")}
	if err := snap.Persist(sink); err == nil {
		t.Fatal("Persist into a failing sink succeeded")
	}
	snap.Release()
	if got := record(); got.Count != 1 || !got.Failed || got.Changes != 5 || got.Last != s.Last || !sink.cancelled {
		t.Fatalf("after a snapshot failed: %+v", got)
	}

	snap, _ = f.Snapshot()
	snap.Release() // raft could not create the snapshot's files
	if got := record(); !got.Failed || got.Count != 1 || !got.Since.IsZero() {
		t.Fatalf("after a snapshot released unpersisted: %+v", got)
	}
	if f.persisting.Load() != 0 {
		t.Fatalf("%d snapshots still persisting", f.persisting.Load())
	}
}

// discardSink is a raft.SnapshotSink that writes nowhere, or fails every
// write with fail.
type discardSink struct {
	fail              error
	closed, cancelled bool
}

func (s *discardSink) Write(p []byte) (int, error) {
	if s.fail != nil {
		return 0, s.fail
	}
	return len(p), nil
}
func (s *discardSink) Close() error  { s.closed = true; return nil }
func (s *discardSink) ID() string    { return "discard" }
func (s *discardSink) Cancel() error { s.cancelled = true; return nil }

var _ raft.SnapshotSink = (*discardSink)(nil)

// TestSaveCountsChanges: SaveStats counts the commands applied since the
// latest snapshot, and SAVE's snapshot resets the count.
func TestSaveCountsChanges(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	n := c.leader().node
	before := n.SaveStats()
	var out store.Replies
	for i := range 3 {
		if err := n.Apply([]store.Command{cmd(0, "INCR", "n"), cmd(0, "SETBIT", "b", strconv.Itoa(i), "1")}, &out); err != nil {
			t.Fatal(err)
		}
	}
	if got := n.SaveStats().Changes - before.Changes; got != 6 {
		t.Fatalf("%d changes counted for 6 commands", got)
	}
	if err := n.Save(); err != nil {
		t.Fatal(err)
	}
	if st := n.SaveStats(); st.Changes != 0 || st.Count != before.Count+1 || !st.Last.After(before.Last) {
		t.Fatalf("after Save: %+v, before %+v", st, before)
	}
}
