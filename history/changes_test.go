package history

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"
)

// checkBitmapAt fails unless the snapshot of key "k" read at ts is want.
func checkBitmapAt(t *testing.T, h *History, ts int64, want *roaring.Bitmap) {
	t.Helper()
	got, _, err := h.BitmapAt(0, "k", ts)
	if err != nil || !got.Equals(want) {
		t.Fatalf("at %d: %v bits (%v), want %d", ts, got.GetCardinality(), err, want.GetCardinality())
	}
}

// TestRecordChanges records a series of snapshots as changes on top of
// the one before (containers of every kind, emptied bitmaps) and reads each
// back; changes on top of any other snapshot are refused, and so are those
// that would make the chain since the last whole bitmap FullEvery long.
func TestRecordChanges(t *testing.T) {
	cfg := testConfig(t, "1m:1d")
	cfg.FullEvery = 8
	h := mustOpen(t, cfg)
	r := newRecorder(4)
	prev := roaring.New()
	ts := t0
	h.RecordBitmap(ts, 0, "k", prev.Clone(), 0, nil, 0)
	for i := range 200 {
		cur := prev.Clone()
		r.mutate(cur)
		ts += 100
		flips := roaring.Xor(prev, cur)
		if h.RecordChanges(ts, 0, "k", cur, 10, flips.Clone(), ts-200) || h.RecordChanges(ts, 1, "k", cur, 10, flips.Clone(), ts-100) {
			t.Fatalf("round %d: changes taken on top of a snapshot that is not the key's last", i)
		}
		took := h.RecordChanges(ts, 0, "k", cur, 10, flips, ts-100)
		if want := i%cfg.FullEvery != cfg.FullEvery-1; took != want {
			t.Fatalf("round %d: changes taken %v, want %v", i, took, want)
		}
		if !took {
			h.RecordBitmap(ts, 0, "k", cur.Clone(), 10, flips, ts-100)
		}
		h.Advance(ts)
		if err := h.Sync(); err != nil {
			t.Fatal(err)
		}
		checkBitmapAt(t, h, ts, cur)
		prev = cur
	}
	h.Purge(ts+1, 0, "k")
	if h.RecordChanges(ts+100, 0, "k", prev, 10, roaring.BitmapOf(1), ts) {
		t.Fatal("changes taken on top of a purged snapshot")
	}
}

// TestRecordChangesAfterReplay checks changes on top of a snapshot that
// the writer skipped as replayed (after a restart, a node replays its log):
// they are written when that snapshot is the file's last, and otherwise
// stop the writer with an error rather than record a wrong bitmap.
func TestRecordChangesAfterReplay(t *testing.T) {
	cfg := testConfig(t, "1m:1d")
	h := mustOpen(t, cfg)
	s1, s2, s3 := roaring.BitmapOf(1, 2, 3), roaring.BitmapOf(2, 3, 70000), roaring.BitmapOf(3, 9, 70001)
	h.RecordBitmap(t0+100, 0, "k", s1.Clone(), 10, nil, 0)
	h.RecordBitmap(t0+200, 0, "k", s2.Clone(), 10, nil, 0)
	h.Advance(t0 + 200)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	h = mustOpen(t, cfg)
	h.RecordBitmap(t0+100, 0, "k", s1.Clone(), 10, nil, 0) // replayed: skipped
	if !h.RecordChanges(t0+200, 0, "k", s2, 10, roaring.Xor(s1, s2), t0+100) {
		t.Fatal("changes refused")
	}
	if !h.RecordChanges(t0+300, 0, "k", s3, 10, roaring.Xor(s2, s3), t0+200) {
		t.Fatal("changes refused")
	}
	h.Advance(t0 + 300)
	if err := h.Sync(); err != nil {
		t.Fatal(err)
	}
	checkBitmapAt(t, h, t0+200, s2)
	checkBitmapAt(t, h, t0+300, s3)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	h = mustOpen(t, cfg)
	h.RecordBitmap(t0+50, 0, "k", s1.Clone(), 10, nil, 0) // skipped, and not the file's last
	h.RecordChanges(t0+400, 0, "k", s1, 10, roaring.BitmapOf(5), t0+50)
	err := h.Sync()
	if err == nil || !strings.Contains(err.Error(), "last snapshot is at") {
		t.Fatalf("changes on top of a snapshot that is not the file's last: %v", err)
	}
	if got := h.Err(); got != err {
		t.Fatalf("Err after the writer stopped: %v, want %v", got, err)
	}
}

// snapKinds returns the kind of each snapshot of key "k", in time order.
func snapKinds(t *testing.T, h *History) []byte {
	t.Helper()
	var kinds []byte
	err := h.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketBitmaps).Bucket([]byte(seriesName(0, "k")))
		return b.ForEach(func(k, _ []byte) error {
			sn, err := parseSnap(snapValue(b, k))
			kinds = append(kinds, sn.kind)
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return kinds
}

// TestRecordBitmapWithFlips records whole bitmaps with the bits changed
// since the one before: they are stored as those changes but every
// FullEvery-th, which is stored whole; changes since any other snapshot
// are ignored, and so is a whole bitmap stored without any.
func TestRecordBitmapWithFlips(t *testing.T) {
	cfg := testConfig(t, "1m:1d")
	cfg.FullEvery = 4
	h := mustOpen(t, cfg)
	r := newRecorder(5)
	prev := roaring.New()
	var want []byte
	for i := range 12 {
		cur := prev.Clone()
		r.mutate(cur)
		// A minute apart, as the retention keeps them: a compaction pass,
		// which may run at any time, drops snapshots within a minute.
		ts := t0 + int64(i)*minute
		switch {
		case i == 0:
			h.RecordBitmap(ts, 0, "k", cur.Clone(), 10, nil, 0)
			want = append(want, snapFull)
		case i == 6: // changes since an older snapshot
			h.RecordBitmap(ts, 0, "k", cur.Clone(), 10, roaring.Xor(prev, cur), ts-2*minute)
			want = append(want, snapFull)
		default:
			h.RecordBitmap(ts, 0, "k", cur.Clone(), 10, roaring.Xor(prev, cur), ts-minute)
			if n := len(want) - bytes.LastIndexByte(want, snapFull); n < cfg.FullEvery {
				want = append(want, snapXor)
			} else {
				want = append(want, snapFull)
			}
		}
		h.Advance(ts)
		if err := h.Sync(); err != nil {
			t.Fatal(err)
		}
		checkBitmapAt(t, h, ts, cur)
		prev = cur
	}
	if got := snapKinds(t, h); !bytes.Equal(got, want) {
		t.Fatalf("snapshot kinds %v, want %v (full %d, xor %d)", got, want, snapFull, snapXor)
	}
}

// TestRecordStrings records strings as snapshots, whole and as the base of
// changes, and reads back the bits a string holds (bit 7-i%8 of byte i/8
// is bit i) and its length.
func TestRecordStrings(t *testing.T) {
	h := mustOpen(t, testConfig(t, "1m:1d"))
	ts := t0
	for _, raw := range [][]byte{{}, {0x80}, {0x01, 0xff, 0}, bytes.Repeat([]byte{0xa5}, 8193)} {
		ts += 100
		want := roaring.New()
		for i := range uint32(len(raw)) * 8 {
			if raw[i/8]&(0x80>>(i%8)) != 0 {
				want.Add(i)
			}
		}
		h.RecordStrings(ts, 0, []string{"k"}, [][]byte{bytes.Clone(raw)})
		h.Advance(ts)
		if err := h.Sync(); err != nil {
			t.Fatal(err)
		}
		checkBitmapAt(t, h, ts, want)
		if _, n, _ := h.BitmapAt(0, "k", ts); n != uint64(len(raw)) {
			t.Fatalf("a string of %d bytes read back as %d", len(raw), n)
		}
		// No changes on top of it (only a bitmap follows its changes), even
		// when the key's snapshot before was a bitmap: the whole bitmap then.
		next := roaring.Or(want, roaring.BitmapOf(3, 70000))
		for _, since := range []int64{ts, ts - 50} { // the string, the bitmap before it
			if h.RecordChanges(ts+50, 0, "k", next, 70000/8+1, roaring.Xor(want, next), since) {
				t.Fatalf("changes since %d on top of a string of %d bytes taken", since, len(raw))
			}
		}
		h.RecordBitmap(ts+50, 0, "k", next.Clone(), 70000/8+1, nil, 0)
		h.Advance(ts + 50)
		if err := h.Sync(); err != nil {
			t.Fatal(err)
		}
		checkBitmapAt(t, h, ts+50, next)
	}

	// Several keys at once, one of them too long to record.
	ts += 100
	long := strings.Repeat("x", maxKeyLen+1)
	keys := []string{"s1", long, "s2", "k"}
	raws := [][]byte{{0x40}, {0xff}, {0, 0x01}, {}}
	h.RecordStrings(ts, 1, keys, raws)
	h.Advance(ts)
	if err := h.Sync(); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string][]uint32{"s1": {1}, "s2": {15}, "k": nil} {
		bm, n, err := h.BitmapAt(1, key, ts)
		if err != nil || !slices.Equal(bm.ToArray(), want) {
			t.Fatalf("%s in a batch read back as %v, %v; want %v", key, bm.ToArray(), err, want)
		}
		if i := slices.Index(keys, key); n != uint64(len(raws[i])) {
			t.Fatalf("%s: %d bytes read back, want %d", key, n, len(raws[i]))
		}
	}
	if info, err := h.Info(1, long); err != nil || info.Snapshots != 0 {
		t.Fatalf("a key over %d bytes recorded: %+v, %v", maxKeyLen, info, err)
	}
}
