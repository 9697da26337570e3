package store

import (
	"bytes"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/presenced/presenced/proto"
)

// bitopFunc computes a BITOP result from its sources, which it must not
// change; nbits is the result's length in bits. The result must be a new
// bitmap.
type bitopFunc func(srcs []*roaring.Bitmap, nbits uint64) *roaring.Bitmap

// bitopSpec is a BITOP operation: how to compute it and how many sources
// it takes at least (NOT takes exactly one).
type bitopSpec struct {
	name    string
	minKeys int
	f       bitopFunc
}

var bitops = []bitopSpec{
	{"and", 1, func(s []*roaring.Bitmap, _ uint64) *roaring.Bitmap { return fold(s, roaring.And) }},
	{"or", 1, func(s []*roaring.Bitmap, _ uint64) *roaring.Bitmap { return fold(s, roaring.Or) }},
	{"xor", 1, func(s []*roaring.Bitmap, _ uint64) *roaring.Bitmap { return fold(s, roaring.Xor) }},
	// NOT flips the bits of its single source within the result's length.
	{"not", 1, func(s []*roaring.Bitmap, nbits uint64) *roaring.Bitmap { return roaring.Flip(s[0], 0, nbits) }},
	// DIFF: bits of the first source set in none of the others.
	{"diff", 2, func(s []*roaring.Bitmap, _ uint64) *roaring.Bitmap {
		return roaring.AndNot(s[0], fold(s[1:], roaring.Or))
	}},
	// DIFF1: bits set in one of the others but not in the first source.
	{"diff1", 2, func(s []*roaring.Bitmap, _ uint64) *roaring.Bitmap {
		return roaring.AndNot(fold(s[1:], roaring.Or), s[0])
	}},
	// ANDOR: bits of the first source also set in one of the others.
	{"andor", 2, func(s []*roaring.Bitmap, _ uint64) *roaring.Bitmap {
		return roaring.And(s[0], fold(s[1:], roaring.Or))
	}},
	{"one", 1, opOne},
}

// bitop implements BITOP operation destkey key [key ...], with Redis 8's
// DIFF, DIFF1, ANDOR and ONE besides AND, OR, XOR and NOT.
func bitop(c *ctx, args [][]byte) {
	var op *bitopSpec
	for i := range bitops {
		if bytes.EqualFold(args[1], []byte(bitops[i].name)) {
			op = &bitops[i]
		}
	}
	nkeys := len(args) - 3
	switch {
	case op == nil:
		c.w.Error(proto.ErrSyntax)
		return
	case op.name == "not" && nkeys != 1:
		c.w.Error("ERR BITOP NOT must be called with a single source key.")
		return
	case nkeys < op.minKeys:
		c.w.Error("ERR BITOP " + strings.ToUpper(op.name) + " must be called with at least two source keys.")
		return
	}
	srcs := make([]*roaring.Bitmap, nkeys)
	var n int64 // the result's length in bytes: the longest source's
	for i, key := range args[3:] {
		e := c.get(key)
		if e == nil {
			srcs[i] = roaring.New()
			continue
		}
		srcs[i] = e.v.bitmapView()
		n = max(n, e.v.length())
	}
	if n == 0 {
		c.del(args[2])
		c.w.Int(0)
		return
	}
	c.put(args[2], value{bm: op.f(srcs, uint64(n)*8), n: n})
	c.w.Int(n)
}

// bitmapView returns the string's set bits as a bitmap that the caller
// must not change: the value's own bitmap, or a conversion of its bytes.
func (v *value) bitmapView() *roaring.Bitmap {
	if v.bm != nil {
		return v.bm
	}
	return bitmapOf(v.raw, 0)
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
