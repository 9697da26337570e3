package store

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strconv"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/presenced/presenced/internal/bitstr"
)

// TestHistoryModel applies random batches at increasing log times to a
// store that records history and to a map-based model, and checks what
// the sink received: at every boundary B, the newest count of each
// recorded key at or before B is the model's count at B, and at every
// snapshot boundary the newest bitmap is the model's. A twin restored
// from a snapshot taken mid-run makes the same calls from then on, and a
// store without history, fed the same batches, ends in the same state.

// histCall is one call a HistorySink received.
type histCall struct {
	kind    string // count, bitmap, advance or purge
	ts      int64
	db      int
	key     string
	count   uint64
	bits    []uint32
	byteLen uint64
}

// recordingSink keeps every call it receives. It takes changes on top of a
// key's last snapshot (unless refuseChanges) and records them as the
// bitmap they make, so that its calls read the same either way.
type recordingSink struct {
	calls         []histCall
	last          map[hmRef]snapAt // each key's newest snapshot
	refuseChanges bool
	changes       int      // snapshots taken as changes
	wrongLive     int      // changes whose live bitmap was not the one they make
	flipsChecked  int      // whole bitmaps given with the changes since the last one
	wrongFlips    int      // those whose changes do not make them
	strings       [][]byte // what RecordStrings received, as received
	stringBatches []int    // the bytes of each RecordStrings call
}

// checkChanges fails t if the store offered changes that do not make the
// bitmap they came with.
func (r *recordingSink) checkChanges(t testing.TB) {
	t.Helper()
	if r.wrongLive > 0 {
		t.Fatalf("%d changes came with a live bitmap they do not make", r.wrongLive)
	}
	if r.wrongFlips > 0 {
		t.Fatalf("%d of %d whole bitmaps came with changes that do not make them", r.wrongFlips, r.flipsChecked)
	}
}

// snapAt is a snapshot a sink received.
type snapAt struct {
	ts int64
	bm *roaring.Bitmap
}

func (r *recordingSink) RecordCount(ts int64, db int, key string, count uint64) {
	r.calls = append(r.calls, histCall{kind: "count", ts: ts, db: db, key: key, count: count})
}

func (r *recordingSink) RecordBitmap(ts int64, db int, key string, bm *roaring.Bitmap, byteLen uint64, flips *roaring.Bitmap, since int64) {
	if prev, ok := r.last[hmRef{db, key}]; ok && flips != nil && prev.ts == since {
		r.flipsChecked++
		if !bm.Equals(roaring.Xor(prev.bm, flips)) {
			r.wrongFlips++
		}
	}
	r.calls = append(r.calls, histCall{kind: "bitmap", ts: ts, db: db, key: key, bits: bm.ToArray(), byteLen: byteLen})
	if r.last == nil {
		r.last = map[hmRef]snapAt{}
	}
	r.last[hmRef{db, key}] = snapAt{ts, bm.Clone()}
}

func (r *recordingSink) RecordStrings(ts int64, db int, keys []string, raws [][]byte) {
	n := 0
	for _, raw := range raws {
		n += len(raw)
	}
	r.stringBatches = append(r.stringBatches, n)
	for i, key := range keys {
		r.strings = append(r.strings, raws[i])
		r.RecordBitmap(ts, db, key, bitstr.Bitmap(raws[i]), uint64(len(raws[i])), nil, 0)
	}
}

func (r *recordingSink) RecordChanges(ts int64, db int, key string, bm *roaring.Bitmap, byteLen uint64, flips *roaring.Bitmap, since int64) bool {
	prev, ok := r.last[hmRef{db, key}]
	if r.refuseChanges || !ok || prev.ts != since {
		return false
	}
	r.changes++
	r.RecordBitmap(ts, db, key, roaring.Xor(prev.bm, flips), byteLen, nil, 0)
	if !bm.Equals(roaring.Xor(prev.bm, flips)) {
		r.wrongLive++
	}
	return true
}

func (r *recordingSink) Advance(ts int64) {
	r.calls = append(r.calls, histCall{kind: "advance", ts: ts})
}

func (r *recordingSink) Purge(ts int64, db int, key string) {
	r.calls = append(r.calls, histCall{kind: "purge", ts: ts, db: db, key: key})
}

// hmKey is a key of the model: its set bits with their deadlines.
type hmKey struct {
	bits     map[uint32]int64 // set bit -> deadline in ms, 0 for none
	n        int64            // byte length
	expireAt int64
}

func (k *hmKey) clone() *hmKey {
	c := *k
	c.bits = maps.Clone(k.bits)
	return &c
}

// aliveAt tells whether the key exists at time t, as the store's rule
// says.
func (k *hmKey) aliveAt(t int64) bool { return k != nil && (k.expireAt == 0 || t <= k.expireAt) }

// bitsAt returns the bits set at time t, in order.
func (k *hmKey) bitsAt(t int64) []uint32 {
	var out []uint32
	for off, dl := range k.bits {
		if dl == 0 || t <= roundUp(dl) {
			out = append(out, off)
		}
	}
	slices.Sort(out)
	return out
}

// hmRef names a key of a database.
type hmRef struct {
	db  int
	key string
}

// hmVariant is a configuration of the model test.
type hmVariant struct {
	name     string
	cfg      HistoryConfig
	recorded map[string]bool // which of hmKeys the configuration records
}

var hmKeys = []string{"a", "b", "c", "x:1", "x:2", "z"}

var hmVariants = []hmVariant{
	{"all", HistoryConfig{Interval: 1000}, map[string]bool{"a": true, "b": true, "c": true, "x:1": true, "x:2": true, "z": true}},
	{"patterns", HistoryConfig{Interval: 450, Keys: []string{"[ab]", "x:*"}}, map[string]bool{"a": true, "b": true, "x:1": true, "x:2": true}},
}

type histModelTest struct {
	t       *testing.T
	rnd     *rand.Rand
	v       hmVariant
	s       *Store
	sink    *recordingSink
	plain   *Store // the same batches without history
	twin    *Store // restored from a snapshot of s mid-run, or nil
	twinOut *recordingSink
	twinAt  int // len(sink.calls) when the twin was made
	now     int64
	dbs     [2]map[string]*hmKey
	// What the sink recorded so far, as history would answer.
	counts  map[hmRef]uint64
	snaps   map[hmRef]histCall
	seen    int   // calls checked
	checked int64 // boundaries checked up to here
	ops     []string
	stats   map[string]int
	steps   int // steps taken
}

// dueEvery is how many steps apart checkDue runs: it copies both stores,
// which under the race detector costs more than the rest of a step.
const dueEvery = 4

// hmOp is a command and what it does to the model.
type hmOp struct {
	db    int
	args  []string
	model func()
}

func (mt *histModelTest) key() string { return hmKeys[mt.rnd.Intn(len(hmKeys))] }
func (mt *histModelTest) db() int     { return mt.rnd.Intn(2) }

func (mt *histModelTest) offset() uint32 {
	if mt.rnd.Intn(10) == 0 {
		return uint32(mt.rnd.Intn(5000))
	}
	return uint32(mt.rnd.Intn(40))
}

func (mt *histModelTest) create(db int, k string) *hmKey {
	if mt.dbs[db][k] == nil {
		mt.dbs[db][k] = &hmKey{bits: map[uint32]int64{}}
	}
	return mt.dbs[db][k]
}

// expire removes what expires at now, as a batch's sweep does.
func (mt *histModelTest) expire(now int64) {
	for _, d := range mt.dbs {
		for name, k := range d {
			if !k.aliveAt(now) {
				delete(d, name)
				continue
			}
			for off, dl := range k.bits {
				if dl != 0 && roundUp(dl) < now {
					delete(k.bits, off)
				}
			}
		}
	}
}

func (mt *histModelTest) setbit() hmOp {
	db, k, off, v := mt.db(), mt.key(), mt.offset(), mt.rnd.Intn(10) < 7
	bit := "0"
	if v {
		bit = "1"
	}
	return hmOp{db, []string{"SETBIT", k, fmt.Sprint(off), bit}, func() {
		key := mt.create(db, k)
		if v {
			key.bits[off] = 0
		} else {
			delete(key.bits, off)
		}
		key.n = max(key.n, int64(off/8)+1)
	}}
}

func (mt *histModelTest) bitpsetex() hmOp {
	db, k, ms := mt.db(), mt.key(), int64(1+mt.rnd.Intn(3000))
	offs := []uint32{mt.offset(), mt.offset()}
	return hmOp{db, []string{"BITPSETEX", k, fmt.Sprint(ms), fmt.Sprint(offs[0]), fmt.Sprint(offs[1])}, func() {
		key := mt.create(db, k)
		for _, off := range offs {
			key.bits[off] = mt.now + ms
			key.n = max(key.n, int64(off/8)+1)
		}
	}}
}

func (mt *histModelTest) del() hmOp {
	db, k := mt.db(), mt.key()
	return hmOp{db, []string{"DEL", k}, func() { delete(mt.dbs[db], k) }}
}

// keyOf returns a model key holding raw bytes b.
func keyOf(b []byte) *hmKey {
	k := &hmKey{bits: map[uint32]int64{}, n: int64(len(b))}
	for off := range uint32(len(b)) * 8 {
		if b[off/8]&(0x80>>(off%8)) != 0 {
			k.bits[off] = 0
		}
	}
	return k
}

func (mt *histModelTest) set() hmOp {
	db, k := mt.db(), mt.key()
	b := make([]byte, mt.rnd.Intn(4))
	mt.rnd.Read(b)
	return hmOp{db, []string{"SET", k, string(b)}, func() { mt.dbs[db][k] = keyOf(b) }}
}

func (mt *histModelTest) bitop() hmOp {
	db, dst, a, b := mt.db(), mt.key(), mt.key(), mt.key()
	return hmOp{db, []string{"BITOP", "OR", dst, a, b}, func() {
		r := &hmKey{bits: map[uint32]int64{}}
		for _, src := range []string{a, b} {
			if k := mt.dbs[db][src]; k != nil {
				for off := range k.bits {
					r.bits[off] = 0
				}
				r.n = max(r.n, k.n)
			}
		}
		if r.n == 0 {
			delete(mt.dbs[db], dst)
			return
		}
		mt.dbs[db][dst] = r
	}}
}

func (mt *histModelTest) rename() hmOp {
	db, src, dst := mt.db(), mt.key(), mt.key()
	return hmOp{db, []string{"RENAME", src, dst}, func() {
		if k := mt.dbs[db][src]; k != nil && src != dst {
			delete(mt.dbs[db], src)
			mt.dbs[db][dst] = k
		}
	}}
}

func (mt *histModelTest) flushdb() hmOp {
	db := mt.db()
	return hmOp{db, []string{"FLUSHDB"}, func() { mt.dbs[db] = map[string]*hmKey{} }}
}

func (mt *histModelTest) flushall() hmOp {
	return hmOp{mt.db(), []string{"FLUSHALL"}, func() { mt.dbs = [2]map[string]*hmKey{{}, {}} }}
}

func (mt *histModelTest) pexpire() hmOp {
	db, k, ms := mt.db(), mt.key(), int64(1+mt.rnd.Intn(3000))
	return hmOp{db, []string{"PEXPIRE", k, fmt.Sprint(ms)}, func() {
		if key := mt.dbs[db][k]; key != nil {
			key.expireAt = mt.now + ms
		}
	}}
}

func (mt *histModelTest) copyOther() hmOp {
	db, src, dst := mt.db(), mt.key(), mt.key()
	return hmOp{db, []string{"COPY", src, dst, "DB", fmt.Sprint(1 - db), "REPLACE"}, func() {
		if k := mt.dbs[db][src]; k != nil {
			mt.dbs[1-db][dst] = k.clone()
		}
	}}
}

func (mt *histModelTest) move() hmOp {
	db, k := mt.db(), mt.key()
	return hmOp{db, []string{"MOVE", k, fmt.Sprint(1 - db)}, func() {
		if key := mt.dbs[db][k]; key != nil && mt.dbs[1-db][k] == nil {
			delete(mt.dbs[db], k)
			mt.dbs[1-db][k] = key
		}
	}}
}

func (mt *histModelTest) swapdb() hmOp {
	return hmOp{0, []string{"SWAPDB", "0", "1"}, func() { mt.dbs[0], mt.dbs[1] = mt.dbs[1], mt.dbs[0] }}
}

func (mt *histModelTest) bitrestore() hmOp {
	db, k := mt.db(), mt.key()
	bm := roaring.New()
	for range mt.rnd.Intn(5) {
		bm.Add(mt.offset())
	}
	n := int64(mt.rnd.Intn(3))
	if !bm.IsEmpty() {
		n += int64(bm.Maximum()/8) + 1
	}
	payload, err := bm.ToBytes()
	if err != nil {
		mt.t.Fatal(err)
	}
	return hmOp{db, []string{"BITRESTORE", k, fmt.Sprint(n), string(payload), "REPLACE"}, func() {
		key := &hmKey{bits: map[uint32]int64{}, n: n}
		for _, off := range bm.ToArray() {
			key.bits[off] = 0
		}
		mt.dbs[db][k] = key
	}}
}

func (mt *histModelTest) purge() hmOp {
	return hmOp{mt.db(), []string{"HISTORY", "PURGE", mt.key()}, func() {}}
}

// advance moves time on: mostly within a tick or a few, sometimes across
// snapshots, now and then across many minutes of idle boundaries.
func (mt *histModelTest) advance() {
	switch r := mt.rnd.Intn(100); {
	case r < 50:
		mt.now += int64(mt.rnd.Intn(150))
	case r < 80:
		mt.now += int64(mt.rnd.Intn(1500))
	case r < 98:
		mt.now += int64(mt.rnd.Intn(20_000))
	default:
		mt.now += int64(mt.rnd.Intn(300_000))
	}
}

func commandOf(db int, args []string) Command {
	cmd := Command{DB: db}
	for _, a := range args {
		cmd.Args = append(cmd.Args, []byte(a))
	}
	return cmd
}

// apply applies cmds at now to s, as one Apply or, split in two, through
// ApplyEach.
func (mt *histModelTest) apply(s *Store, cmds []Command, each bool) {
	if !each || len(cmds) < 2 {
		s.Apply(cmds, mt.now, &Replies{})
		return
	}
	half := len(cmds) / 2
	s.ApplyEach(mt.now, [][]Command{cmds[:half], cmds[half:]}, []*Replies{{}, {}}, nil)
}

func (mt *histModelTest) step(steps []weighted, ops *[]hmOp) {
	mt.advance()
	if mt.steps++; mt.steps%dueEvery == 0 {
		mt.checkDue(mt.s)
		mt.checkDue(mt.plain)
	}
	var cmds []Command
	*ops = (*ops)[:0]
	for range mt.rnd.Intn(5) {
		pick(mt.rnd, steps)()
	}
	for _, op := range *ops {
		cmds = append(cmds, commandOf(op.db, op.args))
		mt.ops = append(mt.ops, fmt.Sprintf("%d@%d %q", op.db, mt.now, op.args))
	}
	mt.apply(mt.s, cmds, mt.rnd.Intn(2) == 0)
	mt.apply(mt.plain, cmds, false)
	if mt.twin != nil {
		mt.apply(mt.twin, cmds, mt.rnd.Intn(2) == 0)
	}
	mt.walk()
	mt.expire(mt.now)
	for _, op := range *ops {
		op.model()
	}
	if mt.twin == nil && mt.now%HistoryTick != 0 && mt.rnd.Intn(150) == 0 {
		mt.makeTwin()
	}
}

// checkDue checks st.Due at now against what an empty batch at now does to
// a copy of st: when nothing is due it changes no key and records nothing
// but an Advance; and after it nothing is due at now, unless the expiry
// budget ran out (a leader that proposes a tick while something is due
// would otherwise tick for ever).
func (mt *histModelTest) checkDue(st *Store) {
	mt.t.Helper()
	due := st.Due(mt.now)
	var buf bytes.Buffer
	if _, err := st.Snapshot().WriteTo(&buf); err != nil {
		mt.t.Fatal(err)
	}
	cp, sink := New(), &recordingSink{}
	if st.mu.hist != nil {
		cp.SetHistory(sink, mt.v.cfg)
	}
	if err := cp.Restore(&buf); err != nil {
		mt.t.Fatal(err)
	}
	before := keysDigest(cp)
	cp.Apply(nil, mt.now, &Replies{})
	after := keysDigest(cp)
	if !due {
		if before != after {
			mt.fail("nothing due at %d, yet an empty batch changed the keys", mt.now)
		}
		for _, c := range sink.calls {
			if c.kind != "advance" {
				mt.fail("nothing due at %d, yet an empty batch recorded %+v", mt.now, c)
			}
		}
		mt.stats["quiet"]++
	} else {
		mt.stats["due"]++
	}
	if cp.Due(mt.now) && !cp.BitsBehind() {
		mt.fail("still due at %d after an empty batch then", mt.now)
	}
}

// keysDigest is st's digest without its time.
func keysDigest(st *Store) uint64 {
	sn := st.Snapshot()
	sn.now = 0
	return sn.Digest()
}

// makeTwin restores a snapshot of s, taken between boundaries, into a
// store recording into a sink of its own.
func (mt *histModelTest) makeTwin() {
	var buf bytes.Buffer
	if _, err := mt.s.Snapshot().WriteTo(&buf); err != nil {
		mt.t.Fatal(err)
	}
	mt.twin, mt.twinOut = New(), &recordingSink{}
	mt.twin.SetHistory(mt.twinOut, mt.v.cfg)
	if err := mt.twin.Restore(&buf); err != nil {
		mt.t.Fatal(err)
	}
	mt.twinAt = len(mt.sink.calls)
	mt.stats["twin"]++
}

// walk checks the calls the sink received since the last walk.
func (mt *histModelTest) walk() {
	mt.t.Helper()
	for ; mt.seen < len(mt.sink.calls); mt.seen++ {
		c := mt.sink.calls[mt.seen]
		ref := hmRef{c.db, c.key}
		switch c.kind {
		case "count", "bitmap":
			if c.ts <= mt.checked || c.ts%HistoryTick != 0 || c.ts > mt.now {
				mt.fail("call %d %+v: stamped at a boundary already passed or ahead of %d", mt.seen, c, mt.now)
			}
			if !mt.v.recorded[c.key] {
				mt.fail("call %d %+v: key not recorded", mt.seen, c)
			}
			mt.checkThrough(c.ts - HistoryTick)
			mt.stats[c.kind]++
			if c.kind == "count" {
				mt.counts[ref] = c.count
			} else {
				mt.snaps[ref] = c
			}
		case "advance":
			if c.ts%HistoryTick != 0 || c.ts <= mt.checked || c.ts > mt.now {
				mt.fail("call %d: Advance(%d) after %d at %d", mt.seen, c.ts, mt.checked, mt.now)
			}
			mt.checkThrough(c.ts)
		case "purge":
			if c.ts != mt.now {
				mt.fail("call %d: Purge at %d, now %d", mt.seen, c.ts, mt.now)
			}
			delete(mt.counts, ref)
			delete(mt.snaps, ref)
			mt.stats["purge"]++
		}
	}
	if want := mt.now - mt.now%HistoryTick; mt.checked != want {
		mt.fail("at %d: advanced to %d, want %d", mt.now, mt.checked, want)
	}
}

// checkThrough checks every boundary after the last checked up to b
// against what was recorded so far.
func (mt *histModelTest) checkThrough(b int64) {
	mt.t.Helper()
	for at := mt.checked + HistoryTick; at <= b; at += HistoryTick {
		for db := range mt.dbs {
			for _, key := range hmKeys {
				if !mt.v.recorded[key] {
					continue
				}
				mt.checkAt(at, hmRef{db, key})
			}
		}
	}
	mt.checked = max(mt.checked, b)
}

func (mt *histModelTest) checkAt(at int64, ref hmRef) {
	mt.t.Helper()
	k := mt.dbs[ref.db][ref.key]
	var bits []uint32
	n := int64(0)
	if k.aliveAt(at) {
		bits, n = k.bitsAt(at), k.n
	}
	if got := mt.counts[ref]; got != uint64(len(bits)) {
		mt.fail("db %d key %q at %d: recorded count %d, model %d", ref.db, ref.key, at, got, len(bits))
	}
	if at%mt.s.mu.hist.interval != 0 {
		return
	}
	if s := mt.snaps[ref]; !slices.Equal(s.bits, bits) || s.byteLen != uint64(n) {
		mt.fail("db %d key %q at %d: recorded bitmap %v of %d bytes (at %d), model %v of %d", ref.db, ref.key, at, s.bits, s.byteLen, s.ts, bits, n)
	}
}

func (mt *histModelTest) fail(format string, args ...any) {
	mt.t.Helper()
	last := mt.ops[max(0, len(mt.ops)-15):]
	mt.t.Fatalf(format+"\nlast commands:\n%s", append(args, joinLines(last))...)
}

func joinLines(lines []string) string {
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	return b.String()
}

func newHistModelTest(t *testing.T, seed int64, v hmVariant) *histModelTest {
	mt := &histModelTest{
		t: t, rnd: rand.New(rand.NewSource(seed)), v: v, s: New(), sink: &recordingSink{}, plain: New(),
		now: testNow, counts: map[hmRef]uint64{}, snaps: map[hmRef]histCall{}, stats: map[string]int{},
	}
	mt.dbs = [2]map[string]*hmKey{{}, {}}
	mt.s.SetHistory(mt.sink, v.cfg)
	mt.s.Apply(nil, mt.now, &Replies{})
	mt.plain.Apply(nil, mt.now, &Replies{})
	if len(mt.sink.calls) != 1 || fmt.Sprint(mt.sink.calls[0]) != fmt.Sprint(histCall{kind: "advance", ts: testNow}) {
		t.Fatalf("first apply: calls %+v", mt.sink.calls)
	}
	mt.seen, mt.checked = 1, testNow
	return mt
}

func TestHistoryModel(t *testing.T) {
	for _, v := range hmVariants {
		for seed := int64(1); seed <= 4; seed++ {
			t.Run(v.name+"/"+strconv.FormatInt(seed, 10), func(t *testing.T) {
				mt := newHistModelTest(t, seed, v)
				var ops []hmOp
				add := func(f func() hmOp) func() { return func() { ops = append(ops, f()) } }
				steps := []weighted{
					{30, add(mt.setbit)}, {20, add(mt.bitpsetex)}, {5, add(mt.del)}, {5, add(mt.set)},
					{5, add(mt.bitop)}, {4, add(mt.rename)}, {1, add(mt.flushdb)}, {6, add(mt.pexpire)},
					{3, add(mt.copyOther)}, {2, add(mt.move)}, {3, add(mt.swapdb)}, {3, add(mt.bitrestore)},
					{2, add(mt.purge)}, {1, add(mt.flushall)},
				}
				for range 600 {
					mt.step(steps, &ops)
				}
				mt.finish()
			})
		}
	}
}

// finish checks the twin's calls and every store's state.
func (mt *histModelTest) finish() {
	mt.t.Helper()
	if mt.s.Digest() != mt.plain.Digest() {
		mt.t.Fatal("recording history changed the store's state")
	}
	mt.stats["changes"] = mt.sink.changes
	mt.t.Logf("calls checked: %v", mt.stats)
	mt.sink.checkChanges(mt.t)
	for _, k := range []string{"count", "bitmap", "changes", "purge", "twin", "quiet", "due"} {
		if mt.stats[k] == 0 {
			mt.t.Errorf("no %s in the run: %v", k, mt.stats)
		}
	}
	if mt.twin == nil {
		return
	}
	if mt.twin.Digest() != mt.s.Digest() {
		mt.t.Fatal("the restored twin's state differs")
	}
	if got, want := fmt.Sprint(mt.twinOut.calls), fmt.Sprint(mt.sink.calls[mt.twinAt:]); got != want {
		mt.t.Fatalf("the restored twin recorded\n%.2000s\nthe original\n%.2000s", got, want)
	}
}
