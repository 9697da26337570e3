package store

import (
	"encoding/binary"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cespare/xxhash/v2"
	"github.com/presenced/presenced/internal/bitstr"
)

// Digest returns a hash of the store's logical state: the log time and,
// database by database, every stored key with its deadline and its value
// as Redis sees it, a byte length and the positions of the set bits, and
// the deadlines of the armed bits with the key's latest bit TTL; then the
// bit-TTL rules. A raw string and a bitmap holding the same bytes digest
// alike, and so do stores that reached one state by different paths, so
// replicas that applied the same log have equal digests. Keys whose
// deadline has passed but that expiry has not removed yet count, as they
// are still part of the state. The counters (Stats) and how Redis would
// encode a string (OBJECT ENCODING) are not included. It is the digest of
// a Snapshot, which it takes: it reads every value, without a lock, after
// holding the read lock for the copy.
func (s *Store) Digest() uint64 { return s.Snapshot().Digest() }

// Digest returns the digest (see Store.Digest) of the state the snapshot
// copied. It reads every value: it is meant for checks, not hot paths,
// and holds no lock of the store.
func (sn *Snapshot) Digest() uint64 {
	d := digester{h: xxhash.New()}
	d.int(sn.now)
	for _, entries := range sn.dbs {
		d.int(int64(len(entries)))
		for i := range entries {
			d.entry(&entries[i])
		}
	}
	d.int(int64(len(sn.rules)))
	for _, r := range sn.rules {
		d.str(r.Pattern)
		d.int(r.TTL)
	}
	return d.h.Sum64()
}

// digester feeds a store's state to a hash, each variable-length field
// preceded by its length so that no two states give the same stream.
type digester struct {
	h   *xxhash.Digest
	buf []byte
	pos [1024]uint32
}

func (d *digester) int(v int64) {
	d.buf = binary.LittleEndian.AppendUint64(d.buf[:0], uint64(v))
	d.h.Write(d.buf)
}

func (d *digester) str(s string) {
	d.int(int64(len(s)))
	d.h.WriteString(s)
}

func (d *digester) entry(e *snapEntry) {
	d.str(e.key)
	d.int(e.expireAt)
	d.int(e.v.length())
	bm := e.v.bm
	if bm == nil {
		bm = bitstr.Bitmap(e.v.raw)
	}
	d.bits(bm)
	d.timers(e.v.t)
}

// timers hashes the number of armed bits, the latest TTL and each armed
// bit with its deadline, in offset order.
func (d *digester) timers(t *bitTimers) {
	if t == nil {
		d.int(0)
		return
	}
	d.int(int64(t.n))
	d.int(t.ttl)
	t.eachSorted(func(off uint32, du int64) {
		d.int(int64(off))
		d.int(du)
	})
}

// bits hashes the number of set bits, then their positions.
func (d *digester) bits(bm *roaring.Bitmap) {
	d.int(int64(bm.GetCardinality()))
	it := bm.ManyIterator()
	for n := it.NextMany(d.pos[:]); n > 0; n = it.NextMany(d.pos[:]) {
		d.buf = d.buf[:0]
		for _, p := range d.pos[:n] {
			d.buf = binary.LittleEndian.AppendUint32(d.buf, p)
		}
		d.h.Write(d.buf)
	}
}

// ReplicaDigest returns the digest (see Digest) combined with the keys'
// versions (see watch.go): the whole state replicas must agree on, since
// the versions decide WATCH's checks. Unlike the digest, it tells apart
// stores that reached one state through different changes.
func (sn *Snapshot) ReplicaDigest() uint64 {
	return xxhash.Sum64(binary.LittleEndian.AppendUint64(appendVersions(nil, &sn.vers), sn.Digest()))
}

// Applies returns the number of Applies the captured store went through,
// which number the keys' versions: replicas that applied the same
// entries count the same.
func (sn *Snapshot) Applies() uint64 { return sn.vers.last }
