package cluster

import (
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// saves is the record a node keeps of its snapshots, as redis-server keeps
// one of its saves for LASTSAVE and INFO persistence. A snapshot is both of
// Redis's saves: the whole state written (an RDB file), and the log
// compacted up to it (an AOF rewrite). Raft takes one snapshot at a time.
type saves struct {
	mu      sync.Mutex
	last    time.Time     // when the latest snapshot was persisted, or found current; the node's start before
	took    time.Duration // how long the latest snapshot took, from capture to persisted; -1 before the first
	count   uint64        // snapshots persisted since the node started
	failed  bool          // whether the latest snapshot failed
	changes uint64        // commands applied when the latest snapshot was captured
	since   time.Time     // when the snapshot being written was captured; zero while none is
	pending uint64        // commands applied when that snapshot was captured
}

// errNotPersisted records a snapshot raft released without persisting it
// (it could not create the snapshot's files, say).
var errNotPersisted = errors.New("cluster: snapshot not persisted")

func newSaves(start time.Time) *saves {
	return &saves{last: start, took: -1}
}

// begin records a snapshot captured at taken, when changes commands had
// been applied.
func (s *saves) begin(taken time.Time, changes uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.since, s.pending = taken, changes
}

// end records the outcome of the snapshot begun last; it does nothing if
// that snapshot's outcome is recorded already.
func (s *saves) end(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.since.IsZero() {
		return
	}
	s.failed = err != nil
	if err == nil {
		s.last, s.took, s.changes = time.Now(), time.Since(s.since), s.pending
		s.count++
	}
	s.since = time.Time{}
}

// refused records a snapshot refused before it was captured.
func (s *saves) refused() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed = true
}

// current records that the latest snapshot holds the state as it is now,
// when changes commands have been applied: there is nothing new to save.
func (s *saves) current(changes uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last, s.failed, s.changes = time.Now(), false, changes
}

// SaveStats describes a node's snapshots as Redis describes its saves.
type SaveStats struct {
	// Last is when the latest snapshot was persisted, or found to hold
	// the state already (Save); when the node started, before either.
	Last time.Time
	// Took is how long the latest snapshot took from capturing the state
	// to persisting it; -1 before the first.
	Took time.Duration
	// Count is the number of snapshots persisted since the node started.
	Count uint64
	// Failed reports whether the latest snapshot failed.
	Failed bool
	// Changes counts the commands applied since the latest snapshot
	// captured the state.
	Changes uint64
	// Since is when the snapshot being written captured the state; zero
	// while none is being written.
	Since time.Time
}

// SaveStats returns the record of the node's snapshots.
func (n *Node) SaveStats() SaveStats {
	return n.fsm.saves.stats(n.fsm.commands.Load())
}

// stats returns the record, when applied commands have been applied.
func (s *saves) stats(applied uint64) SaveStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return SaveStats{Last: s.last, Took: s.took, Count: s.count, Failed: s.failed, Changes: applied - s.changes, Since: s.since}
}

// Save takes a snapshot now and returns once it is persisted, as Redis's
// SAVE does. When the latest snapshot holds every entry applied (raft has
// nothing new to snapshot), that snapshot is the save, and the state
// counts as saved now.
func (n *Node) Save() error {
	err := n.Snapshot()
	if errors.Is(err, raft.ErrNothingNewToSnapshot) {
		n.fsm.saves.current(n.fsm.commands.Load())
		return nil
	}
	return err
}
