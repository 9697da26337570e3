package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/presenced/presenced/internal/bitstr"
)

// histStore returns a store recording into a new sink, after a first
// empty batch at testNow, and the sink with that batch's call removed.
func histStore(t *testing.T, cfg HistoryConfig) (*Store, *recordingSink) {
	t.Helper()
	s, sink := New(), &recordingSink{}
	s.SetHistory(sink, cfg)
	s.Apply(nil, testNow, &Replies{})
	sink.calls = nil
	return s, sink
}

// callsOf renders calls one a line, for comparisons.
func callsOf(calls []histCall) string {
	var b strings.Builder
	for _, c := range calls {
		switch c.kind {
		case "count":
			fmt.Fprintf(&b, "count +%d %d %s %d\n", c.ts-testNow, c.db, c.key, c.count)
		case "bitmap":
			fmt.Fprintf(&b, "bitmap +%d %d %s %v %d\n", c.ts-testNow, c.db, c.key, c.bits, c.byteLen)
		case "advance":
			fmt.Fprintf(&b, "advance +%d\n", c.ts-testNow)
		case "purge":
			fmt.Fprintf(&b, "purge +%d %d %s\n", c.ts-testNow, c.db, c.key)
		}
	}
	return b.String()
}

func checkCalls(t *testing.T, sink *recordingSink, want string) {
	t.Helper()
	if got := callsOf(sink.calls); got != strings.TrimPrefix(want, "\n") {
		t.Fatalf("calls\n%s\nwant\n%s", got, strings.TrimPrefix(want, "\n"))
	}
	sink.calls = nil
}

// TestHistoryRecordsAtBoundaries follows one key through writes, bit and
// key expiry and an idle gap of ten years, which must not take a
// boundary at a time.
func TestHistoryRecordsAtBoundaries(t *testing.T) {
	s, sink := histStore(t, HistoryConfig{Interval: 1000})
	do(s, testNow+10, "SETBIT k 1 1")
	do(s, testNow+20, "BITPSETEX k 250 9") // deadline +270, rounded to +300
	do(s, testNow+99, "SETBIT k 3 1")
	do(s, testNow+100, "SETBIT k 4 1") // after the record at +100
	checkCalls(t, sink, `
count +100 0 k 3
advance +100
`)
	do(s, testNow+250, "PEXPIRE k 2000") // gone from +2300 on
	checkCalls(t, sink, `
count +200 0 k 4
advance +200
`)
	// The bit is alive at +300 and gone at +400: that boundary is
	// recorded although no batch came before +450.
	do(s, testNow+450, "SET other x")
	checkCalls(t, sink, `
count +300 0 k 4
count +400 0 k 3
advance +400
`)
	start := time.Now()
	const decade = 10 * 365 * 24 * 3600 * 1000
	s.Apply(nil, testNow+decade+50, &Replies{})
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a gap of ten years took %v", d)
	}
	checkCalls(t, sink, `
count +500 0 other 4
bitmap +1000 0 k [1 3 4] 2
bitmap +1000 0 other [1 2 3 4] 1
count +2300 0 k 0
bitmap +3000 0 k [] 0
advance +`+fmt.Sprint(decade)+`
`)
}

// TestHistoryMarksEveryKeyWritten records the count of every key a batch
// writes, however its writes alternate between keys and databases, and
// of a key written again by the next batch after a boundary.
func TestHistoryMarksEveryKeyWritten(t *testing.T) {
	s, sink := histStore(t, HistoryConfig{Interval: 1000})
	batch := []Command{bmCommand("SETBIT", "a", "1", "1"), bmCommand("SETBIT", "a", "2", "1"),
		bmCommand("SETBIT", "b", "1", "1"), commandOf(1, []string{"SETBIT", "b", "1", "1"}),
		bmCommand("SETBIT", "a", "3", "1")}
	s.Apply(batch, testNow+10, &Replies{})
	s.Apply(nil, testNow+100, &Replies{})
	checkCalls(t, sink, `
count +100 0 a 3
count +100 0 b 1
count +100 1 b 1
advance +100
`)
	s.Apply([]Command{bmCommand("SETBIT", "a", "4", "1")}, testNow+150, &Replies{})
	s.Apply([]Command{bmCommand("SETBIT", "a", "4", "1")}, testNow+250, &Replies{})
	s.Apply(nil, testNow+300, &Replies{})
	checkCalls(t, sink, `
count +200 0 a 4
advance +200
count +300 0 a 4
advance +300
`)
}

// TestHistoryStringBatches records many small strings and a few large
// ones at one boundary: the small ones go to the sink together, the large
// ones in batches of at most maxStringBatch bytes (and one string).
func TestHistoryStringBatches(t *testing.T) {
	s, sink := histStore(t, HistoryConfig{Interval: 100})
	const small, large, largeLen = 1000, 5, 3 << 20
	for i := range small {
		do(s, testNow+10, fmt.Sprintf("SET s%04d ab", i))
	}
	for i := range large {
		do(s, testNow+10, fmt.Sprintf("SETRANGE l%d %d x", i, largeLen-1))
	}
	s.Apply(nil, testNow+100, &Replies{})
	total := 0
	for _, n := range sink.stringBatches {
		if n > maxStringBatch+largeLen {
			t.Errorf("a batch of %d bytes", n)
		}
		total += n
	}
	if want := 2*small + large*largeLen; total != want || len(sink.strings) != small+large {
		t.Fatalf("%d strings of %d bytes in all, want %d of %d", len(sink.strings), total, small+large, want)
	}
	// Two large strings fill a batch, wherever the small ones fall.
	if got := len(sink.stringBatches); got != 3 {
		t.Fatalf("%d batches (%v), want 3", got, sink.stringBatches)
	}
}

// TestHistoryKeyPatterns records only the keys the patterns match.
func TestHistoryKeyPatterns(t *testing.T) {
	s, sink := histStore(t, HistoryConfig{Interval: 100, Keys: []string{"online:*", "x"}})
	for _, k := range []string{"online:1", "offline", "x", "xx"} {
		do(s, testNow+10, "SETBIT "+k+" 0 1")
	}
	s.Apply(nil, testNow+100, &Replies{})
	checkCalls(t, sink, `
count +100 0 online:1 1
count +100 0 x 1
bitmap +100 0 x [0] 1
bitmap +100 0 online:1 [0] 1
advance +100
`)
}

// TestHistoryRecordsStringBytes checks that a string key's snapshot goes
// to the sink as a copy of its bytes, which the writes after the boundary
// (SETRANGE and APPEND edit the bytes in place) leave as they were.
func TestHistoryRecordsStringBytes(t *testing.T) {
	s, sink := histStore(t, HistoryConfig{Interval: 100})
	do(s, testNow+10, "SET k ab")
	s.Apply(nil, testNow+100, &Replies{})
	do(s, testNow+110, "SETRANGE k 0 z")
	do(s, testNow+120, "APPEND k c")
	s.Apply(nil, testNow+200, &Replies{})
	checkCalls(t, sink, `
count +100 0 k 6
bitmap +100 0 k [1 2 7 9 10 14] 2
advance +100
count +200 0 k 12
bitmap +200 0 k [1 2 3 4 6 9 10 14 17 18 22 23] 3
advance +200
`)
	if len(sink.strings) != 2 || string(sink.strings[0]) != "ab" || string(sink.strings[1]) != "zbc" {
		t.Fatalf("the sink holds %q, want the bytes at each boundary: ab, zbc", sink.strings)
	}
}

// TestHistoryRecordsEveryKeyWhenStarting checks that a store whose
// recording starts (a snapshot of version 2, or history turned on again)
// records the present state of every key, and that a store without
// history keeps no recording state.
func TestHistoryRecordsEveryKeyWhenStarting(t *testing.T) {
	var bm bytes.Buffer
	if _, err := bitstr.Bitmap([]byte{0x80, 0x01}).WriteTo(&bm); err != nil {
		t.Fatal(err)
	}
	b := append([]byte(snapshotMagic), 2, 0, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, testNow+30)
	b = binary.LittleEndian.AppendUint64(b, 0)
	b = binary.LittleEndian.AppendUint64(b, 1) // one record
	b = append(b, 3, kindBitmap, 1, 'b', 0, 2) // db 3, kind, key, no TTL, 2 bytes
	b = binary.AppendUvarint(b, uint64(bm.Len()))
	b = append(b, bm.Bytes()...)
	b = append(b, 0, 0) // no armed bits, no rules
	b = resum(append(b, 0, 0, 0, 0))
	s, sink := New(), &recordingSink{}
	s.SetHistory(sink, HistoryConfig{Interval: 200})
	if err := s.Restore(bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
	s.Apply(nil, testNow+99, &Replies{})
	s.Apply(nil, testNow+200, &Replies{})
	checkCalls(t, sink, `
count +100 3 b 2
bitmap +200 3 b [0 15] 2
advance +200
`)

	s.SetHistory(nil, HistoryConfig{})
	execAt(s, testNow+300, 3, bytesArgs("SETBIT b 1 1")...)
	if s.mu.rec.last != 0 || anyKeys(&s.mu.rec.snap) {
		t.Fatalf("history off keeps the state %+v", s.mu.rec)
	}
	s.SetHistory(sink, HistoryConfig{Interval: 200})
	if !s.Due(testNow + 450) {
		t.Fatal("recording turned on, but an empty batch is not due to record the keys")
	}
	s.Apply(nil, testNow+450, &Replies{})
	checkCalls(t, sink, `
count +400 3 b 3
bitmap +400 3 b [0 1 15] 2
advance +400
`)
}

// TestHistoryStateInSnapshot checks that the recording state survives a
// snapshot, to the byte, and stays out of the digest.
func TestHistoryStateInSnapshot(t *testing.T) {
	s, _ := histStore(t, HistoryConfig{Interval: 60_000})
	plain := New()
	for _, st := range []*Store{s, plain} {
		for i, line := range []string{"SETBIT a 1 1", "SETBIT b 2 1", "SET c x", "SETBIT a 9 1"} {
			do(st, testNow+int64(100*i+50), line)
		}
	}
	if s.Digest() != plain.Digest() {
		t.Fatal("the recording state changes the digest")
	}
	if bytes.Equal(snapBytes(t, s), snapBytes(t, plain)) {
		t.Fatal("the snapshot lacks the recording state")
	}
	r := snapRoundTrip(t, s)
	if r.mu.rec.last != testNow+300 || len(r.mu.rec.dirty[0]) != 1 || len(r.mu.rec.snap[0]) != 3 {
		t.Fatalf("restored recording state %+v", r.mu.rec)
	}
}

// TestRestoreValidatesHistory rejects a recording state out of range or
// out of order.
func TestRestoreValidatesHistory(t *testing.T) {
	s, _ := histStore(t, HistoryConfig{})
	do(s, testNow+50, "SETBIT a 1 1")
	do(s, testNow+150, "SETBIT b 1 1")
	data := snapBytes(t, s)
	// The state comes before the keys' versions: last (testNow, 6
	// bytes), one dirty key "b" (db 1 byte, length, key), then two
	// snapshot keys "a", "b".
	tail := []byte{1, 0, 1, 'b', 2, 0, 1, 'a', 0, 1, 'b'}
	end := len(data) - 4 - len(appendVersions(nil, &s.mu.versions))
	if !bytes.Equal(data[end-len(tail):end], tail) {
		t.Fatalf("snapshot ends % x, want % x", data[end-20:end], tail)
	}
	corrupt := func(what string, f func(b []byte)) {
		b := bytes.Clone(data)
		f(b[end-len(tail) : end])
		snapRejects(t, snapVictim(), resum(b), what)
	}
	corrupt("keys out of order", func(b []byte) { b[7], b[10] = 'b', 'a' })
	corrupt("a key twice", func(b []byte) { b[7] = 'b' })
	corrupt("database out of range", func(b []byte) { b[1] = NumDBs })
	lastAt := end - len(tail) - 6 // testNow+100 takes 6 bytes
	b := bytes.Clone(data)
	b[lastAt]++ // not a boundary
	snapRejects(t, snapVictim(), resum(b), "last not a boundary")
}

// TestLoadBitmap installs bitmaps as LoadBitmap's callers do.
func TestLoadBitmap(t *testing.T) {
	s := New()
	do(s, testNow, "SET k x PX 5000")
	s.LoadBitmap(0, "k", roaring.BitmapOf(3, 100), 20)
	s.LoadBitmap(1, "short", roaring.BitmapOf(100), 2)
	s.LoadBitmap(NumDBs, "nowhere", roaring.BitmapOf(1), 1)
	s.LoadBitmap(2, "long", roaring.New(), 1<<63)
	for _, c := range []struct {
		db        int
		cmd, want string
	}{
		{0, "BITCOUNT k", ":2\r\n"}, {0, "STRLEN k", ":20\r\n"}, {0, "PTTL k", ":-1\r\n"},
		{0, "GETBIT k 100", ":1\r\n"}, {1, "STRLEN short", ":13\r\n"}, {2, "STRLEN long", ":536870912\r\n"},
	} {
		if got := execAt(s, testNow, c.db, bytesArgs(c.cmd)...); got != c.want {
			t.Errorf("db %d %s: %q, want %q", c.db, c.cmd, got, c.want)
		}
	}
}

func bytesArgs(line string) [][]byte {
	var args [][]byte
	for _, a := range strings.Fields(line) {
		args = append(args, []byte(a))
	}
	return args
}

// payload is the portable serialization of a bitmap of bits.
func payload(t *testing.T, bits ...uint32) string {
	t.Helper()
	b, err := roaring.BitmapOf(bits...).ToBytes()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestBitrestore(t *testing.T) {
	s := New()
	p := payload(t, 1, 9)
	run := func(want string, args ...string) {
		t.Helper()
		if got := snapDo(s, testNow, 0, args...); got != want {
			t.Fatalf("%q: %q, want %q", args, got, want)
		}
	}
	run(":1\r\n", "BITRESTORE", "k", "2", p)
	run("$2\r\n\x40\x40\r\n", "GET", "k")
	run(":0\r\n", "BITRESTORE", "k", "5", payload(t, 3))
	run(":1\r\n", "PEXPIRE", "k", "5000")
	run(":1\r\n", "BITRESTORE", "k", "5", payload(t, 3), "replace")
	run("$5\r\n\x10\x00\x00\x00\x00\r\n", "GET", "k")
	run(":-1\r\n", "PTTL", "k")
	run(":1\r\n", "BITRESTORE", "empty", "0", payload(t))
	run(":0\r\n", "STRLEN", "empty")
	run(":1\r\n", "EXISTS", "empty")
	run(":1\r\n", "BITRESTORE", "top", "536870912", payload(t, 1<<32-1))
	run(":1\r\n", "GETBIT", "top", "4294967295")

	run("-ERR DUMP payload version or checksum are wrong\r\n", "BITRESTORE", "k", "2", "xyz", "REPLACE")
	run("-ERR DUMP payload version or checksum are wrong\r\n", "BITRESTORE", "k", "2", p+"x")
	run("-ERR DUMP payload version or checksum are wrong\r\n", "BITRESTORE", "k", "2", p[:len(p)-1])
	run("-ERR DUMP payload version or checksum are wrong\r\n", "BITRESTORE", "k", "2", "")
	run("-ERR value is out of range, bytelen must cover the bitmap\r\n", "BITRESTORE", "k", "1", p)
	run("-ERR bytelen is out of range\r\n", "BITRESTORE", "k", "-1", payload(t))
	run("-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n", "BITRESTORE", "k", "536870913", payload(t))
	run("-ERR value is not an integer or out of range\r\n", "BITRESTORE", "k", "x", p)
	run("-ERR syntax error\r\n", "BITRESTORE", "k", "2", p, "FOO")
	run("-ERR wrong number of arguments for 'bitrestore' command\r\n", "BITRESTORE", "k", "2")
	run("$5\r\n\x10\x00\x00\x00\x00\r\n", "GET", "k")
}

func TestHistoryCommands(t *testing.T) {
	s, sink := histStore(t, HistoryConfig{Interval: 1000})
	run := func(want string, args ...string) {
		t.Helper()
		if got := snapDo(s, testNow+10, 0, args...); got != want {
			t.Fatalf("%q: %q, want %q", args, got, want)
		}
	}
	help := snapDo(s, testNow+10, 0, "HISTORY", "help")
	if !strings.HasPrefix(help, "*9\r\n+HISTORY <subcommand>") || !strings.Contains(help, "+PURGE <key>\r\n") {
		t.Fatalf("HISTORY HELP: %q", help)
	}
	run("-ERR HISTORY INFO is served by the server\r\n", "HISTORY", "INFO")
	run("-ERR BITHISTORY is served by the server\r\n", "BITHISTORY", "k", "0", "1")
	run("-ERR unknown subcommand 'nope'. Try HISTORY HELP.\r\n", "HISTORY", "nope")
	run("-ERR wrong number of arguments for 'history|purge' command\r\n", "HISTORY", "PURGE")
	run("-ERR unknown subcommand 'foo'. Try OBJECT HELP.\r\n", "OBJECT", "foo", "k")
	var out Replies
	s.Read([]Command{commandOf(0, []string{"HISTORY", "PURGE", "k"})}, testNow+10, &out)
	if got := string(out.B); got != "-ERR store: write command 'history|purge' on the read path\r\n" {
		t.Fatalf("HISTORY PURGE on the read path: %q", got)
	}
	run(":0\r\n", "SETBIT", "k", "5", "1")
	s.Apply(nil, testNow+1000, &Replies{})
	sink.calls = nil
	s.Apply([]Command{commandOf(2, []string{"HISTORY", "PURGE", "k"})}, testNow+1010, &Replies{})
	s.Apply([]Command{commandOf(0, []string{"HISTORY", "PURGE", "k"})}, testNow+1020, &Replies{})
	s.Apply(nil, testNow+2000, &Replies{})
	checkCalls(t, sink, `
purge +1010 2 k
purge +1020 0 k
count +1100 0 k 1
count +1100 2 k 0
bitmap +2000 0 k [5] 1
bitmap +2000 2 k [] 0
advance +2000
`)
	out.Reset()
	New().Apply([]Command{commandOf(0, []string{"HISTORY", "PURGE", "k"})}, testNow, &out)
	if got := string(out.B); got != "+OK\r\n" {
		t.Fatalf("HISTORY PURGE without history: %q", got)
	}
}

// TestHistoryDirtyKeyAllocatesNothing checks that a write to a key
// already marked since the last boundary costs no allocation.
func TestHistoryDirtyKeyAllocatesNothing(t *testing.T) {
	s, _ := histStore(t, HistoryConfig{Keys: []string{"on*"}})
	cmds := []Command{bmCommand("SETBIT", "online", "7", "1"), bmCommand("SETBIT", "other", "7", "1")}
	var out Replies
	s.Apply(cmds, testNow+1, &out)
	allocs := testing.AllocsPerRun(50, func() {
		out.Reset()
		s.Apply(cmds, testNow+1, &out)
	})
	if allocs != 0 {
		t.Fatalf("SETBIT of a dirty key allocates %v times per batch", allocs)
	}
}

// discardSink drops what it receives.
type discardSink struct{}

func (discardSink) RecordCount(int64, int, string, uint64) {}
func (discardSink) Advance(int64)                          {}
func (discardSink) Purge(int64, int, string)               {}

func (discardSink) RecordBitmap(int64, int, string, *roaring.Bitmap, uint64, *roaring.Bitmap, int64) {
}

func (discardSink) RecordStrings(int64, int, []string, [][]byte) {}

func (discardSink) RecordChanges(int64, int, string, *roaring.Bitmap, uint64, *roaring.Bitmap, int64) bool {
	return true
}

// BenchmarkSETBITHistory is BenchmarkSETBIT's steady state with history
// recording the key: a batch of 64 SETBITs every tick, so every batch
// records a count, and a snapshot every 600 batches.
func BenchmarkSETBITHistory(b *testing.B) {
	s := New()
	s.SetHistory(discardSink{}, HistoryConfig{})
	batches := benchBatches(1<<14, 2_000_000, setbits)
	var out Replies
	now := int64(testNow)
	for _, batch := range batches {
		out.Reset()
		s.Apply(batch, now, &out)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		now += HistoryTick
		out.Reset()
		s.Apply(batches[i%len(batches)], now, &out)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/64, "ns/bit")
}

func TestHistoryInterval(t *testing.T) {
	for _, c := range []struct{ in, want int64 }{
		{0, 60_000}, {-5, 60_000}, {1, 100}, {100, 100}, {450, 500}, {1 << 62, 1_099_511_627_800},
	} {
		s := New()
		s.SetHistory(discardSink{}, HistoryConfig{Interval: c.in})
		if got := s.mu.hist.interval; got != c.want {
			t.Errorf("Interval %d: %d, want %d", c.in, got, c.want)
		}
	}
}

// TestBitChangesFollowEdits applies random edits of every kind to a few
// recorded keys, with a snapshot at every boundary, to a store whose sink
// takes snapshots as the bits changed since the last (and rebuilds them)
// and to one whose sink refuses them: both must record the same bitmaps.
// Bit writes, field writes, bit and key expiry follow the changes; byte
// edits, new values and values moved between keys start anew.
func TestBitChangesFollowEdits(t *testing.T) {
	cfg := HistoryConfig{Interval: HistoryTick}
	s, sink := histStore(t, cfg)
	whole, wholeSink := histStore(t, cfg)
	wholeSink.refuseChanges = true
	rng := rand.New(rand.NewSource(3))
	now := int64(testNow)
	keys := []string{"a", "b", "c"}
	for range 4000 {
		k, k2, off := keys[rng.Intn(len(keys))], keys[rng.Intn(len(keys))], rng.Intn(300)
		var cmd string
		switch rng.Intn(16) {
		case 0, 1, 2, 3:
			cmd = fmt.Sprintf("SETBIT %s %d %d", k, off, rng.Intn(2))
		case 4, 5:
			cmd = fmt.Sprintf("BITPSETEX %s %d %d %d", k, 50+rng.Intn(400), off, rng.Intn(300))
		case 6:
			cmd = fmt.Sprintf("BITFIELD %s SET u8 %d %d", k, off, rng.Intn(256))
		case 7:
			cmd = fmt.Sprintf("BITFIELD %s INCRBY i5 %d %d", k, off, rng.Intn(40)-20)
		case 8:
			cmd = fmt.Sprintf("SETRANGE %s %d xyz", k, rng.Intn(40))
		case 9:
			cmd = fmt.Sprintf("APPEND %s q", k)
		case 10:
			cmd = fmt.Sprintf("RENAME %s %s", k, k2)
		case 11:
			cmd = fmt.Sprintf("COPY %s %s REPLACE", k, k2)
		case 12:
			cmd = fmt.Sprintf("BITOP XOR %s %s %s", k, k, k2)
		case 13:
			cmd = [...]string{"SWAPDB 0 1", "MOVE " + k + " 1", "DEL " + k, "SET " + k + " ab"}[rng.Intn(4)]
		case 14:
			cmd = fmt.Sprintf("PEXPIRE %s %d", k, 50+rng.Intn(500))
		case 15:
			now += int64(rng.Intn(300))
			continue
		}
		now += int64(rng.Intn(40))
		do(s, now, cmd)
		do(whole, now, cmd)
	}
	bitmaps := strings.Count(callsOf(wholeSink.calls), "bitmap")
	t.Logf("%d snapshots, %d as changes", bitmaps, sink.changes)
	if got, want := callsOf(sink.calls), callsOf(wholeSink.calls); got != want {
		t.Fatalf("recorded with changes:\n%.3000s\nwhole:\n%.3000s", got, want)
	}
	sink.checkChanges(t)
	wholeSink.checkChanges(t)
	if sink.changes < bitmaps/4 || sink.changes == bitmaps {
		t.Fatalf("%d snapshots, %d as changes: want most, not all", bitmaps, sink.changes)
	}
	if wholeSink.flipsChecked != sink.changes {
		t.Fatalf("%d whole bitmaps came with their changes, want %d", wholeSink.flipsChecked, sink.changes)
	}
}

// TestBitChangesBounded checks that a key's changes stop being followed
// once they take more than their share of the bitmap's memory, and are
// followed again from the next snapshot.
func TestBitChangesBounded(t *testing.T) {
	s, sink := histStore(t, HistoryConfig{Interval: HistoryTick})
	now := int64(testNow)
	do(s, now, "SETBIT k 0 1")
	do(s, now, "SETRANGE k 0 "+strings.Repeat("\xff", 10000)) // 80,000 bits, in bitmap form
	changes := func(n int) int {
		now += HistoryTick
		for i := range n {
			do(s, now, fmt.Sprintf("SETBIT k %d 0", 17*i))
		}
		before := sink.changes
		now += HistoryTick
		do(s, now, "SETBIT k 0 1") // records the snapshot with the changes since the last
		return sink.changes - before
	}
	changes(0) // the first snapshot after SETRANGE starts following
	if got := changes(500); got != 1 {
		t.Fatalf("500 changes: %d snapshots taken as changes, want 1", got)
	}
	if got := changes(4000); got != 0 {
		t.Fatalf("4000 changes, more memory than an eighth of the bitmap's: %d snapshots taken as changes, want 0", got)
	}
	if got := changes(10); got != 1 {
		t.Fatalf("10 changes after a snapshot: %d snapshots taken as changes, want 1", got)
	}
}

// TestDue checks Due at the edges of each kind of work an empty batch
// does: a key's deadline, a bit's (rounded up to the timer's 100 ms), a
// changed key's count at the next boundary when history is on, and
// nothing once that work is done.
func TestDue(t *testing.T) {
	s := New()
	s.Apply(nil, testNow, &Replies{})
	do(s, testNow+10, "SET k v PX 25")     // gone once the clock passes +35
	do(s, testNow+10, "BITPSETEX b 150 3") // deadline +160, kept until +200
	for _, c := range []struct {
		at  int64
		due bool
	}{{testNow + 35, false}, {testNow + 36, true}} {
		if got := s.Due(c.at); got != c.due {
			t.Fatalf("key expiring at +35: Due(+%d) = %v", c.at-testNow, got)
		}
	}
	s.Apply(nil, testNow+36, &Replies{})
	for _, c := range []struct {
		at  int64
		due bool
	}{{testNow + 36, false}, {testNow + 200, false}, {testNow + 201, true}} {
		if got := s.Due(c.at); got != c.due {
			t.Fatalf("bit expiring at +200: Due(+%d) = %v", c.at-testNow, got)
		}
	}
	s.Apply(nil, testNow+201, &Replies{})
	if got := do(s, testNow+201, "GETBIT b 3"); got != ":0\r\n" || s.Due(testNow+10_000) {
		t.Fatalf("after the bit's tick: GETBIT %q, Due %v", got, s.Due(testNow+10_000))
	}

	h, _ := histStore(t, HistoryConfig{Interval: 1000})
	do(h, testNow+10, "SETBIT k 1 1")
	if h.Due(testNow+99) || !h.Due(testNow+100) {
		t.Fatalf("a changed key: Due(+99) %v, Due(+100) %v; want its count due at +100", h.Due(testNow+99), h.Due(testNow+100))
	}
	h.Apply(nil, testNow+100, &Replies{})
	if h.Due(testNow+999) || !h.Due(testNow+1000) {
		t.Fatalf("a changed key: Due(+999) %v, Due(+1000) %v; want its snapshot due at +1000", h.Due(testNow+999), h.Due(testNow+1000))
	}
	h.Apply(nil, testNow+1000, &Replies{})
	if h.Due(testNow + 3_600_000) {
		t.Fatal("due with nothing left to record")
	}
}
