package store

import "github.com/presenced/presenced/proto"

// Tracker follows, for client-side caching (Redis's CLIENT TRACKING),
// which keys the batches of tracking clients read and which keys change,
// so that the server can tell the clients that may hold a changed key in
// their caches to drop it. Its methods are called in the order of the
// reads and changes, under the store's lock (Read under the read lock,
// the others under the write lock), so that no change falls between a
// read and its report: they must be quick and must not call the store.
type Tracker interface {
	// Read reports that the read-only command spec with args, of the
	// batch whose replies go to by, read its keys. Only batches whose
	// Replies are Tracked report their reads.
	Read(spec *proto.Spec, args [][]byte, by *Replies)
	// Changed reports a change of key (in any database, as Redis's
	// tracking does not tell databases apart) by the batch whose
	// replies go to by, nil when no batch made it (expiry). key is
	// only valid during the call.
	Changed(key []byte, by *Replies)
	// Flushed reports that every key may have changed: FLUSHDB or
	// FLUSHALL by the batch whose replies go to by, or a snapshot
	// replacing the keyspace (by is nil).
	Flushed(by *Replies)
	// Applied ends the changes of one Apply.
	Applied()
}

// SetTracker makes t follow the reads and changes from now on; nil (the
// default) stops it, which then costs each change a check.
func (s *Store) SetTracker(t Tracker) {
	s.lock()
	s.mu.tracker = t
	s.mu.Unlock()
}

// touchLocked records a change of key in database db by the batch whose
// replies go to by (nil for expiry): its version, for WATCH, and the
// tracker's report.
func (s *Store) touchLocked(db int, key []byte, by *Replies) {
	s.mu.versions.touch(db, key)
	if s.mu.tracker != nil {
		s.mu.tracker.Changed(key, by)
	}
}

// flushedLocked tells the tracker that every key may have changed.
func (s *Store) flushedLocked(by *Replies) {
	if s.mu.tracker != nil {
		s.mu.tracker.Flushed(by)
	}
}

// appliedLocked tells the tracker that an Apply ended.
func (s *Store) appliedLocked() {
	if s.mu.tracker != nil {
		s.mu.tracker.Applied()
	}
}

// reported tells the tracker of the keys cmds read, if their batch's
// replies are tracked: those of its read-only commands.
func (c *ctx) reported(cmds []Command) {
	if c.by == nil || !c.by.Tracked || c.s.mu.tracker == nil {
		return
	}
	for _, cmd := range cmds {
		spec := cmd.Spec
		if spec == nil && len(cmd.Args) > 0 {
			spec = proto.Lookup(cmd.Args[0])
		}
		if spec != nil && spec.Flags&proto.ReadOnly != 0 && spec.CheckArity(len(cmd.Args)) {
			c.s.mu.tracker.Read(spec, cmd.Args, c.by)
		}
	}
}
