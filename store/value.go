package store

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/presenced/presenced/internal/bitprobe"
	"github.com/presenced/presenced/internal/bitstr"
	"github.com/presenced/presenced/internal/longdouble"
	"github.com/presenced/presenced/proto"
)

// MaxStringLen is the largest string a key may hold: Redis's default
// proto-max-bulk-len, and the 2^32 bits a 32-bit roaring bitmap covers.
const MaxStringLen = 512 << 20

// value is a Redis string in one of two forms. A string written by string
// commands is raw bytes. A string built by bit commands is a roaring
// bitmap of its set bits plus its byte length; bit i of the string is bit
// 7-i%8 of byte i/8, as in Redis, and is stored as integer i.
type value struct {
	raw []byte          // the bytes, when bm is nil
	bm  *roaring.Bitmap // the set bits, in bitmap form
	n   int64           // the byte length, in bitmap form
	enc rawEncoding     // how Redis would hold the raw form, for OBJECT
	// t holds the deadlines of armed bits, nil when none is; only a
	// bitmap has them, and only set bits are armed. Commands that store
	// a new value drop them with the old one.
	t *bitTimers
	// ch follows the bits changed since the key's last history snapshot,
	// nil when nothing follows them; only a bitmap has it.
	ch *bitChanges
}

// rawEncoding is what Redis's object encoding of a raw string depends on
// beyond its bytes.
type rawEncoding uint8

const (
	// encAuto: the string was stored whole (SET, INCR...), so Redis chose
	// "int", "embstr" or "raw" from its content and integers below 10000
	// share one object.
	encAuto rawEncoding = iota
	// encRaw: the string was edited in place (APPEND, SETRANGE), which
	// leaves Redis's "raw" encoding whatever the content.
	encRaw
	// encUnsharedInt: an "int" that COPY duplicated, so never shared.
	encUnsharedInt
	// encNotInt: a number INCRBYFLOAT printed, which Redis stores as
	// "embstr" or "raw" by its length, never as "int".
	encNotInt
)

// sharedIntegers is Redis's OBJ_SHARED_INTEGERS: SET and INCR reuse one
// object for the integers below it.
const sharedIntegers = 10000

// embstrMaxLen is Redis's OBJ_ENCODING_EMBSTR_SIZE_LIMIT.
const embstrMaxLen = 44

func rawValue(b []byte) value { return value{raw: b} }

func (v *value) isBitmap() bool { return v.bm != nil }

// length is the string's length in bytes.
func (v *value) length() int64 {
	if v.bm != nil {
		return v.n
	}
	return int64(len(v.raw))
}

// bytes returns the string's bytes. For the raw form it returns the
// stored slice itself, which the caller must not change.
func (v *value) bytes() []byte {
	if v.bm == nil {
		return v.raw
	}
	return v.rangeBytes(0, v.n)
}

// rangeBytes materializes bytes [from, to) of the string; the range must
// lie within the string.
func (v *value) rangeBytes(from, to int64) []byte {
	if v.bm == nil {
		return v.raw[from:to]
	}
	if (to-from)*8 >= v.n {
		return v.denseBytes(from, to)
	}
	out := make([]byte, to-from)
	it := v.bm.Iterator()
	it.AdvanceIfNeeded(uint32(from * 8))
	end := uint64(to) * 8
	for it.HasNext() {
		x := uint64(it.Next())
		if x >= end {
			break
		}
		out[x/8-uint64(from)] |= 0x80 >> (x & 7)
	}
	return out
}

// denseBytes is rangeBytes for a range that covers much of a bitmap
// value: it expands the whole bitmap into 64-bit words at memory speed and
// turns each word into eight of Redis's bytes. Integer i is bit i%64 of
// word i/64, and bit 7-i%8 of byte i/8 in Redis's layout, so a word's bits
// reversed and written big-endian are its eight bytes.
func (v *value) denseBytes(from, to int64) []byte {
	words := v.bm.ToDense()
	all := make([]byte, (to+7)/8*8)
	for i, w := range words {
		if int64(i)*8 >= to {
			break
		}
		binary.BigEndian.PutUint64(all[i*8:], bits.Reverse64(w))
	}
	return all[from:to:to]
}

// toBitmap converts the value to bitmap form in place.
func (v *value) toBitmap() {
	if v.bm != nil {
		return
	}
	v.bm = bitstr.Bitmap(v.raw)
	v.n = int64(len(v.raw))
	v.raw = nil
}

// getBit reports bit off of the string (0 beyond its end).
func (v *value) getBit(off uint64) bool {
	if v.bm != nil {
		return off < 1<<32 && v.bm.Contains(uint32(off))
	}
	i := off / 8
	if i >= uint64(len(v.raw)) {
		return false
	}
	return v.raw[i]&(0x80>>(off&7)) != 0
}

// getBits sets out[i] to bit offs[i] of the string, for each i; out must
// be as long as offs. The offsets are below 2^32 (bit offsets Redis
// accepts). A bitmap answers them side by side (see bitprobe).
func (v *value) getBits(offs []uint64, out []bool) {
	if v.bm == nil {
		for i, off := range offs {
			out[i] = v.getBit(off)
		}
		return
	}
	var xs [probeChunk]uint32
	for len(offs) > 0 {
		n := min(len(offs), probeChunk)
		for i, off := range offs[:n] {
			xs[i] = uint32(off)
		}
		bitprobe.Contains(v.bm, xs[:n], out[:n])
		offs, out = offs[n:], out[n:]
	}
}

// probeChunk is how many offsets getBits converts for bitprobe at a time,
// and how many commands a run of GETBITs or of heartbeats that change
// nothing reads together (see getbitRun and setbitRunUnchanged).
const probeChunk = 64

// setBit sets or clears bit off (below 2^32), growing the string with zero
// bytes to cover it, and reports the bit's old value. The value becomes a
// bitmap.
func (v *value) setBit(off uint64, on bool) bool {
	v.toBitmap()
	if need := int64(off/8) + 1; need > v.n {
		v.n = need
	}
	var old bool
	if on {
		old = !v.bm.CheckedAdd(uint32(off))
	} else {
		old = v.bm.CheckedRemove(uint32(off))
	}
	if old != on {
		v.changed(uint32(off))
	}
	return old
}

// setBits sets bits offs (below 2^32) to 1 as setBit would one after
// another, and sets old[i] to bit offs[i]'s old value; old must be as
// long as offs. The bits are set side by side (see bitprobe.Add).
func (v *value) setBits(offs []uint64, old []bool) {
	v.toBitmap()
	var xs [probeChunk]uint32
	for len(offs) > 0 {
		n := min(len(offs), probeChunk)
		for i, off := range offs[:n] {
			xs[i] = uint32(off)
			if need := int64(off/8) + 1; need > v.n {
				v.n = need
			}
		}
		bitprobe.Add(v.bm, xs[:n], old[:n])
		for i, x := range xs[:n] {
			if !old[i] {
				v.changed(x)
			}
		}
		offs, old = offs[n:], old[n:]
	}
}

// clearBit clears bit off of a bitmap value.
func (v *value) clearBit(off uint32) {
	if v.bm.CheckedRemove(off) {
		v.changed(off)
	}
}

// share returns a copy of bm that shares bm's containers until one of
// the two changes them: each copies a shared container before its first
// change to it. It costs a slice of container references, not a copy of
// every container, so a snapshot taken with the store locked does not
// stall writes for the time it takes to copy a large bitmap.
func share(bm *roaring.Bitmap) *roaring.Bitmap {
	bm.SetCopyOnWrite(true)
	c := bm.Clone()
	bm.SetCopyOnWrite(false)
	c.SetCopyOnWrite(false)
	return c
}

// clone returns a deep copy, bit deadlines included.
func (v *value) clone() value {
	if v.bm != nil {
		return value{bm: v.bm.Clone(), n: v.n, t: v.t.clone()}
	}
	return value{raw: append([]byte(nil), v.raw...), enc: v.enc}
}

// int parses the string as a 64-bit integer the way Redis's string2ll
// does, materializing a bitmap only when it is short enough to be one.
func (v *value) int() (int64, bool) {
	if v.length() > 20 {
		return 0, false
	}
	return proto.ParseInt(v.bytes())
}

// longDouble parses the string as Redis's string2ld does, materializing a
// bitmap only when it is short enough to be a number.
func (v *value) longDouble() (longdouble.Float, bool) {
	if v.length() >= longdouble.MaxLen {
		return longdouble.Float{}, false
	}
	return longdouble.Parse(v.bytes())
}

// encoding is the encoding OBJECT ENCODING reports: Redis's choice for
// the raw form, "roaring" for the bitmap form.
func (v *value) encoding() string {
	switch {
	case v.bm != nil:
		return "roaring"
	case v.enc == encRaw:
		return "raw"
	case v.enc == encUnsharedInt:
		return "int"
	}
	if _, ok := v.int(); ok && v.enc != encNotInt {
		return "int"
	}
	if len(v.raw) <= embstrMaxLen {
		return "embstr"
	}
	return "raw"
}

// refcount is what OBJECT REFCOUNT reports: Redis's shared integer
// objects have the largest C int as their count.
func (v *value) refcount() int64 {
	if v.bm != nil || v.enc != encAuto {
		return 1
	}
	if n, ok := v.int(); ok && n >= 0 && n < sharedIntegers {
		return math.MaxInt32
	}
	return 1
}

// appendBytes appends b to the string, keeping its form.
func (v *value) appendBytes(b []byte) {
	if v.bm != nil {
		bitstr.AddBytes(v.bm, b, uint64(v.n)*8)
		v.n += int64(len(b))
		v.ch = nil
		return
	}
	v.raw = append(v.raw, b...)
	v.enc = encRaw
}

// setRange overwrites the string from byte off with b, growing it with
// zero bytes as needed, and keeps its form. off+len(b) must be within
// MaxStringLen.
func (v *value) setRange(off int64, b []byte) {
	end := off + int64(len(b))
	if v.bm != nil {
		v.bm.RemoveRange(uint64(off)*8, uint64(end)*8)
		bitstr.AddBytes(v.bm, b, uint64(off)*8)
		v.n = max(v.n, end)
		v.ch = nil
		return
	}
	if end > int64(len(v.raw)) {
		v.raw = append(v.raw, make([]byte, end-int64(len(v.raw)))...)
	}
	copy(v.raw[off:], b)
	v.enc = encRaw
}
