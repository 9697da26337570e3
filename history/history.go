// Package history keeps point-in-time history of bitmap keys in a bbolt
// file: a count series per key (the key's bit count at every tick where it
// changed) and bitmap snapshots per key (a full roaring bitmap every so
// often, the XOR against the previous snapshot in between), thinned by
// retention tiers.
//
// A History is a store.HistorySink: the store calls RecordCount,
// RecordBitmap, RecordChanges, RecordStrings, Advance and Purge in log
// order with its write lock held. A snapshot comes either whole
// (RecordBitmap, a private copy of the bitmap; RecordStrings, copies of
// strings' bytes, whose bitmaps the writer makes) or, once the History
// holds the key's previous snapshot, as the bits changed since then
// (RecordChanges), which the writer stores as the snapshot's XOR without
// reading the bitmap: so a snapshot of a large key costs in proportion to
// its changes. These calls
// only queue; one writer goroutine writes each drained batch in one
// bbolt transaction, and compacts (retention) between batches in small
// transactions. All writes are idempotent: recording a (key, time) again, as
// a replica does when it replays its log after a restart, changes nothing.
//
// Times are unix milliseconds. Queries answer for times from Oldest to
// Newest (see Totals); other times get a *RangeError.
//
// File layout (bbolt buckets):
//
//	meta      version, start (first Advance), newest (last Advance), points, snapshots
//	counts    one bucket per series (4-byte db + key name); chunk values keyed by
//	          the big-endian first time of the chunk (see chunk)
//	bitmaps   one bucket per series; snapshot values keyed by big-endian time
//	          (see encodeSnap)
//	purged    series -> time of its last Purge (records at or before it are ignored)
package history

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"
)

// formatVersion is the layout of the file this package writes and reads:
// since version 3 a small snapshot is a value in its series' bucket, a
// larger one a bucket of its own (see snapValueKey), as every one was in
// version 2. A file of version 2 is read as it is and marked version 3 when
// opened, so a build that reads version 2 only does not misread what is
// written after.
const (
	formatVersion       = 3
	oldestFormatVersion = 2 // the oldest version read
)

var (
	bucketMeta    = []byte("meta")
	bucketCounts  = []byte("counts")
	bucketBitmaps = []byte("bitmaps")
	bucketPurged  = []byte("purged")

	metaVersion = []byte("version")
	metaStart   = []byte("start")
	metaNewest  = []byte("newest")
	metaPoints  = []byte("points")
	metaSnaps   = []byte("snapshots")
)

// maxKeyLen bounds recorded key names (bbolt bucket names are limited);
// records of longer keys are ignored.
const maxKeyLen = bolt.MaxKeySize - 4

// History is a point-in-time history file. Its methods are safe for
// concurrent use.
type History struct {
	cfg   Config
	tiers []Tier // by Keep, ascending

	// dbMu guards db: queries hold it shared, RestoreCopy's swap exclusively.
	dbMu sync.RWMutex
	db   *bolt.DB

	newest atomic.Int64 // newest Advance committed
	start  atomic.Int64 // first Advance committed

	q     queue
	cache *cache
	w     *writer

	closeOnce sync.Once
	done      chan struct{} // closed when the writer goroutine has exited
}

// op is one queued call.
type op struct {
	kind    opKind
	ts      int64
	series  string
	count   uint64
	bm      *roaring.Bitmap // opBitmap: the bitmap, or nil to make it from raw
	raw     []byte          // opBitmap without bm: a string whose set bits are the bitmap
	byteLen uint64
	flips   *roaring.Bitmap // opChanges, opBitmap (may be nil): the bits changed since the snapshot at since
	since   int64
	cards   []byte // opChanges: the container counts of the bitmap they make
	// opStrings: the keys of database db, each snapshotted as an opBitmap
	// of the string raws[i]
	db      int
	keys    []string
	raws    [][]byte
	restore *restoreReq
	size    int64 // queue bytes it holds
}

type opKind uint8

const (
	opCount opKind = iota
	opBitmap
	opChanges
	opStrings
	opAdvance
	opPurge
	opRestore
)

// queue holds the calls waiting for the writer.
type queue struct {
	mu       sync.Mutex
	cond     *sync.Cond // signalled on every change below
	ops      []op
	bytes    int64  // size of the queued ops
	enqueued uint64 // ops ever queued
	done     uint64 // ops ever handled by the writer
	purges   uint64 // the value of enqueued after the latest Purge
	err      error  // sticky write error
	closed   bool
	exited   bool // the writer goroutine has exited
	// compacting is true while a compaction pass has series left.
	compacting bool
	// lastSnap is each series' last snapshot queued since the last purge
	// of the series and the last restore, unless that was a string's: an
	// opChanges is queued only on top of it. See forgetSnaps and
	// forgetStrings.
	lastSnap map[string]queuedSnap
	// snapsKept is the size of lastSnap above which forgetSnaps runs, when
	// more than maxSnaps (maxQueuedSnaps but in tests).
	snapsKept, maxSnaps int
}

// maxQueuedSnaps bounds lastSnap, for a node with many keys (or whose keys
// come and go), which would otherwise keep an entry for every key it ever
// recorded.
const maxQueuedSnaps = 1 << 16

// forgetSnaps drops, once lastSnap holds more than snapsKept series, those
// whose last snapshot is older than ts, the boundary being queued: a key
// that changes every interval keeps its entry, and one that changed less
// often has its next snapshot recorded in full (RecordChanges refuses its
// changes) rather than as its XOR. snapsKept then doubles what is kept, so
// that the passes cost no more than the entries added between them.
func (q *queue) forgetSnaps(ts int64) {
	if len(q.lastSnap) <= max(q.snapsKept, q.maxSnaps) {
		return
	}
	for series, last := range q.lastSnap {
		if last.ts < ts {
			delete(q.lastSnap, series)
		}
	}
	q.snapsKept = 2 * len(q.lastSnap)
}

// forgetStrings drops the series of keys, of database db, from lastSnap:
// a string's snapshot is whole, and no changes are ever recorded on top of
// it (only a bitmap follows its changes, from its own snapshot on), so
// after it the series takes none until its next RecordBitmap.
func (q *queue) forgetStrings(db int, keys []string) {
	if len(q.lastSnap) == 0 {
		return
	}
	var name []byte
	for _, key := range keys {
		name = appendSeriesName(name[:0], db, key)
		delete(q.lastSnap, string(name))
	}
}

// queuedSnap is the last snapshot queued for a series.
type queuedSnap struct {
	ts      int64
	changes int // opChanges queued since the last opBitmap
}

// Open opens (creating if missing) the history file and starts its writer.
// A file that is not a history file, or is damaged, gives an error naming
// the file; it is never truncated or recreated.
func Open(cfg Config) (*History, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	db, err := openDB(cfg)
	if err != nil {
		return nil, err
	}
	h := &History{cfg: cfg, tiers: sortedTiers(cfg.Retention), db: db, done: make(chan struct{})}
	h.q.cond = sync.NewCond(&h.q.mu)
	h.q.maxSnaps = maxQueuedSnaps
	h.cache = newCache(cfg.CacheBytes)
	if err := h.loadMeta(); err != nil {
		db.Close()
		return nil, err
	}
	h.w = newWriter(h)
	go h.w.run()
	return h, nil
}

// openDB opens the bbolt file and makes sure it is a history file of this version.
func openDB(cfg Config) (db *bolt.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			if db != nil {
				db.Close()
			}
			db, err = nil, damaged(cfg.Path, r)
		}
	}()
	db, err = bolt.Open(cfg.Path, 0o600, &bolt.Options{Timeout: cfg.LockTimeout})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("history: %s is locked by another process", cfg.Path)
	}
	if err != nil {
		return nil, fmt.Errorf("history: cannot open %s: %w", cfg.Path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			empty := true
			tx.ForEach(func([]byte, *bolt.Bucket) error { empty = false; return nil })
			if !empty {
				return errors.New("not a history file")
			}
			return initBuckets(tx)
		}
		v := meta.Get(metaVersion)
		if len(v) != 8 || getU64(v) < oldestFormatVersion || getU64(v) > formatVersion {
			return fmt.Errorf("history format version %d, this build reads versions %d to %d only", getU64(v), oldestFormatVersion, formatVersion)
		}
		for _, name := range [][]byte{bucketCounts, bucketBitmaps, bucketPurged} {
			if tx.Bucket(name) == nil {
				return fmt.Errorf("bucket %s missing", name)
			}
		}
		if getU64(v) == formatVersion {
			return nil
		}
		return meta.Put(metaVersion, putU64(formatVersion))
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("history: cannot open %s: %w", cfg.Path, err)
	}
	return db, nil
}

func initBuckets(tx *bolt.Tx) error {
	for _, name := range [][]byte{bucketMeta, bucketCounts, bucketBitmaps, bucketPurged} {
		if _, err := tx.CreateBucket(name); err != nil {
			return err
		}
	}
	return tx.Bucket(bucketMeta).Put(metaVersion, putU64(formatVersion))
}

// loadMeta reads start and newest from the file.
func (h *History) loadMeta() error {
	return h.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		h.start.Store(int64(getU64(meta.Get(metaStart))))
		h.newest.Store(int64(getU64(meta.Get(metaNewest))))
		return nil
	})
}

// Close stops the writer after it has written everything queued, and
// closes the file. It is safe to call more than once.
func (h *History) Close() error {
	var err error
	h.closeOnce.Do(func() {
		h.q.mu.Lock()
		h.q.closed = true
		h.q.cond.Broadcast()
		h.q.mu.Unlock()
		<-h.done
		h.dbMu.Lock()
		if h.db != nil {
			err = h.db.Close()
			h.db = nil
		}
		h.dbMu.Unlock()
		if werr := h.Err(); werr != nil && err == nil {
			err = werr
		}
	})
	return err
}

// Err returns the write error that stopped the recording (a full disk,
// say), nil while the History records. After one, nothing more is written
// until the file is opened again; queries answer the error. A node that
// replays its log into a History opened again records what was missed.
func (h *History) Err() error {
	h.q.mu.Lock()
	defer h.q.mu.Unlock()
	return h.q.err
}

// RecordCount records that from boundary ts on, the key's bit count was
// count. A count equal to the key's previous point is not stored.
func (h *History) RecordCount(ts int64, db int, key string, count uint64) {
	if len(key) <= maxKeyLen {
		h.enqueue(op{kind: opCount, ts: ts, series: seriesName(db, key), count: count}, 64)
	}
}

// RecordBitmap records the key's whole bitmap as of boundary ts. flips,
// when not nil, are the bits changed since the key's snapshot at boundary
// since (the XOR of the two bitmaps): with them the snapshot may be
// stored as that XOR, or a full one keep it for reading backwards. They
// are ignored unless the snapshot at since is the key's last. The History
// owns bm and flips from then on.
func (h *History) RecordBitmap(ts int64, db int, key string, bm *roaring.Bitmap, byteLen uint64, flips *roaring.Bitmap, since int64) {
	if len(key) > maxKeyLen {
		return
	}
	size := 64 + int64(bm.GetSizeInBytes())
	if flips != nil {
		size += int64(flips.GetSizeInBytes())
	}
	h.enqueue(op{kind: opBitmap, ts: ts, series: seriesName(db, key), bm: bm, byteLen: byteLen, flips: flips, since: since}, size)
}

// RecordStrings records, as of boundary ts, the whole bitmaps of keys of
// database db that hold strings: keys[i]'s are the set bits of raws[i],
// read as bitstr.Bitmap does by the writer, away from the caller. The
// History owns raws from then on. The keys are queued together, so a
// boundary at which many small keys changed costs the caller little more
// than their copies. A string's snapshot is whole, and RecordChanges takes
// no changes on top of it (nor on top of a snapshot before it): a string
// does not follow its changes, so the next snapshot of such a key comes
// whole, through RecordBitmap.
func (h *History) RecordStrings(ts int64, db int, keys []string, raws [][]byte) {
	size := int64(64 * len(keys))
	for _, raw := range raws {
		size += int64(len(raw))
	}
	if len(keys) > 0 {
		h.enqueue(op{kind: opStrings, ts: ts, db: db, keys: keys, raws: raws}, size)
	}
}

// RecordChanges records the key's bitmap as of boundary ts, bm, as its
// snapshot at boundary since with the bits of flips flipped: it stores
// flips as the snapshot's XOR and takes the container counts from bm (read
// during the call only; the History owns flips from then on), so that the
// writer never reads or copies the whole bitmap. It reports false and
// records nothing when the last snapshot recorded for the key is not the
// one at since (or a purge or restore came after it), or when FullEvery-1
// snapshots of changes follow the last whole bitmap: the caller then
// records the whole bitmap with RecordBitmap.
func (h *History) RecordChanges(ts int64, db int, key string, bm *roaring.Bitmap, byteLen uint64, flips *roaring.Bitmap, since int64) bool {
	series := seriesName(db, key)
	if len(key) > maxKeyLen || !h.takesChanges(series, since) {
		return false
	}
	cards, err := headerCards(bm)
	if err != nil {
		return false
	}
	o := op{kind: opChanges, ts: ts, series: series, flips: flips, since: since, byteLen: byteLen, cards: cards}
	return h.enqueue(o, 64+int64(flips.GetSizeInBytes())+int64(len(cards)))
}

// takesChanges reports whether an opChanges of series on top of its
// snapshot at since would be queued (see RecordChanges).
func (h *History) takesChanges(series string, since int64) bool {
	h.q.mu.Lock()
	defer h.q.mu.Unlock()
	return h.q.takesChanges(series, since, h.cfg.FullEvery)
}

// takesChanges is History.takesChanges with q.mu held.
func (q *queue) takesChanges(series string, since int64, fullEvery int) bool {
	last, ok := q.lastSnap[series]
	return ok && last.ts == since && last.changes+1 < fullEvery
}

// Advance says every point stamped at or before boundary ts has been recorded.
func (h *History) Advance(ts int64) {
	h.enqueue(op{kind: opAdvance, ts: ts}, 64)
}

// Purge erases every point and snapshot of the key; records for the key at
// or before ts are ignored from then on (a replayed log cannot bring them back).
func (h *History) Purge(ts int64, db int, key string) {
	if len(key) <= maxKeyLen {
		h.enqueue(op{kind: opPurge, ts: ts, series: seriesName(db, key)}, 64)
	}
}

// enqueue queues o, blocking while the queue holds more than QueueBytes.
// Calls after Close are dropped (it returns false), and so is an opChanges
// that does not follow the last snapshot queued for its series.
func (h *History) enqueue(o op, size int64) bool {
	q := &h.q
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.bytes > 0 && q.bytes+size > h.cfg.QueueBytes && !q.closed && !q.exited {
		q.cond.Wait()
	}
	if q.closed || q.exited || o.kind == opChanges && !q.takesChanges(o.series, o.since, h.cfg.FullEvery) {
		return false
	}
	switch o.kind {
	case opBitmap:
		if q.lastSnap == nil {
			q.lastSnap = map[string]queuedSnap{}
		}
		q.lastSnap[o.series] = queuedSnap{ts: o.ts}
		q.forgetSnaps(o.ts)
	case opStrings:
		q.forgetStrings(o.db, o.keys)
	case opChanges:
		q.lastSnap[o.series] = queuedSnap{ts: o.ts, changes: q.lastSnap[o.series].changes + 1}
		q.forgetSnaps(o.ts)
	case opPurge:
		delete(q.lastSnap, o.series)
	case opRestore:
		clear(q.lastSnap)
		q.snapsKept = 0
	}
	o.size = size
	q.ops = append(q.ops, o)
	q.bytes += size
	q.enqueued++
	if o.kind == opPurge {
		q.purges = q.enqueued
	}
	q.cond.Broadcast()
	return true
}

// Sync waits until everything recorded before the call is committed to the
// file, and returns the first write error, if any.
func (h *History) Sync() error {
	q := &h.q
	q.mu.Lock()
	defer q.mu.Unlock()
	return h.waitDone(q.enqueued)
}

// SyncFor is Sync for a query at time t: it returns at once when every
// point at or before t is committed (t is at most Newest) and no Purge
// recorded before the call is pending, so queries of the past do not wait
// for the writer's commits of the present.
func (h *History) SyncFor(t int64) error {
	q := &h.q
	q.mu.Lock()
	defer q.mu.Unlock()
	if t <= h.newest.Load() && q.done >= q.purges {
		return q.err
	}
	return h.waitDone(q.enqueued)
}

// waitDone waits, with q.mu held, until the writer handled target ops.
func (h *History) waitDone(target uint64) error {
	q := &h.q
	for q.done < target && q.err == nil && !q.exited {
		q.cond.Wait()
	}
	if q.err != nil {
		return q.err
	}
	if q.done < target {
		return ErrClosed
	}
	return nil
}

// Newest returns the newest boundary passed to Advance and committed, 0 if none.
func (h *History) Newest() int64 { return h.newest.Load() }

// Oldest returns the oldest time queries answer for, 0 if nothing is held:
// the first Advance, or the newest minus the longest Keep if that is later.
func (h *History) Oldest() int64 {
	newest := h.newest.Load()
	if newest == 0 {
		return 0
	}
	return max(h.start.Load(), newest-h.cfg.keepMs())
}

// checkTime returns a *RangeError when t is outside Oldest .. Newest.
func (h *History) checkTime(t int64) error {
	oldest, newest := h.Oldest(), h.Newest()
	if newest == 0 || t > newest || t < oldest {
		return &RangeError{T: t, Oldest: oldest, Newest: newest}
	}
	return nil
}

// view runs fn in a read transaction on the current file.
// bbolt panics on some damaged pages instead of returning an error: that
// becomes an error naming the file.
func (h *History) view(fn func(tx *bolt.Tx) error) (err error) {
	h.dbMu.RLock()
	defer h.dbMu.RUnlock()
	if h.db == nil {
		return ErrClosed
	}
	defer func() {
		if r := recover(); r != nil {
			err = damaged(h.cfg.Path, r)
		}
	}()
	return h.db.View(fn)
}

// damaged is the error for a file on which bbolt panicked with r.
func damaged(path string, r any) error {
	return fmt.Errorf("history: %s is damaged: %v", path, r)
}

// seriesName names the series of key in db: 4 big-endian bytes of db, then the key.
func seriesName(db int, key string) string {
	var b [64]byte
	return string(appendSeriesName(b[:0], db, key))
}

// appendSeriesName appends the series name of key in database db to b.
func appendSeriesName(b []byte, db int, key string) []byte {
	return append(binary.BigEndian.AppendUint32(b, uint32(db)), key...)
}

func putU64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// getU64 reads an 8-byte big-endian value; anything else reads as 0.
func getU64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

func tsKey(ts int64) []byte { return putU64(uint64(ts)) }

func keyTs(k []byte) int64 { return int64(getU64(k)) }

// seekLE positions c at the newest key <= ts; nil if none.
func seekLE(c *bolt.Cursor, ts int64) ([]byte, []byte) {
	k, v := c.Seek(tsKey(ts))
	if k != nil && keyTs(k) == ts {
		return k, v
	}
	if k == nil {
		return c.Last()
	}
	return c.Prev()
}
