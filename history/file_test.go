package history

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"
)

// recorded returns a History with 300 boundaries of random recordings and its recorder.
func recorded(t *testing.T, seed int64) (*History, *recorder, Config) {
	cfg := testConfig(t, "100ms:1d")
	h := mustOpen(t, cfg)
	r := newRecorder(seed)
	for i := 0; i < 300; i++ {
		r.step(h)
	}
	waitIdle(t, h)
	return h, r, cfg
}

func TestPurge(t *testing.T) {
	h, r, cfg := recorded(t, 21)
	purgeAt := h.Newest() + 50
	h.Purge(purgeAt, 0, "a")
	r.m.counts[seriesName(0, "a")] = nil
	r.m.snaps[seriesName(0, "a")] = nil
	waitIdle(t, h)
	info, err := h.Info(0, "a")
	if err != nil || info.Points != 0 || info.Snapshots != 0 || info.Bytes != 0 {
		t.Fatalf("after purge: %+v, %v", info, err)
	}
	// Replaying the log (records at or before the purge) brings nothing back.
	for _, call := range r.calls {
		call(h)
	}
	waitIdle(t, h)
	for at := t0; at <= h.Newest(); at += 700 {
		for _, k := range testKeys {
			checkAt(t, h, r.m, k, at)
		}
	}
	tot, _ := h.Totals()
	var points uint64
	for _, k := range testKeys {
		info, _ := h.Info(k.db, k.key)
		points += info.Points
	}
	if tot.Points != points {
		t.Fatalf("Totals.Points = %d, keys hold %d", tot.Points, points)
	}
	// Recording after the purge works, and the mark survives a reopen.
	for i := 0; i < 50; i++ {
		r.step(h)
	}
	h.Close()
	h = mustOpen(t, cfg)
	for _, call := range r.calls {
		call(h)
	}
	r.check(t, h, t0, 100)
	if info, _ := h.Info(0, "a"); info.Points == 0 || info.OldestCount <= purgeAt {
		t.Fatalf("after purge and new records: %+v", info)
	}
}

// TestCopyWhileOpen copies the file of an open History, as a crash would
// leave it, and opens the copy.
func TestCopyWhileOpen(t *testing.T) {
	h, r, _ := recorded(t, 22)
	data, err := os.ReadFile(h.cfg.Path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, "100ms:1d")
	if err := os.WriteFile(cfg.Path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	c := mustOpen(t, cfg)
	r.check(t, c, t0, 100)
}

func TestDamagedFile(t *testing.T) {
	dir := t.TempDir()
	garbage := bytes.Repeat([]byte("not a bbolt file "), 2000)
	notOurs := filepath.Join(dir, "other.db")
	db, err := bolt.Open(notOurs, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("x")); return err })
	db.Close()
	// A history file of the first layout, whose snapshots sat side by
	// side, and one of a layout after this build's.
	for name, version := range map[string]uint64{"version1.db": 1, "newer.db": formatVersion + 1} {
		if db, err = bolt.Open(filepath.Join(dir, name), 0o600, nil); err != nil {
			t.Fatal(err)
		}
		db.Update(func(tx *bolt.Tx) error {
			if err := initBuckets(tx); err != nil {
				return err
			}
			return tx.Bucket(bucketMeta).Put(metaVersion, putU64(version))
		})
		db.Close()
	}
	h, _, _ := recorded(t, 23)
	path := h.cfg.Path
	h.Close()
	good, _ := os.ReadFile(path)
	smashed := append(bytes.Repeat([]byte{0xAB}, 16384), good[16384:]...)

	for name, content := range map[string][]byte{"garbage.db": garbage, "smashed.db": smashed, "other.db": nil, "version1.db": nil, "newer.db": nil} {
		p := filepath.Join(dir, name)
		if content != nil {
			os.WriteFile(p, content, 0o600)
		}
		before, _ := os.ReadFile(p)
		cfg := DefaultConfig(p)
		cfg.LockTimeout = 100 * time.Millisecond
		if h, err := Open(cfg); err == nil || !strings.Contains(err.Error(), p) {
			if h != nil {
				h.Close()
			}
			t.Fatalf("%s: Open error %v does not name the file", name, err)
		}
		if after, _ := os.ReadFile(p); !bytes.Equal(before, after) {
			t.Fatalf("%s: Open changed the file", name)
		}
	}

	// A file locked by an open History: the lock wait times out.
	cfg := testConfig(t, "1m:1d")
	mustOpen(t, cfg)
	cfg.LockTimeout = 50 * time.Millisecond
	if _, err := Open(cfg); err == nil || err.Error() != "history: "+cfg.Path+" is locked by another process" {
		t.Fatalf("second Open of a locked file: %v", err)
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func readCopy(t *testing.T, h *History) []byte {
	rc, size, err := h.OpenCopy()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil || int64(len(data)) != size {
		t.Fatalf("copy: %d bytes of %d, %v", len(data), size, err)
	}
	return data
}

func TestCopyRestore(t *testing.T) {
	h, r, _ := recorded(t, 24)
	data := readCopy(t, h)

	// Into an empty History: the same records and answers, and recording goes on.
	e := mustOpen(t, testConfig(t, "100ms:1d"))
	if err := e.RestoreCopy(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if !equalDumps(dump(t, h), dump(t, e)) || e.Newest() != h.Newest() || e.Oldest() != h.Oldest() {
		t.Fatal("restored history differs")
	}
	r.check(t, e, t0, 100)
	for i := 0; i < 30; i++ {
		r.step(e)
	}
	r.check(t, e, t0, 100)

	// A newer local history is kept, reading only the header.
	before := dump(t, e)
	cr := &countingReader{r: bytes.NewReader(data)}
	if err := e.RestoreCopy(cr); err != nil {
		t.Fatal(err)
	}
	if cr.n > copyHeaderLen || !equalDumps(before, dump(t, e)) {
		t.Fatalf("kept local: read %d bytes, changed=%v", cr.n, !equalDumps(before, dump(t, e)))
	}

	// Damaged copies are refused and change nothing.
	f := mustOpen(t, testConfig(t, "100ms:1d"))
	for _, bad := range [][]byte{nil, data[:10], data[:len(data)/2], flip(data, 5), flip(data, len(data)/2), flip(data, len(data)-1)} {
		if err := f.RestoreCopy(bytes.NewReader(bad)); !errors.Is(err, ErrBadCopy) {
			t.Fatalf("bad copy (%d bytes): %v", len(bad), err)
		}
	}
	if f.Newest() != 0 || len(dump(t, f)) != 1 {
		t.Fatal("a refused copy changed the history")
	}
	if entries, _ := os.ReadDir(filepath.Dir(f.cfg.Path)); len(entries) != 1 {
		t.Fatalf("left files behind: %v", entries)
	}
}

func flip(b []byte, i int) []byte {
	out := append([]byte(nil), b...)
	out[i] ^= 0x40
	return out
}

// TestBackpressure records from several goroutines through a tiny queue
// while queries run.
func TestBackpressure(t *testing.T) {
	cfg := testConfig(t, "100ms:1d")
	cfg.QueueBytes = 1
	h := mustOpen(t, cfg)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int64(1); i <= 60; i++ {
				h.RecordCount(t0+i*100, g, "k", uint64(i))
				h.RecordBitmap(t0+i*100, g, "k", bitmapOf(uint32(i)), 1+uint64(i)/8, nil, 0)
				if g == 0 {
					h.Advance(t0 + i*100)
				}
			}
		}()
	}
	for h.Newest() < t0+60*100 {
		if n := h.Newest(); n > 0 {
			if _, err := h.CountAt(1, "k", n); err != nil {
				t.Error(err)
			}
		}
	}
	wg.Wait()
	waitIdle(t, h)
	for g := 0; g < 4; g++ {
		for i := int64(1); i <= 60; i++ {
			c, err := h.CountAt(g, "k", t0+i*100)
			in, err2 := h.ContainsAt(g, "k", t0+i*100, uint32(i))
			if err != nil || err2 != nil || c != uint64(i) || !in {
				t.Fatalf("g%d i%d: %d %v %v %v", g, i, c, in, err, err2)
			}
		}
	}
}

// TestSyncForWaitsForPurge checks that a query of the past, which does not
// wait for the writer, still sees a Purge recorded before it.
func TestSyncForWaitsForPurge(t *testing.T) {
	h, _, _ := recorded(t, 22)
	at := h.Newest()
	if n, err := h.CountAt(0, "a", at); err != nil || n == 0 {
		t.Fatalf("before the purge: %d, %v", n, err)
	}
	if err := h.SyncFor(at); err != nil {
		t.Fatal("with nothing pending:", err)
	}
	h.Purge(at+50, 0, "a")
	if err := h.SyncFor(at); err != nil {
		t.Fatal(err)
	}
	if n, err := h.CountAt(0, "a", at); err != nil || n != 0 {
		t.Fatalf("after the purge: %d, %v", n, err)
	}
}

// TestIdleAdvances checks that Advances with nothing recorded, and the
// compaction passes they start that find nothing to drop, write nothing to
// the file, yet move Newest, travel in copies, and reach the file when
// it is closed; and that what a crash would leave (the file's own newest)
// is the older newest, under which every record is held.
func TestIdleAdvances(t *testing.T) {
	h, r, cfg := recorded(t, 31)
	busy := h.Newest()
	lastTx := func(h *History) (id int, newest int64) {
		t.Helper()
		err := h.view(func(tx *bolt.Tx) error {
			id, newest = tx.ID(), int64(getU64(tx.Bucket(bucketMeta).Get(metaNewest)))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return id, newest
	}
	// The file's newest is that of the last batch that recorded
	// something: the recording's last Advances may have reached the
	// writer alone, and written nothing.
	before, fileNewest := lastTx(h)
	if fileNewest > busy || fileNewest < t0 {
		t.Fatalf("the file's newest is %d after recording from %d up to %d", fileNewest, t0, busy)
	}
	for i := int64(1); i <= 50; i++ {
		h.Advance(busy + 100*i)
	}
	waitIdle(t, h)
	idle := busy + 100*50
	if h.Newest() != idle {
		t.Fatalf("Newest = %d after idle advances up to %d", h.Newest(), idle)
	}
	if after, newest := lastTx(h); after != before || newest != fileNewest {
		t.Fatalf("idle advances committed: transaction %d -> %d, the file's newest %d -> %d", before, after, fileNewest, newest)
	}
	r.now = idle
	r.check(t, h, t0, 100)

	// A copy holds every record up to the newest Advance, and says so.
	e := mustOpen(t, testConfig(t, "100ms:1d"))
	if err := e.RestoreCopy(bytes.NewReader(readCopy(t, h))); err != nil {
		t.Fatal(err)
	}
	if e.Newest() != idle {
		t.Fatalf("restored copy: Newest = %d, want %d", e.Newest(), idle)
	}
	r.check(t, e, t0, 100)

	// Close writes the newest down.
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	g := mustOpen(t, cfg)
	if g.Newest() != idle {
		t.Fatalf("reopened: Newest = %d, want %d", g.Newest(), idle)
	}
	r.check(t, g, t0, 100)
}

// TestSeriesStatesForgotten records with room for two series states, so
// the writer drops and reads back states all along: the file still answers
// as the model does, after a purge and a replay of every record (whose
// purged records stay out when the purge mark is read back), and after a
// transaction that used one series it keeps that one's state alone.
func TestSeriesStatesForgotten(t *testing.T) {
	cfg := testConfig(t, "100ms:1d")
	h := mustOpen(t, cfg)
	h.w.maxSeries = 2 // before the first record: the queue's lock orders it before the writer reads it
	r := newRecorder(24)
	for i := 0; i < 300; i++ {
		r.step(h)
	}
	purgeAt := r.now + 50
	h.Purge(purgeAt, 0, "a")
	r.m.counts[seriesName(0, "a")] = nil
	r.m.snaps[seriesName(0, "a")] = nil
	b := seriesName(0, "b")
	recordB := func() { // a transaction that uses b's state alone
		r.now += 100
		r.counts[b]++
		r.m.counts[b] = append(r.m.counts[b], point{r.now, r.counts[b]})
		h.RecordCount(r.now, 0, "b", r.counts[b])
		h.Advance(r.now)
		waitIdle(t, h)
	}
	recordB()
	for _, call := range r.calls { // records already written, or purged
		call(h)
	}
	waitIdle(t, h)
	recordB()
	if len(h.w.series) != 1 || h.w.series[b] == nil {
		t.Fatalf("%d series states kept after a transaction that used %s's alone", len(h.w.series), b)
	}
	r.check(t, h, t0, 300)
}

// TestQueuedSnapshotsForgotten keeps room for two series in the record of
// the last snapshot queued: past it, the series without a snapshot at the
// boundary being queued are forgotten, and their changes are refused (the
// store records them in full) while the others' are taken; the file still
// answers as the model does.
func TestQueuedSnapshotsForgotten(t *testing.T) {
	h := mustOpen(t, testConfig(t, "100ms:1d"))
	h.q.maxSnaps = 2 // before the first record, from the goroutine that records
	for _, key := range []string{"a", "b"} {
		h.RecordBitmap(t0, 0, key, roaring.BitmapOf(1), 1, nil, 0)
	}
	for _, key := range []string{"c", "d", "e"} {
		h.RecordBitmap(t0+100, 0, key, roaring.BitmapOf(1), 1, nil, 0)
	}
	for key, since := range map[string]int64{"a": t0, "b": t0, "c": t0 + 100, "d": t0 + 100, "e": t0 + 100} {
		if takes, want := h.takesChanges(seriesName(0, key), since), since == t0+100; takes != want {
			t.Errorf("changes to %s since %d taken: %v, want %v", key, since, takes, want)
		}
	}

	h = mustOpen(t, testConfig(t, "100ms:1d"))
	h.q.maxSnaps = 2
	r := newRecorder(25)
	for i := 0; i < 300; i++ {
		r.step(h)
	}
	if r.changes == 0 {
		t.Fatal("no changes taken")
	}
	r.check(t, h, t0, 300)
}
