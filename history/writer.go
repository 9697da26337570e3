package history

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/presenced/presenced/internal/bitstr"
)

// writer is the one goroutine that writes the file. Its fields are only
// touched by that goroutine.
type writer struct {
	h         *History
	series    map[string]*seriesState // see forgetSeries
	maxSeries int                     // maxCachedSeries but in tests
	txN       uint64                  // transactions begun, numbering them for seriesState.usedIn

	compactNext    int64    // log time of the next compaction pass
	compactPending []string // series left in the current pass
	compactNow     int64    // log time the current pass compacts for
}

// seriesState caches what the writer needs to append to a series; each
// field is read from the file again when the state is dropped.
type seriesState struct {
	usedIn uint64 // the transaction that used it last
	purged int64  // records at or before this time are ignored

	countLoaded bool
	lastTs      int64
	lastVal     uint64

	snapLoaded bool
	snapTs     int64
	snapIdx    uint32
}

// batchStats collects the changes of one transaction to the meta counters.
type batchStats struct {
	points, snaps int64
	first, newest int64 // first and newest Advance of the batch
	purged        bool
}

func newWriter(h *History) *writer {
	return &writer{h: h, series: map[string]*seriesState{}, maxSeries: maxCachedSeries}
}

func (w *writer) run() {
	defer close(w.h.done)
	for {
		ops, ok := w.take()
		if !ok {
			w.finish(nil, w.writeNewest())
			return
		}
		if len(ops) == 0 {
			w.compactStep()
			if len(w.compactPending) == 0 {
				w.scheduleCompaction() // log time may have moved on during the pass
			}
			continue
		}
		err := w.applyAll(ops)
		w.finish(ops, err)
	}
}

// take waits for queued ops; it returns none at once when compaction has
// work. ok is false when the History is closed and the queue is empty.
func (w *writer) take() ([]op, bool) {
	q := &w.h.q
	q.mu.Lock()
	defer q.mu.Unlock()
	if compacting := len(w.compactPending) > 0; compacting != q.compacting {
		q.compacting = compacting
		q.cond.Broadcast()
	}
	for len(q.ops) == 0 && !q.closed && len(w.compactPending) == 0 {
		q.cond.Wait()
	}
	if len(q.ops) == 0 && q.closed {
		q.exited = true
		q.cond.Broadcast()
		return nil, false
	}
	ops := q.ops
	q.ops = nil
	return ops, true
}

// finish marks ops handled and releases their queue space.
func (w *writer) finish(ops []op, err error) {
	var size int64
	for _, o := range ops {
		size += o.size
	}
	q := &w.h.q
	q.mu.Lock()
	defer q.mu.Unlock()
	if err != nil && q.err == nil {
		q.err = err
	}
	q.bytes -= size
	q.done += uint64(len(ops))
	q.compacting = len(w.compactPending) > 0
	q.cond.Broadcast()
}

// failed reports whether an earlier write failed (then nothing more is written).
func (w *writer) failed() bool { return w.h.Err() != nil }

// applyAll writes ops in one transaction per run between restores.
func (w *writer) applyAll(ops []op) error {
	if w.failed() {
		return nil
	}
	for len(ops) > 0 {
		n := 0
		for n < len(ops) && ops[n].kind != opRestore {
			n++
		}
		if n > 0 {
			if err := w.applyTx(ops[:n]); err != nil {
				return err
			}
		}
		if n < len(ops) {
			ops[n].restore.done <- w.swap(ops[n].restore)
			n++
		}
		ops = ops[n:]
	}
	w.scheduleCompaction()
	return nil
}

func (w *writer) applyTx(ops []op) (err error) {
	if newest, ok := onlyAdvances(ops); ok && w.h.start.Load() != 0 {
		// Time passed and nothing was recorded: the file already holds
		// every record up to the new newest, so nothing is written (an
		// idle node would otherwise commit, and flush, at every tick).
		// The file's newest catches up with the next batch that records
		// something, or at Close; until then, after a crash, it is the
		// older newest, which the replayed log advances again.
		w.h.newest.Store(max(w.h.newest.Load(), newest))
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			w.series = map[string]*seriesState{}
			err = damaged(w.h.cfg.Path, r)
		}
	}()
	var st batchStats
	w.txN++
	defer w.forgetSeries()
	err = w.h.db.Update(func(tx *bolt.Tx) error {
		for i := range ops {
			if err := w.apply(tx, &ops[i], &st); err != nil {
				return err
			}
		}
		return writeStats(tx, &st)
	})
	if err != nil {
		w.series = map[string]*seriesState{} // may hold state the rollback undid
		return err
	}
	if st.newest > w.h.newest.Load() {
		if w.h.start.Load() == 0 {
			w.h.start.Store(st.first)
		}
		w.h.newest.Store(st.newest)
	}
	if st.purged {
		w.h.cache.clear()
	}
	return nil
}

// maxCachedSeries bounds the series states the writer keeps between
// transactions. A node with many keys (and one whose keys come and go)
// would otherwise keep a state for every key it ever recorded.
const maxCachedSeries = 1 << 16

// forgetSeries drops, once more than maxSeries are kept, the states of the
// series the last transaction did not use: those a key records at every
// tick stay, the others are read again when next needed. A pass visits the
// states kept since the last one and those the last transaction used: no
// more than the transactions in between touched.
func (w *writer) forgetSeries() {
	if len(w.series) <= w.maxSeries {
		return
	}
	for name, s := range w.series {
		if s.usedIn != w.txN {
			delete(w.series, name)
		}
	}
}

// writeNewest writes the newest Advance to the file, where batches of
// Advances alone left it behind, so that a node stopped cleanly answers for
// every time up to it as soon as it starts again.
func (w *writer) writeNewest() error {
	if w.failed() || w.h.start.Load() == 0 {
		return nil
	}
	st := batchStats{first: w.h.start.Load(), newest: w.h.newest.Load()}
	return w.h.db.Update(func(tx *bolt.Tx) error { return writeStats(tx, &st) })
}

// onlyAdvances reports whether ops are all Advances, and the newest of them.
func onlyAdvances(ops []op) (newest int64, ok bool) {
	for _, o := range ops {
		if o.kind != opAdvance {
			return 0, false
		}
		newest = max(newest, o.ts)
	}
	return newest, true
}

// writeStats adds the batch's changes to the meta counters.
func writeStats(tx *bolt.Tx, st *batchStats) error {
	meta := tx.Bucket(bucketMeta)
	for _, f := range []struct {
		key   []byte
		delta int64
	}{{metaPoints, st.points}, {metaSnaps, st.snaps}} {
		if f.delta != 0 {
			if err := meta.Put(f.key, putU64(getU64(meta.Get(f.key))+uint64(f.delta))); err != nil {
				return err
			}
		}
	}
	if st.newest > int64(getU64(meta.Get(metaNewest))) {
		if meta.Get(metaStart) == nil {
			if err := meta.Put(metaStart, putU64(uint64(st.first))); err != nil {
				return err
			}
		}
		return meta.Put(metaNewest, putU64(uint64(st.newest)))
	}
	return nil
}

func (w *writer) apply(tx *bolt.Tx, o *op, st *batchStats) error {
	switch o.kind {
	case opAdvance:
		if st.first == 0 {
			st.first = o.ts
		}
		st.newest = max(st.newest, o.ts)
		return nil
	case opPurge:
		return w.purge(tx, o, st)
	case opStrings:
		for i, key := range o.keys {
			if len(key) > maxKeyLen {
				continue
			}
			raw := o.raws[i]
			snap := op{kind: opBitmap, ts: o.ts, series: seriesName(o.db, key), raw: raw, byteLen: uint64(len(raw))}
			if err := w.apply(tx, &snap, st); err != nil {
				return err
			}
		}
		return nil
	}
	s := w.state(tx, o.series)
	if o.ts <= s.purged {
		return nil
	}
	if o.kind == opCount {
		return w.recordCount(tx, s, o, st)
	}
	return w.recordBitmap(tx, s, o, st)
}

// state returns the series' state, reading its purge mark if new.
func (w *writer) state(tx *bolt.Tx, series string) *seriesState {
	s := w.series[series]
	if s == nil {
		s = &seriesState{purged: int64(getU64(tx.Bucket(bucketPurged).Get([]byte(series))))}
		w.series[series] = s
	}
	s.usedIn = w.txN
	return s
}

func (w *writer) recordCount(tx *bolt.Tx, s *seriesState, o *op, st *batchStats) error {
	b, err := tx.Bucket(bucketCounts).CreateBucketIfNotExists([]byte(o.series))
	if err != nil {
		return err
	}
	if !s.countLoaded {
		if s.lastTs, s.lastVal, err = lastCount(b); err != nil {
			return err
		}
		s.countLoaded = true
	}
	if o.ts <= s.lastTs || o.count == s.lastVal {
		return nil // replayed, or no change
	}
	if err := appendCount(b, o.ts, o.count); err != nil {
		return err
	}
	s.lastTs, s.lastVal = o.ts, o.count
	st.points++
	return nil
}

func (w *writer) recordBitmap(tx *bolt.Tx, s *seriesState, o *op, st *batchStats) error {
	b, err := tx.Bucket(bucketBitmaps).CreateBucketIfNotExists([]byte(o.series))
	if err != nil {
		return err
	}
	if !s.snapLoaded {
		if k, _ := b.Cursor().Last(); k != nil {
			sn, err := parseSnap(snapValue(b, k))
			if err != nil {
				return err
			}
			s.snapIdx, s.snapTs = sn.idx, keyTs(k)
		}
		s.snapLoaded = true
	}
	if o.ts <= s.snapTs {
		return nil // replayed
	}
	v, idx, err := w.encode(s, o)
	if err != nil {
		return err
	}
	if err := putSnap(b, o.ts, v); err != nil {
		return err
	}
	s.snapIdx, s.snapTs = idx, o.ts
	st.snaps++
	return nil
}

// encode returns the value of o's snapshot and its chain position. A whole
// bitmap is encoded against the series' last snapshot when its flips are
// the changes since that one (see encodeSnap), else in full: the writer
// keeps no bitmap, which would hold on to containers the live key has
// replaced since. An opChanges is its flips, the XOR against the series'
// last snapshot, which must be the one at o.since.
func (w *writer) encode(s *seriesState, o *op) (v []byte, idx uint32, err error) {
	if o.kind == opBitmap {
		var d []byte
		if o.flips != nil && o.since == s.snapTs {
			if d, err = serializeXor(o.flips); err != nil {
				return nil, 0, err
			}
		}
		bm := o.bm
		if bm == nil {
			bm = bitstr.Bitmap(o.raw)
		}
		return encodeSnap(d, s.snapIdx, bm, o.byteLen, w.h.cfg.FullEvery)
	}
	if s.snapTs != o.since {
		return nil, 0, fmt.Errorf("history: changes to %s since %d, but its last snapshot is at %d", o.series, o.since, s.snapTs)
	}
	d, err := serializeXor(o.flips)
	if err != nil {
		return nil, 0, err
	}
	return append(valueHeader(snapXor, s.snapIdx+1, o.byteLen, o.cards, len(d)), d...), s.snapIdx + 1, nil
}

// purge deletes the series' points and snapshots and marks it purged at o.ts.
func (w *writer) purge(tx *bolt.Tx, o *op, st *batchStats) error {
	name := []byte(o.series)
	if b := tx.Bucket(bucketCounts).Bucket(name); b != nil {
		err := b.ForEach(func(k, v []byte) error {
			c, err := decodeChunk(keyTs(k), v)
			st.points -= int64(c.n)
			return err
		})
		if err != nil {
			return err
		}
		if err := tx.Bucket(bucketCounts).DeleteBucket(name); err != nil {
			return err
		}
	}
	if b := tx.Bucket(bucketBitmaps).Bucket(name); b != nil {
		st.snaps -= int64(len(snapTimes(b)))
		if err := tx.Bucket(bucketBitmaps).DeleteBucket(name); err != nil {
			return err
		}
	}
	s := w.state(tx, o.series)
	mark := max(s.purged, o.ts)
	*s = seriesState{purged: mark}
	st.purged = true
	return tx.Bucket(bucketPurged).Put(name, putU64(uint64(mark)))
}
