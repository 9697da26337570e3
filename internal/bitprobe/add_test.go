package bitprobe

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// TestAddModel compares Add with roaring's CheckedAdd one value after
// another: the old bits, the bitmap, and the form of each container, on
// bitmaps with every kind of container and values that add to each, repeat
// within a group, open new containers, fill arrays past their largest and
// bitmaps to full.
func TestAddModel(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(rnd *rand.Rand) *roaring.Bitmap
	}{
		{"empty", func(*rand.Rand) *roaring.Bitmap { return roaring.New() }},
		{"extremes", func(*rand.Rand) *roaring.Bitmap { return roaring.BitmapOf(0, 65535, 65536, math.MaxUint32) }},
		{"arrays of every size", arraysOfEverySize},
		{"sparse in 100M", func(rnd *rand.Rand) *roaring.Bitmap { return randomBitmap(rnd, 200_000, 100_000_000) }},
		{"dense in 1M", func(rnd *rand.Rand) *roaring.Bitmap { return randomBitmap(rnd, 600_000, 1_000_000) }},
		{"dense and sparse above 2^22", aboveNew},
		{"mixed", mixed},
		{"skewed arrays", skewed},
		{"nearly full bitmaps", nearlyFull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range uint64(2) {
				streams := map[string][]uint32{}
				rnd := rand.New(rand.NewPCG(seed, 7))
				for _, space := range []uint32{4 << 16, 1 << 22, 1 << 23, 100_000_000, math.MaxUint32} {
					var xs []uint32
					for range 5_000 {
						xs = append(xs, rnd.Uint32N(space))
					}
					streams["uniform"] = append(streams["uniform"], xs...)
				}
				pool := make([]uint32, 40) // repeats within groups
				for i := range pool {
					pool[i] = rnd.Uint32N(3 << 16)
				}
				for range 5_000 {
					streams["repeats"] = append(streams["repeats"], pool[rnd.IntN(len(pool))])
				}
				for range 6_000 { // one container, past a full array
					streams["one container"] = append(streams["one container"], 5<<16|rnd.Uint32N(1<<16))
				}
				for _, k := range []uint32{16, 32} { // the rest of nearly full bitmaps
					streams["full"] = append(streams["full"], k<<16|missing)
					for range 100 {
						streams["full"] = append(streams["full"], k<<16|rnd.Uint32N(1<<16))
					}
				}
				rnd.Shuffle(len(streams["full"]), func(i, j int) {
					streams["full"][i], streams["full"][j] = streams["full"][j], streams["full"][i]
				})
				base := tc.build(rand.New(rand.NewPCG(seed, 8)))
				for name, xs := range streams {
					checkAdd(t, name, base, xs)
				}
			}
		})
	}
}

// TestAddShared checks that Add leaves alone the containers a bitmap
// shares with a copy (copy on write), as roaring does: it copies them
// before changing them.
func TestAddShared(t *testing.T) {
	rnd := rand.New(rand.NewPCG(9, 10))
	build := func() *roaring.Bitmap { return mixed(rand.New(rand.NewPCG(11, 12))) }
	rb := build()
	rb.SetCopyOnWrite(true)
	snapshot := rb.Clone()
	rb.SetCopyOnWrite(false)
	snapshot.SetCopyOnWrite(false)
	xs := make([]uint32, 50_000)
	for i := range xs {
		xs[i] = rnd.Uint32N(1 << 26)
	}
	Add(rb, xs, make([]bool, len(xs)))
	if !snapshot.Equals(build()) {
		t.Fatal("Add changed a container shared with a copy")
	}
	for _, x := range xs {
		if !rb.Contains(x) {
			t.Fatalf("Add did not add %d", x)
		}
	}
}

// TestAddFallback checks Add with roaring's own CheckedAdd, which it
// uses when the layout does not match.
func TestAddFallback(t *testing.T) {
	defer func(ok bool) { layoutOK = ok }(layoutOK)
	layoutOK = false
	rnd := rand.New(rand.NewPCG(13, 14))
	xs := make([]uint32, 5_000)
	for i := range xs {
		xs[i] = rnd.Uint32N(1 << 22)
	}
	checkAdd(t, "uniform", mixed(rand.New(rand.NewPCG(15, 16))), xs)
}

// checkAdd adds xs, in slices of several lengths, to a copy of base
// with Add, and to another with CheckedAdd, and compares them. A copy's
// arrays have no room to grow: the first value added to each goes to
// CheckedAdd, which makes room for those after it.
func checkAdd(t *testing.T, stream string, base *roaring.Bitmap, xs []uint32) {
	t.Helper()
	for _, n := range []int{1, lanes - 1, 64} {
		got, want := base.Clone(), base.Clone()
		for rest := xs; len(rest) > 0; rest = rest[min(n, len(rest)):] {
			part := rest[:min(n, len(rest))]
			old := make([]bool, len(part)+1)
			old[len(part)] = true // beyond part: left alone
			Add(got, part, old)
			for i, x := range part {
				if wantOld := !want.CheckedAdd(x); old[i] != wantOld {
					t.Fatalf("%s, %d at a time: Add of %d: old %v, want %v", stream, n, x, old[i], wantOld)
				}
			}
			if !old[len(part)] {
				t.Fatalf("%s: Add of %d values wrote past them", stream, len(part))
			}
		}
		if err := got.Validate(); err != nil {
			t.Fatalf("%s, %d at a time: invalid bitmap: %v", stream, n, err)
		}
		if !got.Equals(want) {
			t.Fatalf("%s, %d at a time: the bitmaps differ", stream, n)
		}
		if g, w := got.Stats(), want.Stats(); g != w {
			t.Fatalf("%s, %d at a time: containers %+v, want %+v", stream, n, g, w)
		}
	}
}

// nearlyFull returns a bitmap whose containers 16 and 32 are bitmaps that
// lack one value each, missing.
func nearlyFull(*rand.Rand) *roaring.Bitmap {
	rb := roaring.New()
	for _, k := range []uint32{16, 32} {
		for x := range uint32(1 << 16) {
			if x != missing {
				rb.Add(k<<16 | x)
			}
		}
	}
	return rb
}

// aboveNew returns a bitmap of bitmap and array containers from 2^22 up,
// so that values below open new containers before them.
func aboveNew(rnd *rand.Rand) *roaring.Bitmap {
	rb := randomBitmap(rnd, 300_000, 1<<19) // bitmaps
	rb.Or(randomBitmap(rnd, 20_000, 1<<21)) // and arrays
	return roaring.AddOffset(rb, 1<<22)
}

// missing is the low bits of the value nearlyFull leaves out.
const missing = 12345

func benchmarkAdd(b *testing.B, add func(rb *roaring.Bitmap, xs []uint32, old []bool)) {
	rnd := rand.New(rand.NewPCG(17, 18))
	base := randomBitmap(rnd, 3_000_000, 100_000_000) // arrays of about 2,000
	stream := make([]uint32, 1<<20)
	for i := range stream {
		stream[i] = rnd.Uint32N(100_000_000)
	}
	old := make([]bool, 64)
	var rb *roaring.Bitmap
	i := len(stream)
	for b.Loop() {
		if i == len(stream) { // the arrays grew by a third: start again
			b.StopTimer()
			rb, i = base.Clone(), 0
			b.StartTimer()
		}
		add(rb, stream[i:i+64], old)
		i += 64
	}
}

// BenchmarkAdd adds 64 random values to 3M in 100M at once.
func BenchmarkAdd(b *testing.B) { benchmarkAdd(b, Add) }

// BenchmarkRoaringAdd adds the same values one at a time with roaring's
// CheckedAdd.
func BenchmarkRoaringAdd(b *testing.B) {
	benchmarkAdd(b, func(rb *roaring.Bitmap, xs []uint32, old []bool) {
		for i, x := range xs {
			old[i] = !rb.CheckedAdd(x)
		}
	})
}
