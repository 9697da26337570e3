package bitstr

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// TestBitmap checks the conversion of strings to bitmaps,
// whole (Bitmap) and added at a byte boundary to bits already there
// (AddBytes, as APPEND and SETRANGE do), against the strings' bits added
// one by one: strings of every length around a word, sparse and dense
// enough for either kind of container, at bases within, at and across
// container boundaries.
func TestBitmap(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	str := func(n, density int) []byte {
		b := make([]byte, n)
		for i := range b {
			for bit := range 8 {
				if rng.Intn(100) < density {
					b[i] |= 0x80 >> bit
				}
			}
		}
		return b
	}
	// model adds bit x of b, bit 7-x%8 of byte x/8, at base+x.
	model := func(bm *roaring.Bitmap, b []byte, base uint64) *roaring.Bitmap {
		for x := range uint64(len(b)) * 8 {
			if b[x/8]&(0x80>>(x%8)) != 0 {
				bm.Add(uint32(base + x))
			}
		}
		return bm
	}
	check := func(name string, got, want *roaring.Bitmap) {
		t.Helper()
		if !got.Equals(want) {
			t.Fatalf("%s: %d bits set, want %d: %v", name, got.GetCardinality(), want.GetCardinality(), roaring.Xor(got, want).ToArray()[:1])
		}
	}
	lengths := []int{0, 1, 7, 8, 9, 15, 16, 17, 8191, 8192, 8193}
	for _, n := range lengths {
		for _, density := range []int{1, 50, 99} {
			b := str(n, density)
			check(fmt.Sprintf("Bitmap(%d bytes, %d%%)", n, density), Bitmap(b), model(roaring.New(), b, 0))

			before := str(9000, density)
			beforeBits := model(roaring.New(), before, 0)
			for _, base := range []uint64{0, 8, 56, 64, 65528, 65536, 65544, 3 << 16, 3<<16 + 8*1001, 1<<32 - 8*uint64(n) - 8} {
				got, want := Bitmap(before), beforeBits.Clone()
				for _, bm := range []*roaring.Bitmap{got, want} {
					bm.RemoveRange(base, base+8*uint64(n)) // as SETRANGE does first
				}
				AddBytes(got, b, base)
				check(fmt.Sprintf("AddBytes(%d bytes, %d%%) at bit %d", n, density, base), got, model(want, b, base))
			}
		}
	}
}
