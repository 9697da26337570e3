// Package bitprobe answers many membership queries on one roaring bitmap
// at once, faster than one Contains after another, and adds many values
// to one faster than one Add after another (see Add).
//
// A Contains on a large, sparse bitmap is two dependent binary searches:
// the container index, then the container, an array of up to 4,096
// sorted 16-bit values. In a bitmap of a few million ids the arrays are
// megabytes, and most steps of the second search miss the processor's
// caches. One search waits for each miss in turn, and its branches,
// taken at random, are mispredicted half the time. Contains runs the
// searches of a group of values side by side, a step of each in turn,
// without branches on the data: the misses of the group overlap, and
// nothing is mispredicted. Bitmap containers are read directly, and run
// containers with roaring's own Contains.
//
// roaring/v2 keeps its containers to itself, so Contains reads them
// through a copy of their layout (see layout.go), checked against the
// real types with reflection when the package loads. Should a version of
// roaring lay them out differently, Contains falls back to roaring's for
// every value.
package bitprobe

import (
	"unsafe"

	"github.com/RoaringBitmap/roaring/v2"
)

// lanes is how many searches run side by side: enough misses in flight
// to fill the processor's queue of them, few enough for the lanes' state
// to stay in registers and the first level of cache.
const lanes = 16

// Group is how many values Contains and Add take at a time: a caller that
// can stop at the first value of some kind loses nothing by asking for
// Group values at a time and stopping between them.
const Group = lanes

// Contains sets out[i] to whether rb contains xs[i], for each i; out must
// be at least as long as xs. rb must not change meanwhile.
func Contains(rb *roaring.Bitmap, xs []uint32, out []bool) {
	inGroups(rb, xs, out, opContains)
}

// op is what inGroups does with each value.
type op bool

const (
	opContains op = false // out[i]: whether the bitmap contains xs[i]
	opAdd      op = true  // add xs[i]; out[i]: whether it was there
)

// inGroups does o with each of xs, up to lanes values at a time, setting
// out[i] for xs[i]; out must be at least as long as xs. Where roaring is
// not laid out as layout.go says, it uses roaring's Contains or
// CheckedAdd for each value instead. The groups are called directly, not
// through a function value, so that xs and out can stay on the caller's
// stack.
func inGroups(rb *roaring.Bitmap, xs []uint32, out []bool, o op) {
	out = out[:len(xs)]
	if !layoutOK {
		for i, x := range xs {
			if o == opAdd {
				out[i] = !rb.CheckedAdd(x)
			} else {
				out[i] = rb.Contains(x)
			}
		}
		return
	}
	ra := (*roaringArray)(unsafe.Pointer(rb))
	for len(xs) > 0 {
		n := min(len(xs), lanes)
		if o == opAdd {
			add(rb, ra, xs[:n], out[:n])
		} else {
			probe(rb, ra, xs[:n], out[:n])
		}
		xs, out = xs[n:], out[n:]
	}
}

// findContainers searches ra's container index for the containers of xs,
// a lane each, to the end.
func (s *searches) findContainers(ra *roaringArray, xs []uint32) {
	for i, x := range xs {
		s.start(i, ra.keys, uint16(x>>16))
	}
	s.run(len(xs))
}

// probe answers up to lanes values: it finds their containers, reads
// bitmap containers at once, and searches the arrays; the searches of the
// container index, then of the arrays, run side by side.
func probe(rb *roaring.Bitmap, ra *roaringArray, xs []uint32, out []bool) {
	var keys, values searches
	keys.findContainers(ra, xs)
	for i, x := range xs {
		out[i] = false
		k, ok := keys.found(i)
		if !ok {
			continue
		}
		switch c := ra.containers[k]; c.tab {
		case arrayTab:
			values.startNear(i, (*arrayContainer)(c.data).content, uint16(x))
		case bitmapTab:
			lo := uint16(x)
			out[i] = (*bitmapContainer)(c.data).bitmap[lo/64]&(1<<(lo%64)) != 0
		default: // a run container
			out[i] = rb.Contains(x)
		}
	}
	values.runNear(len(xs))
	for i := range xs {
		if _, ok := values.found(i); ok {
			out[i] = true
		}
	}
}

// near is half the window startNear searches: random ids spread over a
// container fall within about sqrt(n)/2 places of where an even spread
// would put them (18 of an array of 1,300), so that a value is outside a
// window of 128 about once in two thousand. Windows of 32, 64, 128 and
// 256 values took 34, 23, 21 and 22 µs for 500 values of 2M in 100M.
const near = 64

// searches are binary searches of sorted arrays, one a lane, that run a
// step of each in turn. Each narrows a window [base, base+left) that ends
// at the first value not below the one sought, without a branch on the
// values.
type searches struct {
	arrays   [lanes][]uint16 // nil: no search in the lane
	want     [lanes]uint16
	base     [lanes]int
	left     [lanes]int
	from, to [lanes]int // the window searched: [from, to)
}

// start sets lane i to search a for x.
func (s *searches) start(i int, a []uint16, x uint16) {
	s.arrays[i], s.want[i], s.base[i], s.left[i] = a, x, 0, len(a)
	s.from[i], s.to[i] = 0, len(a)
}

// startNear sets lane i to search a for x within 2*near places around
// where x would be if a's values were spread evenly over the 16-bit
// range: a few cache lines rather than most of a large array. The value
// may lie outside (see escaped).
func (s *searches) startNear(i int, a []uint16, x uint16) {
	n := len(a)
	if n <= 4*near {
		s.start(i, a, x)
		return
	}
	from := min(max(int(x)*n>>16-near, 0), n-2*near)
	s.arrays[i], s.want[i], s.base[i], s.left[i] = a, x, from, 2*near
	s.from[i], s.to[i] = from, from+2*near
}

// escaped reports whether lane i's search ended at an end of its window
// beyond which the value sought may lie: below its first value, with
// values before it, or above its last, with values after it.
func (s *searches) escaped(i int) bool {
	a, b, x := s.arrays[i], s.base[i], s.want[i]
	if s.left[i] != 1 {
		return false
	}
	return b == s.from[i] && b > 0 && a[b] > x || b == s.to[i]-1 && s.to[i] < len(a) && a[b] < x
}

// run runs the searches of the first n lanes to their end.
func (s *searches) run(n int) {
	for {
		stepped := false
		for i := range n {
			m := s.left[i]
			if m <= 1 {
				continue
			}
			half := m / 2
			s.base[i] += half & -lessMask(s.arrays[i][s.base[i]+half-1], s.want[i])
			s.left[i] = m - half
			stepped = true
		}
		if !stepped {
			return
		}
	}
}

// runNear runs the searches of the first n lanes, started with
// startNear, to their end: those that escaped their window search their
// whole array again.
func (s *searches) runNear(n int) {
	s.run(n)
	again := false
	for i := range n {
		if s.escaped(i) {
			s.start(i, s.arrays[i], s.want[i])
			again = true
		}
	}
	if again {
		s.run(n)
	}
}

// found returns where lane i's search found its value, and whether it
// did.
func (s *searches) found(i int) (int, bool) {
	b := s.base[i]
	return b, s.left[i] == 1 && s.arrays[i][b] == s.want[i]
}

// lessMask returns 1 if v < x and 0 otherwise, without a branch: the
// sign of their difference.
func lessMask(v, x uint16) int {
	return int((uint32(v) - uint32(x)) >> 31)
}
