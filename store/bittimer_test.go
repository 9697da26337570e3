package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/presenced/presenced/internal/bitstr"
)

// TestBitTimerReplies pins down the replies and error texts of the
// per-bit expiry commands. The TTL errors are SETEX's, word for word.
func TestBitTimerReplies(t *testing.T) {
	s := New()
	const now = testNow
	for _, tc := range []struct{ cmd, want string }{
		{"BITSETEX k 0 1", "-ERR invalid expire time in 'bitsetex' command\r\n"},
		{"BITSETEX k -1 1", "-ERR invalid expire time in 'bitsetex' command\r\n"},
		{"BITSETEX k abc 1", "-ERR value is not an integer or out of range\r\n"},
		{"BITSETEX k 9223372036854775807 1", "-ERR invalid expire time in 'bitsetex' command\r\n"},
		{"BITPSETEX k 9223372036854775807 1", "-ERR invalid expire time in 'bitpsetex' command\r\n"},
		{"BITPSETEX k 0 1", "-ERR invalid expire time in 'bitpsetex' command\r\n"},
		{"BITSETEX k 10 1 -1", "-ERR bit offset is not an integer or out of range\r\n"},
		{"BITSETEX k 10 4294967296", "-ERR bit offset is not an integer or out of range\r\n"},
		{"EXISTS k", ":0\r\n"}, // errors change nothing
		{"BITSETEX k 10 1 5 5 1", ":2\r\n"},
		{"BITSETEX k 10 1 7", ":1\r\n"},
		{"BITTTL k 1", ":10\r\n"},
		{"BITPTTL k 7", ":10000\r\n"},
		{"BITPSETEX k 150 9", ":1\r\n"},
		{"BITPTTL k 9", ":200\r\n"}, // rounded up to the tick
		{"BITTTL k 9", ":0\r\n"},
		{"BITPSETEX k 1500 9", ":0\r\n"},
		{"BITTTL k 9", ":2\r\n"}, // 1.5 s rounds half up, as TTL does
		{"BITTTL k 2", ":-2\r\n"},
		{"BITTTL nokey 2", ":-2\r\n"},
		{"BITTTL k x", "-ERR bit offset is not an integer or out of range\r\n"},
		{"SETBIT k 3 1", ":0\r\n"},
		{"BITTTL k 3", ":-1\r\n"},
		{"SETBIT k 1 1", ":1\r\n"}, // SETBIT makes an armed bit persistent
		{"BITTTL k 1", ":-1\r\n"},
		{"BITRECENT k 5", "*2\r\n:3\r\n*3\r\n:5\r\n:7\r\n:9\r\n"},
		{"BITRECENT k 5 LIMIT 1", "*2\r\n:3\r\n*1\r\n:5\r\n"},
		{"BITRECENT k 5 limit 0", "*2\r\n:3\r\n*0\r\n"},
		// Bits armed with a longer TTL than the latest count as newer.
		{"BITRECENT k 0", "*2\r\n:2\r\n*2\r\n:5\r\n:7\r\n"},
		{"BITRECENT k 5 LIMIT -1", "-ERR value is out of range, must be positive\r\n"},
		{"BITRECENT k 5 LIMIT x", "-ERR value is not an integer or out of range\r\n"},
		{"BITRECENT k 5 LIMIT", "-ERR syntax error\r\n"},
		{"BITRECENT k 5 COUNT 1", "-ERR syntax error\r\n"},
		{"BITRECENT k -1", "-ERR value is not an integer or out of range\r\n"},
		{"BITRECENT nokey 5", "*2\r\n:0\r\n*0\r\n"},
		{"SET raw \xff", "+OK\r\n"},
		{"BITSETEX raw 5 0 9", ":1\r\n"}, // a raw string turns into a bitmap
		{"GET raw", "$2\r\n\xff\x40\r\n"},
		{"BITTTLRULES a*", "-ERR CONFIG SET failed (possibly related to argument 'bit-ttl') - Invalid bit-ttl parameters\r\n"},
		{"BITTTLRULES a* x", "-ERR CONFIG SET failed (possibly related to argument 'bit-ttl') - argument couldn't be parsed into an integer\r\n"},
		{"BITTTLRULES a* 0", "-ERR CONFIG SET failed (possibly related to argument 'bit-ttl') - argument must be between 1 and 2147483647 inclusive\r\n"},
		{"BITTTLRULES r* 30", "+OK\r\n"},
		{"SETBIT r1 4 1", ":0\r\n"},
		{"BITTTL r1 4", ":30\r\n"},
		{"BITTTLRULES", "+OK\r\n"},
		{"SETBIT r1 4 1", ":1\r\n"},
		{"BITTTL r1 4", ":-1\r\n"},
	} {
		if got := do(s, now, tc.cmd); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.cmd, got, tc.want)
		}
	}
}

// TestBitTimerEnds arms the highest offsets, deadlines across a rebase
// and past the 16-bit reach in one block, and checks when they expire.
func TestBitTimerEnds(t *testing.T) {
	s := New()
	now := int64(testNow)
	do(s, now, "BITPSETEX k 1000 4294967295 4294967294 0")
	do(s, now, "BITPSETEX k 6000000 4294967293")  // 100 minutes: fits 16 bits
	now += 3_000_000                              // 50 minutes on
	do(s, now, "BITPSETEX k 6000000 4294967292")  // a rebase in the same block
	do(s, now, "BITPSETEX k 30000000 4294967291") // 8 hours: the overflow map
	s.mu.RLock()
	tm := s.mu.dbs[0].keys["k"].v.t
	if tm.over == nil || len(tm.over) != 1 || tm.blocks.get(1<<22-1) == nil {
		t.Fatalf("expected one overflow bit and the last block, got %v %v", tm.over, tm.blocks)
	}
	s.mu.RUnlock()
	for _, tc := range []struct {
		at   int64
		want string // BITCOUNT
	}{
		{testNow + 3_000_000, ":3\r\n"}, // the 1 s bits are gone
		{testNow + 6_000_000, ":3\r\n"},
		{testNow + 6_000_001, ":2\r\n"},
		{now + 6_000_000, ":2\r\n"},
		{now + 6_000_001, ":1\r\n"},
		{now + 30_000_000, ":1\r\n"},
		{now + 30_000_001, ":0\r\n"},
	} {
		s.Apply(nil, tc.at, &Replies{})
		if got := do(s, tc.at, "BITCOUNT k"); got != tc.want {
			t.Fatalf("at +%d: BITCOUNT %q, want %q", tc.at-testNow, got, tc.want)
		}
	}
	if got := do(s, now+30_000_001, "BITPTTL k 0"); got != ":-2\r\n" {
		t.Fatalf("BITPTTL of an expired bit: %q", got)
	}
	if got := do(s, now+30_000_001, "GETBIT k 4294967291"); got != ":0\r\n" {
		t.Fatalf("the overflow bit survived: %q", got)
	}
}

// TestBitTimerCarry checks which commands keep, copy and drop deadlines.
func TestBitTimerCarry(t *testing.T) {
	s := New()
	now := int64(testNow)
	for _, tc := range []struct{ cmd, want string }{
		{"BITSETEX a 10 3", ":1\r\n"},
		{"RENAME a b", "+OK\r\n"},
		{"BITTTL b 3", ":10\r\n"},
		{"COPY b c", ":1\r\n"},
		{"BITSETEX c 20 3", ":0\r\n"}, // the copy is independent
		{"BITTTL b 3", ":10\r\n"},
		{"BITTTL c 3", ":20\r\n"},
		{"MOVE c 1", ":1\r\n"},
		{"SWAPDB 0 1", "+OK\r\n"},
		{"BITTTL c 3", ":20\r\n"},
		{"SWAPDB 0 1", "+OK\r\n"},
		{"SETRANGE b 0 \x10", ":1\r\n"}, // bit 3 stays set
		{"BITTTL b 3", ":10\r\n"},
		{"SETRANGE b 0 \x00", ":1\r\n"},
		{"BITTTL b 3", ":-2\r\n"},
		{"BITSETEX b 10 3", ":1\r\n"},
		{"BITFIELD b SET u4 0 2", "*1\r\n:1\r\n"}, // clears bit 3
		{"BITTTL b 3", ":-2\r\n"},
		{"BITSETEX b 10 3", ":1\r\n"},
		{"BITOP OR b b", ":1\r\n"},
		{"BITTTL b 3", ":-1\r\n"},
		{"BITSETEX b 10 3", ":0\r\n"},
		{"SET b x", "+OK\r\n"}, // 0x78: bit 3 is set, without a deadline now
		{"BITTTL b 3", ":-1\r\n"},
		{"BITSETEX b 10 0", ":1\r\n"},
		{"INCR nope", ":1\r\n"},
		{"SETBIT b 0 0", ":1\r\n"},
		{"BITTTL b 0", ":-2\r\n"},
	} {
		if got := do(s, now, tc.cmd); got != tc.want {
			t.Fatalf("%s: got %q, want %q", tc.cmd, got, tc.want)
		}
	}
	s.Apply(nil, now+20_001, &Replies{})
	if got := execAt(s, now+20_001, 1, []byte("GETBIT"), []byte("c"), []byte("3")); got != ":0\r\n" {
		t.Fatalf("the moved copy's bit did not expire: %q", got)
	}
}

// timerFill arms random bits of a few keys with deadlines near, far, and
// past the 16-bit reach, and sets rules.
func timerFill(rnd *rand.Rand, s *Store, now int64) {
	do(s, now, "BITTTLRULES r* 30 * 7")
	for i := range 200 {
		ttl := []int64{500, 30_000, 3_000_000, 9_000_000}[rnd.Intn(4)]
		k := "k" + strconv.Itoa(rnd.Intn(4))
		do(s, now+int64(i), fmt.Sprintf("BITPSETEX %s %d %d %d", k, ttl, rnd.Intn(5000), rnd.Intn(1<<20)))
	}
	do(s, now, "SETBIT r1 77 1")
}

// TestBitTimerSnapshot round-trips timers and rules, and checks that a
// restored store expires the bits when the original does.
func TestBitTimerSnapshot(t *testing.T) {
	rnd := rand.New(rand.NewSource(3))
	s := New()
	now := int64(testNow)
	timerFill(rnd, s, now)
	r := snapRoundTrip(t, s)
	if got := r.BitTTLRules(); !slices.Equal(got, s.BitTTLRules()) || len(got) != 2 {
		t.Fatalf("rules after restore %v", got)
	}
	for step := range 60 {
		now += rnd.Int63n(400_000)
		for _, st := range []*Store{s, r} {
			st.Apply(nil, now, &Replies{})
		}
		if s.Digest() != r.Digest() {
			t.Fatalf("step %d: the restored store diverged", step)
		}
		if step%20 == 0 {
			r = snapRoundTrip(t, r)
		}
	}
	if got := do(s, now, "BITCOUNT k0"); got != ":0\r\n" {
		t.Fatalf("every bit should have expired: %q", got)
	}
}

// TestBitTimerSnapshotVersion1 restores a version 1 snapshot (no
// deadlines, no rules), built field by field: its bits come back
// persistent.
func TestBitTimerSnapshotVersion1(t *testing.T) {
	var bm bytes.Buffer
	if _, err := bitstr.Bitmap([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x08}).WriteTo(&bm); err != nil {
		t.Fatal(err)
	}
	b := append([]byte(snapshotMagic), 1, 0, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, testNow)
	b = binary.LittleEndian.AppendUint64(b, 0)
	b = binary.LittleEndian.AppendUint64(b, 1)  // one record
	b = append(b, 0, kindBitmap, 1, 'b', 0, 13) // db, kind, key, no TTL, 13 bytes
	b = binary.AppendUvarint(b, uint64(bm.Len()))
	b = append(b, bm.Bytes()...)
	b = resum(append(b, 0, 0, 0, 0))
	r := snapRestore(t, b)
	if got := do(r, testNow, "BITTTL b 100"); got != ":-1\r\n" {
		t.Fatalf("BITTTL after a version 1 restore: %q", got)
	}
	if got := do(r, testNow, "BITCOUNT b"); got != ":1\r\n" {
		t.Fatalf("BITCOUNT after a version 1 restore: %q", got)
	}
}

// TestBitTimerDigest checks that the digest sees a deadline, the latest
// TTL and the rules.
func TestBitTimerDigest(t *testing.T) {
	base := func() *Store {
		s := New()
		do(s, testNow, "SETBIT k 5 1")
		return s
	}
	seen := map[uint64]string{}
	for _, cmds := range [][]string{
		nil,
		{"BITPSETEX k 1000 5"},
		{"BITPSETEX k 1100 5"},
		{"BITPSETEX k 1000 5", "BITPSETEX k 2000 6", "SETBIT k 6 0"},
		{"BITTTLRULES k 10"},
		{"BITTTLRULES k 11"},
	} {
		s := base()
		for _, c := range cmds {
			do(s, testNow, c)
		}
		d := s.Digest()
		if prev, ok := seen[d]; ok {
			t.Fatalf("%q and %q digest alike", cmds, prev)
		}
		seen[d] = fmt.Sprint(cmds)
	}
}

// TestBitTimerApplyEach checks ApplyEach against Apply with timers.
func TestBitTimerApplyEach(t *testing.T) {
	rnd := rand.New(rand.NewSource(5))
	each, whole := New(), New()
	for i := range 400 {
		now := int64(testNow + i*37)
		var batches [][]Command
		for range 1 + rnd.Intn(3) {
			var b []Command
			for range rnd.Intn(4) {
				k := []string{"a", "b"}[rnd.Intn(2)]
				off := strconv.Itoa(rnd.Intn(3000))
				switch rnd.Intn(5) {
				case 0:
					b = append(b, bmCommand("BITPSETEX", k, strconv.Itoa(1+rnd.Intn(300)), off, off+"1"))
				case 1:
					b = append(b, bmCommand("SETBIT", k, off, strconv.Itoa(rnd.Intn(2))))
				case 2:
					b = append(b, bmCommand("BITPTTL", k, off))
				case 3:
					b = append(b, bmCommand("BITRECENT", k, "1", "LIMIT", "3"))
				default:
					b = append(b, bmCommand("BITCOUNT", k))
				}
			}
			batches = append(batches, b)
		}
		checkApplyEach(t, i, each, whole, now, batches)
	}
}

// TestBitTimerNoSinkNoAlloc checks that a BITSETEX batch that only
// re-arms bits allocates nothing without a sink.
func TestBitTimerNoSinkNoAlloc(t *testing.T) {
	s := New()
	cmds := []Command{bmCommand("BITSETEX", "k", "30", "1", "2000", "70000", "9")}
	var out Replies
	now := int64(testNow)
	s.Apply(cmds, now, &out)
	allocs := testing.AllocsPerRun(100, func() {
		now += 50
		out.Reset()
		s.Apply(cmds, now, &out)
	})
	if allocs != 0 {
		t.Fatalf("BITSETEX re-arming allocates %v times per batch", allocs)
	}
}

// TestBitTimerMemory checks the memory MEMORY USAGE reports for a key's
// bitmap and timers, 1M ids armed in a 2M-id space with deadlines over
// 30 s (the density of the bench's 50M in 100M), against what the heap
// grew by when they were armed.
func TestBitTimerMemory(t *testing.T) {
	const space, armed = 2_000_000, 1_000_000
	rnd := rand.New(rand.NewSource(1))
	s := New()
	now := int64(testNow)
	ids := rnd.Perm(space)[:armed]
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < len(ids); i += 1000 {
		args := []string{"BITPSETEX", "online", strconv.Itoa(30_000)}
		for _, id := range ids[i : i+1000] {
			args = append(args, strconv.Itoa(id))
		}
		s.Apply([]Command{bmCommand(args...)}, now+int64(i)*30_000/int64(len(ids)), &Replies{})
	}
	s.mu.RLock()
	v := &s.mu.dbs[0].keys["online"].v
	timers, bitmap := v.t.memoryUsage(), int64(v.bm.GetSizeInBytes())
	s.mu.RUnlock()
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d armed of %d: timers %.1f MB, bitmap %.1f MB (estimates), heap growth %.1f MB",
		armed, space, float64(timers)/1e6, float64(bitmap)/1e6, float64(grown)/1e6)
	if estimate := timers + bitmap; estimate < grown*9/10 || estimate > grown*11/10 {
		t.Errorf("timers and bitmap estimated at %d bytes, the heap grew by %d", estimate, grown)
	}
	runtime.KeepAlive(ids)
	runtime.KeepAlive(s)
}

// batchForm is how a benchmark batch sends its 64 ids.
type batchForm int

const (
	setbits   batchForm = iota // 64 SETBITs
	bitsetex                   // one BITSETEX of 64 ids
	bitsetex1                  // 64 BITSETEXs of one id
)

// benchBatches makes n batches of 64 random ids below space, in form.
func benchBatches(n, space int, form batchForm) [][]Command {
	rnd := rand.New(rand.NewSource(1))
	out := make([][]Command, n)
	for i := range out {
		args := []string{"BITSETEX", "online", "30"}
		for range 64 {
			id := strconv.Itoa(rnd.Intn(space))
			switch form {
			case setbits:
				out[i] = append(out[i], bmCommand("SETBIT", "online", id, "1"))
			case bitsetex1:
				out[i] = append(out[i], bmCommand("BITSETEX", "online", "30", id))
			default:
				args = append(args, id)
			}
		}
		if form == bitsetex {
			out[i] = []Command{bmCommand(args...)}
		}
	}
	return out
}

// benchArm sets the ids of 2^14 batches once, then again and again: the
// steady state of heartbeats. 1M ids among 100M spread over more memory
// than the caches hold; 1M among 2M fit them better.
func benchArm(b *testing.B, form batchForm) {
	for _, space := range []int{100_000_000, 2_000_000} {
		b.Run("space="+strconv.Itoa(space), func(b *testing.B) {
			s := New()
			batches := benchBatches(1<<14, space, form)
			for _, batch := range batches {
				s.Apply(batch, testNow, &Replies{})
			}
			applyBatches(b, s, batches)
		})
	}
}

// applyBatches applies batches of 64 ids to s, one after another and
// again, b.N times in all, and reports the time an id.
func applyBatches(b *testing.B, s *Store, batches [][]Command) {
	var out Replies
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		out.Reset()
		s.Apply(batches[i%len(batches)], testNow, &out)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/64, "ns/bit")
}

// BenchmarkSETBIT sets 64 random ids with 64 SETBITs a batch.
func BenchmarkSETBIT(b *testing.B) { benchArm(b, setbits) }

// BenchmarkBITSETEX arms 64 random ids with one BITSETEX a batch.
func BenchmarkBITSETEX(b *testing.B) { benchArm(b, bitsetex) }

// BenchmarkBITSETEXPipelined arms 64 random ids with 64 BITSETEXs of one
// id a batch, as a pipelining client sends them.
func BenchmarkBITSETEXPipelined(b *testing.B) { benchArm(b, bitsetex1) }

// BenchmarkBitSweep measures a tick of 100 ms over 5M armed ids of 10M
// whose deadlines spread over 30 s: each tick clears about 1/300 of them.
func BenchmarkBitSweep(b *testing.B) {
	rnd := rand.New(rand.NewSource(1))
	ids := rnd.Perm(10_000_000)[:5_000_000]
	var s *Store
	var now int64
	fill := func() {
		s, now = New(), testNow
		for i := 0; i < len(ids); i += 1000 {
			args := []string{"BITPSETEX", "online", "30000"}
			for _, id := range ids[i : i+1000] {
				args = append(args, strconv.Itoa(id))
			}
			s.Apply([]Command{bmCommand(args...)}, testNow+int64(i)*30_000/int64(len(ids)), &Replies{})
		}
		now = testNow + 30_000
	}
	fill()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if now >= testNow+60_000 {
			b.StopTimer()
			fill()
			b.StartTimer()
		}
		now += timerTick
		s.Apply(nil, now, &Replies{})
	}
}

// TestBitTimerSnapshotIsolated takes a snapshot, then changes the
// deadlines it holds in every way (re-arm, disarm, insert, rebase, edit,
// sweep): the snapshot's encoding and the state it restores must be those
// of the moment it was taken, the blocks being shared copy-on-write.
// Compacting the store after the snapshot was taken must not change the
// snapshot either.
func TestBitTimerSnapshotIsolated(t *testing.T) {
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprintf("compact=%v", compact), func(t *testing.T) { testSnapshotIsolated(t, compact) })
	}
}

func testSnapshotIsolated(t *testing.T, compact bool) {
	s := New()
	apply := func(now int64, args ...string) {
		var r Replies
		s.Apply([]Command{bmCommand(args...)}, now, &r)
	}
	offs := func(from, n, step int) []string {
		var out []string
		for i := range n {
			out = append(out, strconv.Itoa(from+i*step))
		}
		return out
	}
	apply(testNow, append([]string{"BITPSETEX", "k", "5000"}, offs(0, 3000, 7)...)...)
	apply(testNow, append([]string{"BITSETEX", "k", "9000"}, offs(3, 50, 1)...)...) // > 16 bits of units: overflow
	apply(testNow, "COPY", "k", "c")
	sn := s.Snapshot()
	digest := s.Digest()
	var before bytes.Buffer
	if _, err := sn.WriteTo(&before); err != nil {
		t.Fatal(err)
	}
	if compact {
		s.Compact()
	}

	apply(testNow+100, append([]string{"BITPSETEX", "k", "60000"}, offs(0, 1000, 7)...)...)
	apply(testNow+100, append([]string{"BITPSETEX", "c", "1"}, offs(1, 1000, 5)...)...)
	apply(testNow+200, "SETBIT", "k", "14", "0")
	apply(testNow+200, "SETRANGE", "k", "100", "\x00\x00\x00\x00")
	apply(testNow+300, "BITFIELD", "c", "SET", "u8", "800", "0")
	apply(testNow+6000, "BITCOUNT", "k") // sweeps what the first arm left
	apply(testNow+7000, append([]string{"BITPSETEX", "k", "7000000"}, offs(2, 500, 11)...)...)

	var after bytes.Buffer
	if _, err := sn.WriteTo(&after); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before.Bytes(), after.Bytes()) {
		t.Fatal("the snapshot changed with the store it was taken from")
	}
	r := New()
	if err := r.Restore(&after); err != nil {
		t.Fatal(err)
	}
	if r.Digest() != digest {
		t.Fatal("the snapshot restores another state than the one it was taken of")
	}
	if s.Digest() == digest {
		t.Fatal("the changes after the snapshot changed nothing: the test tests nothing")
	}
}

// TestCompactTimers checks that compacting leaves every block's deadlines
// at exactly their count, and that arming, disarming and sweeping on the
// packed blocks give what they give on the others.
func TestCompactTimers(t *testing.T) {
	rnd := rand.New(rand.NewSource(1))
	packed, loose := newBitTimers(), newBitTimers()
	nowu := int64(testNow / timerTick)
	arm := func(off uint32, du int64) {
		packed.arm(off, du, nowu)
		loose.arm(off, du, nowu)
	}
	for range 20_000 {
		arm(uint32(rnd.Intn(1<<20)), nowu+int64(rnd.Intn(600)))
	}
	before := packed.memoryUsage()
	packed.compact()
	deadlines := 0
	for _, b := range packed.blocks.all() {
		if cap(b.dl) != len(b.dl) {
			t.Fatalf("a block keeps %d deadlines in a capacity of %d", len(b.dl), cap(b.dl))
		}
		deadlines += len(b.dl)
	}
	if after := packed.memoryUsage(); deadlines != packed.n || after >= before {
		t.Fatalf("compacted %d deadlines of %d armed bits: memory %d bytes, was %d", deadlines, packed.n, after, before)
	}
	for range 20_000 {
		off := uint32(rnd.Intn(1 << 20))
		if rnd.Intn(3) == 0 {
			packed.disarm(off)
			loose.disarm(off)
		} else {
			arm(off, nowu+int64(rnd.Intn(600)))
		}
	}
	due := nowu + 300
	gotOut, _ := packed.sweep(due, nil, math.MaxInt)
	wantOut, _ := loose.sweep(due, nil, math.MaxInt)
	slices.Sort(gotOut)
	slices.Sort(wantOut)
	if !slices.Equal(gotOut, wantOut) {
		t.Fatalf("sweeping the packed timers expired %d bits, the others %d", len(gotOut), len(wantOut))
	}
	type deadline struct {
		off uint32
		du  int64
	}
	var got, want []deadline
	packed.eachSorted(func(off uint32, du int64) { got = append(got, deadline{off, du}) })
	loose.eachSorted(func(off uint32, du int64) { want = append(want, deadline{off, du}) })
	if !slices.Equal(got, want) {
		t.Fatalf("the packed timers hold %d deadlines, the others %d, or other ones", len(got), len(want))
	}
}

// TestHeap checks the heap helpers against a sorted slice: random pushes,
// pops and rebuilds with heapInit, many equal items among them.
func TestHeap(t *testing.T) {
	rnd := rand.New(rand.NewSource(9))
	var h []blockItem
	var model []int64
	for i := range 20000 {
		switch r := rnd.Intn(10); {
		case r < 5:
			it := blockItem{at: rnd.Int63n(500), id: uint32(i)}
			heapPush(&h, it)
			model = append(model, it.at)
		case r < 9 && len(h) > 0:
			got := heapPop(&h).at
			slices.Sort(model)
			if got != model[0] {
				t.Fatalf("step %d: popped %d, want %d", i, got, model[0])
			}
			model = model[1:]
		case r == 9:
			rnd.Shuffle(len(h), func(a, b int) { h[a], h[b] = h[b], h[a] })
			heapInit(h)
		}
		if len(h) != len(model) {
			t.Fatalf("step %d: %d items, want %d", i, len(h), len(model))
		}
	}
}

// TestExpiryBudget arms more bits with one deadline than an Apply expires
// and checks that each Apply expires about expiryBudget of them (whole
// blocks), that BitsBehind says so until the
// last, and that every bit is reported once.
func TestExpiryBudget(t *testing.T) {
	s := New()
	var expired []uint64
	s.SetEventSink(func(_ int, _ []byte, kind EventKind, off uint64) {
		if kind == EventExpire {
			expired = append(expired, off)
		}
	})
	const n = 3*expiryBudget + 1000
	now := int64(testNow)
	for lo := 0; lo < n; lo += 1000 {
		cmd := "BITPSETEX k 500"
		for off := lo; off < min(lo+1000, n); off++ {
			cmd += " " + strconv.Itoa(2*off) // every other offset
		}
		if got := do(s, now, cmd); got != ":"+strconv.Itoa(min(1000, n-lo))+"\r\n" {
			t.Fatalf("%s...: %q", cmd[:30], got)
		}
	}
	now += 600
	left := n
	for apply := 1; left > 0; apply++ {
		if apply > 4 {
			t.Fatalf("%d bits still set after %d Applies", left, apply-1)
		}
		before := len(expired)
		do(s, now, "SET other x") // any entry goes on with the expiry
		took := len(expired) - before
		left -= took
		if took < min(expiryBudget, left+took) || took >= expiryBudget+2*blockSize {
			t.Fatalf("Apply %d expired %d bits, want the budget %d up to a block more", apply, took, expiryBudget)
		}
		if got := do(s, now, "BITCOUNT k"); got != ":"+strconv.Itoa(left)+"\r\n" {
			t.Fatalf("after Apply %d: BITCOUNT %q, want %d", apply, got, left)
		}
		if s.BitsBehind() != (left > 0) {
			t.Fatalf("after Apply %d, %d bits left: BitsBehind %v", apply, left, s.BitsBehind())
		}
	}
	sorted := slices.Clone(expired)
	slices.Sort(sorted)
	for i, off := range sorted {
		if off != uint64(2*i) {
			t.Fatalf("expired offsets %v..., want every other offset below %d once", sorted[:min(len(sorted), 10)], 2*n)
		}
	}
}

// TestBudgetedExpiryAfterRestore arms, in an order that leaves the queues
// lazy items and shapes unlike a rebuilt queue's, more due bits than
// several Applies expire, in keys and blocks whose bounds tie, then
// restores a snapshot of the store and ticks both: each Apply must leave
// the same state in both, as on replicas of which one restarted.
func TestBudgetedExpiryAfterRestore(t *testing.T) {
	for _, withCalendar := range []bool{false, true} {
		if withCalendar {
			defer func(n int) { calendarMin = n }(calendarMin)
			calendarMin = 4
		}
		rng := rand.New(rand.NewSource(79))
		s := New()
		now := int64(testNow)
		const keys, perKey = 4, 3 * expiryBudget
		for k := range keys {
			offs := rng.Perm(perKey * 4)[:perKey]
			for lo := 0; lo < perKey; lo += 500 {
				cmd := "BITPSETEX k" + strconv.Itoa(k) + " " + strconv.Itoa(1000+rng.Intn(3)*100)
				for _, off := range offs[lo:min(lo+500, perKey)] {
					cmd += " " + strconv.Itoa(off)
				}
				do(s, now+int64(rng.Intn(200)), cmd)
			}
			// Re-arm some earlier (new queue items) and some later (the
			// old items go stale).
			for _, off := range offs[:perKey/3] {
				do(s, now+300, "BITPSETEX k"+strconv.Itoa(k)+" "+strconv.Itoa(200+rng.Intn(2)*500)+" "+strconv.Itoa(off))
			}
		}
		now += 300
		r := snapRoundTrip(t, s)
		now += 2000
		var out Replies
		for apply := 0; ; apply++ {
			s.Apply(nil, now, &out)
			r.Apply(nil, now, &out)
			if s.Digest() != r.Digest() {
				t.Fatalf("calendar %v: after Apply %d the restored store differs", withCalendar, apply)
			}
			// BitsBehind may differ: it also counts a stale item, which
			// only the store with a history holds.
			if !s.BitsBehind() && !r.BitsBehind() {
				if apply < 2 {
					t.Fatalf("calendar %v: all expired in %d Applies: the budget did not cut", withCalendar, apply+1)
				}
				break
			}
		}
		for k := range keys {
			if got := do(s, now, "BITCOUNT k"+strconv.Itoa(k)); got != ":0\r\n" {
				t.Fatalf("calendar %v: BITCOUNT k%d %q after the expiry", withCalendar, k, got)
			}
		}
	}
}

// TestExpiryBudgetCountsVisits arms one bit in each of many blocks in one
// Apply and re-arms them all later, so that a TTL on every block's bound
// passes at once with nothing to expire: the visits alone must spread
// over Applies, as the budget allows, and expire nothing.
func TestExpiryBudgetCountsVisits(t *testing.T) {
	s := New()
	now := int64(testNow)
	const blocks = 4 * expiryBudget / visitCost
	offs := func() string {
		var b strings.Builder
		for i := range blocks {
			b.WriteString(" " + strconv.Itoa(i*blockSize))
		}
		return b.String()
	}()
	do(s, now, "BITPSETEX k 1000"+offs)
	do(s, now+500, "BITPSETEX k 1000"+offs) // the bounds stay at now+1000
	now += 1200
	applies := 0
	for {
		do(s, now, "SET other x")
		applies++
		if !s.BitsBehind() {
			break
		}
		if applies > 10 {
			t.Fatal("still behind after 10 Applies")
		}
	}
	if want := blocks * visitCost / expiryBudget; applies < want {
		t.Fatalf("%d blocks visited in %d Applies, want at least %d", blocks, applies, want)
	}
	if got := do(s, now, "BITCOUNT k"); got != ":"+strconv.Itoa(blocks)+"\r\n" {
		t.Fatalf("BITCOUNT %q, want %d: a re-armed bit expired", got, blocks)
	}
	do(s, now+400, "SET other x")
	for s.BitsBehind() {
		do(s, now+400, "SET other x")
	}
	if got := do(s, now+400, "BITCOUNT k"); got != ":0\r\n" {
		t.Fatalf("BITCOUNT %q after the re-armed deadlines", got)
	}
}

// TestBudgetedExpiryWithHistory runs the same commands and ticks on a
// store that records history and one that does not, with more bits due
// than an Apply's budget, at deadlines spread over several history
// boundaries between two Applies, and a key TTL among them: recording
// must not change where an Apply stops, so both must stay equal, as
// replicas with and without history must, and an Apply must keep to one
// budget however many boundaries it crosses.
func TestBudgetedExpiryWithHistory(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	rec, plain := New(), New()
	rec.SetHistory(&recordingSink{}, HistoryConfig{Interval: 1000})
	expired := 0
	plain.SetEventSink(func(_ int, _ []byte, kind EventKind, _ uint64) {
		if kind == EventExpire {
			expired++
		}
	})
	now := int64(testNow)
	both := func(line string) {
		if a, b := do(rec, now, line), do(plain, now, line); a != b {
			t.Fatalf("%.40s: %q with history, %q without", line, a, b)
		}
	}
	for k := range 3 {
		key := "k" + strconv.Itoa(k)
		for lo := 0; lo < 2*expiryBudget; lo += 400 {
			cmd := "BITPSETEX " + key + " " + strconv.Itoa(1000+100*rng.Intn(8))
			for range 400 {
				cmd += " " + strconv.Itoa(rng.Intn(1<<20))
			}
			both(cmd)
		}
	}
	both("PEXPIRE k1 1350")
	now += 900
	for apply := 0; ; apply++ {
		expired = 0
		both("SET other x")
		if rec.Digest() != plain.Digest() {
			t.Fatalf("after Apply %d the stores differ", apply)
		}
		// The budget is the Apply's, however many boundaries it crosses.
		if expired > expiryBudget+blockSize {
			t.Fatalf("Apply %d expired %d bits, over the budget of %d", apply, expired, expiryBudget)
		}
		// BitsBehind may differ, as it counts stale items too.
		if !rec.BitsBehind() && !plain.BitsBehind() && now > testNow+2000 {
			break
		}
		if apply > 100 {
			t.Fatal("still behind after 100 Applies")
		}
		now += 250 // past two or three history boundaries
	}
}

// benchNew sets 64 new random ids a batch in a 100M-id space already
// holding 3M: a heartbeat of users coming online, each one an insert into
// the bitmap (and the timers).
func benchNew(b *testing.B, form batchForm) {
	s := New()
	var out Replies
	for _, batch := range benchBatches(3_000_000/64, 100_000_000, form) {
		out.Reset()
		s.Apply(batch, testNow, &out)
	}
	rnd := rand.New(rand.NewSource(2))
	ids := make([]string, 64)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for i := range ids {
			ids[i] = strconv.Itoa(rnd.Intn(100_000_000))
		}
		var batch []Command
		if form == setbits {
			for _, id := range ids {
				batch = append(batch, bmCommand("SETBIT", "online", id, "1"))
			}
		} else {
			batch = []Command{bmCommand(append([]string{"BITSETEX", "online", "30"}, ids...)...)}
		}
		out.Reset()
		s.Apply(batch, testNow, &out)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/64, "ns/bit")
}

// BenchmarkSETBITNew sets 64 new ids with 64 SETBITs a batch.
func BenchmarkSETBITNew(b *testing.B) { benchNew(b, setbits) }

// BenchmarkBITSETEXNew arms 64 new ids with one BITSETEX a batch.
func BenchmarkBITSETEXNew(b *testing.B) { benchNew(b, bitsetex) }

// BenchmarkBITSETEXOnline re-arms users online, 64 a batch in one
// BITSETEX, as the benchmark's BITSETEX rows do: 10M users among 100M ids
// are armed first, about a hundred in each timer block, so that re-arming
// one reads and writes a block and its deadlines out of the caches.
func BenchmarkBITSETEXOnline(b *testing.B) {
	const space, users = 100_000_000, 10_000_000
	s := New()
	rnd := rand.New(rand.NewSource(1))
	online := make([]string, 0, users)
	for len(online) < users {
		args := []string{"BITSETEX", "online", "3600"}
		for range 1000 {
			id := strconv.Itoa(rnd.Intn(space))
			online = append(online, id)
			args = append(args, id)
		}
		s.Apply([]Command{bmCommand(args...)}, testNow, &Replies{})
	}
	batches := make([][]Command, 1<<14)
	for i := range batches {
		args := []string{"BITSETEX", "online", "90"}
		for range 64 {
			args = append(args, online[rnd.Intn(len(online))])
		}
		batches[i] = []Command{bmCommand(args...)}
	}
	applyBatches(b, s, batches)
}
