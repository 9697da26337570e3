package history

import (
	"fmt"

	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"
)

// seriesBucket returns the series' bucket under parent, nil if none.
func seriesBucket(tx *bolt.Tx, parent []byte, series string) *bolt.Bucket {
	return tx.Bucket(parent).Bucket([]byte(series))
}

// CountAt returns the key's bit count at t: the newest count point at or
// before t, 0 if none. t outside Oldest .. Newest gives a *RangeError.
func (h *History) CountAt(db int, key string, t int64) (uint64, error) {
	if err := h.checkTime(t); err != nil {
		return 0, err
	}
	var n uint64
	err := h.view(func(tx *bolt.Tx) (err error) {
		n, err = countAt(seriesBucket(tx, bucketCounts, seriesName(db, key)), t)
		return err
	})
	return n, err
}

// ContainsAt reports whether offset was set in the key's newest snapshot
// at or before t (false if none). It reads the snapshot chain in place, or
// a cached reconstruction, without rebuilding the bitmap.
func (h *History) ContainsAt(db int, key string, t int64, offset uint32) (bool, error) {
	if err := h.checkTime(t); err != nil {
		return false, err
	}
	series := seriesName(db, key)
	var in bool
	err := h.view(func(tx *bolt.Tx) error {
		links, base, _, ok, err := snapChain(seriesBucket(tx, bucketBitmaps, series), t, h.cachedFn(series))
		if !ok || err != nil {
			return err
		}
		if base != nil {
			in = base.bm.Contains(offset)
		}
		for _, l := range links {
			c, err := containsSerialized(l.s.payload, offset)
			if err != nil {
				return err
			}
			in = in != c // the links XOR together
		}
		return nil
	})
	return in, err
}

// CountRangeAt counts the bits in [from, to) of the key's newest snapshot
// at or before t, where span gives from and to for the snapshot's logical
// byte length. Without a snapshot then (or with an empty one of length 0)
// it is 0 and span is not called. It adds up the snapshot's container
// counts and rebuilds only the containers at the ends of the range.
func (h *History) CountRangeAt(db int, key string, t int64, span func(byteLen uint64) (from, to uint64)) (uint64, error) {
	if err := h.checkTime(t); err != nil {
		return 0, err
	}
	series := seriesName(db, key)
	var n uint64
	err := h.view(func(tx *bolt.Tx) error {
		links, base, target, ok, err := snapChain(seriesBucket(tx, bucketBitmaps, series), t, h.cachedFn(series))
		if !ok || err != nil || target.s.byteLen == 0 {
			return err
		}
		from, to := span(target.s.byteLen)
		switch {
		case base == nil:
			n, err = countCards(target.s.cards, links, from, to)
		case len(links) == 0:
			n = base.bm.CardinalityInRange(from, to)
		default:
			var bm *roaring.Bitmap
			if bm, err = rebuild(base.copy(), links); err == nil {
				n = bm.CardinalityInRange(from, to)
			}
		}
		return err
	})
	return n, err
}

// BitmapAt returns the key's newest snapshot at or before t and its logical
// byte length; an empty bitmap and 0 if none. The caller owns bm.
func (h *History) BitmapAt(db int, key string, t int64) (bm *roaring.Bitmap, byteLen uint64, err error) {
	if err := h.checkTime(t); err != nil {
		return nil, 0, err
	}
	series := seriesName(db, key)
	var rebuilt *roaring.Bitmap
	var snapTs int64
	err = h.view(func(tx *bolt.Tx) error {
		links, base, target, ok, err := snapChain(seriesBucket(tx, bucketBitmaps, series), t, h.cachedFn(series))
		if !ok || err != nil {
			return err
		}
		snapTs, byteLen = target.ts, target.s.byteLen
		if len(links) == 0 {
			bm = base.copy()
			return nil
		}
		var start *roaring.Bitmap
		if base != nil {
			start = base.copy()
		}
		rebuilt, err = rebuild(start, links)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	if rebuilt != nil {
		bm = rebuilt
		if h.cache.admit(series, snapTs) {
			if cb := h.cache.put(series, snapTs, rebuilt, byteLen); cb != nil {
				bm = cb.copy()
			}
		}
	}
	if bm == nil {
		bm = roaring.New()
	}
	return bm, byteLen, nil
}

func (h *History) cachedFn(series string) func(ts int64) *cachedBitmap {
	return func(ts int64) *cachedBitmap { return h.cache.get(series, ts) }
}

// Range returns the key's count series over [from, to] (to is clipped to
// Newest). With step 0 it returns the stored points (each a change of the
// count) in [from, to]; agg is ignored. With step > 0 it returns one sample
// per bucket [from+k*step, from+(k+1)*step) (the last bucket ends at to+1),
// stamped with the bucket's start, whose value is, by agg ("" = last):
// last, the count in effect at the bucket's end; min / max, the least /
// greatest count in effect at some time inside it; avg, the time-weighted
// mean count over it. from outside Oldest .. Newest gives a *RangeError.
func (h *History) Range(db int, key string, from, to, step int64, agg string) ([]Sample, error) {
	kind, err := parseAgg(agg)
	if err != nil {
		return nil, err
	}
	if step < 0 {
		return nil, fmt.Errorf("history: negative step %d", step)
	}
	if err := h.checkTime(from); err != nil {
		return nil, err
	}
	to = min(to, h.Newest())
	if to < from {
		return []Sample{}, nil
	}
	if step > 0 && (to-from)/step >= MaxSamples {
		return nil, ErrTooManySamples
	}
	var out []Sample
	err = h.view(func(tx *bolt.Tx) (err error) {
		b := seriesBucket(tx, bucketCounts, seriesName(db, key))
		if step == 0 {
			out, err = rawRange(b, from, to)
			return err
		}
		a := newAggregator(kind, from, to, step)
		if err := rangeCounts(b, from, to, a.feed); err != nil {
			return err
		}
		out = a.finish()
		return nil
	})
	return out, err
}

// Info describes what is held, for one key (Info) or for the whole file
// (Totals). Times are unix ms, 0 when there is nothing.
type Info struct {
	Oldest, Newest                 int64  // the range queries answer for
	OldestCount, NewestCount       int64  // oldest and newest count point held
	Points                         uint64 // count points held
	OldestSnapshot, NewestSnapshot int64  // oldest and newest bitmap snapshot held
	Snapshots                      uint64 // bitmap snapshots held
	Bytes                          int64  // key: bytes of its records; totals: size of the file
	Retention                      []Tier
}

// Info describes what is held for one key.
func (h *History) Info(db int, key string) (Info, error) {
	info := h.baseInfo()
	series := seriesName(db, key)
	err := h.view(func(tx *bolt.Tx) error {
		if b := seriesBucket(tx, bucketCounts, series); b != nil {
			err := b.ForEach(func(k, v []byte) error {
				c, err := decodeChunk(keyTs(k), v)
				if info.Points == 0 {
					info.OldestCount = c.first
				}
				info.NewestCount = c.last()
				info.Points += c.n
				info.Bytes += int64(len(k) + len(v))
				return err
			})
			if err != nil {
				return err
			}
		}
		if b := seriesBucket(tx, bucketBitmaps, series); b != nil {
			return b.ForEach(func(k, _ []byte) error {
				if info.Snapshots == 0 {
					info.OldestSnapshot = keyTs(k)
				}
				info.NewestSnapshot = keyTs(k)
				info.Snapshots++
				info.Bytes += int64(len(k) + len(snapValue(b, k)))
				return nil
			})
		}
		return nil
	})
	return info, err
}

// Totals describes the whole file: OldestCount .. NewestCount and
// OldestSnapshot .. NewestSnapshot are left 0; Bytes is the file size.
func (h *History) Totals() (Info, error) {
	info := h.baseInfo()
	err := h.view(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		info.Points = getU64(meta.Get(metaPoints))
		info.Snapshots = getU64(meta.Get(metaSnaps))
		info.Bytes = tx.Size()
		return nil
	})
	return info, err
}

func (h *History) baseInfo() Info {
	return Info{Oldest: h.Oldest(), Newest: h.Newest(), Retention: append([]Tier(nil), h.cfg.Retention...)}
}
