package store

import (
	"iter"
	"math"
	"math/bits"
	"slices"
	"unsafe"
)

// blockQueue is a key's queue of timer blocks (and its overflow map) by
// bound. It is lazy, as the heaps around it are: an item whose bound is no
// longer its block's stays until it comes up, and is skipped then.
//
// A small queue is a binary min-heap. Once it holds calendarMin items it
// also gets a calendar: one slot for each of the calSlots units from its
// start, listing the blocks due in that unit. An item whose bound falls in
// that window goes to its slot, one append, and comes out of it in one
// step once its unit passes; an item outside the window (further ahead,
// or before its start) goes to the heap. In the steady state of presence
// every bound lies less than a TTL ahead, so nearly every item goes to the
// calendar, and a sweep reads the slots of the units that passed where the
// heap took a descent through some 100k items, a few cache misses, for
// every block it visited.
type blockQueue struct {
	heap []blockItem
	cal  *calendar // nil until the queue first holds calendarMin items
}

// calendar holds the items due in the calSlots units from start: slot
// u % calSlots lists the blocks due in unit u. Every slot of a unit before
// start is empty.
type calendar struct {
	start int64
	n     int                   // items in the slots
	used  [calSlots / 64]uint64 // bit i: slots[i] is not empty
	slots [calSlots][]uint32    // block ids
	// draining is the unit whose slot is sorted for pop (ids descending,
	// so that the last is the least); noUnit when none is.
	draining int64
}

// calendarMin is the size at which a queue gets its calendar, whose fixed
// 100 KB are then a small share of the blocks' memory. Tests lower it to
// give small queues a calendar.
var calendarMin = 4096

const (
	// calSlots is the calendar's window in units (409.6 s): a TTL up to
	// about 6 minutes keeps the bounds inside it.
	calSlots = 4096
	calBytes = int64(unsafe.Sizeof(calendar{}))
	noUnit   = math.MinInt64
)

// len returns the number of items, stale ones included.
func (q *blockQueue) len() int {
	n := len(q.heap)
	if q.cal != nil {
		n += q.cal.n
	}
	return n
}

// push queues it.
func (q *blockQueue) push(it blockItem) {
	if c := q.cal; c != nil && c.holds(it.at) {
		c.add(it)
		return
	}
	heapPush(&q.heap, it)
	if q.cal == nil && len(q.heap) >= calendarMin {
		q.startCalendar()
	}
}

// startCalendar gives the queue a calendar starting at its earliest bound
// and moves the heap's items that fall in its window there.
func (q *blockQueue) startCalendar() {
	c := &calendar{start: q.heap[0].at, draining: noUnit}
	rest := q.heap[:0]
	for _, it := range q.heap {
		if c.holds(it.at) {
			c.add(it)
		} else {
			rest = append(rest, it)
		}
	}
	heapInit(rest)
	q.heap, q.cal = rest, c
}

// first returns the earliest bound in the queue, false when it is empty.
func (q *blockQueue) first() (int64, bool) {
	at, ok := int64(0), false
	if len(q.heap) > 0 {
		at, ok = q.heap[0].at, true
	}
	if c := q.cal; c != nil && c.n > 0 {
		if u := c.firstUnit(); !ok || u < at {
			at, ok = u, true
		}
	}
	return at, ok
}

// pop removes and returns the least item (see blockItem.before) whose
// bound has passed at due (see passed), false when there is none. The
// order depends on the items alone, not on how the queue came to hold
// them, so that replicas whose queues have different histories (one was
// rebuilt from a snapshot) visit the blocks in the same order, and stop
// at the same one when the expiry budget runs out. An item pushed while
// popping must be due later than due.
func (q *blockQueue) pop(due int64) (blockItem, bool) {
	heapDue := len(q.heap) > 0 && passed(q.heap[0].at, due)
	if c := q.cal; c != nil && c.n > 0 {
		if u := c.firstUnit(); passed(u, due) {
			next := blockItem{at: u, id: c.least(u)}
			if !heapDue || next.before(q.heap[0]) {
				c.take(u)
				return next, true
			}
		}
	}
	if heapDue {
		return heapPop(&q.heap), true
	}
	if q.cal != nil {
		q.cal.start = max(q.cal.start, due)
	}
	return blockItem{}, false
}

// reset empties the queue, keeping its calendar's slots for reuse.
func (q *blockQueue) reset() {
	q.heap = q.heap[:0]
	if c := q.cal; c != nil {
		for i := range c.slots {
			c.slots[i] = c.slots[i][:0]
		}
		c.used, c.n, c.draining = [calSlots / 64]uint64{}, 0, noUnit
	}
}

// all yields every item.
func (q *blockQueue) all() iter.Seq[blockItem] {
	return func(yield func(blockItem) bool) {
		for _, it := range q.heap {
			if !yield(it) {
				return
			}
		}
		c := q.cal
		if c == nil {
			return
		}
		for i, s := range c.slots {
			u := c.start + int64((uint64(i)-uint64(c.start)%calSlots)%calSlots)
			for _, id := range s {
				if !yield(blockItem{at: u, id: id}) {
					return
				}
			}
		}
	}
}

// clone returns a queue of the same items, all in a heap: a clone is
// mostly read (a snapshot) and gets a calendar when it is pushed to.
func (q *blockQueue) clone() blockQueue {
	h := make([]blockItem, 0, q.len())
	for it := range q.all() {
		h = append(h, it)
	}
	heapInit(h)
	return blockQueue{heap: h}
}

// memoryUsage estimates the bytes the queue uses beyond its own struct.
func (q *blockQueue) memoryUsage() int64 {
	n := int64(cap(q.heap)) * blockItemLen
	if c := q.cal; c != nil {
		n += calBytes
		for _, s := range c.slots {
			n += int64(cap(s)) * 4
		}
	}
	return n
}

// holds reports whether unit at falls in the calendar's window.
func (c *calendar) holds(at int64) bool {
	return at >= c.start && at-c.start < calSlots
}

// add puts it, which falls in the window, in its slot.
func (c *calendar) add(it blockItem) {
	i := uint64(it.at) % calSlots
	c.slots[i] = append(c.slots[i], it.id)
	c.used[i/64] |= 1 << (i % 64)
	c.n++
	if it.at == c.draining {
		c.draining = noUnit // no longer sorted
	}
}

// take removes the least item of the slot of unit u, the calendar's
// first, which least returned; unit u becomes the start.
func (c *calendar) take(u int64) {
	c.start = u
	i := uint64(u) % calSlots
	s := c.slots[i]
	c.slots[i] = s[:len(s)-1]
	if len(s) == 1 {
		c.used[i/64] &^= 1 << (i % 64)
	}
	c.n--
}

// least returns the least block id in the slot of unit u, which is not
// empty, leaving it last in the slot: the first time a slot is asked,
// it is sorted (descending), so that a drain of n items costs a sort of
// n, not n scans.
func (c *calendar) least(u int64) uint32 {
	s := c.slots[uint64(u)%calSlots]
	if c.draining != u {
		slices.SortFunc(s, func(a, b uint32) int { return int(int64(b) - int64(a)) })
		c.draining = u
	}
	return s[len(s)-1]
}

// firstUnit returns the unit of the first slot that is not empty, from
// start on; the calendar must hold an item.
func (c *calendar) firstUnit() int64 {
	s := int(uint64(c.start) % calSlots)
	w := s / 64
	word := c.used[w] &^ (1<<(s%64) - 1)
	for word == 0 {
		// After every other word, the first word comes round again,
		// whole: its bits below s are the slots of the window's end.
		w = (w + 1) % len(c.used)
		word = c.used[w]
	}
	i := w*64 + bits.TrailingZeros64(word)
	return c.start + int64((i-s+calSlots)%calSlots)
}
