// Package bitstr reads the bits of a Redis string into a roaring bitmap.
//
// Bit i of a string, as GETBIT and SETBIT number them, is bit 7-i%8 of
// byte i/8: the first byte's most significant bit is bit 0. The bitmap
// holds integer i for every set bit i. Both conversions work a 64-bit
// word at a time: a big-endian word of the string, its bits reversed, is
// one of roaring's dense words (integer i at bit i%64 of word i/64).
package bitstr

import (
	"encoding/binary"
	"math/bits"

	"github.com/RoaringBitmap/roaring/v2"
)

// Bitmap returns the set bits of the string b as a new bitmap.
func Bitmap(b []byte) *roaring.Bitmap {
	bm := roaring.New()
	bm.FromDense(denseWords(b, 0), true)
	return bm
}

// AddBytes adds the set bits of b to bm, bit 0 of b being base, a
// multiple of 8.
func AddBytes(bm *roaring.Bitmap, b []byte, base uint64) {
	start := base &^ (1<<16 - 1) // the first bit of base's container
	add := roaring.New()
	add.FromDense(denseWords(b, (base-start)/8), false)
	if start > 0 {
		add = roaring.AddOffset64(add, int64(start))
	}
	bm.Or(add)
}

// denseWords lays the bits of the string b out as roaring's dense words
// (bit i in word i/64 at bit i%64), after skip zero bytes.
func denseWords(b []byte, skip uint64) []uint64 {
	words := make([]uint64, (skip+uint64(len(b))+7)/8)
	for i := 0; i < len(b); {
		if skip%8 == 0 && i+8 <= len(b) {
			words[skip/8] = bits.Reverse64(binary.BigEndian.Uint64(b[i:]))
			i, skip = i+8, skip+8
			continue
		}
		words[skip/8] |= uint64(bits.Reverse8(b[i])) << (8 * (skip % 8))
		i, skip = i+1, skip+1
	}
	return words
}
