package store

import (
	"fmt"
	"maps"
	"math/bits"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/presenced/presenced/proto"
)

// The per-bit expiry model: every key is its bytes, a map from armed
// offset to deadline (ms, rounded up to the tick as the store rounds it),
// the latest bit TTL and the key's own deadline. Time moves by random
// steps, onto deadlines exactly and one ms past them, and by big jumps;
// TestBitTimerModel compares every reply, every event and, after every
// step, the whole state of the store with the model's.

type tmKey struct {
	b        []byte
	dl       map[uint64]int64 // armed offset -> rounded deadline, ms
	ttl      int64            // the latest arm's TTL, ms
	expireAt int64
}

func (k *tmKey) clone() *tmKey {
	c := *k
	c.b = slices.Clone(k.b)
	c.dl = maps.Clone(k.dl)
	return &c
}

// tmEvent is a bit event, as the sink saw it or the model predicts.
type tmEvent struct {
	db   int
	key  string
	kind EventKind
	off  uint64
}

type timerModelTest struct {
	t      *testing.T
	rnd    *rand.Rand
	s      *Store
	now    int64
	dbs    [2]map[string]*tmKey
	rules  []BitTTLRule // patterns are exact keys or a prefix and '*'
	want   []tmEvent    // events the model predicts for the step
	got    []tmEvent    // events the sink reported
	ops    int
	counts map[string]int // how often the interesting paths ran
}

var tmKeys = []string{"a", "b", "c", "x"}

func roundUp(ms int64) int64 { return unitsUp(ms) * timerTick }

func (mt *timerModelTest) key() string { return tmKeys[mt.rnd.Intn(len(tmKeys))] }

// offset picks offsets that crowd a few blocks, and sometimes farther
// ones. (The model's strings are bytes: TestBitTimerEnds covers the
// offsets near 2^32.)
func (mt *timerModelTest) offset() uint64 {
	switch r := mt.rnd.Intn(100); {
	case r < 60:
		return uint64(mt.rnd.Intn(64))
	case r < 92:
		return uint64(mt.rnd.Intn(3 * blockSize))
	default:
		return uint64(mt.rnd.Intn(1 << 17))
	}
}

func (mt *timerModelTest) modelRule(key string) int64 {
	for _, r := range mt.rules {
		if r.Pattern == key || (strings.HasSuffix(r.Pattern, "*") && strings.HasPrefix(key, strings.TrimSuffix(r.Pattern, "*"))) {
			return r.TTL
		}
	}
	return 0
}

// run sends args through Apply (writes) or Read at time now, and checks
// the reply and the events.
func (mt *timerModelTest) run(db int, want []byte, args ...string) {
	mt.t.Helper()
	mt.ops++
	cmd := Command{DB: db}
	for _, a := range args {
		cmd.Args = append(cmd.Args, []byte(a))
	}
	var out Replies
	if spec := proto.Lookup(cmd.Args[0]); spec.Flags&proto.Write != 0 {
		mt.s.Apply([]Command{cmd}, mt.now, &out)
	} else {
		mt.s.Read([]Command{cmd}, mt.now, &out)
	}
	if string(out.B) != string(want) {
		mt.t.Fatalf("op %d at %d: %q\n got %q\nwant %q", mt.ops, mt.now, args, out.B, want)
	}
	mt.checkEvents(args)
}

func (mt *timerModelTest) checkEvents(what any) {
	mt.t.Helper()
	if !slices.Equal(mt.got, mt.want) {
		mt.t.Fatalf("op %d %v: events\n got %v\nwant %v", mt.ops, what, mt.got, mt.want)
	}
	mt.got, mt.want = mt.got[:0], mt.want[:0]
}

func (mt *timerModelTest) get(db int, k string) *tmKey { return mt.dbs[db][k] }

// create returns key k of db, creating an empty string.
func (mt *timerModelTest) create(db int, k string) *tmKey {
	if mt.dbs[db][k] == nil {
		mt.dbs[db][k] = &tmKey{dl: map[uint64]int64{}}
	}
	return mt.dbs[db][k]
}

func (mt *timerModelTest) event(db int, k string, kind EventKind, off uint64) {
	mt.want = append(mt.want, tmEvent{db, k, kind, off})
}

// advance moves time and ticks: small steps, exactly onto the earliest
// deadline or one ms past it, and jumps of minutes and hours.
func (mt *timerModelTest) advance() {
	earliest := int64(0)
	for db := range mt.dbs {
		for _, k := range mt.dbs[db] {
			for _, d := range k.dl {
				if earliest == 0 || d < earliest {
					earliest = d
				}
			}
		}
	}
	next := mt.now
	switch r := mt.rnd.Intn(20); {
	case r < 8:
		next += 1 + mt.rnd.Int63n(300)
	case r < 11 && earliest >= mt.now:
		next = earliest
	case r < 14 && earliest >= mt.now:
		next = earliest + 1
	case r < 17:
		next += mt.rnd.Int63n(10_000)
	case r < 19:
		next += mt.rnd.Int63n(3_600_000)
	default:
		next += 3_600_000 + mt.rnd.Int63n(4*3_600_000)
	}
	mt.now = next
	for db := range mt.dbs {
		for _, name := range slices.Sorted(maps.Keys(mt.dbs[db])) {
			k := mt.dbs[db][name]
			for off, d := range k.dl {
				if d >= mt.now {
					continue
				}
				// The Apply steps through the boundaries on its way (see
				// Store.stepLocked): the bit expires at the first one
				// past its deadline, or at now, unless the key's own
				// expiry came at or before that step.
				at := min(boundaryAfter(d), mt.now)
				if k.expireAt != 0 && k.expireAt < at {
					continue
				}
				delete(k.dl, off)
				k.b = modelSetBit(k.b, int64(off), 0)
				mt.event(db, name, EventExpire, off)
				mt.counts["expire"]++
			}
			if k.expireAt != 0 && k.expireAt < mt.now {
				delete(mt.dbs[db], name)
			}
		}
	}
	mt.s.Apply(nil, mt.now, &Replies{})
	sortEvents(mt.got)
	sortEvents(mt.want)
	mt.checkEvents("tick")
}

func sortEvents(evs []tmEvent) {
	slices.SortFunc(evs, func(a, b tmEvent) int {
		return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
	})
}

func (mt *timerModelTest) bitsetex() {
	db, k := mt.rnd.Intn(2), mt.key()
	ms := mt.rnd.Intn(2) == 0
	var ttl int64
	switch r := mt.rnd.Intn(20); {
	case r < 12:
		ttl = 1 + mt.rnd.Int63n(5000)
	case r < 16:
		ttl = 1 + mt.rnd.Int63n(120_000)
	case r < 19:
		ttl = 60*60_000 + mt.rnd.Int63n(4*60*60_000) // around and past the 16-bit reach
		mt.counts["long"]++
	default:
		ttl = 0
	}
	arg := strconv.FormatInt(ttl, 10)
	if !ms {
		ttl = (ttl + 999) / 1000 * 1000
		arg = strconv.FormatInt(ttl/1000, 10)
	}
	name := "BITPSETEX"
	if !ms {
		name = "BITSETEX"
	}
	args := []string{name, k, arg}
	var offs []uint64
	n := 1 + mt.rnd.Intn(6)
	switch r := mt.rnd.Intn(40); {
	case r < 4:
		n = warmChunk - 2 + mt.rnd.Intn(2*warmChunk) // across the chunks BITSETEX arms by
	case r < 5:
		n = offsetsStack - 2 + mt.rnd.Intn(4) // around the stack buffer's end
	}
	for range n {
		offs = append(offs, mt.offset())
	}
	if len(offs) > 1 && mt.rnd.Intn(4) == 0 {
		offs = append(offs, offs[0]) // a duplicate counts once
	}
	badOff := mt.rnd.Intn(30) == 0
	for _, o := range offs {
		args = append(args, strconv.FormatUint(o, 10))
	}
	if badOff {
		args = append(args, "-1")
	}
	if mt.rnd.Intn(30) == 0 {
		args[2] = []string{"abc", "-5", "9223372036854775807"}[mt.rnd.Intn(3)]
		ttl = -1
	}
	var w proto.Writer
	switch {
	case ttl == -1 && args[2] == "abc":
		w.Error(proto.ErrNotInteger)
	case ttl <= 0:
		w.Error(proto.ErrInvalidExpire(strings.ToLower(name)))
	case badOff:
		w.Error(proto.ErrBitOffset)
	default:
		key := mt.create(db, k)
		joins := int64(0)
		for _, o := range offs {
			if modelBit(key.b, int64(o)) == 0 {
				joins++
				mt.event(db, k, EventJoin, o)
			}
			key.b = modelSetBit(key.b, int64(o), 1)
			key.dl[o] = roundUp(mt.now + ttl)
		}
		key.ttl = ttl
		w.Int(joins)
	}
	mt.run(db, w.B, args...)
}

func (mt *timerModelTest) setbit() {
	db, k, off, on := mt.rnd.Intn(2), mt.key(), mt.offset(), mt.rnd.Intn(2)
	key := mt.create(db, k)
	old := modelBit(key.b, int64(off))
	key.b = modelSetBit(key.b, int64(off), on)
	ttl := mt.modelRule(k)
	switch {
	case on == 1 && ttl > 0:
		key.dl[off] = roundUp(mt.now + ttl)
		key.ttl = ttl
		mt.counts["rule"]++
	default:
		delete(key.dl, off)
	}
	switch {
	case on == 1 && old == 0:
		mt.event(db, k, EventJoin, off)
	case on == 0 && old == 1:
		mt.event(db, k, EventLeave, off)
	}
	mt.run(db, intReply(int64(old)), "SETBIT", k, strconv.FormatUint(off, 10), strconv.Itoa(on))
}

// bitfield writes fields of a few bits over the crowded offsets.
func (mt *timerModelTest) bitfield() {
	db, k := mt.rnd.Intn(2), mt.key()
	args := []string{"BITFIELD", k}
	var fields []modelField
	for range 1 + mt.rnd.Intn(3) {
		f := modelField{op: []string{"SET", "INCRBY", "GET"}[mt.rnd.Intn(3)], signed: mt.rnd.Intn(2) == 0,
			bits: []int{1, 4, 8}[mt.rnd.Intn(3)], off: int64(mt.rnd.Intn(64)), ow: []string{"WRAP", "SAT", "FAIL"}[mt.rnd.Intn(3)]}
		f.arg = mt.rnd.Int63n(40) - 20
		typ := "u"
		if f.signed {
			typ = "i"
		}
		args = append(args, "OVERFLOW", f.ow, f.op, typ+strconv.Itoa(f.bits), strconv.FormatInt(f.off, 10))
		if f.op != "GET" {
			args = append(args, strconv.FormatInt(f.arg, 10))
		}
		fields = append(fields, f)
	}
	key := mt.get(db, k)
	var b []byte
	if key != nil {
		b = key.b
	}
	ttl := mt.modelRule(k)
	var w proto.Writer
	w.Array(len(fields))
	for _, f := range fields {
		nb, reply := modelBitfield(b, []modelField{f})
		b = nb
		if reply[0] == nil {
			w.Null()
		} else {
			w.Int(*reply[0])
		}
		if f.op == "GET" {
			continue
		}
		key = mt.create(db, k)
		key.b = b
		if reply[0] == nil {
			continue
		}
		for i := range int64(f.bits) {
			off := uint64(f.off + i)
			switch {
			case modelBit(b, int64(off)) == 0:
				delete(key.dl, off)
			case ttl > 0:
				key.dl[off] = roundUp(mt.now + ttl)
				key.ttl = ttl
			}
		}
	}
	mt.run(db, w.B, args...)
}

func (mt *timerModelTest) setrange() {
	db, k := mt.rnd.Intn(2), mt.key()
	off := mt.rnd.Intn(8)
	val := make([]byte, 1+mt.rnd.Intn(3))
	mt.rnd.Read(val)
	key := mt.create(db, k)
	for len(key.b) < off+len(val) {
		key.b = append(key.b, 0)
	}
	copy(key.b[off:], val)
	for o := range key.dl {
		if modelBit(key.b, int64(o)) == 0 {
			delete(key.dl, o)
		}
	}
	mt.run(db, intReply(int64(len(key.b))), "SETRANGE", k, strconv.Itoa(off), string(val))
}

func (mt *timerModelTest) appendCmd() {
	db, k := mt.rnd.Intn(2), mt.key()
	key := mt.create(db, k)
	key.b = append(key.b, 0xa5)
	mt.run(db, intReply(int64(len(key.b))), "APPEND", k, "\xa5")
}

func (mt *timerModelTest) set() {
	db, k := mt.rnd.Intn(2), mt.key()
	mt.dbs[db][k] = &tmKey{b: []byte("\xff\x0f"), dl: map[uint64]int64{}}
	var w proto.Writer
	w.OK()
	mt.run(db, w.B, "SET", k, "\xff\x0f")
}

func (mt *timerModelTest) del() {
	db, k := mt.rnd.Intn(2), mt.key()
	n := int64(0)
	if mt.get(db, k) != nil {
		n = 1
		delete(mt.dbs[db], k)
	}
	mt.run(db, intReply(n), "DEL", k)
}

func (mt *timerModelTest) rename() {
	db, from, to := mt.rnd.Intn(2), mt.key(), mt.key()
	var w proto.Writer
	switch key := mt.get(db, from); {
	case key == nil:
		w.Error(proto.ErrNoSuchKey)
	default:
		delete(mt.dbs[db], from)
		mt.dbs[db][to] = key
		w.OK()
	}
	mt.run(db, w.B, "RENAME", from, to)
}

func (mt *timerModelTest) copyCmd() {
	db, from, to := mt.rnd.Intn(2), mt.key(), mt.key()
	dst := mt.rnd.Intn(2)
	args := []string{"COPY", from, to, "DB", strconv.Itoa(dst), "REPLACE"}
	var w proto.Writer
	switch key := mt.get(db, from); {
	case dst == db && from == to:
		w.Error(proto.ErrSameObject)
	case key == nil:
		w.Int(0)
	default:
		mt.dbs[dst][to] = key.clone()
		w.Int(1)
	}
	mt.run(db, w.B, args...)
}

func (mt *timerModelTest) move() {
	db, k := mt.rnd.Intn(2), mt.key()
	n := int64(0)
	if key := mt.get(db, k); key != nil && mt.get(1-db, k) == nil {
		delete(mt.dbs[db], k)
		mt.dbs[1-db][k] = key
		n = 1
	}
	mt.run(db, intReply(n), "MOVE", k, strconv.Itoa(1-db))
}

func (mt *timerModelTest) swapdb() {
	mt.dbs[0], mt.dbs[1] = mt.dbs[1], mt.dbs[0]
	var w proto.Writer
	w.OK()
	mt.run(0, w.B, "SWAPDB", "0", "1")
}

func (mt *timerModelTest) flushdb() {
	db := mt.rnd.Intn(2)
	mt.dbs[db] = map[string]*tmKey{}
	var w proto.Writer
	w.OK()
	mt.run(db, w.B, "FLUSHDB")
}

func (mt *timerModelTest) expire() {
	db, k := mt.rnd.Intn(2), mt.key()
	secs := []int64{1, 2, 5, 100}[mt.rnd.Intn(4)]
	n := int64(0)
	if key := mt.get(db, k); key != nil {
		key.expireAt = mt.now + secs*1000
		n = 1
	}
	mt.run(db, intReply(n), "EXPIRE", k, strconv.FormatInt(secs, 10))
}

func (mt *timerModelTest) rulesCmd() {
	args := []string{"BITTTLRULES"}
	var rules []BitTTLRule
	for range mt.rnd.Intn(3) {
		p := []string{"a", "b*", "*", "c"}[mt.rnd.Intn(4)]
		secs := 1 + mt.rnd.Int63n(20)
		rules = append(rules, BitTTLRule{Pattern: p, TTL: secs * 1000})
		args = append(args, p, strconv.FormatInt(secs, 10))
	}
	mt.rules = rules
	var w proto.Writer
	w.OK()
	mt.run(0, w.B, args...)
	if got := mt.s.BitTTLRules(); !slices.Equal(got, rules) {
		mt.t.Fatalf("BitTTLRules %v, want %v", got, rules)
	}
}

// armedOffset picks an armed offset of a key when there is one.
func (mt *timerModelTest) armedOffset(key *tmKey) uint64 {
	if key != nil && len(key.dl) > 0 && mt.rnd.Intn(4) > 0 {
		offs := slices.Sorted(maps.Keys(key.dl))
		return offs[mt.rnd.Intn(len(offs))]
	}
	return mt.offset()
}

func (mt *timerModelTest) bitttl() {
	db, k := mt.rnd.Intn(2), mt.key()
	key := mt.live(db, k)
	off := mt.armedOffset(key)
	inMs := mt.rnd.Intn(2) == 0
	want := int64(-2)
	if key != nil && modelBit(key.b, int64(off)) == 1 {
		want = -1
		if d, ok := key.dl[off]; ok {
			want = max(d-mt.now, 0)
			if !inMs {
				want = (want + 500) / 1000
			}
		}
	}
	name := "BITTTL"
	if inMs {
		name = "BITPTTL"
	}
	mt.run(db, intReply(want), name, k, strconv.FormatUint(off, 10))
}

// live returns the key as a read at now sees it.
func (mt *timerModelTest) live(db int, k string) *tmKey {
	key := mt.get(db, k)
	if key == nil || (key.expireAt != 0 && key.expireAt < mt.now) {
		return nil
	}
	return key
}

func (mt *timerModelTest) bitrecent() {
	db, k := mt.rnd.Intn(2), mt.key()
	secs := []int64{0, 1, 2, 5, 30, 100_000}[mt.rnd.Intn(6)]
	args := []string{"BITRECENT", k, strconv.FormatInt(secs, 10)}
	limit := 10
	if mt.rnd.Intn(2) == 0 {
		limit = mt.rnd.Intn(5)
		args = append(args, "LIMIT", strconv.Itoa(limit))
	}
	var hits []recentBit
	if key := mt.live(db, k); key != nil {
		thr := mt.now + key.ttl - secs*1000
		for off, d := range key.dl {
			if d > thr {
				hits = append(hits, recentBit{du: d, off: uint32(off)})
			}
		}
	}
	slices.SortFunc(hits, func(a, b recentBit) int {
		if a.newer(b) {
			return -1
		}
		return 1
	})
	var w proto.Writer
	w.Array(2)
	w.Int(int64(len(hits)))
	hits = hits[:min(limit, len(hits))]
	w.Array(len(hits))
	for _, h := range hits {
		w.Int(int64(h.off))
	}
	mt.run(db, w.B, args...)
}

func (mt *timerModelTest) getbit() {
	db, k := mt.rnd.Intn(2), mt.key()
	key := mt.live(db, k)
	off := mt.armedOffset(key)
	bit := 0
	if key != nil {
		bit = modelBit(key.b, int64(off))
	}
	mt.run(db, intReply(int64(bit)), "GETBIT", k, strconv.FormatUint(off, 10))
}

func (mt *timerModelTest) bitcount() {
	db, k := mt.rnd.Intn(2), mt.key()
	n := int64(0)
	if key := mt.live(db, k); key != nil {
		n = modelBitcount(key.b, true, nil, false)
	}
	mt.run(db, intReply(n), "BITCOUNT", k)
}

// checkState compares the store's keys, bytes, key deadlines and armed
// bits with the model's, and checks the structure's invariants.
func (mt *timerModelTest) checkState() {
	mt.t.Helper()
	s := mt.s
	s.mu.RLock()
	defer s.mu.RUnlock()
	for db := range mt.dbs {
		d := s.mu.dbs[db]
		if len(d.keys) != len(mt.dbs[db]) {
			mt.t.Fatalf("op %d: db %d has %d keys, the model %d", mt.ops, db, len(d.keys), len(mt.dbs[db]))
		}
		for name, key := range mt.dbs[db] {
			e := d.keys[name]
			if e == nil {
				mt.t.Fatalf("op %d: db %d: no key %q", mt.ops, db, name)
			}
			if got := e.v.bytes(); string(got) != string(key.b) || e.expireAt != key.expireAt {
				mt.t.Fatalf("op %d: db %d key %q: %x (deadline %d), model %x (%d)", mt.ops, db, name, got, e.expireAt, key.b, key.expireAt)
			}
			got := map[uint64]int64{}
			if e.v.t != nil && e.v.t.over != nil {
				mt.counts["overflow"]++
			}
			if e.v.t != nil {
				e.v.t.eachSorted(func(off uint32, du int64) { got[uint64(off)] = du * timerTick })
				if e.v.t.ttl != key.ttl {
					mt.t.Fatalf("op %d: db %d key %q: TTL %d, model %d", mt.ops, db, name, e.v.t.ttl, key.ttl)
				}
			}
			if !maps.Equal(got, key.dl) {
				mt.t.Fatalf("op %d: db %d key %q: armed %v\nmodel %v", mt.ops, db, name, got, key.dl)
			}
			checkTimerInvariants(mt.t, s, db, e)
		}
	}
}

// checkTimerInvariants checks e's timers: only set bits are armed, the
// count is right, every block and the overflow map are queued at their
// bound or earlier, and the store's heap holds the key at or before its
// first item. The caller holds the lock.
func checkTimerInvariants(t testing.TB, s *Store, db int, e *entry) {
	t.Helper()
	tm := e.v.t
	if tm == nil {
		return
	}
	if e.v.bm == nil || tm.n == 0 {
		t.Fatalf("key %q: timers on a raw string or with no armed bit (n %d)", e.key, tm.n)
	}
	queued := map[blockItem]bool{}
	for it := range tm.queue.all() {
		queued[it] = true
	}
	n := 0
	for id, b := range tm.blocks.all() {
		armed := 0
		for _, w := range b.armed {
			armed += bits.OnesCount64(w)
		}
		if armed != len(b.dl) || armed == 0 {
			t.Fatalf("key %q block %d: %d armed bits, %d deadlines", e.key, id, armed, len(b.dl))
		}
		for _, rel := range b.dl {
			if b.base+int64(rel) < b.low {
				t.Fatalf("key %q block %d: deadline %d below the bound %d", e.key, id, b.base+int64(rel), b.low)
			}
		}
		if !queued[blockItem{at: b.low, id: id}] {
			t.Fatalf("key %q block %d: not queued at its bound %d", e.key, id, b.low)
		}
		n += armed
	}
	for _, du := range tm.over {
		if du < tm.overLow || !queued[blockItem{at: tm.overLow, id: overflowID}] {
			t.Fatalf("key %q: overflow deadline %d, bound %d, queued %v", e.key, du, tm.overLow, queued[blockItem{at: tm.overLow, id: overflowID}])
		}
	}
	if n += len(tm.over); n != tm.n {
		t.Fatalf("key %q: %d armed bits, counted %d", e.key, n, tm.n)
	}
	checkBlockDir(t, e.key, &tm.blocks)
	tm.eachSorted(func(off uint32, _ int64) {
		if !e.v.bm.Contains(off) {
			t.Fatalf("key %q: armed bit %d is not set", e.key, off)
		}
	})
	first, _ := tm.queue.first()
	if tm.heapAt == 0 || tm.heapAt > first || !slices.Contains(s.mu.bitHeap, bitItem{at: tm.heapAt, db: db, e: e, t: tm}) {
		t.Fatalf("key %q: heap item at %d, first block at %d", e.key, tm.heapAt, first)
	}
}

// restore replaces the store by a restored snapshot of it, which must go
// on as the original would.
func (mt *timerModelTest) restore() {
	r := snapRoundTrip(mt.t, mt.s)
	r.SetEventSink(mt.sink)
	mt.s = r
	mt.checkState()
}

func (mt *timerModelTest) sink(db int, key []byte, kind EventKind, off uint64) {
	mt.got = append(mt.got, tmEvent{db, string(key), kind, off})
}

// newTimerModelTest returns a model test on a store whose sink records
// the events.
func newTimerModelTest(t *testing.T, seed int64) *timerModelTest {
	mt := &timerModelTest{t: t, rnd: rand.New(rand.NewSource(seed)), s: New(), now: testNow, counts: map[string]int{}}
	mt.dbs = [2]map[string]*tmKey{{}, {}}
	mt.s.SetEventSink(mt.sink)
	return mt
}

func (mt *timerModelTest) steps() []weighted {
	return []weighted{
		{30, mt.bitsetex}, {12, mt.setbit}, {5, mt.bitfield}, {3, mt.setrange}, {1, mt.appendCmd},
		{2, mt.set}, {2, mt.del}, {3, mt.rename}, {3, mt.copyCmd}, {2, mt.move}, {1, mt.swapdb},
		{1, mt.flushdb}, {2, mt.expire}, {2, mt.rulesCmd}, {10, mt.bitttl}, {8, mt.bitrecent},
		{5, mt.getbit}, {3, mt.bitcount}, {20, mt.advance}, {1, mt.compact},
	}
}

// compact re-packs the store's memory, which must change nothing the
// model sees: later arms, sweeps and reads run on the packed blocks.
func (mt *timerModelTest) compact() { mt.s.Compact() }

func (mt *timerModelTest) step(steps []weighted) {
	pick(mt.rnd, steps)()
	mt.checkState()
}

func TestBitTimerModel(t *testing.T) {
	n := 4000
	if testing.Short() {
		n = 1000
	}
	total := map[string]int{}
	defer func(m int) { calendarMin = m }(calendarMin)
	for seed := int64(1); seed <= 8; seed++ {
		t.Run("seed"+strconv.FormatInt(seed, 10), func(t *testing.T) {
			// Half the seeds give every key's queue a calendar from its
			// fourth item.
			calendarMin = 4096
			if seed%2 == 0 {
				calendarMin = 4
			}
			mt := newTimerModelTest(t, seed)
			steps := mt.steps()
			for i := range n {
				mt.step(steps)
				if i%250 == 249 {
					mt.restore()
				}
			}
			for k, v := range mt.counts {
				total[k] += v
			}
		})
	}
	t.Logf("paths: %v", total)
	for _, path := range []string{"expire", "long", "rule", "overflow"} {
		if total[path] < 20 {
			t.Errorf("the model test ran the %s path %d times only", path, total[path])
		}
	}
}

// checkBlockDir checks the counts of a block directory against its
// contents: no empty page is kept, and every count is its page's.
func checkBlockDir(t testing.TB, key string, d *blockDir) {
	t.Helper()
	total := 0
	for p, pg := range d.pages {
		if pg == nil {
			continue
		}
		n := 0
		for _, b := range pg.blocks {
			if b != nil {
				n++
			}
		}
		if n == 0 || n != pg.n {
			t.Fatalf("key %q: page %d holds %d blocks, counts %d", key, p, n, pg.n)
		}
		total += n
	}
	if total != d.n {
		t.Fatalf("key %q: directory holds %d blocks, counts %d", key, total, d.n)
	}
}
