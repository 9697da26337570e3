package cluster

import (
	"errors"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// A follower whose log holds entries a former leader appended and never
// committed can install a leader's snapshot and keep those of them that
// sit at or after the snapshot's index (hashicorp/raft#697). It then
// rejects every append after the snapshot, the leader sends it the
// snapshot again, and it never catches up. watchedSnapshots tells of it
// when it happens; dropDivergentLog mends it when the node restarts.

// dropDivergentLog deletes the log's entries that diverge from the newest
// snapshot, whose last entry is at snapIndex and of snapTerm, and returns
// how many it deleted: from snapIndex on when the log's entry there is of
// another term, or from the first entry after it when the log lacks that
// one and the next is of an older term. The committed entry at snapIndex
// is of snapTerm, so by Raft's log matching such entries, and every entry
// after them in this log, were appended by a leader that never committed
// them. Run before raft starts, it mends a node stuck as described above:
// raft then starts from the snapshot, with nothing after it in the log
// to conflict.
func dropDivergentLog(logs raft.LogStore, snapIndex, snapTerm uint64) (uint64, error) {
	if snapIndex == 0 {
		return 0, nil
	}
	last, err := logs.LastIndex()
	if err != nil {
		return 0, err
	}
	for i := snapIndex; i <= min(snapIndex+1, last); i++ {
		var l raft.Log
		switch err := logs.GetLog(i, &l); {
		case errors.Is(err, raft.ErrLogNotFound):
			continue
		case err != nil:
			return 0, err
		case l.Term == snapTerm || i > snapIndex && l.Term > snapTerm:
			return 0, nil
		}
		if err := logs.DeleteRange(i, last); err != nil {
			return 0, err
		}
		return last - i + 1, nil
	}
	return 0, nil
}

// watchedSnapshots is raft's snapshot store, which logs an error when a
// snapshot it stored leaves the node stuck as described above: the log's
// entry at the snapshot's index is of another term than the snapshot's.
// raft stores both the node's own snapshots and the leader's through
// Create; the node's own always agree with its log.
type watchedSnapshots struct {
	raft.SnapshotStore
	logs raft.LogStore
	log  hclog.Logger
}

// Create implements raft.SnapshotStore.
func (s watchedSnapshots) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration, configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.SnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, err
	}
	return watchedSink{sink, func() { s.check(index, term) }}, nil
}

// check logs an error if the log's entry at index is of another term
// than term, a stored snapshot's.
func (s watchedSnapshots) check(index, term uint64) {
	var l raft.Log
	if s.logs.GetLog(index, &l) == nil && l.Term != term {
		s.log.Error("installed a snapshot that an entry of this node's log contradicts: the node cannot catch up until it restarts (hashicorp/raft#697)",
			"index", index, "snapshot-term", term, "entry-term", l.Term)
	}
}

// watchedSink is a snapshot's sink that runs stored once the snapshot is
// stored whole.
type watchedSink struct {
	raft.SnapshotSink
	stored func()
}

// Close implements raft.SnapshotSink.
func (s watchedSink) Close() error {
	err := s.SnapshotSink.Close()
	if err == nil {
		s.stored()
	}
	return err
}
