package history

import (
	"bytes"
	"encoding/binary"

	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"
)

// A snapshot value is a 16-byte header and a roaring bitmap in the portable
// serialization:
//
//	[0]     kind: snapFull (the bitmap), snapXor (the XOR against the previous
//	        snapshot) or snapFullBack (a full that also holds that XOR)
//	[4:8]   chain position: 0 for a full, else the previous snapshot's + 1
//	[8:16]  logical byte length of the key's value
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

// snap is a parsed snapshot value. A snapFullBack parses as a snapFull with
// back set.
type snap struct {
	kind    byte
	idx     uint32
	byteLen uint64
	payload []byte
	back    []byte // a full's XOR against the previous snapshot, if stored
}

func parseSnap(v []byte) (snap, error) {
	if len(v) < snapHeader || v[0] > snapFullBack {
		return snap{}, errCorrupt
	}
	s := snap{
		kind:    v[0],
		idx:     binary.BigEndian.Uint32(v[4:8]),
		byteLen: binary.BigEndian.Uint64(v[8:16]),
		payload: v[snapHeader:],
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

// encodeSnap encodes cur as the snapshot after prev (nil if none) whose
// chain position is prevIdx: the XOR against prev when that is smaller and
// the chain is shorter than fullEvery, else cur in full (with the XOR when
// it is smaller). It returns the value and its chain position.
func encodeSnap(prev *roaring.Bitmap, prevIdx uint32, cur *roaring.Bitmap, byteLen uint64, fullEvery int) ([]byte, uint32) {
	cur.RunOptimize()
	var d *roaring.Bitmap
	if prev != nil {
		d = roaring.Xor(prev, cur)
		d.RunOptimize()
		if d.GetSerializedSizeInBytes() >= cur.GetSerializedSizeInBytes() {
			d = nil
		}
	}
	switch {
	case d != nil && int(prevIdx)+1 < fullEvery:
		return encodeValue(snapXor, prevIdx+1, byteLen, d, nil), prevIdx + 1
	case d != nil:
		return encodeValue(snapFullBack, 0, byteLen, cur, d), 0
	}
	return encodeValue(snapFull, 0, byteLen, cur, nil), 0
}

// encodeValue encodes a snapshot value: body, and for a snapFullBack the
// XOR back.
func encodeValue(kind byte, idx uint32, byteLen uint64, body, back *roaring.Bitmap) []byte {
	size := snapHeader + int(body.GetSerializedSizeInBytes())
	if back != nil {
		size += 8 + int(back.GetSerializedSizeInBytes())
	}
	buf := bytes.NewBuffer(make([]byte, snapHeader, size))
	b := buf.Bytes()
	b[0] = kind
	binary.BigEndian.PutUint32(b[4:8], idx)
	binary.BigEndian.PutUint64(b[8:16], byteLen)
	if back != nil {
		buf.Write(binary.BigEndian.AppendUint64(nil, body.GetSerializedSizeInBytes()))
	}
	for _, bm := range []*roaring.Bitmap{body, back} {
		if bm == nil {
			continue
		}
		if _, err := bm.WriteTo(buf); err != nil {
			panic(err) // writing to a bytes.Buffer cannot fail
		}
	}
	return buf.Bytes()
}

// plainFull returns a full's value without its XOR against the previous
// snapshot, for when that snapshot is dropped.
func plainFull(s snap) []byte {
	v := make([]byte, snapHeader, snapHeader+len(s.payload))
	v[0] = snapFull
	binary.BigEndian.PutUint64(v[8:16], s.byteLen)
	return append(v, s.payload...)
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
	k, v := seekLE(c, t)
	if k == nil {
		return nil, nil, target, false, nil
	}
	if target.s, err = parseSnap(v); err != nil {
		return nil, nil, target, false, err
	}
	target.ts = keyTs(k)
	for ; k != nil; k, v = c.Prev() {
		ts := keyTs(k)
		if cached != nil {
			if cb := cached(ts); cb != nil {
				return links, cb, target, true, nil
			}
		}
		s, err := parseSnap(v)
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
	for k, v := c.Next(); k != nil && len(links)+2 < limit; k, v = c.Next() {
		s, err := parseSnap(v)
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
