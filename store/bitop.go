package store

import (
	"bytes"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/presenced/presenced/internal/bitstr"
	"github.com/presenced/presenced/proto"
)

// BITOP and BITOPCOUNT share the operations below: BITOP builds the
// result, BITOPCOUNT only counts its set bits. Sources are the live
// bitmaps of the keys (or conversions of raw strings) and must never be
// changed; a missing key is an empty bitmap. nbits is the result's length
// in bits: the longest source's, as in Redis, where shorter strings count
// as padded with zero bytes.

// bitopFunc computes a BITOP result from its sources into a new bitmap.
type bitopFunc func(srcs []*roaring.Bitmap, nbits uint64) *roaring.Bitmap

// bitopCountFunc returns the number of set bits of a BITOP result.
type bitopCountFunc func(srcs []*roaring.Bitmap, nbits uint64) uint64

// bitopSpec is a BITOP operation: how to compute it, how to count its
// result's bits without building it when that is cheaper (nil: build and
// count), and how many sources it takes at least (NOT takes exactly one).
type bitopSpec struct {
	name    string
	minKeys int
	f       bitopFunc
	count   bitopCountFunc
}

var bitops = []bitopSpec{
	{"and", 1, func(s []*roaring.Bitmap, _ uint64) *roaring.Bitmap { return fold(s, roaring.And) }, countAnd},
	{"or", 1, func(s []*roaring.Bitmap, _ uint64) *roaring.Bitmap { return roaring.FastOr(s...) }, countOr},
	{"xor", 1, func(s []*roaring.Bitmap, _ uint64) *roaring.Bitmap { return fold(s, roaring.Xor) }, nil},
	// NOT flips the bits of its single source within the result's length.
	{"not", 1, func(s []*roaring.Bitmap, nbits uint64) *roaring.Bitmap { return roaring.Flip(s[0], 0, nbits) },
		func(s []*roaring.Bitmap, nbits uint64) uint64 { return nbits - s[0].GetCardinality() }},
	// DIFF: bits of the first source set in none of the others.
	{"diff", 2, func(s []*roaring.Bitmap, _ uint64) *roaring.Bitmap { return roaring.AndNot(s[0], union(s[1:])) },
		func(s []*roaring.Bitmap, _ uint64) uint64 {
			return s[0].GetCardinality() - s[0].AndCardinality(union(s[1:]))
		}},
	// DIFF1: bits set in one of the others but not in the first source.
	{"diff1", 2, func(s []*roaring.Bitmap, _ uint64) *roaring.Bitmap { return roaring.AndNot(union(s[1:]), s[0]) },
		func(s []*roaring.Bitmap, _ uint64) uint64 {
			rest := union(s[1:])
			return rest.GetCardinality() - rest.AndCardinality(s[0])
		}},
	// ANDOR: bits of the first source also set in one of the others.
	{"andor", 2, func(s []*roaring.Bitmap, _ uint64) *roaring.Bitmap { return roaring.And(s[0], union(s[1:])) },
		func(s []*roaring.Bitmap, _ uint64) uint64 { return s[0].AndCardinality(union(s[1:])) }},
	// ONE: bits set in exactly one source.
	{"one", 1, opOne, nil},
}

// lookupBitop finds the operation named name (in any case) for nkeys
// source keys, replying Redis's error when there is none or the number of
// keys does not suit it.
func (c *ctx) lookupBitop(name []byte, nkeys int) (*bitopSpec, bool) {
	var op *bitopSpec
	for i := range bitops {
		if bytes.EqualFold(name, []byte(bitops[i].name)) {
			op = &bitops[i]
		}
	}
	switch {
	case op == nil:
		c.w.Error(proto.ErrSyntax)
		return nil, false
	case op.name == "not" && nkeys != 1:
		c.w.Error("ERR BITOP NOT must be called with a single source key.")
		return nil, false
	case nkeys < op.minKeys:
		c.w.Error("ERR BITOP " + strings.ToUpper(op.name) + " must be called with at least two source keys.")
		return nil, false
	}
	return op, true
}

// bitopSources returns the set bits of each key, for reading only, and
// the result's length in bytes: the longest source's.
func (c *ctx) bitopSources(keys [][]byte) (srcs []*roaring.Bitmap, n int64) {
	srcs = make([]*roaring.Bitmap, len(keys))
	for i, key := range keys {
		e := c.lookup(key)
		if e == nil {
			srcs[i] = roaring.New()
			continue
		}
		srcs[i] = e.v.bitmapView()
		n = max(n, e.v.length())
	}
	return srcs, n
}

// bitop implements BITOP operation destkey key [key ...], with Redis 8.2's
// DIFF, DIFF1, ANDOR and ONE besides AND, OR, XOR and NOT.
func bitop(c *ctx, args [][]byte) {
	op, ok := c.lookupBitop(args[1], len(args)-3)
	if !ok {
		return
	}
	srcs, n := c.bitopSources(args[3:])
	if n == 0 {
		if c.del(args[2]) {
			c.notify('g', "del", args[2])
		} else {
			c.unchanged()
		}
		c.w.Int(0)
		return
	}
	c.put(args[2], value{bm: op.f(srcs, uint64(n)*8), n: n})
	c.notify('$', "set", args[2])
	c.w.Int(n)
}

// bitopcount implements BITOPCOUNT operation key [key ...]: the number of
// set bits BITOP would store, with BITOP's checks and error replies.
func bitopcount(c *ctx, args [][]byte) {
	op, ok := c.lookupBitop(args[1], len(args)-2)
	if !ok {
		return
	}
	srcs, n := c.bitopSources(args[2:])
	if n == 0 {
		c.w.Int(0)
		return
	}
	c.w.Int(int64(op.cardinality(srcs, uint64(n)*8)))
}

// cardinality counts the set bits of the operation's result.
func (op *bitopSpec) cardinality(srcs []*roaring.Bitmap, nbits uint64) uint64 {
	if op.count != nil {
		return op.count(srcs, nbits)
	}
	return op.f(srcs, nbits).GetCardinality()
}

// bitmapView returns the string's set bits as a bitmap that the caller
// must not change: the value's own bitmap, or a conversion of its bytes.
func (v *value) bitmapView() *roaring.Bitmap {
	if v.bm != nil {
		return v.bm
	}
	return bitstr.Bitmap(v.raw)
}

// fold combines srcs pairwise with f into a new bitmap. It uses roaring's
// allocating operations only: the in-place Bitmap.Xor of roaring v2.30.0
// writes into its argument's bitmap containers when the receiver's
// container is an array or a run, and the arguments here are live values.
func fold(srcs []*roaring.Bitmap, f func(a, b *roaring.Bitmap) *roaring.Bitmap) *roaring.Bitmap {
	r := srcs[0].Clone()
	for _, b := range srcs[1:] {
		r = f(r, b)
	}
	return r
}

// union returns the union of srcs (at least one) for reading only: the
// source itself when there is one.
func union(srcs []*roaring.Bitmap) *roaring.Bitmap {
	if len(srcs) == 1 {
		return srcs[0]
	}
	return roaring.FastOr(srcs...)
}

// countAnd counts the intersection of the sources: what the last one has
// in common with the intersection of the others.
func countAnd(srcs []*roaring.Bitmap, _ uint64) uint64 {
	last := srcs[len(srcs)-1]
	switch len(srcs) {
	case 1:
		return last.GetCardinality()
	case 2:
		return srcs[0].AndCardinality(last)
	}
	return fold(srcs[:len(srcs)-1], roaring.And).AndCardinality(last)
}

// countOr counts the union of the sources as |U| + |last| - |U ∩ last|,
// U being the union of all but the last, which spares building the whole
// union.
func countOr(srcs []*roaring.Bitmap, _ uint64) uint64 {
	last := srcs[len(srcs)-1]
	if len(srcs) == 1 {
		return last.GetCardinality()
	}
	u := union(srcs[:len(srcs)-1])
	return u.GetCardinality() + last.GetCardinality() - u.AndCardinality(last)
}

// opOne keeps the bits set in exactly one source: those in the union but
// in no pairwise intersection.
func opOne(srcs []*roaring.Bitmap, _ uint64) *roaring.Bitmap {
	seen, twice := roaring.New(), roaring.New()
	for _, b := range srcs {
		twice = roaring.Or(twice, roaring.And(seen, b))
		seen = roaring.Or(seen, b)
	}
	return roaring.AndNot(seen, twice)
}
