package store

import (
	"bytes"
	"cmp"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
)

// History recording.
//
// History is stamped at boundaries, the multiples of HistoryTick ms of
// log time. The state "at B" is the state after every entry with a log
// time below B, with the bits and keys whose deadline is below B expired.
// The store records at B when it applies the first entry at or after B,
// before that entry's own expiry sweep and commands: it expires what is
// due at B, records a count for every recorded key changed since the
// previous boundary and, at multiples of the snapshot interval, the
// bitmap of every recorded key changed since its last snapshot. Then it
// tells the sink that everything up to the newest boundary passed is
// recorded.
//
// A snapshot hands the sink a private copy of the bitmap (shared copy on
// write), or, when the value followed its changes since the key's last
// snapshot and the sink takes them, only those (see bitChanges).
//
// Changes are found by marking: after a write command, each key it names
// (the command table's key positions, plus the keys of other databases
// COPY and MOVE write, and every key that FLUSHDB, FLUSHALL and SWAPDB
// touch); and each key that loses bits or is removed by expiry. Marking
// too much costs only a point equal to the previous one, which history
// drops; missing a change would lose it. A key is marked in two sets:
// dirty (changed since the previous boundary) and snap (changed since its
// last bitmap snapshot). A key in dirty is always in snap, as both are
// filled together and dirty empties at every boundary, snap only at
// snapshot boundaries; so a key already dirty costs one map lookup.
//
// Boundaries at which nothing is due (no dirty key, no key or bit
// deadline passing, no snapshot of a changed key) are skipped without
// visiting them, so an idle hour costs as little as one tick.

// HistoryTick is the resolution of history in ms: points are stamped at
// multiples of it.
const HistoryTick = 100

// defaultHistoryInterval is the snapshot interval (ms) of a HistoryConfig
// that gives none, and maxHistoryInterval (about 35 years) the longest.
const (
	defaultHistoryInterval = 60_000
	maxHistoryInterval     = 1 << 40
)

// HistorySink receives, in log order, what the store records for history.
// Calls come from the apply path with the store's write lock held:
// implementations must only queue (they may block for backpressure) and
// must not call the store.
type HistorySink interface {
	// RecordCount records that from boundary ts on, the key's bit count
	// was count.
	RecordCount(ts int64, db int, key string, count uint64)
	// RecordBitmap records the key's whole bitmap as of boundary ts; bm
	// is a private clone the sink owns. flips, when not nil, are the bits
	// changed since the key's snapshot at boundary since, also the
	// sink's.
	RecordBitmap(ts int64, db int, key string, bm *roaring.Bitmap, byteLen uint64, flips *roaring.Bitmap, since int64)
	// RecordChanges records the key's bitmap as of boundary ts, bm, as
	// the key's snapshot at boundary since with the bits of flips flipped
	// (flips is the sink's from then on; bm is the key's live bitmap,
	// which the sink may read during the call only), and reports true;
	// or records nothing and reports false when it would rather have the
	// whole bitmap (the last snapshot it was given for the key is not the
	// one at since, or it wants a full one), which the store then gives
	// it with RecordBitmap.
	RecordChanges(ts int64, db int, key string, bm *roaring.Bitmap, byteLen uint64, flips *roaring.Bitmap, since int64) bool
	// RecordStrings records the whole bitmaps as of boundary ts of keys
	// of database db that hold strings: keys[i]'s are the set bits of
	// raws[i] (private copies the sink owns), which the sink reads as
	// bitstr.Bitmap does, away from the apply path. One call hands over
	// a batch of a snapshot boundary's strings, up to a few MiB of them.
	RecordStrings(ts int64, db int, keys []string, raws [][]byte)
	// Advance says every point stamped at or before boundary ts has been
	// recorded.
	Advance(ts int64)
	// Purge erases every point of the key (HISTORY PURGE applied at log
	// time ts).
	Purge(ts int64, db int, key string)
}

// HistoryConfig says what the store records. It is node-local
// configuration (every node should be given the same).
type HistoryConfig struct {
	// Interval is the time in ms between bitmap snapshots, a positive
	// multiple of HistoryTick; SetHistory rounds other values up to one,
	// takes 0 or less as the default, 60 000, and caps it at 2^40.
	Interval int64
	// Keys are glob patterns (as KEYS takes) of the recorded keys; empty
	// records every key.
	Keys []string
}

// history is the recording configuration of a store with history on.
type history struct {
	sink     HistorySink
	interval int64
	keys     []string
}

// recorder is the state of recording that replicas share through
// snapshots (see the snapshot format).
type recorder struct {
	// last is the newest boundary handled; 0 until recording starts,
	// when every recorded key is marked so that its present state is
	// recorded.
	last  int64
	dirty [NumDBs]map[string]struct{} // keys changed since the boundary last
	snap  [NumDBs]map[string]struct{} // keys changed since their last snapshot
}

// SetHistory makes the store record history into sink, as cfg says, from
// the next Apply on; a nil sink turns recording off. Call it before the
// first Apply. Recording state restored from a snapshot is kept.
func (s *Store) SetHistory(sink HistorySink, cfg HistoryConfig) {
	s.lock()
	defer s.mu.Unlock()
	if sink == nil {
		s.mu.hist = nil
		return
	}
	interval := cfg.Interval
	if interval <= 0 {
		interval = defaultHistoryInterval
	}
	interval = (min(interval, maxHistoryInterval) + HistoryTick - 1) / HistoryTick * HistoryTick
	s.mu.hist = &history{sink: sink, interval: interval, keys: slices.Clone(cfg.Keys)}
}

// LoadBitmap installs bm (owned by the store from then on) as key's value
// with the given logical byte length in db, replacing any value, without
// TTL. It is not a command (no log): it builds read-only views of the
// past. A byte length too short for bm's bits is raised to cover them,
// one beyond MaxStringLen lowered to it; a db out of range is ignored.
func (s *Store) LoadBitmap(db int, key string, bm *roaring.Bitmap, byteLen uint64) {
	if db < 0 || db >= NumDBs || bm == nil {
		return
	}
	s.lock()
	defer s.mu.Unlock()
	c := ctx{s: s, now: s.mu.now, write: true}
	c.putIn(db, key, bitmapValue(bm, byteLen), 0)
}

// bitmapValue is a value in bitmap form of bm and at least byteLen bytes,
// enough to hold bm's bits.
func bitmapValue(bm *roaring.Bitmap, byteLen uint64) value {
	byteLen = min(byteLen, MaxStringLen)
	if !bm.IsEmpty() {
		byteLen = max(byteLen, uint64(bm.Maximum())/8+1)
	}
	return value{bm: bm, n: int64(byteLen)}
}

// matches reports whether key is recorded.
func (h *history) matches(key string) bool {
	if len(h.keys) == 0 {
		return true
	}
	for _, p := range h.keys {
		if globMatch(p, key) {
			return true
		}
	}
	return false
}

// clone returns a copy of r that shares no map with it.
func (r *recorder) clone() recorder {
	c := recorder{last: r.last}
	for i := range r.dirty {
		c.dirty[i] = maps.Clone(r.dirty[i])
		c.snap[i] = maps.Clone(r.snap[i])
	}
	return c
}

// markLocked marks key of database db as changed, if history is on and
// records it.
func (s *Store) markLocked(db int, key string) {
	if h := s.mu.hist; h != nil {
		if _, ok := s.mu.rec.dirty[db][key]; !ok && h.matches(key) {
			s.mu.rec.add(db, key)
		}
	}
}

// mark marks key of database db when history is on and records it. A
// key already dirty costs one map lookup, and nothing when the Apply's
// previous write marked it too (the dirty sets are emptied only before
// an Apply runs its commands).
func (c *ctx) mark(db int, key []byte) {
	h := c.hist
	if h == nil || c.marked != nil && db == c.markedDB && bytes.Equal(c.marked, key) {
		return
	}
	if _, ok := c.s.mu.rec.dirty[db][string(key)]; !ok {
		if !h.matches(string(key)) {
			return
		}
		c.s.mu.rec.add(db, string(key))
	}
	// Copied: the command's arguments may be reused once it is answered.
	c.s.mu.markedKey = append(c.s.mu.markedKey[:0], key...)
	c.marked, c.markedDB = c.s.mu.markedKey, db
}

// add puts key in both sets.
func (r *recorder) add(db int, key string) {
	if r.dirty[db] == nil {
		r.dirty[db] = make(map[string]struct{})
	}
	if r.snap[db] == nil {
		r.snap[db] = make(map[string]struct{})
	}
	r.dirty[db][key] = struct{}{}
	r.snap[db][key] = struct{}{}
}

// markDBLocked marks every key of database i.
func (s *Store) markDBLocked(i int) {
	if s.mu.hist == nil {
		return
	}
	for key := range s.mu.dbs[i].keys {
		s.markLocked(i, key)
	}
}

// stepLocked goes through the boundaries from the store's time up to now
// at which something is due (see nextDue), expiring the keys and bits due
// by each and, when history is on, recording it (see the top of this
// file); it reports the bits that expire to events. Bits expire boundary
// by boundary whether or not history is recorded: an Apply that spends
// its expiry budget then stops at the same bit on every replica, with or
// without history.
func (s *Store) stepLocked(now int64, events EventSink, ksink KeyspaceSink) {
	h, r := s.mu.hist, &s.mu.rec
	last := s.mu.now - s.mu.now%HistoryTick
	switch {
	case h == nil && r.last != 0:
		s.mu.rec = recorder{} // off: recording starts afresh when turned on
	case h != nil && r.last == 0:
		r.last = last
		for i := range s.mu.dbs {
			s.markDBLocked(i)
		}
	case h != nil:
		last = r.last
	}
	target := now - now%HistoryTick
	if target <= last {
		return
	}
	for b := last + HistoryTick; ; b += HistoryTick {
		b = s.nextDue(b)
		if b > target {
			break
		}
		s.expireLocked(b, ksink)
		s.expireBitsLocked(b, events)
		if h != nil {
			s.recordCounts(h, b)
			if b%h.interval == 0 {
				s.recordBitmaps(h, b)
			}
		}
	}
	if h != nil {
		r.last = target
		h.sink.Advance(target)
	}
}

// Due reports whether an Apply at now would do more than move the store's
// time: expire a key or a bit, or record history (a changed key's count or
// snapshot, or the present state of every key when recording starts). A
// leader proposes a tick only while something is due, so a quiet store's
// log stays still.
func (s *Store) Due(now int64) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.bitsBehind.Load() || s.mu.hist != nil && s.mu.rec.last == 0 {
		return true
	}
	if h := s.mu.expiries; len(h) > 0 && h[0].at < now {
		return true
	}
	if h := s.mu.bitHeap; len(h) > 0 && passed(h[0].at, unitsUp(now)) {
		return true
	}
	last := s.mu.now - s.mu.now%HistoryTick
	if s.mu.hist != nil {
		last = s.mu.rec.last
	}
	return s.nextDue(last+HistoryTick) <= now
}

// nextDue returns the first boundary at or after b at which something is
// to be done: a dirty key to record, a key or bit deadline passing, or a
// snapshot of a changed key. Stale heap items make it stop early, which
// is harmless.
func (s *Store) nextDue(b int64) int64 {
	r := &s.mu.rec
	if anyKeys(&r.dirty) {
		return b
	}
	next := int64(math.MaxInt64)
	if h := s.mu.expiries; len(h) > 0 {
		next = boundaryAfter(h[0].at) // a key is gone from there on
	}
	if h := s.mu.bitHeap; len(h) > 0 {
		next = min(next, boundaryAfter(h[0].at*timerTick)) // and a bit
	}
	if anyKeys(&r.snap) {
		iv := s.mu.hist.interval
		next = min(next, (b+iv-1)/iv*iv)
	}
	return max(next, b)
}

// boundaryAfter returns the first boundary above t >= 0, or MaxInt64
// when there is none.
func boundaryAfter(t int64) int64 {
	b := t - t%HistoryTick
	if b > math.MaxInt64-HistoryTick {
		return math.MaxInt64
	}
	return b + HistoryTick
}

// anyKeys reports whether any database's set holds a key.
func anyKeys(sets *[NumDBs]map[string]struct{}) bool {
	for _, m := range sets {
		if len(m) > 0 {
			return true
		}
	}
	return false
}

// recordCounts records the count of every dirty key at boundary b and
// empties the dirty sets.
func (s *Store) recordCounts(h *history, b int64) {
	r := &s.mu.rec
	for db, m := range r.dirty {
		for _, key := range sortedKeys(m) {
			h.sink.RecordCount(b, db, key, s.countOf(db, key))
		}
		clear(m)
	}
}

// maxStringBatch bounds the bytes of string copies one RecordStrings call
// hands over (stringOverhead counted for each string, and the last one
// whole): a boundary at which many small keys changed makes few calls, and
// one at which large strings changed does not copy them all before the
// sink's backpressure can hold the apply path back.
const (
	maxStringBatch = 4 << 20
	stringOverhead = 64
)

// recordBitmaps records the bitmap of every key changed since its last
// snapshot at boundary b, as the bits changed since that snapshot when its
// value followed them and the sink can take them (no copy of the bitmap is
// shared then, so writes do not copy its containers afterwards), the
// strings as copies of their bytes in batches (the sink makes their bitmaps
// off the apply path), and empties the snapshot sets.
func (s *Store) recordBitmaps(h *history, b int64) {
	r := &s.mu.rec
	for db, m := range r.snap {
		keys := changedKeys(s.mu.dbs[db], m)
		var strs stringBatch
		for i, k := range keys {
			key, e := k.key, k.e
			flips, since := takeChanges(e, db, key, b)
			switch {
			case flips != nil && h.sink.RecordChanges(b, db, key, e.v.bm, uint64(e.v.n), flips, since):
				// recorded as its changes
			case e == nil:
				h.sink.RecordBitmap(b, db, key, roaring.New(), 0, flips, since)
			case e.v.bm == nil:
				if strs.add(key, e.v.raw, len(keys)-i) {
					strs.flush(h.sink, b, db)
				}
			default:
				h.sink.RecordBitmap(b, db, key, share(e.v.bm), uint64(e.v.n), flips, since)
			}
		}
		strs.flush(h.sink, b, db)
		clear(m)
	}
}

// changedKey is a key changed since its last snapshot, with its entry
// (nil when the key is gone) and its hash (keyHash).
type changedKey struct {
	hash uint64
	key  string
	e    *entry
}

// changedKeys returns the keys of m, in database d, in (hash, key) order:
// the same on every replica, so that every replica makes the same calls in
// the same order, and quicker to sort than the keys' bytes, which lie all
// over the heap.
func changedKeys(d *db, m map[string]struct{}) []changedKey {
	keys := make([]changedKey, 0, len(m))
	for key := range m {
		k := changedKey{key: key, e: d.keys[key]}
		if k.e != nil {
			k.hash = k.e.hash
		} else {
			k.hash = keyHash(key)
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b changedKey) int {
		if c := cmp.Compare(a.hash, b.hash); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	return keys
}

// stringBatch gathers strings of a snapshot boundary for one RecordStrings
// call: their keys and live values, which flush copies into one buffer.
type stringBatch struct {
	keys  []string
	raws  [][]byte
	bytes int // stringOverhead for each string, plus their lengths
}

// add adds key, holding raw, and reports whether the batch is full; room
// is the most strings the boundary may still add, which sizes a new
// batch.
func (sb *stringBatch) add(key string, raw []byte, room int) bool {
	if sb.keys == nil {
		n := min(room, maxStringBatch/stringOverhead)
		sb.keys, sb.raws = make([]string, 0, n), make([][]byte, 0, n)
	}
	sb.keys = append(sb.keys, key)
	sb.raws = append(sb.raws, raw)
	sb.bytes += stringOverhead + len(raw)
	return sb.bytes >= maxStringBatch
}

// flush hands the batch to sink as database db's strings at boundary b,
// with copies of their values in one buffer (one allocation, not one a
// string, in the apply path), and empties the batch.
func (sb *stringBatch) flush(sink HistorySink, b int64, db int) {
	if len(sb.keys) == 0 {
		return
	}
	buf := make([]byte, 0, sb.bytes-stringOverhead*len(sb.keys))
	for i, raw := range sb.raws {
		buf = append(buf, raw...)
		sb.raws[i] = buf[len(buf)-len(raw) : len(buf) : len(buf)]
	}
	sink.RecordStrings(b, db, sb.keys, sb.raws)
	*sb = stringBatch{}
}

// sortedKeys returns the keys of m in order, so that every replica makes
// the same calls in the same order.
func sortedKeys(m map[string]struct{}) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// countOf is the bit count of key in database db, 0 when it is absent.
// At a boundary every stored key is alive: expiry just ran.
func (s *Store) countOf(db int, key string) uint64 {
	e := s.mu.dbs[db].keys[key]
	switch {
	case e == nil:
		return 0
	case e.v.bm != nil:
		return e.v.bm.GetCardinality()
	}
	return uint64(popcount(e.v.raw))
}
