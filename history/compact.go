package history

import (
	"errors"

	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"
)

// Compaction enforces retention. A pass starts when log time (the newest
// Advance) has moved by the first tier's step since the last one; it then
// compacts one series per transaction, between batches of recorded data, so
// recording never waits for more than one series' compaction.

// errNothingCompacted rolls back the transaction of a series that
// retention left as it was.
var errNothingCompacted = errors.New("history: nothing compacted")

// scheduleCompaction starts a pass when one is due.
func (w *writer) scheduleCompaction() {
	now := w.h.newest.Load()
	if now < w.compactNext || len(w.compactPending) > 0 || w.failed() {
		return
	}
	w.compactNext = now + max(w.h.tiers[0].Step.Milliseconds(), 1000)
	w.compactNow = now
	err := w.h.db.View(func(tx *bolt.Tx) error {
		seen := map[string]bool{}
		for _, parent := range [][]byte{bucketCounts, bucketBitmaps} {
			err := tx.Bucket(parent).ForEachBucket(func(k []byte) error {
				if name := string(k); !seen[name] {
					seen[name] = true
					w.compactPending = append(w.compactPending, name)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		w.finish(nil, err)
	}
}

// compactStep compacts the next series of the pass in one transaction.
func (w *writer) compactStep() {
	series := w.compactPending[0]
	w.compactPending = w.compactPending[1:]
	if w.failed() {
		return
	}
	var st batchStats
	err := w.h.db.Update(func(tx *bolt.Tx) error {
		if err := w.compactCounts(tx.Bucket(bucketCounts).Bucket([]byte(series)), &st); err != nil {
			return err
		}
		if err := w.compactSnaps(tx.Bucket(bucketBitmaps).Bucket([]byte(series)), &st); err != nil {
			return err
		}
		if st.points == 0 && st.snaps == 0 {
			return errNothingCompacted // nothing dropped: nothing to commit, nor to flush
		}
		return writeStats(tx, &st)
	})
	if errors.Is(err, errNothingCompacted) {
		return
	}
	if st.points != 0 || st.snaps != 0 || err != nil {
		if s := w.series[series]; s != nil {
			*s = seriesState{purged: s.purged}
		}
	}
	if err != nil {
		w.finish(nil, err)
	}
}

// cutoff is the oldest time retention keeps answering for.
func (w *writer) cutoff() int64 { return w.compactNow - w.h.cfg.keepMs() }

// compactCounts drops the chunks wholly before the cutoff: those whose next
// chunk starts at or before it (the last of them still holds the count at
// the cutoff, so it stays).
func (w *writer) compactCounts(b *bolt.Bucket, st *batchStats) error {
	if b == nil {
		return nil
	}
	var drop [][]byte
	cutoff := w.cutoff()
	c := b.Cursor()
	k, v := c.First()
	for k != nil {
		nk, nv := c.Next()
		if nk == nil || keyTs(nk) > cutoff {
			break
		}
		ch, err := decodeChunk(keyTs(k), v)
		if err != nil {
			return err
		}
		st.points -= int64(ch.n)
		drop = append(drop, k)
		k, v = nk, nv
	}
	for _, k := range drop {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// keepSnap says whether the snapshot at ts, followed by one at next (0 if
// none), survives retention at log time now: it does when it holds the
// state at some multiple of its tier's step (or at the cutoff, past the
// last tier), i.e. when no later snapshot comes before that time.
func keepSnap(tiers []Tier, now, ts, next int64) bool {
	if next == 0 {
		return true
	}
	for _, t := range tiers {
		if ts >= now-t.Keep.Milliseconds() {
			step := t.Step.Milliseconds()
			return ceilTo(ts, step) < next
		}
	}
	return next > now-tiers[len(tiers)-1].Keep.Milliseconds()
}

func ceilTo(ts, step int64) int64 {
	q := ts / step
	if q*step < ts {
		q++
	}
	return q * step
}

// compactSnaps drops the snapshots retention no longer keeps. Each run of
// dropped snapshots is followed by a kept one; if that is a delta, it is
// re-encoded against the kept one before the run, so every kept snapshot
// still rebuilds exactly. Everything is read before anything is written
// (bbolt cursors can misstep over nodes emptied in the same transaction).
func (w *writer) compactSnaps(b *bolt.Bucket, st *batchStats) error {
	if b == nil {
		return nil
	}
	times := snapTimes(b)
	var drop []int64
	puts := map[int64][]byte{}
	newIdx := map[int64]uint32{} // chain positions changed by re-encoding
	for i := 0; i < len(times); i++ {
		if keepSnap(w.h.tiers, w.compactNow, times[i], nextTime(times, i)) {
			continue
		}
		j := i
		for j+1 < len(times) && !keepSnap(w.h.tiers, w.compactNow, times[j+1], nextTime(times, j+1)) {
			j++
		}
		// times[i..j] go; times[j+1] (always kept: the newest is) follows.
		drop = append(drop, times[i:j+1]...)
		var prevTs int64 = -1
		if i > 0 {
			prevTs = times[i-1]
		}
		v, idx, err := w.reencode(b, prevTs, newIdx, times[j+1])
		if err != nil {
			return err
		}
		if v != nil {
			puts[times[j+1]], newIdx[times[j+1]] = v, idx
		}
		i = j
	}
	for _, ts := range drop {
		if err := deleteSnap(b, ts); err != nil {
			return err
		}
	}
	for ts, v := range puts {
		if err := putSnap(b, ts, v); err != nil {
			return err
		}
	}
	st.snaps -= int64(len(drop))
	return nil
}

func nextTime(times []int64, i int) int64 {
	if i+1 < len(times) {
		return times[i+1]
	}
	return 0
}

// reencode returns the snapshot at keptTs encoded against the one at prevTs
// (-1: none), or nil if it is a full that can stay as it is.
func (w *writer) reencode(b *bolt.Bucket, prevTs int64, newIdx map[int64]uint32, keptTs int64) ([]byte, uint32, error) {
	s, err := parseSnap(snapValue(b, tsKey(keptTs)))
	switch {
	case err != nil || s.kind == snapFull && s.back == nil:
		return nil, 0, err
	case s.kind == snapFull:
		return plainFull(s), 0, nil // its XOR was against a dropped snapshot
	}
	cur, _, _, _, err := materialize(b, keptTs)
	if err != nil {
		return nil, 0, err
	}
	var prev *roaring.Bitmap
	var prevIdx uint32
	if prevTs >= 0 {
		p, ps, _, _, err := materialize(b, prevTs)
		if err != nil {
			return nil, 0, err
		}
		prev, prevIdx = p, ps.idx
		if idx, ok := newIdx[prevTs]; ok {
			prevIdx = idx
		}
	}
	var d []byte
	if prev != nil {
		if d, err = serializeXor(roaring.Xor(prev, cur)); err != nil {
			return nil, 0, err
		}
	}
	return encodeSnap(d, prevIdx, cur, s.byteLen, w.h.cfg.FullEvery)
}
