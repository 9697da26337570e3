package store

import (
	"bytes"
	"math"

	"github.com/presenced/presenced/proto"
)

// The commands of per-bit expiry (see bittimer.go for the structure).

var bitTimerCommands = map[string]handler{
	"bitsetex":    bitsetexHandler(1000),
	"bitpsetex":   bitsetexHandler(1),
	"bitttl":      bitttlHandler(false),
	"bitpttl":     bitttlHandler(true),
	"bitrecent":   bitrecent,
	"bitttlrules": bitttlrules,
}

// BitTTLRule gives the bits of the keys matching Pattern (a glob, as
// KEYS takes) a deadline TTL ms after every SETBIT to 1 (and BITFIELD
// write) that sets them.
type BitTTLRule struct {
	Pattern string
	TTL     int64 // ms
}

// BitTTLRules returns a copy of the bit-TTL rules, in the order they are
// tried: the first whose pattern matches a key applies to it.
func (s *Store) BitTTLRules() []BitTTLRule {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]BitTTLRule(nil), s.mu.bitRules...)
}

// Error replies of BITTTLRULES, in the words of Redis's CONFIG SET, which
// sends it for the bit-ttl parameter.
const (
	errRulePrefix = "ERR CONFIG SET failed (possibly related to argument 'bit-ttl') - "
	errRulePairs  = errRulePrefix + "Invalid bit-ttl parameters"
	errRuleInt    = errRulePrefix + "argument couldn't be parsed into an integer"
	errRuleRange  = errRulePrefix + "argument must be between 1 and 2147483647 inclusive"
)

// maxRuleSeconds is the longest TTL of a rule.
const maxRuleSeconds = math.MaxInt32

// bitttlrules implements BITTTLRULES [pattern seconds ...]: it replaces
// the rules (none clears them). Bits armed before keep their deadlines.
func bitttlrules(c *ctx, args [][]byte) {
	pairs := args[1:]
	if len(pairs)%2 != 0 {
		c.w.Error(errRulePairs)
		return
	}
	rules := make([]BitTTLRule, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		secs, ok := proto.ParseInt(pairs[i+1])
		switch {
		case !ok:
			c.w.Error(errRuleInt)
			return
		case secs < 1 || secs > maxRuleSeconds:
			c.w.Error(errRuleRange)
			return
		}
		rules = append(rules, BitTTLRule{Pattern: string(pairs[i]), TTL: secs * 1000})
	}
	if len(rules) == 0 {
		rules = nil
	}
	c.s.setRulesLocked(rules)
	c.w.OK()
}

// setRulesLocked replaces the bit-TTL rules.
func (s *Store) setRulesLocked(rules []BitTTLRule) {
	s.mu.bitRules = rules
	s.rules.Store(&rules)
}

// ruleTTL returns the TTL (ms) of the first rule matching key, or 0.
func (c *ctx) ruleTTL(key []byte) int64 {
	return ruleTTLIn(c.s.mu.bitRules, key)
}

// ruleTTLIn returns the TTL (ms) of the first of rules matching key, or 0.
func ruleTTLIn(rules []BitTTLRule, key []byte) int64 {
	for _, r := range rules {
		if globMatch(r.Pattern, string(key)) {
			return r.TTL
		}
	}
	return 0
}

// bitsetexHandler returns the handler of BITSETEX (unit 1000) or
// BITPSETEX (1): it sets every offset and arms its deadline, replying
// with the number of bits that were 0. The TTL is checked as SETEX checks
// it, then every offset, before anything changes.
func bitsetexHandler(unit int64) handler {
	return func(c *ctx, args [][]byte) {
		at, ok := c.deadline(args, args[2], unit, true)
		if !ok {
			return
		}
		if at > maxDeadline {
			c.errInvalidExpire(args)
			return
		}
		var stack [offsetsStack]uint64
		offs, ok := parseBitOffsets(args[3:], stack[:])
		if !ok {
			c.w.Error(proto.ErrBitOffset)
			return
		}
		e := c.get(args[1])
		if e == nil {
			e = c.put(args[1], value{})
		}
		joins := int64(0)
		for len(offs) > 0 {
			chunk := offs[:min(len(offs), warmChunk)]
			offs = offs[len(chunk):]
			e.v.t.warm(chunk)
			for _, off := range chunk {
				if c.setArmed(e, args[1], off, at) {
					joins++
				}
			}
		}
		c.s.scheduleBitsLocked(c.dbIndex, e)
		c.w.Int(joins)
	}
}

// execAll runs cmds on the write path, appending each reply to out. A
// run of heartbeats on one key is applied as one (see armRun), and so is
// one of SETBITs to 1 outside bit-TTL rules (see setbitRun); other
// commands go in windows of up to warmChunk, whose timer blocks are
// warmed before they run (see warmArms).
func (c *ctx) execAll(cmds []Command, out *Replies) {
	for len(cmds) > 0 {
		if n := c.watchRun(cmds, out); n > 0 {
			cmds = cmds[n:]
			continue
		}
		if n := c.armRunLen(cmds); n > 1 {
			c.armRun(cmds[:n], out)
			cmds = cmds[n:]
			continue
		}
		if n := c.setbitRun(cmds, out); n > 0 {
			cmds = cmds[n:]
			continue
		}
		n := 1
		for n < min(len(cmds), warmChunk) && c.armRunLen(cmds[n:]) < 2 && !setbitRunStarts(cmds[n:]) && !cmds[n].is("watchcheck") {
			n++
		}
		window := cmds[:n]
		cmds = cmds[n:]
		c.warmArms(window)
		for i, cmd := range window {
			c.exec(cmd)
			out.Ends = append(out.Ends, out.Len())
			c.reported(window[i : i+1])
		}
	}
}

// armRunLen returns the length of the run of heartbeats at the start of
// cmds that armRun applies together, as a client's pipeline sends them:
// BITSETEX (or BITPSETEX) commands of one offset each with the same TTL
// argument, or SETBITs to 1 under a bit-TTL rule, all of one kind and on
// one key of one database. It returns 0 or 1 where no such run starts.
func (c *ctx) armRunLen(cmds []Command) int {
	first := cmds[0]
	if len(first.Args) != 4 || first.DB < 0 || first.DB >= NumDBs {
		return 0
	}
	var name string
	switch {
	case first.is("bitsetex"):
		name = "bitsetex"
	case first.is("bitpsetex"):
		name = "bitpsetex"
	case len(c.s.mu.bitRules) > 0 && first.is("setbit") && ruleSetbit(first):
		// The rule is looked up only where a run could start: a lone
		// SETBIT pays for it once, in setbit.
		if len(cmds) < 2 || !sameRun(first, cmds[1], "setbit") || c.ruleTTL(first.Args[1]) == 0 {
			return 0
		}
		name = "setbit"
	default:
		return 0
	}
	n := 1
	for n < len(cmds) && sameRun(first, cmds[n], name) {
		n++
	}
	return n
}

// sameRun reports whether cmd continues a run of heartbeats that first,
// a command called name, starts (see armRunLen).
func sameRun(first, cmd Command, name string) bool {
	if cmd.DB != first.DB || len(cmd.Args) != 4 || !cmd.is(name) || !bytes.Equal(cmd.Args[1], first.Args[1]) {
		return false
	}
	if name == "setbit" {
		return ruleSetbit(cmd)
	}
	return bytes.Equal(cmd.Args[2], first.Args[2])
}

// ruleSetbit reports whether cmd, a SETBIT, sets its bit to 1, which a
// bit-TTL rule covering its key arms.
func ruleSetbit(cmd Command) bool {
	return string(cmd.Args[3]) == "1"
}

// armRun applies a run of heartbeats (see armRunLen) as exec would apply
// them one after another, with the same replies and the same state, but
// finds the TTL, looks the key up, schedules its expiry and marks it for
// history once for the run, and warms the timer blocks of each chunk of
// warmChunk offsets before arming them.
func (c *ctx) armRun(cmds []Command, out *Replies) {
	first := cmds[0]
	key := first.Args[1]
	c.db, c.dbIndex = c.s.mu.dbs[first.DB], first.DB
	at, offArg, setbit := int64(0), 3, first.is("setbit")
	if setbit {
		at, offArg = c.ruleDeadline(c.ruleTTL(key)), 2
	} else {
		unit := int64(1000)
		if first.is("bitpsetex") {
			unit = 1
		}
		ttl, ok := proto.ParseInt(first.Args[2])
		var valid bool
		at, valid = expireAt(ttl, unit, true, c.now)
		if !ok || !valid || at > maxDeadline {
			// Every command of the run fails the same way: exec says how.
			for _, cmd := range cmds {
				c.exec(cmd)
				out.Ends = append(out.Ends, out.Len())
			}
			return
		}
	}
	e := c.get(key)
	var offs [warmChunk]uint64
	wrote := false // a command of the run set its bit, as exec would
	for len(cmds) > 0 {
		chunk := cmds[:min(len(cmds), warmChunk)]
		cmds = cmds[len(chunk):]
		var bad uint64 // bit i: chunk[i]'s offset is not valid
		for i, cmd := range chunk {
			var ok bool
			if offs[i], ok = parseBitOffset(cmd.Args[offArg]); !ok {
				bad |= 1 << i
			}
		}
		if e != nil {
			e.v.t.warm(offs[:len(chunk)])
		}
		for i := range chunk {
			if bad&(1<<i) != 0 {
				c.w.Error(proto.ErrBitOffset)
			} else {
				if e == nil {
					e = c.put(key, value{})
				}
				wrote = true
				// BITSETEX replies whether the bit joined, SETBIT with
				// the bit's old value.
				c.w.Bit(c.setArmed(e, key, offs[i], at) != setbit)
			}
			out.Ends = append(out.Ends, out.Len())
		}
	}
	if e != nil {
		c.s.scheduleBitsLocked(c.dbIndex, e)
	}
	if wrote {
		c.touch(c.dbIndex, key)
	}
	c.mark(c.dbIndex, key)
}

// warmArms warms the timer blocks that the one-offset BITSETEX and
// BITPSETEX commands among cmds will arm, before they run (see
// bitTimers.warm): a pipeline of one-id heartbeats then waits for its
// cache misses together, as one command of many ids does (and warms its
// own). It only reads, and skips what it cannot parse: the commands
// report that.
func (c *ctx) warmArms(cmds []Command) {
	if len(cmds) < 2 {
		return
	}
	var (
		offs [warmChunk]uint64
		n    int
		t    *bitTimers
		key  []byte
		db   = -1
	)
	for _, cmd := range cmds[:min(len(cmds), len(offs))] {
		if len(cmd.Args) != 4 || !isBitsetex(cmd) || cmd.DB < 0 || cmd.DB >= NumDBs {
			continue
		}
		if cmd.DB != db || string(cmd.Args[1]) != string(key) {
			t.warm(offs[:n])
			n = 0
			db, key, t = cmd.DB, cmd.Args[1], nil
			if e := c.s.mu.dbs[db].keys[string(key)]; e != nil {
				t = e.v.t
			}
		}
		if off, ok := parseBitOffset(cmd.Args[3]); ok {
			offs[n] = off
			n++
		}
	}
	t.warm(offs[:n])
}

// isBitsetex reports whether cmd is a BITSETEX or a BITPSETEX.
func isBitsetex(cmd Command) bool {
	return cmd.is("bitsetex") || cmd.is("bitpsetex")
}

// setArmed sets bit off of e (whose key is key) and arms it with deadline
// at (ms), reporting whether the bit was 0. The caller schedules e.
//
// A bit with a deadline is set, so re-arming one (a heartbeat of a user
// online) moves its deadline and leaves the bitmap alone: one lookup in
// the timers rather than one there and another in the bitmap.
func (c *ctx) setArmed(e *entry, key []byte, off uint64, at int64) bool {
	if c.arm(e, off, at) {
		return false
	}
	joined := !e.v.setBit(off, true)
	if joined {
		c.emit(key, EventJoin, off)
	}
	return joined
}

// arm gives bit off of e, set or about to be, the deadline at (ms), and
// reports whether it had one; at-now becomes the key's latest TTL.
func (c *ctx) arm(e *entry, off uint64, at int64) bool {
	if e.v.t == nil {
		e.v.t = newBitTimers()
	}
	e.v.t.ttl = at - c.now
	return e.v.t.arm(uint32(off), unitsUp(at), c.now/timerTick)
}

// ruleDeadline returns the deadline (ms) a rule of ttl ms gives a bit set
// now.
func (c *ctx) ruleDeadline(ttl int64) int64 {
	if c.now > maxDeadline-ttl {
		return maxDeadline
	}
	return c.now + ttl
}

// setbitTimers follows a SETBIT of off to on on e, whose bit was old,
// outside bit-TTL rules (setbit arms the bits a rule covers): the bit
// is made persistent, or loses its deadline when set to 0.
func (c *ctx) setbitTimers(e *entry, key []byte, off uint64, on, old bool) {
	c.disarm(e, off)
	switch {
	case on && !old:
		c.emit(key, EventJoin, off)
	case !on && old:
		c.emit(key, EventLeave, off)
	}
}

// disarm drops the deadline of bit off of e, if it has one.
func (c *ctx) disarm(e *entry, off uint64) {
	if t := e.v.t; t != nil && t.disarm(uint32(off)) && t.n == 0 {
		e.v.t = nil
	}
}

// dropCleared drops the deadlines of the bits in [lo, hi) that a command
// editing e in place (SETRANGE, BITFIELD) left at 0.
func (c *ctx) dropCleared(e *entry, lo, hi uint64) {
	t := e.v.t
	if t == nil {
		return
	}
	t.disarmCleared(lo, hi, e.v.bm.Contains)
	if t.n == 0 {
		e.v.t = nil
	}
}

// fieldWritten follows a BITFIELD SET or INCRBY of the bits [off,
// off+n) of e: the bits left at 0 lose their deadline, and under a rule
// (ttl > 0) every bit left at 1 is armed with the rule's TTL, as SETBIT
// would arm it. The bits of the field that were already 1 are re-armed
// too: the write refreshes the whole field. Outside rules, bits left at
// 1 keep the deadline they had, or none.
func (c *ctx) fieldWritten(e *entry, key []byte, off uint64, n uint, ttl int64) {
	c.dropCleared(e, off, off+uint64(n))
	if ttl == 0 {
		return
	}
	at := c.ruleDeadline(ttl)
	for i := range uint64(n) {
		if e.v.bm.Contains(uint32(off + i)) {
			c.arm(e, off+i, at)
		}
	}
	c.s.scheduleBitsLocked(c.dbIndex, e)
}

// bitttlHandler returns the handler of BITTTL (inMs false) or BITPTTL:
// the time to the bit's rounded deadline as TTL and PTTL give a key's,
// -1 for a set bit without a deadline, -2 for a bit that is not set.
func bitttlHandler(inMs bool) handler {
	return func(c *ctx, args [][]byte) {
		off, ok := parseBitOffset(args[2])
		if !ok {
			c.w.Error(proto.ErrBitOffset)
			return
		}
		e := c.lookup(args[1])
		if e == nil || !e.v.getBit(off) {
			c.w.Int(-2)
			return
		}
		du, armed := e.v.t.deadline(uint32(off))
		if !armed {
			c.w.Int(-1)
			return
		}
		t := max(du*timerTick-c.now, 0)
		if !inMs {
			t = roundToSeconds(t)
		}
		c.w.Int(t)
	}
}

// bitrecentLimit is BITRECENT's default LIMIT.
const bitrecentLimit = 10

// bitrecent implements BITRECENT key seconds [LIMIT count]: the bits
// armed within the last seconds, told from their deadlines. A bit armed
// at time a with the key's latest TTL T has its deadline at a+T (rounded
// up to the tick), so it counts when its deadline is later than
// now + T - seconds*1000. This is exact when a key's bits share one TTL,
// which is the presence case; a bit armed with another TTL counts as
// though armed T ms before its deadline. The reply is the number of such
// bits and, newest first (latest deadline first, then lowest offset), up
// to count of their offsets. The cost is one pass over the key's armed
// bits.
func bitrecent(c *ctx, args [][]byte) {
	secs, ok := proto.ParseInt(args[2])
	if !ok || secs < 0 {
		c.w.Error(proto.ErrNotInteger)
		return
	}
	limit := int64(bitrecentLimit)
	for i := 3; i < len(args); i++ {
		if !isOption(args[i], "limit") || i+1 == len(args) {
			c.w.Error(proto.ErrSyntax)
			return
		}
		i++
		n, ok := c.intArg(args[i])
		if !ok {
			return
		}
		if n < 0 {
			c.w.Error(proto.ErrPositive)
			return
		}
		limit = n
	}
	var t *bitTimers
	if e := c.lookup(args[1]); e != nil {
		t = e.v.t
	}
	if t == nil {
		c.w.Array(2)
		c.w.Int(0)
		c.w.Array(0)
		return
	}
	count, top := t.recent(recentAfter(c.now, t.ttl, secs), limit)
	c.w.Array(2)
	c.w.Int(count)
	c.w.Array(len(top))
	for _, b := range top {
		c.w.Int(int64(b.off))
	}
}

// recentAfter returns the unit after which a deadline counts as recent:
// deadlines later than now + ttl - secs*1000 ms, that is above the
// returned unit (floor), saturating instead of overflowing.
func recentAfter(now, ttl, secs int64) int64 {
	if secs > math.MaxInt64/1000 {
		return math.MinInt64 / timerTick // every deadline is recent
	}
	ms := int64(math.MaxInt64)
	if now <= math.MaxInt64-ttl {
		ms = now + ttl
	}
	return floorDiv(ms-secs*1000, timerTick) // ms >= 0: no overflow
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// recent counts the armed bits whose deadline is above after (units),
// and returns the newest limit of them, newest first.
func (t *bitTimers) recent(after, limit int64) (int64, []recentBit) {
	var count int64
	var top []recentBit // a min-heap, oldest first, of at most limit bits
	offer := func(off uint32, du int64) {
		if du <= after {
			return
		}
		count++
		b := recentBit{du: du, off: off}
		switch {
		case int64(len(top)) < limit:
			heapPush(&top, b)
		case limit > 0 && b.newer(top[0]):
			top[0] = b
			heapDown(top, 0)
		}
	}
	for id, b := range t.blocks.all() {
		if b.base+maxRel <= after {
			continue // no deadline of the block can be recent
		}
		b.each(id, offer)
	}
	for off, du := range t.over {
		offer(off, du)
	}
	out := make([]recentBit, len(top))
	for i := len(top) - 1; i >= 0; i-- {
		out[i] = heapPop(&top)
	}
	return count, out
}

// recentBit is an armed bit as BITRECENT lists it.
type recentBit struct {
	du  int64
	off uint32
}

// newer orders bits newest first: latest deadline first, then ascending
// offset.
func (a recentBit) newer(b recentBit) bool {
	return a.du > b.du || (a.du == b.du && a.off < b.off)
}

// before orders the heap of BITRECENT's candidates oldest first.
func (a recentBit) before(b recentBit) bool { return b.newer(a) }

// bitItem is an entry of the store's heap of keys with armed bits: the
// timers t of entry e in database db, due at at (units).
type bitItem struct {
	at int64
	db int
	e  *entry
	t  *bitTimers
}

// before orders the heap by bound, then by database and key: every
// replica then expires the keys in the same order, whatever the history
// of its heap (a restored one is built afresh), and stops where the
// others stop when the expiry budget runs out.
func (it bitItem) before(o bitItem) bool {
	if it.at != o.at {
		return it.at < o.at
	}
	if it.db != o.db {
		return it.db < o.db
	}
	return it.e.key < o.e.key
}

// scheduleBitsLocked makes sure the store's heap holds an item for the
// timers of e at or before the bound of their first block.
func (s *Store) scheduleBitsLocked(db int, e *entry) {
	t := e.v.t
	if t == nil {
		return
	}
	at, ok := t.queue.first()
	if !ok {
		return
	}
	if t.heapAt != 0 && t.heapAt <= at {
		return
	}
	t.heapAt = at
	heapPush(&s.mu.bitHeap, bitItem{at: at, db: db, e: e, t: t})
}

// expiryBudget bounds the expiry work of one Apply, so that a mass expiry
// (the users of a crashed gateway, all armed within a tick) holds up the
// writes of an entry for a few ms, not for as long as a million bits
// take: each bit expired counts one, each block visited visitCost. What
// is left over is the next Apply's; BitsBehind tells the cluster to
// propose it at once. The budget is counted in bits and visits, in an
// order that depends on the state alone, so every replica stops at the
// same block.
const expiryBudget = 4096

// BitsBehind reports whether the latest Apply left bit deadlines or block
// bounds that had passed, because it spent its expiryBudget: the next
// Apply, a tick if nothing else, goes on with them. It also reports a
// stale queue item that came due then, which costs one Apply that finds
// nothing.
func (s *Store) BitsBehind() bool { return s.bitsBehind.Load() }

// expireBitsLocked clears the bits whose deadline passed before now,
// within what is left of the Apply's expiry budget (whole blocks),
// reporting each to sink (which may be nil).
func (s *Store) expireBitsLocked(now int64, sink EventSink) {
	due := unitsUp(now)
	h := &s.mu.bitHeap
	budget := &s.mu.expiryLeft
	for *budget > 0 && len(*h) > 0 && passed((*h)[0].at, due) {
		it := heapPop(h)
		e, t := it.e, it.t
		if e.v.t != t || t.heapAt != it.at || s.mu.dbs[it.db].keys[e.key] != e {
			continue // stale: the key or its value was replaced, or re-queued
		}
		t.heapAt = 0
		gone, spent := t.sweep(due, s.mu.scratch[:0], *budget)
		*budget -= spent
		for _, off := range gone {
			e.v.clearBit(off)
		}
		if len(gone) > 0 {
			s.touchLocked(it.db, []byte(e.key), nil)
			s.markLocked(it.db, e.key)
		}
		if sink != nil && len(gone) > 0 {
			key := []byte(e.key)
			for _, off := range gone {
				sink(it.db, key, EventExpire, uint64(off))
			}
		}
		s.mu.scratch = gone[:0]
		if t.n == 0 {
			e.v.t = nil
			continue
		}
		s.scheduleBitsLocked(it.db, e)
	}
}
