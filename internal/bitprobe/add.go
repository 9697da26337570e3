package bitprobe

import "github.com/RoaringBitmap/roaring/v2"

// Add adds xs to rb in order and sets old[i] to whether rb held xs[i]
// before, as !rb.CheckedAdd(xs[i]) one after another would; old must be
// at least as long as xs.
//
// Adding to an array container is a search of the array, then a shift of
// the values above the new one. Add runs the searches of a group of
// values side by side, as Contains does, so that their cache misses
// overlap, and inserts where they ended: roaring would search each array
// again. It sets bits of bitmap containers directly. It leaves to
// roaring's CheckedAdd what changes a container's form or place: a new
// container, a full array (which becomes a bitmap), an array without
// room to grow, a run container, a container shared with a copy of the
// bitmap (which roaring copies first), and a bitmap container about to
// be full (which becomes a run). A value whose array an earlier value of
// its group changed goes to CheckedAdd too: its search is stale.
func Add(rb *roaring.Bitmap, xs []uint32, old []bool) {
	inGroups(rb, xs, old, opAdd)
}

// add adds up to lanes values: it finds their containers and searches
// their arrays side by side, then adds them one after another.
func add(rb *roaring.Bitmap, ra *roaringArray, xs []uint32, old []bool) {
	var keys, values searches
	keys.findContainers(ra, xs)
	var at [lanes]int // lane i's container, -1 for none
	for i, x := range xs {
		k, ok := keys.found(i)
		if !ok {
			at[i] = -1
			continue
		}
		at[i] = k
		if c := ra.containers[k]; c.tab == arrayTab {
			values.startNear(i, (*arrayContainer)(c.data).content, uint16(x))
		}
	}
	values.runNear(len(xs))
	var st stale
	for i, x := range xs {
		k := at[i]
		if k >= 0 && !st.moved && addIn(ra, k, uint16(x), &values, i, &st, &old[i]) {
			continue
		}
		old[i] = !rb.CheckedAdd(x)
		if k < 0 {
			st.moved = true // a new container: those after it moved up
		} else {
			st.add(k)
		}
	}
}

// stale follows the containers that the values of a group added so far
// changed, whose searches for the values after them are stale.
type stale struct {
	ks    [lanes]int // the containers changed
	n     int        // how many of ks are
	moved bool       // a new container moved those after it up
}

// add records that container k changed.
func (s *stale) add(k int) {
	s.ks[s.n] = k
	s.n++
}

// has reports whether container k changed.
func (s *stale) has(k int) bool {
	for _, j := range s.ks[:s.n] {
		if j == k {
			return true
		}
	}
	return false
}

// addIn adds x, lane i's value (its low bits), searched for in values,
// to container k of ra and sets *old to whether it was there, unless
// roaring must add it (see Add); it reports whether it did. An array it
// inserts into becomes stale.
func addIn(ra *roaringArray, k int, x uint16, values *searches, i int, st *stale, old *bool) bool {
	if ra.needCopyOnWrite[k] {
		return false
	}
	switch c := ra.containers[k]; c.tab {
	case bitmapTab:
		b := (*bitmapContainer)(c.data)
		w, bit := &b.bitmap[x/64], uint64(1)<<(x%64)
		if *old = *w&bit != 0; *old {
			return true
		}
		if b.cardinality >= 1<<16-1 {
			return false
		}
		*w |= bit
		b.cardinality++
		return true
	case arrayTab:
		if st.has(k) || values.left[i] != 1 { // stale, or an empty array
			return false
		}
		a := (*arrayContainer)(c.data)
		s, pos := a.content, values.base[i]
		if *old = s[pos] == x; *old {
			return true
		}
		if len(s) == cap(s) || len(s) >= maxArray {
			return false
		}
		if s[pos] < x {
			pos++
		}
		s = s[:len(s)+1]
		copy(s[pos+1:], s[pos:])
		s[pos] = x
		a.content = s
		st.add(k)
		return true
	}
	return false
}

// maxArray is the most values an array container holds: roaring makes a
// bitmap of a full array before it adds to it.
const maxArray = 4096
