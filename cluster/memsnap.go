package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Sizes of the chunks memSnapshots writes a snapshot in: each as large as
// what was written before it, from minMemChunk up to memChunk, so that a
// small snapshot stays small.
const (
	minMemChunk = 64 << 10
	memChunk    = 1 << 20
)

// memSnapshots is the snapshot store of a node whose log is kept in
// memory (AppendOnly off). Like raft.InmemSnapshotStore it keeps the
// latest snapshot only, but it differs where that one would cost a large
// state dearly or hand out a partial snapshot:
//   - a snapshot is written in chunks of a fixed size rather than into
//     one buffer that doubles as it grows, which copies and zeroes all it
//     holds at each step and can leave half of itself unused;
//   - a snapshot becomes the latest when its sink is closed, so one being
//     written (by this node, or received from the leader) or cancelled is
//     never listed, opened or sent to a follower.
type memSnapshots struct {
	chunk  int // the most bytes of a chunk
	mu     sync.Mutex
	latest *memSnapshot // nil until a snapshot is complete
}

// memSnapshot is a complete snapshot: immutable once stored.
type memSnapshot struct {
	meta   raft.SnapshotMeta
	chunks [][]byte
}

// memSink writes a snapshot into a memSnapshots.
type memSink struct {
	store *memSnapshots
	snap  *memSnapshot
	done  bool
}

// errSinkDone is a write to a sink already closed or cancelled.
var errSinkDone = errors.New("cluster: snapshot sink already closed")

func newMemSnapshots() *memSnapshots {
	return &memSnapshots{chunk: memChunk}
}

// Create starts a snapshot; it is listed once its sink is closed.
func (m *memSnapshots) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration, configurationIndex uint64, _ raft.Transport) (raft.SnapshotSink, error) {
	if version != 1 {
		return nil, fmt.Errorf("cluster: unsupported snapshot version %d", version)
	}
	return &memSink{store: m, snap: &memSnapshot{meta: raft.SnapshotMeta{
		Version:            version,
		ID:                 fmt.Sprintf("%d-%d-%d", term, index, time.Now().UnixMilli()),
		Index:              index,
		Term:               term,
		Configuration:      configuration,
		ConfigurationIndex: configurationIndex,
	}}}, nil
}

// List returns the latest complete snapshot, if any.
func (m *memSnapshots) List() ([]*raft.SnapshotMeta, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.latest == nil {
		return nil, nil
	}
	meta := m.latest.meta
	return []*raft.SnapshotMeta{&meta}, nil
}

// Open returns the contents of the latest snapshot, which must be id.
func (m *memSnapshots) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	m.mu.Lock()
	latest := m.latest
	m.mu.Unlock()
	if latest == nil || latest.meta.ID != id {
		return nil, nil, fmt.Errorf("cluster: no snapshot %q in memory", id)
	}
	readers := make([]io.Reader, len(latest.chunks))
	for i, c := range latest.chunks {
		readers[i] = bytes.NewReader(c)
	}
	meta := latest.meta
	return &meta, io.NopCloser(io.MultiReader(readers...)), nil
}

// Write appends p to the snapshot.
func (s *memSink) Write(p []byte) (int, error) {
	if s.done {
		return 0, errSinkDone
	}
	n := len(p)
	for len(p) > 0 {
		last := len(s.snap.chunks) - 1
		if last < 0 || len(s.snap.chunks[last]) == cap(s.snap.chunks[last]) {
			size := min(max(int(s.snap.meta.Size)+n-len(p), minMemChunk), s.store.chunk)
			s.snap.chunks = append(s.snap.chunks, make([]byte, 0, size))
			last++
		}
		c := s.snap.chunks[last]
		k := min(len(p), cap(c)-len(c))
		s.snap.chunks[last] = append(c, p[:k]...)
		p = p[k:]
	}
	s.snap.meta.Size += int64(n)
	return n, nil
}

// Close completes the snapshot: it replaces the latest one. Closing a
// sink already closed or cancelled does nothing, as for raft's file
// sinks: the FSM's Persist closes the sink, then raft closes it again.
func (s *memSink) Close() error {
	if s.done {
		return nil
	}
	s.done = true
	s.store.mu.Lock()
	s.store.latest = s.snap
	s.store.mu.Unlock()
	return nil
}

// ID returns the snapshot's ID.
func (s *memSink) ID() string { return s.snap.meta.ID }

// Cancel drops the snapshot; the latest one stays.
func (s *memSink) Cancel() error {
	s.done = true
	s.snap.chunks = nil
	return nil
}
