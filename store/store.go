package store

import (
	"bytes"
	"container/heap"
	"sync"
	"sync/atomic"
	"time"

	"github.com/presenced/presenced/proto"
	"github.com/tidwall/btree"
)

// NumDBs is the number of databases, as in Redis's default configuration.
const NumDBs = 16

// Command is one client command bound for the store: the database it was
// issued in and its arguments, name first.
type Command struct {
	DB   int
	Args [][]byte
	// Spec is the command's table entry when the caller looked it up
	// already, or nil to have the store look it up from Args[0]. It is a
	// shortcut, not part of the command: replicas decode commands
	// without it.
	Spec *proto.Spec
}

// is reports whether cmd is the command called name (in lower case),
// without a lookup in the command table.
func (cmd Command) is(name string) bool {
	if cmd.Spec != nil {
		return cmd.Spec.Name == name
	}
	return len(cmd.Args) > 0 && bytes.EqualFold(cmd.Args[0], []byte(name))
}

// Replies collects the RESP replies of a batch: the encoded bytes, and the
// end offset in them of each command's reply.
type Replies struct {
	proto.Writer
	Ends []int
	// Tracked makes the store report the keys the batch reads to its
	// Tracker.
	Tracked bool
}

// Reply returns the encoded reply of command i.
func (r *Replies) Reply(i int) []byte {
	start := 0
	if i > 0 {
		start = r.Ends[i-1]
	}
	return r.B[start:r.Ends[i]]
}

// AppendFrom appends to r the replies of the n commands of src starting
// at command k. Replies src holds in RESP2 are converted when r holds
// RESP3 (see proto.AppendRESP3): a batch of writes from many connections
// is answered in RESP2 and handed out to each in its protocol.
func (r *Replies) AppendFrom(src *Replies, k, n int) {
	if n == 0 {
		return
	}
	from := 0
	if k > 0 {
		from = src.Ends[k-1]
	}
	if r.RESP3 && !src.RESP3 {
		for _, end := range src.Ends[k : k+n] {
			r.B = proto.AppendRESP3(r.B, src.B[from:end])
			r.Ends = append(r.Ends, r.Len())
			from = end
		}
		return
	}
	base := r.Len() - from
	r.Raw(src.B[from:src.Ends[k+n-1]])
	for _, end := range src.Ends[k : k+n] {
		r.Ends = append(r.Ends, base+end)
	}
}

// Truncate drops the replies from byte n on, with their ends.
func (r *Replies) Truncate(n int) {
	r.B = r.B[:n]
	for len(r.Ends) > 0 && r.Ends[len(r.Ends)-1] > n {
		r.Ends = r.Ends[:len(r.Ends)-1]
	}
}

// Reset empties r, keeping its buffers.
func (r *Replies) Reset() {
	r.Writer.Reset()
	r.Ends = r.Ends[:0]
}

// Stats are counters the server reports in INFO.
type Stats struct {
	// ExpiredKeys counts keys removed because their TTL passed.
	ExpiredKeys int64
}

// Lookups counts the lookups of a key to read it on this store since it
// was made, as Redis's keyspace_hits and keyspace_misses do. Unlike
// Stats, they are not state: each node counts the reads it serves.
type Lookups struct {
	// Hits found the key, Misses did not.
	Hits, Misses int64
}

// Store is the keyspace. It is safe for concurrent use: Apply takes the
// write lock for a whole batch, Read the read lock.
type Store struct {
	sink  sinkHolder                   // where bit events go; see SetEventSink
	ksink atomic.Pointer[KeyspaceSink] // where keyspace events go; see SetKeyspaceSink
	// bitsBehind is set when an Apply left passed bit deadlines or block
	// bounds for the next one (see BitsBehind).
	bitsBehind atomic.Bool
	// hits and misses are Lookups, which reads under the read lock add
	// to.
	hits, misses atomic.Int64
	// rules is mu.bitRules, for a look without the lock (see
	// ReadUnchanged).
	rules atomic.Pointer[[]BitTTLRule]
	// changes counts the sections under the write lock (see lock and
	// Changes).
	changes atomic.Uint64
	// expiryTook is told how long each Apply's expiry took (see
	// SetExpiryObserver).
	expiryTook atomic.Pointer[func(time.Duration)]
	// snapMu serializes Snapshot, whose copies mark what they share.
	snapMu sync.Mutex
	mu     struct {
		sync.RWMutex
		dbs        [NumDBs]*db
		now        int64 // log time of the latest Apply, unix ms
		expiries   expiryHeap
		stats      Stats
		applyCtx   ctx          // the context of the batch Apply is running
		bitHeap    []bitItem    // keys with armed bits, by their first block's bound
		bitRules   []BitTTLRule // the bit-TTL rules, first match wins
		scratch    []uint32     // the offsets a bit sweep clears, reused
		expiryLeft int          // what is left of the current Apply's expiryBudget
		hist       *history     // what history records and where; nil: off
		rec        recorder     // the state of history recording
		markedKey  []byte       // the buffer of applyCtx.marked, reused
		versions   versions     // the keys' versions, for WATCH
		tracker    Tracker      // what follows reads and changes of keys; see SetTracker
	}
}

type db struct {
	keys     map[string]*entry
	index    *btree.BTreeG[*entry] // the entries in (hash, key) order, for SCAN, KEYS and RANDOMKEY
	expiring int                   // keys with a TTL
}

type entry struct {
	key      string
	v        value
	expireAt int64  // unix ms; 0 when the key has no TTL
	heapAt   int64  // deadline of this entry's item in the expiry heap; 0 if none
	hash     uint64 // keyHash(key), the entry's place in the index
}

// New returns an empty store.
func New() *Store {
	s := &Store{}
	for i := range s.mu.dbs {
		s.mu.dbs[i] = newDB()
	}
	return s
}

func newDB() *db {
	return &db{keys: make(map[string]*entry), index: newIndex()}
}

// Apply executes a batch of commands atomically at log time now (unix
// ms), after first expiring every key whose TTL passed before now. It
// appends each command's reply to out. An empty batch only advances time:
// it is the tick that drives active expiry. Apply is deterministic: the
// same batches at the same times give the same state and replies.
func (s *Store) Apply(cmds []Command, now int64, out *Replies) {
	s.lock()
	defer s.mu.Unlock()
	c := s.startApply(now)
	defer c.end()
	c.w, c.by = &out.Writer, out
	c.execAll(cmds, out)
	s.appliedLocked()
}

// lock takes the write lock, which every change of the store holds, and
// counts the section in changes before anything changes.
func (s *Store) lock() {
	s.mu.Lock()
	s.changes.Add(1)
}

// Changes counts the times the store took its write lock, the only way it
// changes: while the count stays the same, so does the store (see
// ReadUnchanged, which keeps an answer while the count has not moved).
func (s *Store) Changes() uint64 { return s.changes.Load() }

// startApply moves the store's time to now (never backwards), through the
// boundaries on the way (see stepLocked), expires the keys whose TTL
// passed, then the bits whose deadline passed, within the Apply's expiry
// budget, and returns the write path's context.
// The caller holds the write lock, sets the context's writer and clears
// the context when done. Handlers take the context by pointer, which would move it to
// the heap on every batch; the write lock makes one per store enough.
func (s *Store) startApply(now int64) *ctx {
	s.mu.versions.next()
	if now < s.mu.now {
		now = s.mu.now // log time never runs backwards
	}
	sink, ksink := s.sink.load(), s.keyspaceSink()
	s.mu.expiryLeft = expiryBudget
	s.stepLocked(now, sink, ksink)
	s.mu.now = now
	var begin time.Time
	took := s.expiryTook.Load()
	if took != nil {
		begin = time.Now()
	}
	s.expireLocked(now, ksink)
	s.expireBitsLocked(now, sink)
	if took != nil {
		(*took)(time.Since(begin))
	}
	h := s.mu.bitHeap
	s.bitsBehind.Store(len(h) > 0 && passed(h[0].at, unitsUp(now)))
	c := &s.mu.applyCtx
	*c = ctx{s: s, now: now, write: true, sink: sink, ksink: ksink, hist: s.mu.hist}
	return c
}

// SetExpiryObserver has f told, under the write lock, how long the
// expiry at the start of each Apply took: the keys and the bits whose
// time passed by the log's clock, removed. f must be quick and must not
// call the store; nil (the default) times nothing.
func (s *Store) SetExpiryObserver(f func(time.Duration)) {
	if f == nil {
		s.expiryTook.Store(nil)
		return
	}
	s.expiryTook.Store(&f)
}

// ApplyEach applies batches in order at time now as one Apply of their
// concatenation would — the same state, the same replies — but appends
// each batch's replies to its own outs[i]. If done is not nil it is
// called with i as soon as batch i's replies are complete, before the
// later batches are applied (and under the write lock, so it must not
// call the store), so that its caller can be answered meanwhile.
func (s *Store) ApplyEach(now int64, batches [][]Command, outs []*Replies, done func(i int)) {
	s.lock()
	defer s.mu.Unlock()
	c := s.startApply(now)
	defer c.end()
	for i, cmds := range batches {
		c.w, c.by = &outs[i].Writer, outs[i]
		c.execAll(cmds, outs[i])
		if done != nil {
			c.flushLookups()
			done(i)
		}
	}
	s.appliedLocked()
}

// Now returns the store's time: that of the latest batch applied (unix
// ms).
func (s *Store) Now() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mu.now
}

// Read executes read-only commands at time now (unix ms) under the read
// lock, appending each reply to out. Keys whose TTL passed before now
// read as absent. A command that would write is refused.
func (s *Store) Read(cmds []Command, now int64, out *Replies) {
	s.read(now, out, func(c *ctx) bool {
		for len(cmds) > 0 {
			if n := c.watchRun(cmds, out); n > 0 {
				cmds = cmds[n:]
				continue
			}
			if n := c.getbitRun(cmds, out); n > 0 {
				c.reported(cmds[:n])
				cmds = cmds[n:]
				continue
			}
			c.exec(cmds[0])
			out.Ends = append(out.Ends, out.Len())
			c.reported(cmds[:1])
			cmds = cmds[1:]
		}
		return true
	})
}

// read runs f under the read lock with a read-path context writing to
// out, at time now or the store's time if that is later, and returns
// what f returns.
func (s *Store) read(now int64, out *Replies, f func(c *ctx) bool) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if now < s.mu.now {
		now = s.mu.now
	}
	c := readCtxs.Get().(*ctx)
	*c = ctx{s: s, now: now, w: &out.Writer, ksink: s.keyspaceSink(), by: out}
	defer func() {
		c.end()
		readCtxs.Put(c)
	}()
	return f(c)
}

// readCtxs recycles the contexts of concurrent reads, so that reading
// allocates nothing.
var readCtxs = sync.Pool{New: func() any { return new(ctx) }}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mu.stats
}

// Lookups returns the counts of lookups to read.
func (s *Store) Lookups() Lookups {
	return Lookups{Hits: s.hits.Load(), Misses: s.misses.Load()}
}

// KeyspaceInfo describes one non-empty database for INFO keyspace.
type KeyspaceInfo struct {
	DB, Keys, Expires int
}

// Keyspace lists the non-empty databases.
func (s *Store) Keyspace() []KeyspaceInfo {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []KeyspaceInfo
	for i, d := range s.mu.dbs {
		if len(d.keys) > 0 {
			out = append(out, KeyspaceInfo{DB: i, Keys: len(d.keys), Expires: d.expiring})
		}
	}
	return out
}

// expireLocked removes every key whose TTL passed before now, reporting
// each to ksink (if not nil) as expired.
func (s *Store) expireLocked(now int64, ksink KeyspaceSink) {
	h := &s.mu.expiries
	for len(*h) > 0 && (*h)[0].at < now {
		it := heap.Pop(h).(expiryItem)
		e := it.e
		d := s.mu.dbs[it.db]
		if e.heapAt != it.at || d.keys[e.key] != e {
			continue // a stale item: the entry was replaced or re-queued
		}
		e.heapAt = 0
		switch {
		case e.expireAt != 0 && e.expireAt < now:
			d.remove(e)
			s.mu.stats.ExpiredKeys++
			s.touchLocked(it.db, []byte(e.key), nil)
			s.markLocked(it.db, e.key)
			if ksink != nil {
				ksink(it.db, 'x', "expired", []byte(e.key))
			}
		case e.expireAt != 0:
			s.scheduleLocked(it.db, e)
		}
	}
}

// scheduleLocked makes sure the expiry heap holds an item for e at or
// before its deadline. A key whose TTL is pushed back keeps its earlier
// item, which re-queues it when it comes up, so refreshing a TTL on every
// heartbeat does not grow the heap.
func (s *Store) scheduleLocked(dbIndex int, e *entry) {
	if e.expireAt == 0 || (e.heapAt != 0 && e.heapAt <= e.expireAt) {
		return
	}
	e.heapAt = e.expireAt
	heap.Push(&s.mu.expiries, expiryItem{at: e.expireAt, db: dbIndex, e: e})
}

type expiryItem struct {
	at int64
	db int
	e  *entry
}

// expiryHeap is a min-heap of key deadlines.
type expiryHeap []expiryItem

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(expiryItem)) }
func (h *expiryHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

// remove deletes e from the database.
func (d *db) remove(e *entry) {
	if e.expireAt != 0 {
		d.expiring--
	}
	delete(d.keys, e.key)
	d.index.Delete(e)
}
