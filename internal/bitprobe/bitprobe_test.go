package bitprobe

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// TestLayout checks that the layout copied from roaring is the one of the
// version in go.mod: else Contains falls back to roaring's own, and the
// tests below would not test the probes.
func TestLayout(t *testing.T) {
	if !layoutOK {
		t.Fatal("roaring's containers are not laid out as bitprobe expects: update layout.go")
	}
}

// TestLayoutMismatch checks that the layout check tells types apart: by
// name, by fields, and by the types of fields.
func TestLayoutMismatch(t *testing.T) {
	arrayType, ok := containerType(roaring.BitmapOf(1))
	if !ok || !sameLayout(arrayType, arrayContainer{}, "arrayContainer") {
		t.Fatal("the array container does not match its copy")
	}
	type renamed struct{ values []uint16 }
	type retyped struct{ content []uint32 }
	for _, m := range []struct {
		mirror any
		name   string
	}{
		{bitmapContainer{}, "arrayContainer"},
		{arrayContainer{}, "bitmapContainer"},
		{renamed{values: nil}, "arrayContainer"},
		{retyped{content: nil}, "arrayContainer"},
	} {
		if sameLayout(arrayType, m.mirror, m.name) {
			t.Errorf("the array container matches %T named %s", m.mirror, m.name)
		}
	}
}

// TestContainsFallback checks the answers of roaring's own Contains, which
// Contains uses when the layout does not match.
func TestContainsFallback(t *testing.T) {
	defer func(ok bool) { layoutOK = ok }(layoutOK)
	layoutOK = false
	rnd := rand.New(rand.NewPCG(5, 6))
	rb := mixed(rnd)
	xs := make([]uint32, 1000)
	for i := range xs {
		xs[i] = rnd.Uint32N(1 << 26)
	}
	checkContains(t, rb, xs)
}

// TestContainsModel compares Contains with roaring's on bitmaps with every
// kind of container, of every size an array can have, and on values in
// and out of them, in and out of the bitmap's containers.
func TestContainsModel(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name string
		rb   *roaring.Bitmap
	}{
		{"empty", roaring.New()},
		{"one value", roaring.BitmapOf(7)},
		{"extremes", roaring.BitmapOf(0, 65535, 65536, math.MaxUint32)},
		{"arrays of every size", arraysOfEverySize(rnd)},
		{"sparse in 100M", randomBitmap(rnd, 200_000, 100_000_000)},
		{"dense in 1M", randomBitmap(rnd, 600_000, 1_000_000)},
		{"mixed", mixed(rnd)},
		{"skewed arrays", skewed(rnd)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var xs []uint32
			for x := range roaring.Values(tc.rb) { // every member, its neighbours
				if rnd.IntN(16) == 0 || tc.rb.GetCardinality() < 50_000 {
					xs = append(xs, x, x-1, x+1)
				}
			}
			for range 5_000 { // anywhere, and near the bitmap's ends
				xs = append(xs, rnd.Uint32(), rnd.Uint32N(1<<20), math.MaxUint32-rnd.Uint32N(1<<17))
			}
			rnd.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
			for _, n := range []int{0, 1, lanes - 1, lanes, lanes + 1, 500, len(xs)} {
				checkContains(t, tc.rb, xs[:min(n, len(xs))])
			}
		})
	}
}

func checkContains(t *testing.T, rb *roaring.Bitmap, xs []uint32) {
	t.Helper()
	out := make([]bool, len(xs)+1)
	out[len(xs)] = true // beyond xs: left alone
	Contains(rb, xs, out)
	for i, x := range xs {
		if want := rb.Contains(x); out[i] != want {
			t.Fatalf("Contains of %d (value %d of %d): %v, want %v", x, i, len(xs), out[i], want)
		}
	}
	if !out[len(xs)] {
		t.Fatalf("Contains of %d values wrote past them", len(xs))
	}
}

// arraysOfEverySize returns a bitmap whose container k is an array of k
// random values, for k from 1 to 64 and on to an array's largest (4,096)
// in steps, so that the searches' every number of steps is tried.
func arraysOfEverySize(rnd *rand.Rand) *roaring.Bitmap {
	rb := roaring.New()
	var sizes []uint32
	for k := uint32(1); k <= 64; k++ {
		sizes = append(sizes, k)
	}
	for k := uint32(65); k < 4096; k += 97 {
		sizes = append(sizes, k, k+1)
	}
	for _, k := range append(sizes, 4095, 4096) {
		c := roaring.New()
		for c.GetCardinality() < uint64(k) {
			c.Add(k<<16 | rnd.Uint32N(1<<16))
		}
		rb.Or(c)
	}
	return rb
}

// skewed returns a bitmap of array containers whose values are not
// spread evenly: packed in a part of the container's range, or dense at
// one end, so that many lie far from where an even spread would put them.
func skewed(rnd *rand.Rand) *roaring.Bitmap {
	rb := roaring.New()
	for k := range uint32(200) {
		n := 1 + rnd.IntN(4096)
		width := uint32(n + rnd.IntN(1<<16-n))
		start := rnd.Uint32N(1<<16 - width + 1)
		c := roaring.New()
		for c.GetCardinality() < uint64(n) {
			r := rnd.Float64()
			if k%2 == 0 {
				r *= r // dense at the low end
			}
			c.Add(k<<16 | start + uint32(r*float64(width)))
		}
		rb.Or(c)
	}
	return rb
}

func randomBitmap(rnd *rand.Rand, n int, space uint32) *roaring.Bitmap {
	rb := roaring.New()
	for range n {
		rb.Add(rnd.Uint32N(space))
	}
	return rb
}

// mixed returns a bitmap with array, bitmap and run containers side by
// side.
func mixed(rnd *rand.Rand) *roaring.Bitmap {
	rb := randomBitmap(rnd, 50_000, 1<<22)           // arrays
	rb.Or(randomBitmap(rnd, 100_000, 1<<18))         // bitmaps
	rb.AddRange(1<<23, 1<<23+100_000)                // runs
	rb.AddRange(1<<24+5, 1<<24+9)                    // a short run
	rb.Or(roaring.BitmapOf(1<<25, 1<<25+1, 1<<25+2)) // a tiny array
	rb.RunOptimize()
	return rb
}

func benchmarkContains(b *testing.B, probe func(rb *roaring.Bitmap, xs []uint32, out []bool)) {
	rnd := rand.New(rand.NewPCG(3, 4))
	rb := randomBitmap(rnd, 2_000_000, 100_000_000) // arrays of about 1,300
	queries := make([][]uint32, 1024)
	for i := range queries {
		queries[i] = make([]uint32, 500)
		for j := range queries[i] {
			queries[i][j] = rnd.Uint32N(100_000_000)
		}
	}
	out := make([]bool, 500)
	i := 0
	for b.Loop() {
		probe(rb, queries[i%len(queries)], out)
		i++
	}
}

// BenchmarkContains probes 500 random values of 2M in 100M at once.
func BenchmarkContains(b *testing.B) { benchmarkContains(b, Contains) }

// BenchmarkRoaringContains probes the same values one at a time with
// roaring's Contains.
func BenchmarkRoaringContains(b *testing.B) {
	benchmarkContains(b, func(rb *roaring.Bitmap, xs []uint32, out []bool) {
		for i, x := range xs {
			out[i] = rb.Contains(x)
		}
	})
}
