package history

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"
)

// A snapshot value is a 16-byte header, the bitmap's container counts and
// a body, a roaring bitmap in the portable serialization:
//
//	[0]     kind: snapFull (the bitmap), snapXor (the XOR against the previous
//	        snapshot) or snapFullBack (a full that also holds that XOR)
//	[4:8]   chain position: 0 for a full, else the previous snapshot's + 1
//	[8:16]  logical byte length of the key's value
//	[16:20] n, the number of containers of the snapshot's bitmap
//	[20:20+4n] their keys and cardinalities - 1 (uint16 pairs, little
//	        endian, as in roaring's descriptive header), so that a count
//	        over a range reads the chain only for the containers at its ends
//
// A snapFullBack's body is the bitmap's length (8 bytes, big endian), the
// bitmap and the XOR: a snapshot before it can be rebuilt backwards from it,
// so no snapshot is more than half a chain away from a full.
const (
	snapHeader   = 16
	snapFull     = 0
	snapXor      = 1
	snapFullBack = 2
)

// A snapshot of more than maxInlineSnap bytes is a bucket of its own in its
// series' bucket, named by its time, holding the value under snapValueKey:
// bbolt never splits a leaf of four keys or fewer, so large values side by
// side in one bucket would be written again with each snapshot appended
// after them (megabytes for a full, with every snapshot). A smaller one is
// the series bucket's value under its time: a bucket holding buckets always
// takes a page of its own, so a key of a few bytes would cost 4 KiB a
// snapshot, where a series of small values stays inline in its parent's
// page until it outgrows a quarter of one.
var snapValueKey = []byte("v")

// maxInlineSnap is the size of the largest snapshot value stored in its
// series bucket itself rather than in a bucket of its own: a leaf that
// bbolt does not split, four of them, takes about a page.
const maxInlineSnap = 1024

// snapValue returns the value of the snapshot named k in the series bucket
// b, nil if there is none.
func snapValue(b *bolt.Bucket, k []byte) []byte {
	if sb := b.Bucket(k); sb != nil {
		return sb.Get(snapValueKey)
	}
	return b.Get(k)
}

// putSnap stores v as the snapshot at ts in the series bucket b, replacing
// the one there.
func putSnap(b *bolt.Bucket, ts int64, v []byte) error {
	if err := deleteSnap(b, ts); err != nil {
		return err
	}
	k := tsKey(ts)
	if len(v) <= maxInlineSnap {
		return b.Put(k, v)
	}
	sb, err := b.CreateBucket(k)
	if err != nil {
		return err
	}
	return sb.Put(snapValueKey, v)
}

// deleteSnap deletes the snapshot at ts, if any, from the series bucket b.
func deleteSnap(b *bolt.Bucket, ts int64) error {
	k := tsKey(ts)
	if b.Bucket(k) != nil {
		return b.DeleteBucket(k)
	}
	return b.Delete(k)
}

// snapTimes returns the times of the snapshots the series bucket b holds,
// oldest first.
func snapTimes(b *bolt.Bucket) []int64 {
	var times []int64
	b.ForEach(func(k, _ []byte) error { times = append(times, keyTs(k)); return nil })
	return times
}

// snap is a parsed snapshot value. A snapFullBack parses as a snapFull with
// back set.
type snap struct {
	kind    byte
	idx     uint32
	byteLen uint64
	cards   []byte // the snapshot's container keys and cardinalities - 1
	payload []byte
	back    []byte // a full's XOR against the previous snapshot, if stored
}

func parseSnap(v []byte) (snap, error) {
	if len(v) < snapHeader+4 || v[0] > snapFullBack {
		return snap{}, errCorrupt
	}
	n := uint64(binary.LittleEndian.Uint32(v[snapHeader:]))
	body := snapHeader + 4 + 4*n
	if n > 1<<16 || body > uint64(len(v)) {
		return snap{}, errCorrupt
	}
	s := snap{
		kind:    v[0],
		idx:     binary.BigEndian.Uint32(v[4:8]),
		byteLen: binary.BigEndian.Uint64(v[8:16]),
		cards:   v[snapHeader+4 : body],
		payload: v[body:],
	}
	if s.kind == snapFullBack {
		if len(s.payload) < 8 {
			return snap{}, errCorrupt
		}
		n := binary.BigEndian.Uint64(s.payload)
		if n > uint64(len(s.payload)-8) {
			return snap{}, errCorrupt
		}
		s.kind, s.payload, s.back = snapFull, s.payload[8:8+n], s.payload[8+n:]
	}
	return s, nil
}

// encodeSnap encodes cur as the snapshot after the one whose chain
// position is prevIdx and whose XOR with cur is d, serialized (nil when cur
// is the first): d when that is smaller and the chain is shorter than
// fullEvery, else cur in full (with d when it is smaller). It returns the
// value and its chain position. cur may be run-optimized.
func encodeSnap(d []byte, prevIdx uint32, cur *roaring.Bitmap, byteLen uint64, fullEvery int) ([]byte, uint32, error) {
	if d != nil && !smaller(uint64(len(d)), cur) {
		d = nil
	}
	if d != nil && int(prevIdx)+1 < fullEvery {
		cards, err := headerCards(cur)
		if err != nil {
			return nil, 0, err
		}
		return append(valueHeader(snapXor, prevIdx+1, byteLen, cards, len(d)), d...), prevIdx + 1, nil
	}
	cur.RunOptimize() // written in full
	v, err := fullValue(byteLen, cur, d)
	return v, 0, err
}

// serializeXor returns d, run-optimized, in the portable serialization.
func serializeXor(d *roaring.Bitmap) ([]byte, error) {
	d.RunOptimize()
	return d.ToBytes()
}

// smaller reports whether size bytes are fewer than cur's serialization.
// cur is run-optimized for the comparison (a pass over every container)
// only when size is at least a quarter of cur's size as it is; so a cur
// that runs would shrink more than four times may be written as a larger
// XOR.
func smaller(size uint64, cur *roaring.Bitmap) bool {
	if 4*size >= cur.GetSerializedSizeInBytes() {
		cur.RunOptimize()
	}
	return size < cur.GetSerializedSizeInBytes()
}

// valueHeader returns the header and container counts of a snapshot value,
// with room for size bytes of body.
func valueHeader(kind byte, idx uint32, byteLen uint64, cards []byte, size int) []byte {
	b := make([]byte, snapHeader+4, snapHeader+4+len(cards)+size)
	b[0] = kind
	binary.BigEndian.PutUint32(b[4:8], idx)
	binary.BigEndian.PutUint64(b[8:16], byteLen)
	binary.LittleEndian.PutUint32(b[snapHeader:], uint32(len(cards)/4))
	return append(b, cards...)
}

// fullValue encodes bm in full: a snapFull, or with the serialized XOR
// back against the previous snapshot (unless nil) a snapFullBack.
func fullValue(byteLen uint64, bm *roaring.Bitmap, back []byte) ([]byte, error) {
	cards, err := headerCards(bm)
	if err != nil {
		return nil, err
	}
	kind, size := byte(snapFull), bm.GetSerializedSizeInBytes()
	extra := 0
	if back != nil {
		kind, extra = snapFullBack, 8+len(back)
	}
	v := valueHeader(kind, 0, byteLen, cards, int(size)+extra)
	if back != nil {
		v = binary.BigEndian.AppendUint64(v, size)
	}
	buf := bytes.NewBuffer(v)
	if _, err := bm.WriteTo(buf); err != nil {
		return nil, err
	}
	return append(buf.Bytes(), back...), nil
}

// headerCards returns the keys and cardinalities - 1 of bm's containers,
// as a snapshot value lists them: the descriptive header of bm's
// serialization, which roaring writes from the cardinalities it keeps
// before any container (the rest is not written).
func headerCards(bm *roaring.Bitmap) ([]byte, error) {
	var h headerWriter
	if _, err := bm.WriteTo(&h); err != nil && !errors.Is(err, errHeaderRead) {
		return nil, err
	}
	s, err := parseSerialized(h.buf)
	if err != nil {
		return nil, err
	}
	return s.desc, nil
}

// errHeaderRead stops a serialization once headerWriter has the header.
var errHeaderRead = errors.New("history: serialization header read")

// headerWriter keeps the first bytes of a serialization, up to the end of
// its header.
type headerWriter struct{ buf []byte }

func (h *headerWriter) Write(p []byte) (int, error) {
	h.buf = append(h.buf, p...)
	if _, err := parseSerialized(h.buf); err == nil {
		return len(p), errHeaderRead
	}
	return len(p), nil
}

// plainFull returns a full's value without its XOR against the previous
// snapshot, for when that snapshot is dropped.
func plainFull(s snap) []byte {
	return append(valueHeader(snapFull, 0, s.byteLen, s.cards, len(s.payload)), s.payload...)
}

// chainLink is one snapshot of a chain being reconstructed.
type chainLink struct {
	ts int64
	s  snap
}

// snapChain returns the snapshots needed to rebuild the newest snapshot at
// or before t, to be XORed together (in any order) onto base: from the
// newest full (or cached snapshot) before it up to it, newest first. base is
// the cached bitmap the chain applies to (nil: the chain ends with a full);
// the target snapshot's time and header are returned. ok is false when the series has
// no snapshot at or before t.
func snapChain(b *bolt.Bucket, t int64, cached func(ts int64) *cachedBitmap) (links []chainLink, base *cachedBitmap, target chainLink, ok bool, err error) {
	if b == nil {
		return nil, nil, target, false, nil
	}
	c := b.Cursor()
	k, _ := seekLE(c, t)
	if k == nil {
		return nil, nil, target, false, nil
	}
	if target.s, err = parseSnap(snapValue(b, k)); err != nil {
		return nil, nil, target, false, err
	}
	target.ts = keyTs(k)
	for ; k != nil; k, _ = c.Prev() {
		ts := keyTs(k)
		if cached != nil {
			if cb := cached(ts); cb != nil {
				return links, cb, target, true, nil
			}
		}
		s, err := parseSnap(snapValue(b, k))
		if err != nil {
			return nil, nil, target, false, err
		}
		links = append(links, chainLink{ts, s})
		if s.kind == snapFull {
			if back, err := backChain(b, target.ts, len(links)); back != nil || err != nil {
				return back, nil, target, err == nil, err
			}
			return links, nil, target, true, nil
		}
	}
	return nil, nil, target, false, errCorrupt // a delta without a full before it
}

// backChain returns the links that rebuild the snapshot at ts backwards
// from the next full that holds its XOR against the snapshot before it, if
// that takes fewer than limit links; else nil.
func backChain(b *bolt.Bucket, ts int64, limit int) ([]chainLink, error) {
	c := b.Cursor()
	c.Seek(tsKey(ts))
	var links []chainLink
	for k, _ := c.Next(); k != nil && len(links)+2 < limit; k, _ = c.Next() {
		s, err := parseSnap(snapValue(b, k))
		if err != nil {
			return nil, err
		}
		if s.kind == snapFull {
			if s.back == nil {
				return nil, nil
			}
			return append(links, chainLink{keyTs(k), s}, chainLink{keyTs(k), snap{payload: s.back}}), nil
		}
		links = append(links, chainLink{keyTs(k), s})
	}
	return nil, nil
}

// rebuild XORs the links onto base (a bitmap the caller owns, or nil) and
// returns the result, owned by the caller (it shares nothing with the
// file's bytes).
func rebuild(base *roaring.Bitmap, links []chainLink) (*roaring.Bitmap, error) {
	if len(links) > 1 || (base != nil && len(links) > 0) {
		bm, ok, err := xorChain(base, payloadsOf(links))
		if ok || err != nil {
			return bm, err
		}
	}
	bm := base
	for _, l := range links {
		x := roaring.New()
		if err := x.UnmarshalBinary(l.s.payload); err != nil {
			return nil, errCorrupt
		}
		if bm == nil {
			bm = x
			continue
		}
		bm.Xor(x)
	}
	if bm == nil {
		bm = roaring.New()
	}
	return bm, nil
}

// countCards counts the integers in [from, to) of a snapshot from its
// container counts: a container inside the range counts its cardinality;
// the (at most two) containers it cuts are rebuilt from the snapshot's
// chain, links, one container of each.
func countCards(cards []byte, links []chainLink, from, to uint64) (uint64, error) {
	var n uint64
	var block [containerWords]uint64
	for i := 0; i+4 <= len(cards); i += 4 {
		key := binary.LittleEndian.Uint16(cards[i:])
		start := uint64(key) << 16
		end := start + 1<<16
		switch {
		case end <= from || start >= to:
		case from <= start && end <= to:
			n += uint64(binary.LittleEndian.Uint16(cards[i+2:])) + 1
		default:
			clear(block[:])
			if err := xorContainers(block[:], links, key); err != nil {
				return 0, err
			}
			n += countRange(block[:], int(max(from, start)-start), int(min(to, end)-start))
		}
	}
	return n, nil
}

// xorContainers XORs into w the container with key hi of each link.
func xorContainers(w []uint64, links []chainLink, hi uint16) error {
	for _, l := range links {
		s, err := parseSerialized(l.s.payload)
		if err != nil {
			return err
		}
		i, found := s.find(hi)
		if !found {
			continue
		}
		c, err := s.container(i)
		if err != nil {
			return err
		}
		xorInto(w, c, s.isRun(i), s.card(i))
	}
	return nil
}

// materialize rebuilds the newest snapshot at or before t without a cache.
// ok is false when there is none.
func materialize(b *bolt.Bucket, t int64) (bm *roaring.Bitmap, s snap, ts int64, ok bool, err error) {
	links, _, target, ok, err := snapChain(b, t, nil)
	if !ok || err != nil {
		return nil, snap{}, 0, ok, err
	}
	bm, err = rebuild(nil, links)
	return bm, target.s, target.ts, err == nil, err
}
