package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
)

// snapDo runs one command, given as strings, on s at time now in
// database db and returns its reply.
func snapDo(s *Store, now int64, db int, args ...string) string {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return execAt(s, now, db, b...)
}

// snapBytes encodes a snapshot of s.
func snapBytes(t testing.TB, s *Store) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := s.Snapshot().WriteTo(&buf)
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("WriteTo: %d bytes counted, %d written, %v", n, buf.Len(), err)
	}
	return buf.Bytes()
}

// snapRestore restores data into a new store.
func snapRestore(t testing.TB, data []byte) *Store {
	t.Helper()
	s := New()
	if err := s.Restore(bytes.NewReader(data)); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	return s
}

// snapRoundTrip snapshots s, restores the snapshot into a new store and
// checks that the copy has the same digest, counters and keyspace, and
// encodes to the very same bytes.
func snapRoundTrip(t testing.TB, s *Store) *Store {
	t.Helper()
	data := snapBytes(t, s)
	r := snapRestore(t, data)
	if got, want := r.Digest(), s.Digest(); got != want {
		t.Fatalf("digest %x after restore, want %x", got, want)
	}
	if got, want := r.Stats(), s.Stats(); got != want {
		t.Fatalf("stats %+v after restore, want %+v", got, want)
	}
	if got, want := r.Keyspace(), s.Keyspace(); !slices.Equal(got, want) {
		t.Fatalf("keyspace %+v after restore, want %+v", got, want)
	}
	if again := snapBytes(t, r); !bytes.Equal(again, data) {
		t.Fatalf("the restored store encodes to other bytes (%d, %d restored)", len(again), len(data))
	}
	return r
}

// snapDBs are the databases the random keyspaces use.
var snapDBs = []int{0, 1, 7, 15}

// snapFill fills s with random keys at times from now on, of every kind
// the store holds: raw strings (as SET leaves them, edited in place,
// integers, copied integers, INCRBYFLOAT's integers, empty), bitmaps
// (sparse, dense, with bits near 2^32, empty), with and without TTLs,
// and keys whose deadline has passed but that no tick has removed. It returns the last time used.
func snapFill(rng *rand.Rand, s *Store, now int64, keys int) int64 {
	randBytes := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return string(b)
	}
	for i := 0; i < keys; i++ {
		db := snapDBs[rng.IntN(len(snapDBs))]
		k := "k" + strconv.Itoa(i) + randBytes(rng.IntN(3))
		off := func(limit uint64) string { return strconv.FormatUint(rng.Uint64N(limit), 10) }
		switch rng.IntN(10) {
		case 0:
			snapDo(s, now, db, "set", k, randBytes(rng.IntN(60)))
		case 1:
			snapDo(s, now, db, "set", k, strconv.FormatInt(rng.Int64N(20000)-100, 10))
			if rng.IntN(3) == 0 {
				snapDo(s, now, db, "incrbyfloat", k, "0") // an integer that is no "int"
			}
			if rng.IntN(2) == 0 {
				snapDo(s, now, db, "copy", k, k+"c")
			}
		case 2:
			snapDo(s, now, db, "set", k, randBytes(rng.IntN(10)))
			snapDo(s, now, db, "append", k, randBytes(rng.IntN(10)))
			snapDo(s, now, db, "setrange", k, off(30), randBytes(1+rng.IntN(5)))
		case 3:
			for range 1 + rng.IntN(50) {
				snapDo(s, now, db, "setbit", k, off(1_000_000), "1")
			}
		case 4:
			snapDo(s, now, db, "set", k, randBytes(4096+rng.IntN(8192)))
			snapDo(s, now, db, "setbit", k, "3", "1") // a dense bitmap
		case 5:
			snapDo(s, now, db, "setbit", k, strconv.FormatUint(1<<32-1-rng.Uint64N(100_000), 10), "1")
			snapDo(s, now, db, "setbit", k, off(1<<32), "1")
		case 6:
			snapDo(s, now, db, "setbit", k, off(100_000), "0") // zero bits, some length
		case 7:
			snapDo(s, now, db, "setbit", k+"s", off(70_000), "1")
			snapDo(s, now, db, "bitop", "not", k, k+"s") // mostly ones
		case 8:
			snapDo(s, now, db, "set", k, "", "px", strconv.FormatInt(1+rng.Int64N(100_000), 10))
		case 9:
			snapDo(s, now, db, "set", k, randBytes(8), "pxat", "1") // stored, already expired
		}
		if rng.IntN(3) == 0 {
			snapDo(s, now, db, "pexpire", k, strconv.FormatInt(1+rng.Int64N(100_000), 10))
		}
		now += rng.Int64N(3)
	}
	return now
}

// snapReads are the read commands compared key by key, "K" standing for
// the key; GET is added for strings short enough to materialize.
var snapReads = [][]string{
	{"strlen", "K"}, {"bitcount", "K"}, {"pttl", "K"}, {"pexpiretime", "K"}, {"exists", "K"}, {"type", "K"},
	{"object", "encoding", "K"}, {"object", "refcount", "K"},
	{"getrange", "K", "0", "63"}, {"getrange", "K", "-20", "-1"},
	{"bitpos", "K", "1"}, {"bitpos", "K", "0"}, {"bitcount", "K", "-100", "-1", "bit"},
	{"getbit", "K", "4294967295"},
}

// snapReplies reads every key of s at time now with snapReads, GET and
// the keyspace commands, and returns the replies.
func snapReplies(s *Store, now int64) []string {
	var out []string
	for db := range NumDBs {
		out = append(out, snapDo(s, now, db, "keys", "*"), snapDo(s, now, db, "dbsize"), snapDo(s, now, db, "scan", "0", "count", "3"))
		for _, k := range snapKeys(s, db) {
			for _, r := range snapReads {
				args := slices.Clone(r)
				args[slices.Index(args, "K")] = k
				out = append(out, snapDo(s, now, db, args...))
			}
			strlen := snapDo(s, now, db, "strlen", k)
			if n, _ := strconv.Atoi(strings.TrimSuffix(strlen[1:], "\r\n")); n <= 1<<20 {
				out = append(out, snapDo(s, now, db, "get", k))
			}
		}
	}
	return out
}

// snapKeys lists the keys database db stores, live or not, in index
// order.
func snapKeys(s *Store, db int) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var keys []string
	s.mu.dbs[db].index.Scan(func(e *entry) bool {
		keys = append(keys, e.key)
		return true
	})
	return keys
}

// TestSnapshotRoundTrip restores snapshots of random keyspaces into new
// stores, which must hold the same state and answer every read alike,
// now and after the TTLs run out.
func TestSnapshotRoundTrip(t *testing.T) {
	for seed := range uint64(5) {
		rng := rand.New(rand.NewPCG(seed, 1))
		s := New()
		now := snapFill(rng, s, testNow, 20+int(seed)*10)
		r := snapRoundTrip(t, s)
		for _, at := range []int64{now, now + 50_000, now + 200_000} {
			got, want := snapReplies(r, at), snapReplies(s, at)
			if len(got) != len(want) {
				t.Fatalf("seed %d at %d: %d replies after restore, want %d", seed, at, len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("seed %d at %d: reply %d is %q after restore, want %q", seed, at, i, clipText(got[i]), clipText(want[i]))
				}
			}
		}
	}
}

// TestSnapshotRestoredStoreKeepsWorking applies the same commands to a
// store and to its restored copy: the replies, the expiry of the
// restored TTLs on a tick, and the counters must stay the same.
func TestSnapshotRestoredStoreKeepsWorking(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 2))
	s := New()
	now := snapFill(rng, s, testNow, 60)
	r := snapRoundTrip(t, s)
	for i := range 200 {
		db := snapDBs[rng.IntN(len(snapDBs))]
		keys := snapKeys(s, db)
		k := "new" + strconv.Itoa(i)
		if len(keys) > 0 && rng.IntN(4) > 0 {
			k = keys[rng.IntN(len(keys))]
		}
		cmd := [][]string{
			{"setbit", k, strconv.Itoa(rng.IntN(100_000)), "1"},
			{"append", k, "xyz"},
			{"setrange", k, strconv.Itoa(rng.IntN(40)), "ab"},
			{"incr", k},
			{"del", k},
			{"pexpire", k, strconv.Itoa(1 + rng.IntN(300_000))},
			{"persist", k},
			{"move", k, "3"},
			{"rename", k, k + "r"},
		}[rng.IntN(9)]
		now += int64(rng.IntN(2_000))
		if got, want := snapDo(r, now, db, cmd...), snapDo(s, now, db, cmd...); got != want {
			t.Fatalf("%q at %d: %q on the restored store, want %q", cmd, now, clipText(got), clipText(want))
		}
	}
	var out Replies
	for _, at := range []int64{now + 100_000, now + 1_000_000} {
		s.Apply(nil, at, &out)
		r.Apply(nil, at, &out)
		if r.Digest() != s.Digest() || r.Stats() != s.Stats() || !slices.Equal(r.Keyspace(), s.Keyspace()) {
			t.Fatalf("after a tick at %d: stats %+v keyspace %+v, want %+v %+v", at, r.Stats(), r.Keyspace(), s.Stats(), s.Keyspace())
		}
	}
	if s.Stats().ExpiredKeys == 0 {
		t.Fatal("no key expired: the test does not exercise restored TTLs")
	}
	for _, ks := range r.Keyspace() {
		if ks.Expires != 0 {
			t.Fatalf("db %d keeps %d keys with a TTL after the last deadline", ks.DB, ks.Expires)
		}
	}
}

// TestSnapshotIsACopy changes the store in every way while a snapshot
// taken before is being written: the snapshot must still hold the state
// of when it was taken (and -race must see no shared memory).
func TestSnapshotIsACopy(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 3))
	s := New()
	now := snapFill(rng, s, testNow, 80)
	for db := range 2 {
		snapDo(s, now, db, "set", "raw", "0123456789abcdef")
		snapDo(s, now, db, "append", "raw", "ghij") // spare capacity, edited in place below
		snapDo(s, now, db, "setbit", "bm", "1000", "1")
	}
	// A bitmap with dense and run containers, shared copy-on-write.
	for i := range 6000 {
		snapDo(s, now, 0, "setbit", "dense", strconv.Itoa(i*3), "1")
	}
	snapDo(s, now, 0, "bitfield", "dense", "set", "u32", "100000", "4294967295")
	want := s.Digest()
	sn := s.Snapshot()
	done := make(chan []byte)
	go func() {
		var buf bytes.Buffer
		if _, err := sn.WriteTo(&buf); err != nil {
			t.Errorf("WriteTo: %v", err)
		}
		done <- buf.Bytes()
	}()
	for db := range 2 {
		for i := range 100 {
			snapDo(s, now, db, "setrange", "raw", strconv.Itoa(i%20), "Z")
			snapDo(s, now, db, "append", "raw", "!")
			snapDo(s, now, db, "setbit", "bm", strconv.Itoa(i*97), "1")
			snapDo(s, now, db, "setbit", "bm", "1000", "0")
			snapDo(s, now, 0, "setbit", "dense", strconv.Itoa(i*7), "0")
			snapDo(s, now, 0, "setbit", "dense", strconv.Itoa(100000+i%32), "0")
		}
	}
	for _, db := range snapDBs {
		for _, k := range snapKeys(s, db)[:3] {
			snapDo(s, now, db, "setbit", k, "5", "1")
			snapDo(s, now, db, "pexpire", k, "1")
		}
	}
	s.Apply(nil, now+10, &Replies{})
	data := <-done
	if got := snapRestore(t, data).Digest(); got != want {
		t.Fatalf("snapshot restores to digest %x, want %x from when it was taken", got, want)
	}
	snapDo(s, now, 0, "flushall")
	if got := snapRestore(t, data).Digest(); got != want {
		t.Fatalf("after FLUSHALL, snapshot restores to digest %x, want %x", got, want)
	}
}

// resum returns a copy of data with its checksum recomputed, so that a
// corruption reaches the field checks.
func resum(data []byte) []byte {
	c := slices.Clone(data)
	if len(c) >= 4 {
		binary.LittleEndian.PutUint32(c[len(c)-4:], crc32.Checksum(c[:len(c)-4], castagnoli))
	}
	return c
}

// snapVictim is a store with some content, which a bad snapshot must
// leave as it is.
func snapVictim() *Store {
	s := New()
	snapDo(s, testNow, 0, "set", "victim", "v", "px", "5000")
	snapDo(s, testNow, 2, "setbit", "bits", "77", "1")
	return s
}

// snapRejects checks that restoring data into s fails with ErrBadSnapshot
// and leaves s unchanged.
func snapRejects(t *testing.T, s *Store, data []byte, what string) {
	t.Helper()
	digest, stats := s.Digest(), s.Stats()
	err := s.Restore(bytes.NewReader(data))
	if !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("%s: Restore returned %v, want ErrBadSnapshot", what, err)
	}
	if s.Digest() != digest || s.Stats() != stats {
		t.Fatalf("%s: the failed Restore changed the store", what)
	}
	if !strings.HasPrefix(err.Error(), "store: snapshot: ") {
		t.Fatalf("%s: error %q lacks the package prefix", what, err)
	}
}

// snapSmall is a snapshot of a little of everything: raw strings of each
// kind, bitmaps of array and run containers, TTLs, two databases, a
// counter. (A bitmap container is 8 KB; the round trips cover those.)
func snapSmall(t testing.TB) []byte {
	s := New()
	snapDo(s, testNow, 0, "set", "s", "hello")
	snapDo(s, testNow, 0, "set", "i", "42", "px", "100")
	snapDo(s, testNow, 0, "copy", "i", "ic")
	snapDo(s, testNow, 0, "append", "s", "!")
	snapDo(s, testNow, 1, "setbit", "b", "4294967295", "1")
	snapDo(s, testNow, 1, "setbit", "b", "3", "1")
	snapDo(s, testNow, 0, "set", "gone", "x", "px", "1")
	s.Apply(nil, testNow+5, &Replies{})       // expires "gone"
	putBitmap(s, "run", 9000, 65_000, 66_000) // run containers on both sides of 2^16
	return snapBytes(t, s)
}

// TestSnapshotsAtOnce takes snapshots from two goroutines while a third
// writes to bitmaps shared copy-on-write and re-arms bit deadlines: each
// snapshot's digest is that of the store it restores to, and the race
// detector sees no two copies mark what they share at once.
func TestSnapshotsAtOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 4))
	s := New()
	now := snapFill(rng, s, testNow, 20)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() { // on through the writes, and without them after
			defer wg.Done()
			for range 60 {
				sn := s.Snapshot()
				var buf bytes.Buffer
				if _, err := sn.WriteTo(&buf); err != nil {
					t.Error(err)
					return
				}
				restored := New()
				if err := restored.Restore(&buf); err != nil {
					t.Error(err)
					return
				}
				if got, want := restored.Digest(), sn.Digest(); got != want {
					t.Errorf("a snapshot digests as %x and restores to %x", want, got)
					return
				}
			}
		}()
	}
	for i := range 300 {
		snapDo(s, now, 0, "bitsetex", "armed", "60", strconv.Itoa(i%500*131))
		snapDo(s, now, 0, "setbit", "bm", strconv.Itoa(i*7), "1")
	}
	wg.Wait()
}

// TestRestoreRejectsCorruption restores damaged snapshots: every
// truncation, a bit flipped in every byte (a different bit from byte to
// byte; with the checksum left as it is, and recomputed), a wrong magic or version, and extra bytes.
func TestRestoreRejectsCorruption(t *testing.T) {
	data := snapSmall(t)
	s := snapVictim()
	snapRoundTrip(t, snapRestore(t, data))
	for i := range len(data) {
		snapRejects(t, s, data[:i], fmt.Sprintf("truncated to %d bytes", i))
	}
	for i := range len(data) {
		bad := slices.Clone(data)
		bad[i] ^= 1 << (i % 8)
		snapRejects(t, s, bad, fmt.Sprintf("bit %d of byte %d flipped", i%8, i))
		snapAcceptsOnlyValid(t, s, resum(bad))
	}
	magic := slices.Clone(data)
	copy(magic, "PRESENCED-SNAPSHOX")
	snapRejects(t, s, resum(magic), "wrong magic")
	version := slices.Clone(data)
	binary.LittleEndian.PutUint32(version[len(snapshotMagic):], snapshotVersion+1)
	snapRejects(t, s, resum(version), "wrong version")
	snapRejects(t, s, append(slices.Clone(data), 0), "a byte after the checksum")
	snapRejects(t, s, nil, "empty input")
}

// snapAcceptsOnlyValid restores data, whose checksum is right but whose
// content may be damaged, into s: it must either fail with
// ErrBadSnapshot leaving s unchanged, or give a store that works and
// snapshots back to the same state.
func snapAcceptsOnlyValid(t testing.TB, s *Store, data []byte) {
	t.Helper()
	digest := s.Digest()
	err := s.Restore(bytes.NewReader(data))
	if err != nil {
		if !errors.Is(err, ErrBadSnapshot) || s.Digest() != digest {
			t.Fatalf("Restore failed with %v and changed the store: %v", err, s.Digest() != digest)
		}
		return
	}
	snapCheckBitmaps(t, s)
	r := snapRoundTrip(t, s)
	for db := range NumDBs {
		for _, k := range snapKeys(r, db) {
			for _, cmd := range snapReads {
				args := slices.Clone(cmd)
				args[slices.Index(args, "K")] = k
				snapDo(r, testNow, db, args...)
			}
		}
	}
	r.Apply(nil, 1<<62, &Replies{})
	for _, ks := range r.Keyspace() {
		if ks.Expires != 0 {
			t.Fatalf("db %d keeps %d keys with a TTL after the end of time", ks.DB, ks.Expires)
		}
	}
}

// snapCheckBitmaps checks that every bitmap of s is well formed: roaring's
// own checks pass and its count matches its members.
func snapCheckBitmaps(t testing.TB, s *Store) {
	t.Helper()
	for db, d := range s.mu.dbs {
		for _, e := range d.keys {
			bm := e.v.bm
			if bm == nil {
				continue
			}
			if err := bm.Validate(); err != nil || uint64(len(bm.ToArray())) != bm.GetCardinality() {
				t.Fatalf("db %d key %q: a malformed bitmap was restored (%v)", db, e.key, err)
			}
		}
	}
}

// TestRestoreValidatesFields restores snapshots with a right checksum
// and one invalid field each.
func TestRestoreValidatesFields(t *testing.T) {
	s := snapVictim()
	base := func() (*Store, *Snapshot) {
		src := New()
		snapDo(src, testNow, 0, "set", "a", "123")
		snapDo(src, testNow, 0, "setbit", "b", "100", "1")
		snapDo(src, testNow, 0, "setbit", "b", "200", "1")
		return src, src.Snapshot()
	}
	encode := func(sn *Snapshot) []byte {
		var buf bytes.Buffer
		if _, err := sn.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	find := func(sn *Snapshot, key string) *snapEntry {
		for i := range sn.dbs[0] {
			if sn.dbs[0][i].key == key {
				return &sn.dbs[0][i]
			}
		}
		t.Fatalf("no key %q", key)
		return nil
	}
	for _, tc := range []struct {
		what   string
		change func(sn *Snapshot)
	}{
		{"a key twice", func(sn *Snapshot) { sn.dbs[0] = append(sn.dbs[0], sn.dbs[0][0]) }},
		{"a bit beyond the length", func(sn *Snapshot) { find(sn, "b").v.n = 12 }},
		{"a string longer than the limit", func(sn *Snapshot) { find(sn, "b").v.n = MaxStringLen + 1 }},
		{"a negative deadline", func(sn *Snapshot) { find(sn, "a").expireAt = -5 }},
		{"a negative log time", func(sn *Snapshot) { sn.now = -1 }},
		{"a negative counter", func(sn *Snapshot) { sn.stats.ExpiredKeys = -1 }},
		{"an integer encoding of a non-integer", func(sn *Snapshot) {
			find(sn, "a").v = value{raw: []byte("12a"), enc: encUnsharedInt}
		}},
	} {
		_, sn := base()
		tc.change(sn)
		snapRejects(t, s, encode(sn), tc.what)
	}
	_, sn := base()
	good := encode(sn)
	rec := snapshotHeaderLen // the first record: db, then kind
	for _, tc := range []struct {
		what string
		at   int
		b    byte
	}{
		{"database 16", rec, NumDBs},
		{"database 255", rec, 255},
		{"an unknown record kind", rec + 1, kindNotInt + 1},
	} {
		bad := slices.Clone(good)
		bad[tc.at] = tc.b
		snapRejects(t, s, resum(bad), tc.what)
	}
	unsorted := slices.Clone(good)
	at := bytes.Index(unsorted, []byte{100, 0, 200, 0}) // the array container of "b"
	copy(unsorted[at:], []byte{200, 0, 100, 0})
	snapRejects(t, s, resum(unsorted), "an unsorted bitmap container")
	count := slices.Clone(good)
	binary.LittleEndian.PutUint64(count[snapshotHeaderLen-8:], 3)
	snapRejects(t, s, resum(count), "one record more than there are")
	binary.LittleEndian.PutUint64(count[snapshotHeaderLen-8:], 1)
	snapRejects(t, s, resum(count), "one record less than there are")
}

// failingReader fails after delivering some bytes.
type failingReader struct {
	data []byte
}

var errDisk = errors.New("disk on fire")

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, errDisk
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

// TestRestoreReportsReadErrors checks that a failing reader's error is
// returned as such, not as a bad snapshot.
func TestRestoreReportsReadErrors(t *testing.T) {
	data := snapSmall(t)
	s := snapVictim()
	digest := s.Digest()
	for _, n := range []int{0, 10, len(data) / 2, len(data)} {
		err := s.Restore(&failingReader{data: data[:n]})
		if !errors.Is(err, errDisk) || errors.Is(err, ErrBadSnapshot) || s.Digest() != digest {
			t.Fatalf("reader failing after %d bytes: %v", n, err)
		}
	}
}

// TestSnapshotWriteError checks that WriteTo returns the writer's error.
func TestSnapshotWriteError(t *testing.T) {
	s := New()
	snapDo(s, testNow, 0, "set", "k", strings.Repeat("x", 3*ioChunk))
	for _, limit := range []int{0, 5, ioChunk + 3} {
		w := &limitedWriter{room: limit}
		n, err := s.Snapshot().WriteTo(w)
		if !errors.Is(err, errDisk) || n != int64(limit) {
			t.Fatalf("writer failing after %d bytes: WriteTo returned %d, %v", limit, n, err)
		}
	}
}

// limitedWriter accepts room bytes, then fails.
type limitedWriter struct {
	room int
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	n := min(len(p), w.room)
	w.room -= n
	if n < len(p) {
		return n, errDisk
	}
	return n, nil
}

// TestDigestSeesEveryDifference makes one small change at a time to
// copies of random stores: another bit, length, deadline, key name,
// database or log time must change the digest.
func TestDigestSeesEveryDifference(t *testing.T) {
	a, b := New(), New()
	snapDo(a, testNow, 0, "set", "a", "v")
	snapDo(b, testNow, 0, "set", "b", "v")
	if a.Digest() == b.Digest() {
		t.Fatal("one key under two names digests alike")
	}
	for seed := range uint64(3) {
		rng := rand.New(rand.NewPCG(seed, 4))
		s := New()
		now := snapFill(rng, s, testNow, 20)
		data := snapBytes(t, s)
		base := s.Digest()
		for change := range 9 {
			for range 3 {
				c := snapRestore(t, data)
				db := snapDBs[rng.IntN(len(snapDBs))]
				var keys []string
				for _, k := range snapKeys(c, db) {
					if snapDo(c, now, db, "exists", k) == ":1\r\n" {
						keys = append(keys, k)
					}
				}
				if len(keys) == 0 {
					continue
				}
				k := keys[rng.IntN(len(keys))]
				strlen, _ := strconv.ParseInt(strings.TrimSuffix(snapDo(c, now, db, "strlen", k)[1:], "\r\n"), 10, 64)
				off := rng.Int64N(strlen*8 + 1)
				deadline, _ := strconv.ParseInt(strings.TrimSuffix(snapDo(c, now, db, "pexpiretime", k)[1:], "\r\n"), 10, 64)
				var cmd []string
				switch change {
				case 0:
					bit := snapDo(c, now, db, "getbit", k, strconv.FormatInt(off, 10))
					cmd = []string{"setbit", k, strconv.FormatInt(off, 10), map[string]string{":0\r\n": "1", ":1\r\n": "0"}[bit]}
				case 1:
					cmd = []string{"setrange", k, strconv.FormatInt(strlen, 10), "\x00"} // same bits, one byte longer
				case 2:
					cmd = []string{"pexpireat", k, strconv.FormatInt(max(deadline, now+10)+1, 10)}
				case 3:
					cmd = []string{"rename", k, k[:len(k)-1] + string(k[len(k)-1]^1)} // same length
				case 4:
					cmd = []string{"move", k, "3"}
				case 5:
					cmd = []string{"del", k}
				case 6:
					cmd = []string{"swapdb", strconv.Itoa(db), "3"}
				case 7:
					cmd = []string{"persist", k}
					if deadline < 0 {
						cmd = []string{"pexpire", k, "100000000"}
					}
				case 8:
					c.Apply(nil, now+1, &Replies{})
				}
				if cmd != nil {
					reply := snapDo(c, now, db, cmd...)
					if reply[0] == '-' || (reply == ":0\r\n" && cmd[0] != "setbit") {
						t.Fatalf("%q: %q", cmd, reply)
					}
				}
				if c.Digest() == base {
					t.Fatalf("seed %d: change %d (%q) kept the digest", seed, change, cmd)
				}
			}
		}
	}
}

// TestDigestIsLogical checks that the digest depends on the state only:
// not on whether a string is raw or a bitmap, on the order keys were
// written in, or on reads.
func TestDigestIsLogical(t *testing.T) {
	raw, bm := New(), New()
	snapDo(raw, testNow, 0, "set", "k", "\x80\x00\x01")
	snapDo(raw, testNow, 0, "set", "z", "\x00")
	snapDo(bm, testNow, 0, "setbit", "k", "0", "1")
	snapDo(bm, testNow, 0, "setbit", "k", "23", "1")
	snapDo(bm, testNow, 0, "setbit", "z", "7", "0")
	if raw.Digest() != bm.Digest() {
		t.Fatal("equal strings, raw and bitmap, digest differently")
	}
	snapDo(bm, testNow, 0, "setbit", "k", "22", "1")
	if raw.Digest() == bm.Digest() {
		t.Fatal("different strings digest alike")
	}

	type kv struct {
		db     int
		k, v   string
		expire string
	}
	var kvs []kv
	for i := range 200 {
		kvs = append(kvs, kv{i % 3, "key" + strconv.Itoa(i), strconv.Itoa(i * i), strconv.Itoa(1000 + i)})
	}
	digests := map[uint64]bool{}
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 5))
		rng.Shuffle(len(kvs), func(i, j int) { kvs[i], kvs[j] = kvs[j], kvs[i] })
		s := New()
		for _, x := range kvs {
			snapDo(s, testNow, x.db, "set", x.k+"tmp", x.v)
			snapDo(s, testNow, x.db, "rename", x.k+"tmp", x.k)
			snapDo(s, testNow, x.db, "pexpire", x.k, x.expire)
		}
		snapReplies(s, testNow+500)
		digests[s.Digest()] = true
	}
	if len(digests) != 1 {
		t.Fatalf("one state, written in different orders, has %d digests", len(digests))
	}
}

// FuzzRestore restores arbitrary input: it must fail with ErrBadSnapshot
// and change nothing, or give a working store that snapshots back to
// itself. With fixSum the checksum is recomputed first, so that damaged
// fields reach the checks behind it.
func FuzzRestore(f *testing.F) {
	f.Add(snapSmall(f), false)
	f.Add(snapSmall(f), true)
	f.Add(snapBytes(f, New()), false)
	rng := rand.New(rand.NewPCG(1, 1))
	s := New()
	snapFill(rng, s, testNow, 10)
	f.Add(snapBytes(f, s), true)
	f.Fuzz(func(t *testing.T, data []byte, fixSum bool) {
		if fixSum {
			data = resum(data)
		}
		snapAcceptsOnlyValid(t, snapVictim(), data)
	})
}

// snapBigBitmap returns a store holding one bitmap of 50M ids, drawn at
// random from the first 100M: about 12 MB of bitmap containers.
var snapBigBitmap = sync.OnceValue(func() *Store {
	rng := rand.New(rand.NewPCG(9, 9))
	words := make([]uint64, 100_000_000/64)
	for i := range words {
		words[i] = rng.Uint64()
	}
	return snapBench(func(c *ctx) {
		c.putIn(0, "online", value{bm: roaring.FromDense(words, true), n: int64(len(words)) * 8}, 0)
	})
})

// snapBigKeys returns a store holding 1M short raw strings.
var snapBigKeys = sync.OnceValue(func() *Store {
	return snapBench(func(c *ctx) {
		for i := range 1_000_000 {
			c.putIn(0, "user:"+strconv.Itoa(i), rawValue([]byte(strconv.Itoa(i*7))), 0)
		}
	})
})

// snapBench returns a store that fill filled through the write path.
func snapBench(fill func(c *ctx)) *Store {
	s := New()
	s.mu.Lock()
	defer s.mu.Unlock()
	fill(&ctx{s: s, write: true})
	return s
}

// snapBenchStores are the stores of the snapshot benchmarks.
var snapBenchStores = []struct {
	name  string
	store func() *Store
}{{"bitmap50M", snapBigBitmap}, {"keys1M", snapBigKeys}}

// BenchmarkSnapshot measures Snapshot, which is how long it holds the read
// lock, and so how long it may hold up a write.
func BenchmarkSnapshot(b *testing.B) {
	for _, bc := range snapBenchStores {
		s := bc.store()
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.Snapshot()
			}
		})
	}
}

// BenchmarkSnapshotWriteTo measures the encoding throughput.
func BenchmarkSnapshotWriteTo(b *testing.B) {
	for _, bc := range snapBenchStores {
		sn := bc.store().Snapshot()
		b.Run(bc.name, func(b *testing.B) {
			n, _ := sn.WriteTo(io.Discard)
			b.SetBytes(n)
			b.ReportAllocs()
			for b.Loop() {
				sn.WriteTo(io.Discard)
			}
		})
	}
}

// BenchmarkRestore measures decoding and rebuilding the keyspace.
func BenchmarkRestore(b *testing.B) {
	for _, bc := range snapBenchStores {
		data := snapBytes(b, bc.store())
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := New().Restore(bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkApplyDuringSnapshot applies SETBIT batches to the 50M-id
// bitmap while another goroutine takes and writes snapshots without
// pause, and reports the p99, p99.9 and worst latency of a batch.
func BenchmarkApplyDuringSnapshot(b *testing.B) {
	s := snapBigBitmap()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				s.Snapshot().WriteTo(io.Discard)
			}
		}
	})
	cmds := []Command{{Args: [][]byte{[]byte("setbit"), []byte("online"), nil, []byte("1")}}}
	var out Replies
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		cmds[0].Args[2] = strconv.AppendInt(cmds[0].Args[2][:0], int64(i*7919%100_000_000), 10)
		out.Reset()
		start := time.Now()
		s.Apply(cmds, testNow, &out)
		lat = append(lat, time.Since(start))
	}
	close(stop)
	wg.Wait()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(lat[len(lat)*999/1000].Microseconds()), "p99.9-µs")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs")
}
