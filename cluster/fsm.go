package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/presenced/presenced/store"
)

// StateMachine is the state a Node replicates: the store, as the cluster
// sees it.
type StateMachine interface {
	// Apply executes a batch of commands atomically at log time now (unix
	// ms) and appends their replies to out. It must be deterministic: the
	// same batches at the same times give the same state on every replica.
	Apply(cmds []store.Command, now int64, out *store.Replies)
	// ApplyEach is Apply of the concatenation of batches, with each
	// batch's replies appended to its own outs[i]. If done is not nil it
	// is called with i once batch i is applied, before the next one is.
	ApplyEach(now int64, batches [][]store.Command, outs []*store.Replies, done func(i int))
	// Snapshot captures the current state. It runs between two Applies
	// and must be quick (clone or copy-on-write); the returned snapshot
	// encodes and digests the captured state later, concurrently with
	// further Applies.
	Snapshot() Snapshot
	// Restore replaces the whole state with one encoded by a snapshot's
	// WriteTo.
	Restore(r io.Reader) error
	// BitsBehind reports whether the latest Apply left expiry work that
	// was already due for the next one: the leader then proposes a tick
	// at once rather than at its interval.
	BitsBehind() bool
	// Due reports whether an empty Apply at now would do more than move
	// the state's time (expire something, record history): the leader
	// proposes a tick at its interval only then.
	Due(now int64) bool
}

// Snapshot is a captured state of a StateMachine.
type Snapshot interface {
	// WriteTo encodes the state, for Restore.
	io.WriterTo
	// Digest returns a checksum of the state: replicas that applied the
	// same entries have equal digests.
	Digest() uint64
	// Parts returns what Digest covers, taken apart where it can be: a
	// checksum of the data alone, and the number of Applies the state
	// went through.
	Parts() (data, applies uint64)
}

// fsm adapts a StateMachine to raft.FSM. The response of Apply, returned
// by raft's ApplyFuture.Response on the leader, is the entry's
// *store.Replies, or an error if the entry could not be decoded.
type fsm struct {
	mu       sync.Mutex // held while an entry is applied and while the state is captured or restored
	sm       StateMachine
	att      Attachment // nil: snapshots carry the state alone
	log      hclog.Logger
	replies  sync.Pool     // of *store.Replies
	applied  progress      // index of the latest entry of commands or membership applied
	restores atomic.Uint64 // snapshots restored
	// memberships counts the membership changes applied and the
	// snapshots restored: the membership may have changed when it grows.
	memberships atomic.Uint64
	// membership, if set, is told each membership applied.
	membership func(raft.Configuration)
	// persisting counts the snapshots taken and not yet released: their
	// state is being written, and the store's copy-on-write keeps what
	// they share with it.
	persisting atomic.Int64

	// pending holds the entries this node proposed and has not applied,
	// by their first byte (*byte -> *proposal): the FSM applies such an
	// entry from its proposal instead of decoding it.
	pending sync.Map

	logBytes     atomic.Int64  // bytes of entries applied
	commands     atomic.Uint64 // commands applied
	saves        *saves        // the record of the snapshots persisted
	snapshotMark atomic.Int64  // logBytes at the latest snapshot, set by Snapshot
	snapshotDue  atomic.Int64  // bytes past the mark that make a snapshot due
	// dueBySize makes snapshotDue follow the size of each snapshot
	// persisted, from memLogFloor to maxDue (see persisted).
	dueBySize bool
	maxDue    int64
	due       chan struct{} // signalled when a snapshot is due
	behind    chan struct{} // signalled when an entry left due expiry work
}

var _ raft.BatchingFSM = (*fsm)(nil)

// ApplyBatch implements raft.BatchingFSM: raft hands over the entries it
// commits together, up to its MaxAppendEntries of them when a node
// replays its log at start or a follower catches up. When more than one
// entry of the batch needs decoding, a goroutine decodes them ahead, in
// order, while the entries before them are applied: decoding is about a
// third of replaying a log.
//
// A membership change counts as applied, so that waiting for its index
// (a read index, say) does not wait for the next entry of commands.
func (f *fsm) ApplyBatch(logs []*raft.Log) []any {
	resps := make([]any, len(logs))
	ahead := f.decodeAhead(logs)
	for i, l := range logs {
		switch l.Type {
		case raft.LogCommand:
			resps[i] = f.apply(l, ahead)
		case raft.LogConfiguration:
			if f.membership != nil {
				f.membership(raft.DecodeConfiguration(l.Data))
			}
			f.memberships.Add(1)
			f.applied.advance(l.Index)
		}
	}
	return resps
}

// Apply implements raft.FSM, for one entry of commands.
func (f *fsm) Apply(l *raft.Log) any {
	return f.apply(l, nil)
}

// decoded is an entry of commands decodeAhead decoded, or skipped (an
// entry this node proposed, which apply takes from its proposal).
type decoded struct {
	e       entry
	err     error
	skipped bool
}

// decodeAhead starts decoding the entries of commands of logs that this
// node did not propose, if there are two or more, and returns a channel
// that yields one decoded for each entry of commands of logs, in order;
// nil if there is nothing to decode ahead.
func (f *fsm) decodeAhead(logs []*raft.Log) <-chan decoded {
	if len(logs) < 2 { // a leader's usual batch: its one entry in flight
		return nil
	}
	commands, foreign := 0, 0
	for _, l := range logs {
		if l.Type == raft.LogCommand {
			commands++
			if !f.proposed(l) {
				foreign++
			}
		}
	}
	if foreign < 2 {
		return nil
	}
	ahead := make(chan decoded, commands)
	go func() {
		for _, l := range logs {
			switch {
			case l.Type != raft.LogCommand:
			case f.proposed(l):
				ahead <- decoded{skipped: true}
			default:
				e, err := decodeEntry(l.Data)
				ahead <- decoded{e: e, err: err}
			}
		}
	}()
	return ahead
}

// proposed reports whether l is an entry this node proposed and has not
// applied yet.
func (f *fsm) proposed(l *raft.Log) bool {
	if len(l.Data) == 0 {
		return false
	}
	_, ok := f.pending.Load(&l.Data[0])
	return ok
}

// apply applies l, an entry of commands: from its proposal if this node
// proposed it, else decoded, by decodeAhead if ahead is not nil (it then
// yields l's decoding next).
func (f *fsm) apply(l *raft.Log, ahead <-chan decoded) any {
	var d decoded
	if ahead != nil {
		d = <-ahead
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.applied.advance(l.Index)
	defer f.signalBehind()
	if f.logBytes.Add(int64(len(l.Data)))-f.snapshotMark.Load() > f.snapshotDue.Load() {
		select {
		case f.due <- struct{}{}:
		default:
		}
	}
	if len(l.Data) > 0 {
		if p, ok := f.pending.LoadAndDelete(&l.Data[0]); ok {
			p := p.(*proposal)
			for _, b := range p.batches {
				f.commands.Add(uint64(len(b)))
			}
			p.apply(f.sm)
			return nil
		}
	}
	if ahead == nil || d.skipped {
		d.e, d.err = decodeEntry(l.Data)
	}
	if d.err != nil {
		// Every replica decodes the same bytes the same way, so skipping
		// the entry keeps the replicas equal; the callers see the error.
		f.log.Error("skipping log entry", "index", l.Index, "error", d.err)
		return fmt.Errorf("log index %d: %w", l.Index, d.err)
	}
	f.commands.Add(uint64(len(d.e.cmds)))
	out := f.getReplies()
	f.sm.Apply(d.e.cmds, d.e.time, out)
	return out
}

// signalBehind signals behind when the state machine has due work left.
func (f *fsm) signalBehind() {
	if f.sm.BitsBehind() {
		select {
		case f.behind <- struct{}{}:
		default:
		}
	}
}

// digest returns the index of the latest entry applied and the state's
// digests after it. It holds up the Applies only while it captures the
// state: the digests read the capture.
func (f *fsm) digest() StateDigest {
	f.mu.Lock()
	applied, state := f.applied.get(), f.sm.Snapshot()
	f.mu.Unlock()
	d := StateDigest{Applied: applied, Digest: state.Digest()}
	d.Data, d.Applies = state.Parts()
	return d
}

// StateDigest describes a node's state after the latest entry it
// applied (see Node.Digest).
type StateDigest struct {
	Applied uint64 // the index of the latest entry applied
	Digest  uint64 // the state's checksum, which replicas at Applied agree on
	Data    uint64 // the checksum of the data alone, without WATCH's versions
	Applies uint64 // the Applies the state went through, which number the versions
}

// getReplies returns an empty Replies, reusing one released by putReplies.
func (f *fsm) getReplies() *store.Replies {
	if r, ok := f.replies.Get().(*store.Replies); ok {
		return r
	}
	return new(store.Replies)
}

// putReplies makes r, whose contents were copied out, reusable.
func (f *fsm) putReplies(r *store.Replies) {
	r.Reset()
	f.replies.Put(r)
}

// Snapshot implements raft.FSM. Raft calls it between two Applies, so the
// index of the latest entry applied is exact. With the log on disk it
// refuses while the attachment has stopped following the log (see
// Attachment.Err).
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	if f.att != nil && !f.dueBySize {
		if err := f.att.Err(); err != nil {
			f.saves.refused()
			return nil, fmt.Errorf("cluster: no snapshot while the attachment has stopped following the log (%v): the log keeps the entries a restart replays into it", err)
		}
	}
	f.snapshotMark.Store(f.logBytes.Load())
	f.persisting.Add(1)
	f.mu.Lock() // a digest captures the state too
	defer f.mu.Unlock()
	f.saves.begin(time.Now(), f.commands.Load())
	return fsmSnapshot{state: f.sm.Snapshot(), applied: f.applied.get(), persisting: &f.persisting, saves: f.saves, persisted: f.persisted}, nil
}

// memLogFloor is the least log, in bytes of entries, that makes a
// snapshot due on a node whose log is in memory.
const memLogFloor = 16 << 20

// persisted records the size of a snapshot persisted. A node whose log
// is in memory (dueBySize) keeps it there beside the snapshot, so the
// next snapshot is due once the log has grown by this one's size, at
// least memLogFloor and at most maxDue (SnapshotBytes): the log then
// takes at most about as much memory as the snapshot, as Redis rewrites
// its AOF once it has doubled, and a snapshot costs at most about the
// log it replaces. With the log on disk, snapshots come every maxDue.
func (f *fsm) persisted(size int64) {
	if f.dueBySize {
		f.snapshotDue.Store(min(f.maxDue, max(memLogFloor, size)))
	}
}

// appliedSinceSnapshot reports whether entries were applied since the
// latest snapshot was taken, or since the start.
func (f *fsm) appliedSinceSnapshot() bool {
	return f.logBytes.Load() != f.snapshotMark.Load()
}

// Restore implements raft.FSM. A framed snapshot's attachment is
// restored after the state.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	return restoreFramed(rc, f.att, f.restoreState)
}

// restoreState restores a snapshot's cluster header and state.
func (f *fsm) restoreState(r io.Reader) error {
	var h [snapshotHeaderLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return fmt.Errorf("%w: header: %v", ErrBadSnapshot, err)
	}
	applied, err := decodeSnapshotHeader(h)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.sm.Restore(r); err != nil {
		return err
	}
	f.restores.Add(1)
	f.memberships.Add(1)
	f.applied.advance(applied)
	return nil
}

// ErrBadSnapshot is returned when a snapshot's cluster header is
// corrupted or of an unknown version.
var ErrBadSnapshot = errors.New("cluster: malformed snapshot")

// A snapshot is a header followed by the state machine's own encoding.
// Version 1 of the header is
//
//	byte    version (1)
//	uint64  index of the latest entry of commands applied, little endian
//	uint32  CRC-32C of the 9 bytes before it, little endian
const (
	snapshotVersion   = 1
	snapshotHeaderLen = 1 + 8 + 4
)

func encodeSnapshotHeader(applied uint64) []byte {
	h := make([]byte, 0, snapshotHeaderLen)
	h = append(h, snapshotVersion)
	return appendChecksum(binary.LittleEndian.AppendUint64(h, applied))
}

func decodeSnapshotHeader(h [snapshotHeaderLen]byte) (uint64, error) {
	body := h[:snapshotHeaderLen-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(h[snapshotHeaderLen-4:]) {
		return 0, fmt.Errorf("%w: header checksum mismatch", ErrBadSnapshot)
	}
	if h[0] != snapshotVersion {
		return 0, fmt.Errorf("%w: unknown version %d", ErrBadSnapshot, h[0])
	}
	return binary.LittleEndian.Uint64(body[1:]), nil
}

// fsmSnapshot writes a captured state into raft's snapshot sink.
type fsmSnapshot struct {
	state      io.WriterTo
	applied    uint64
	persisting *atomic.Int64 // the FSM's count, decremented on release
	saves      *saves        // told the outcome
	persisted  func(int64)   // told the size of a snapshot persisted
}

// Persist implements raft.FSMSnapshot.
func (s fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	n, err := sink.Write(encodeSnapshotHeader(s.applied))
	size := int64(n)
	if err == nil {
		var m int64
		m, err = s.state.WriteTo(sink)
		size += m
	}
	if err != nil {
		sink.Cancel()
	} else if err = sink.Close(); err == nil {
		s.persisted(size)
	}
	s.saves.end(err)
	return err
}

// Release implements raft.FSMSnapshot; raft calls it once the snapshot is
// persisted or failed.
func (s fsmSnapshot) Release() {
	s.saves.end(errNotPersisted) // if Persist did not run
	s.persisting.Add(-1)
}

// progress is an index that only grows, with a way to wait for it.
type progress struct {
	mu      sync.Mutex
	index   uint64
	changed chan struct{} // closed when index grows; nil while nobody waits
}

func (p *progress) advance(i uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i <= p.index {
		return
	}
	p.index = i
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
}

func (p *progress) get() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.index
}

// wait returns once the index reaches i, or ctx's error.
func (p *progress) wait(ctx context.Context, i uint64) error {
	for {
		p.mu.Lock()
		if p.index >= i {
			p.mu.Unlock()
			return nil
		}
		if p.changed == nil {
			p.changed = make(chan struct{})
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// FromStore adapts a store to StateMachine.
func FromStore(st *store.Store) StateMachine { return storeMachine{st} }

type storeMachine struct{ *store.Store }

func (m storeMachine) Snapshot() Snapshot { return replicaSnapshot{m.Store.Snapshot()} }

// replicaSnapshot is a store's snapshot whose digest covers the keys'
// versions too (see store.Snapshot.ReplicaDigest).
type replicaSnapshot struct{ *store.Snapshot }

// Digest implements Snapshot.
func (s replicaSnapshot) Digest() uint64 { return s.Snapshot.ReplicaDigest() }

// Parts implements Snapshot: the data's digest (DEBUG DIGEST's) and the
// Applies that number the keys' versions.
func (s replicaSnapshot) Parts() (data, applies uint64) {
	return s.Snapshot.Digest(), s.Snapshot.Applies()
}
