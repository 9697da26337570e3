package store

import (
	"maps"
	"math"
	"math/bits"
	"slices"
	"sync/atomic"
	"unsafe"
)

// Per-bit deadlines.
//
// A bitmap value may carry a deadline for each of its set bits (BITSETEX,
// BITPSETEX, bit-TTL rules); when it passes, the bit is cleared. The
// deadlines of a value live in its bitTimers, nil while no bit is armed.
//
// A deadline is kept in units of timerTick ms, rounded up: the leader
// ticks every timerTick ms, so a finer deadline would not expire sooner,
// and units fit the deadlines of a block in 16 bits. A bit is alive while
// now <= its rounded deadline, as a key is alive while now <= its
// deadline.
//
// The offsets are cut into blocks of blockSize. A block holds a bitset of
// its armed offsets and, packed in the order of the offsets (the rank of
// an offset is the number of armed offsets below it in the block), the
// 16-bit deadlines of those offsets relative to the block's base. So an
// armed bit costs two bytes plus its share of a block's fixed 208 bytes,
// and no per-bit allocation or pointer: 5M armed ids of 10M take about
// 13 MB (2.6 bytes an id, slice growth included), where the bitmap itself
// takes 1.25 MB. Re-arming an armed bit is a rank (a few
// popcounts) and a store; arming a new one moves at most blockSize
// deadlines. A deadline that does not fit 16 bits above the base is
// re-based (the base moves to the earliest deadline of the block or now,
// whichever is lower); one that still does not fit, more than about 109
// minutes (maxRel units) away, goes to the key's overflow map: the slow
// path, meant for the rare long TTL.
//
// Expiry never scans what is not due. Each block keeps a lower bound of
// its earliest deadline, low, and the key a queue of blocks by that bound
// (a heap, with a calendar of per-unit slots once it is large: see
// blockQueue); the store keeps a min-heap of keys by the bound of their
// first block. Both queues are lazy, as the key expiry heap is: arming a
// later deadline (a heartbeat) leaves them alone, an earlier one pushes a
// new item, and an item whose bound is no longer its block's (or key's)
// is skipped when it comes up. A block that comes up is scanned once,
// loses its passed bits, and is queued again at its earliest deadline;
// within a block only the 64-offset words whose bound (mins) has passed,
// or comes within sweepAhead, are read. In the steady state of presence
// (every id re-armed every heartbeat interval, a few leaving) a block
// comes up about once a TTL less an interval, when its stale bound
// passes, and once for each id that leaves it. The cost of a tick is
// proportional to the blocks that hold a passed deadline, each visit a
// few cache misses (the block, its deadlines, the bitmap's container)
// rather than arithmetic. A wheel of per-slot
// bitmaps would visit only the slot's ids but pay for re-arms in a second
// place; we chose the blocks for their O(1) re-arm, exact deadlines and
// memory.
type bitTimers struct {
	blocks blockDir   // by offset >> blockShift
	queue  blockQueue // blocks (and the overflow) by bound
	// over holds the deadlines (units) too far ahead for a block, and
	// overLow a lower bound of them, the at of their queue item.
	over    map[uint32]int64
	overLow int64
	n       int   // armed bits, in blocks and overflow
	ttl     int64 // the TTL (ms) of the latest arm, for BITRECENT
	heapAt  int64 // the at of this key's item in the store's heap; 0: none
	// epoch marks the blocks these timers own (see own); every clone
	// gives both sides a new one.
	epoch uint64
}

// timerBlock holds the deadlines of the armed bits of blockSize offsets.
type timerBlock struct {
	armed [blockWords]uint64 // bit i: offset id*blockSize+i is armed
	dl    []uint16           // deadlines relative to base, in rank order
	base  int64              // units
	low   int64              // lower bound of the earliest deadline; the at of its queue item
	// mins[w] is a lower bound of the relative deadlines of the bits of
	// armed[w], so that a sweep reads only the words that hold a passed
	// deadline.
	mins [blockWords]uint16
	// epoch is the epoch of the timers that own the block; timers with
	// another epoch share it with a clone and copy it before a change.
	epoch uint64
}

// blockItem is an entry of a key's queue: a block (or the overflow map,
// id overflowID) due at at.
type blockItem struct {
	at int64
	id uint32
}

// before orders a key's queue by bound, then by block: see blockQueue.pop.
func (it blockItem) before(o blockItem) bool {
	return it.at < o.at || it.at == o.at && it.id < o.id
}

const (
	timerTick  = 100 // ms in a deadline unit
	blockShift = 10
	blockSize  = 1 << blockShift
	blockWords = blockSize / 64
	maxRel     = math.MaxUint16
	// sweepAhead is how far ahead (units) of the time a sweep reads a
	// block's words: deadlines spread over a heartbeat interval give the
	// words of a block bounds a second or two apart.
	sweepAhead = 50
	overflowID = math.MaxUint32 // the queue id of the overflow map
	// maxDeadline is the latest deadline (ms) whose rounding fits int64.
	maxDeadline = math.MaxInt64 / timerTick * timerTick
)

// unitsUp converts a time in ms (>= 0) to units, rounding up.
func unitsUp(ms int64) int64 {
	return ms/timerTick + (ms%timerTick+timerTick-1)/timerTick
}

// passed reports whether a deadline du (units) has passed at the time
// whose unitsUp is due: du*timerTick < now.
func passed(du, due int64) bool { return du < due }

func newBitTimers() *bitTimers {
	return &bitTimers{epoch: epochs.Add(1)}
}

// epochs hands out the epochs of timers: unique, so that a block is owned
// by at most one timers.
var epochs atomic.Uint64

// own returns block id, b, ready to change: b itself if these timers own
// it, or else (it is shared with a clone) a copy that replaces it here.
func (t *bitTimers) own(id uint32, b *timerBlock) *timerBlock {
	if b.epoch == t.epoch {
		return b
	}
	nb := new(timerBlock)
	*nb = *b
	nb.dl = slices.Clone(b.dl)
	nb.epoch = t.epoch
	t.blocks.set(id, nb)
	return nb
}

// deadline returns the deadline of off in units, and false when off is
// not armed. t may be nil.
func (t *bitTimers) deadline(off uint32) (int64, bool) {
	if t == nil {
		return 0, false
	}
	if b := t.blocks.get(off >> blockShift); b != nil {
		if bit := uint(off & (blockSize - 1)); b.has(bit) {
			return b.base + int64(b.dl[b.rank(bit)]), true
		}
	}
	du, ok := t.over[off]
	return du, ok
}

// warmChunk is how many offsets a BITSETEX warms at a time, and how many
// commands the state machine reads ahead of (see warm and warmArms).
const warmChunk = 64

// warm reads what arming offs reads of their blocks: the epoch, the
// armed words up to the bit's (its rank), the bound of its word, the
// deadline about where its rank puts it and, for a bit not armed, the
// last deadline, up to which an insert moves them. Most are cache misses
// in a large key, and reading them in a loop of independent loads lets
// the processor wait for several at once, where arming them one by one
// waits for each in turn (re-arming 10M users online among 100M ids took
// 171 ns an id in process when warm read only the bit's word and bound,
// 141 ns now). t may be nil. It returns a sum of what it read and is not
// inlined, so that the loads are kept.
//
//go:noinline
func (t *bitTimers) warm(offs []uint64) uint64 {
	if t == nil {
		return 0
	}
	var sum uint64
	for _, off := range offs {
		if b := t.blocks.get(uint32(off >> blockShift)); b != nil {
			bit := uint(off & (blockSize - 1))
			w := b.armed[bit/64]
			// The armed words span up to three cache lines: the first
			// word, the middle one and the bit's touch them all.
			sum += b.epoch + b.armed[0] + b.armed[blockWords/2] + w + uint64(b.mins[bit/64])
			if n := len(b.dl); n > 0 {
				// Ids spread evenly: the rank is about bit*n/blockSize.
				sum += uint64(b.dl[int(bit)*n/blockSize])
				if w&(1<<(bit%64)) == 0 {
					sum += uint64(b.dl[n-1])
				}
			}
		}
	}
	return sum
}

// arm sets the deadline of off to du (units) at the time whose units,
// rounded down, are nowu, and reports whether off was armed before.
func (t *bitTimers) arm(off uint32, du, nowu int64) bool {
	id, bit := off>>blockShift, uint(off&(blockSize-1))
	b := t.blocks.get(id)
	if b != nil && b.has(bit) {
		b = t.own(id, b)
		if rel := du - b.base; rel >= 0 && rel <= maxRel {
			b.dl[b.rank(bit)] = uint16(rel)
			b.mins[bit/64] = min(b.mins[bit/64], uint16(rel))
			t.lower(id, b, du)
			return true
		}
		t.removeFrom(id, b, bit)
		t.add(off, du, nowu)
		return true
	}
	was := t.dropOverflow(off)
	t.add(off, du, nowu)
	return was
}

// add arms off, which is not armed, with deadline du.
func (t *bitTimers) add(off uint32, du, nowu int64) {
	id, bit := off>>blockShift, uint(off&(blockSize-1))
	t.n++
	b := t.blocks.get(id)
	if b != nil {
		b = t.own(id, b)
	}
	switch {
	case b == nil && du-min(nowu, du) <= maxRel:
		b = &timerBlock{base: min(nowu, du), low: math.MaxInt64, epoch: t.epoch}
		t.blocks.set(id, b)
	case b == nil || (!b.fits(du) && !b.rebase(du, nowu)):
		t.addOverflow(off, du)
		return
	}
	b.insert(bit, uint16(du-b.base))
	t.lower(id, b, du)
}

// lower queues block id again when du is earlier than its bound.
func (t *bitTimers) lower(id uint32, b *timerBlock, du int64) {
	if du < b.low {
		b.low = du
		t.push(blockItem{at: du, id: id})
	}
}

// push queues it, rebuilding the queue first when stale items make up
// most of it.
func (t *bitTimers) push(it blockItem) {
	if t.queue.len() > 2*t.blocks.n+16 {
		t.rebuildQueue()
	}
	t.queue.push(it)
}

// rebuildQueue replaces the queue by one item per block and one for the
// overflow map. It pushes them one at a time (O(n log n) for the heap's
// share), which the stale items it drops have paid for.
func (t *bitTimers) rebuildQueue() {
	t.queue.reset()
	for id, b := range t.blocks.all() {
		t.queue.push(blockItem{at: b.low, id: id})
	}
	if t.over != nil {
		t.queue.push(blockItem{at: t.overLow, id: overflowID})
	}
}

func (t *bitTimers) addOverflow(off uint32, du int64) {
	if t.over == nil {
		t.over = make(map[uint32]int64)
		t.overLow = math.MaxInt64
	}
	t.over[off] = du
	if du < t.overLow {
		t.overLow = du
		t.push(blockItem{at: du, id: overflowID})
	}
}

// dropOverflow disarms off if the overflow map holds it.
func (t *bitTimers) dropOverflow(off uint32) bool {
	if _, ok := t.over[off]; !ok {
		return false
	}
	delete(t.over, off)
	t.n--
	if len(t.over) == 0 {
		t.over = nil
	}
	return true
}

// removeFrom disarms bit of block id, dropping the block when it empties.
func (t *bitTimers) removeFrom(id uint32, b *timerBlock, bit uint) {
	b.remove(bit)
	t.n--
	if len(b.dl) == 0 {
		t.blocks.remove(id)
	}
}

// disarm drops the deadline of off and reports whether it had one.
func (t *bitTimers) disarm(off uint32) bool {
	id, bit := off>>blockShift, uint(off&(blockSize-1))
	if b := t.blocks.get(id); b != nil && b.has(bit) {
		t.removeFrom(id, t.own(id, b), bit)
		return true
	}
	return t.dropOverflow(off)
}

// disarmCleared drops the deadlines of the offsets in [lo, hi) whose bit
// is not set, according to isSet.
func (t *bitTimers) disarmCleared(lo, hi uint64, isSet func(uint32) bool) {
	for id := lo >> blockShift; id <= (hi-1)>>blockShift && hi > lo; id++ {
		b := t.blocks.get(uint32(id))
		if b == nil {
			continue
		}
		b = t.own(uint32(id), b)
		for w := range b.armed {
			for word := b.armed[w]; word != 0; word &= word - 1 {
				off := id<<blockShift + uint64(w*64+bits.TrailingZeros64(word))
				if off >= lo && off < hi && !isSet(uint32(off)) {
					t.removeFrom(uint32(id), b, uint(off&(blockSize-1)))
				}
			}
		}
	}
	for off := range t.over {
		if uint64(off) >= lo && uint64(off) < hi && !isSet(off) {
			t.dropOverflow(off)
		}
	}
}

// visitCost is what a visit to a block (or the overflow map) counts
// against a sweep's limit, in bits: a visit costs about as much as
// expiring ten bits (about 3 µs against 0.25 µs in process: cache misses
// on the block and its deadlines, and reading the words due soon),
// whether or not it finds a deadline passed. Blocks first armed
// in the same tick have bounds that pass together a TTL later, when most
// of their bits were re-armed: counting the visits spreads those over
// entries too. Stale items cost nothing, as replicas need not hold the
// same ones (see blockQueue.pop).
const visitCost = 10

// sweep disarms the bits whose deadline has passed at the time whose
// unitsUp is due, visiting only the blocks whose bound has passed, and
// appends their offsets to out. Each bit disarmed counts one against
// limit and each visit visitCost; it stops before the next block once
// they reach limit, and returns what they came to.
func (t *bitTimers) sweep(due int64, out []uint32, limit int) ([]uint32, int) {
	start, visits := len(out), 0
	for len(out)-start+visits*visitCost < limit {
		it, ok := t.queue.pop(due)
		if !ok {
			break
		}
		if it.id == overflowID {
			if t.over != nil && it.at == t.overLow {
				visits++
				out = t.sweepOverflow(due, out)
			}
			continue
		}
		b := t.blocks.get(it.id)
		if b == nil || b.low != it.at {
			continue // stale: the block was re-queued or dropped
		}
		visits++
		b = t.own(it.id, b)
		from := len(out)
		out = b.sweep(it.id, due, out)
		t.n -= len(out) - from
		if len(b.dl) == 0 {
			t.blocks.remove(it.id)
			continue
		}
		t.queue.push(blockItem{at: b.low, id: it.id})
	}
	return out, len(out) - start + visits*visitCost
}

// sweepOverflow disarms the passed deadlines of the overflow map, in
// offset order, and queues it again at its earliest remaining deadline.
func (t *bitTimers) sweepOverflow(due int64, out []uint32) []uint32 {
	start := len(out)
	low := int64(math.MaxInt64)
	for off, du := range t.over {
		if passed(du, due) {
			out = append(out, off)
		} else {
			low = min(low, du)
		}
	}
	slices.Sort(out[start:])
	for _, off := range out[start:] {
		t.dropOverflow(off)
	}
	if t.over != nil {
		t.overLow = low
		t.queue.push(blockItem{at: low, id: overflowID})
	}
	return out
}

// eachSorted calls f for every armed bit in offset order, with its
// deadline in units.
func (t *bitTimers) eachSorted(f func(off uint32, du int64)) {
	over := make([]uint32, 0, len(t.over))
	for off := range t.over {
		over = append(over, off)
	}
	slices.Sort(over)
	overBelow := func(limit uint64) { // the overflow offsets below limit
		for ; len(over) > 0 && uint64(over[0]) < limit; over = over[1:] {
			f(over[0], t.over[over[0]])
		}
	}
	for id, b := range t.blocks.all() {
		b.each(id, func(off uint32, du int64) {
			overBelow(uint64(off))
			f(off, du)
		})
	}
	overBelow(1 << 32)
}

// each calls f for every armed bit of the block, in offset order.
func (b *timerBlock) each(id uint32, f func(off uint32, du int64)) {
	r := 0
	for w, word := range b.armed {
		for ; word != 0; word &= word - 1 {
			f(id<<blockShift|uint32(w*64+bits.TrailingZeros64(word)), b.base+int64(b.dl[r]))
			r++
		}
	}
}

// clone returns a copy that no store heap knows yet. It shares the
// blocks, copy-on-write: both sides get a new epoch, so each copies a
// block before changing it (see own). A snapshot clones every value under
// the store's lock; this makes the timers' part a copy of the directory,
// not of some 100 MB of deadlines for 50M armed bits.
func (t *bitTimers) clone() *bitTimers {
	if t == nil {
		return nil
	}
	c := &bitTimers{
		blocks:  t.blocks.clone(),
		queue:   t.queue.clone(),
		over:    maps.Clone(t.over),
		overLow: t.overLow,
		n:       t.n,
		ttl:     t.ttl,
		epoch:   epochs.Add(1),
	}
	t.epoch = epochs.Add(1)
	return c
}

// compact re-packs the blocks and deadlines of these timers, as
// Store.Compact does bitmaps. A block's deadlines grow a quarter at a
// time through the allocator's size classes, and a key armed at random
// leaves the spans of the classes its blocks passed through partly used
// (10M ids of 100M armed by a server grew its RSS by 64-75 MiB, 57 MiB
// once packed, 52 MiB of it live). compact copies the blocks of each directory page into one
// array and their deadlines into one slice, each block's at exactly its
// length, so that the old copies free whole spans. A block that arms a
// new bit later has no spare capacity and moves its deadlines out of the
// shared slice, as growing them would anyway. An array lives until the
// last of its blocks is copied (own) or dropped, a slice until the last
// of its blocks' deadlines moved out. Blocks shared with a clone stay the
// clone's (see own).
func (t *bitTimers) compact() {
	for _, pg := range t.blocks.pages {
		if pg == nil {
			continue
		}
		total := 0
		for _, b := range pg.blocks {
			if b != nil {
				total += len(b.dl)
			}
		}
		blocks, dl := make([]timerBlock, pg.n), make([]uint16, total)
		next := 0
		for i, b := range pg.blocks {
			if b == nil {
				continue
			}
			nb := &blocks[next]
			next++
			*nb = *b
			nb.epoch = t.epoch
			n := copy(dl, b.dl)
			nb.dl, dl = dl[:n:n], dl[n:]
			pg.blocks[i] = nb
		}
	}
}

// Estimated costs of the Go structures, for MEMORY USAGE.
const (
	mapSlotSize  = 16 // a map's per-entry overhead beyond key and value, roughly
	timersSize   = int64(unsafe.Sizeof(bitTimers{}))
	blockStruct  = int64(unsafe.Sizeof(timerBlock{}))
	blockItemLen = int64(unsafe.Sizeof(blockItem{}))
)

// memoryUsage estimates the bytes the timers use; 0 for nil.
func (t *bitTimers) memoryUsage() int64 {
	if t == nil {
		return 0
	}
	n := timersSize + t.queue.memoryUsage()
	n += t.blocks.memoryUsage()
	for _, b := range t.blocks.all() {
		n += blockStruct + int64(cap(b.dl))*2
	}
	return n + int64(len(t.over))*(4+8+mapSlotSize)
}

func (b *timerBlock) has(bit uint) bool { return b.armed[bit/64]&(1<<(bit%64)) != 0 }

// rank returns the number of armed bits below bit.
func (b *timerBlock) rank(bit uint) int {
	r := 0
	for _, w := range b.armed[:bit/64] {
		r += bits.OnesCount64(w)
	}
	return r + bits.OnesCount64(b.armed[bit/64]&(1<<(bit%64)-1))
}

func (b *timerBlock) fits(du int64) bool {
	rel := du - b.base
	return rel >= 0 && rel <= maxRel
}

// insert arms bit, which is not armed, with relative deadline rel.
func (b *timerBlock) insert(bit uint, rel uint16) {
	if len(b.dl) == cap(b.dl) {
		// Grow by a quarter, not twice as append does below 256
		// items: the slack is the memory a block wastes. (An eighth
		// wastes less slack but leaves more partly used spans of the
		// allocator's size classes behind while a key fills.)
		b.dl = append(slices.Grow([]uint16(nil), len(b.dl)+len(b.dl)/4+4), b.dl...)
	}
	b.dl = slices.Insert(b.dl, b.rank(bit), rel)
	if w := bit / 64; b.armed[w] == 0 || rel < b.mins[w] {
		b.mins[w] = rel
	}
	b.armed[bit/64] |= 1 << (bit % 64)
}

// remove disarms bit, which is armed.
func (b *timerBlock) remove(bit uint) {
	b.dl = slices.Delete(b.dl, b.rank(bit), b.rank(bit)+1)
	b.armed[bit/64] &^= 1 << (bit % 64)
}

// rebase moves the base so that du fits besides the block's deadlines,
// keeping it at or below now when it can, and reports whether they fit
// 16 bits together.
func (b *timerBlock) rebase(du, nowu int64) bool {
	lo, hi := du, du
	for _, rel := range b.dl {
		lo, hi = min(lo, b.base+int64(rel)), max(hi, b.base+int64(rel))
	}
	if hi-lo > maxRel {
		return false
	}
	base := max(min(lo, nowu), hi-maxRel)
	for i, rel := range b.dl {
		b.dl[i] = uint16(b.base + int64(rel) - base)
	}
	for w, m := range b.mins {
		// A bound below the new base (of bits gone since) rises to it.
		b.mins[w] = uint16(min(max(b.base+int64(m)-base, 0), maxRel))
	}
	b.base = base
	return true
}

// sweep disarms the bits of block id whose deadline has passed, appending
// their offsets to out in offset order, and sets low to a lower bound of
// the deadlines left (MaxInt64 when none is) that has not passed. Only
// the words of armed whose bound (mins) is less than sweepAhead from
// passing are read, which makes those bounds exact; the
// deadlines of the others move down as a run when passed ones before
// them go.
func (b *timerBlock) sweep(id uint32, due int64, out []uint32) []uint32 {
	thr := due - b.base // relative deadlines below thr have passed
	if thr > maxRel {
		b.each(id, func(off uint32, _ int64) { out = append(out, off) })
		b.armed, b.dl, b.low = [blockWords]uint64{}, b.dl[:0], math.MaxInt64
		return out
	}
	th := uint16(max(thr, 0))
	// Words whose bound comes due within sweepAhead are read too: their
	// bounds become exact, where a word read only once its own bound
	// passed would bring the block up again for each of its words.
	ahead := uint16(min(int64(th)+sweepAhead, maxRel))
	dl := b.dl
	r, kept, low := 0, 0, uint16(maxRel) // read index, write index, bound
	// The deadlines of the words skipped since the last word read,
	// dl[skipped:r], move down to end at kept in one copy, before the
	// next word is read or at the end.
	skipped := 0
	moveSkipped := func() {
		if kept != r {
			copy(dl[kept-(r-skipped):kept], dl[skipped:r])
		}
	}
	for w, word := range b.armed {
		n := bits.OnesCount64(word)
		if n == 0 {
			continue
		}
		if b.mins[w] >= ahead {
			r, kept, low = r+n, kept+n, min(low, b.mins[w])
			continue
		}
		moveSkipped()
		m := uint16(maxRel)
		for ; word != 0; word &= word - 1 {
			rel := dl[r]
			r++
			if rel < th {
				bit := w*64 + bits.TrailingZeros64(word)
				b.armed[w] &^= 1 << (bit % 64)
				out = append(out, id<<blockShift|uint32(bit))
				continue
			}
			dl[kept] = rel
			kept++
			m = min(m, rel)
		}
		b.mins[w] = m
		low = min(low, m)
		skipped = r
	}
	moveSkipped()
	b.dl = dl[:kept]
	if cap(b.dl) > 32 && cap(b.dl) > 4*kept {
		b.dl = slices.Clip(slices.Clone(b.dl))
	}
	b.low = math.MaxInt64
	if kept > 0 {
		b.low = b.base + int64(low)
	}
	return out
}

// ordered is an item of a min-heap: before orders it.
type ordered[T any] interface{ before(T) bool }

// heapPush, heapPop and heapInit are container/heap for a slice of
// items, without the boxing of its interface.
func heapPush[T ordered[T]](h *[]T, x T) {
	*h = append(*h, x)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q[i].before(q[p]) {
			break
		}
		q[p], q[i] = q[i], q[p]
		i = p
	}
}

func heapPop[T ordered[T]](h *[]T) T {
	q := *h
	top := q[0]
	n := len(q) - 1
	q[0] = q[n]
	var zero T
	q[n] = zero
	*h = q[:n]
	heapDown(q[:n], 0)
	return top
}

func heapDown[T ordered[T]](q []T, i int) {
	for {
		l := 2*i + 1
		if l >= len(q) {
			return
		}
		m := l
		if r := l + 1; r < len(q) && q[r].before(q[l]) {
			m = r
		}
		if !q[m].before(q[i]) {
			return
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
}

func heapInit[T ordered[T]](q []T) {
	for i := len(q)/2 - 1; i >= 0; i-- {
		heapDown(q, i)
	}
}
