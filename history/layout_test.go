package history

import (
	"bytes"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// snapshotForms counts the recorded snapshots stored as values of their
// series' bucket and as buckets of their own, and those of them whose size
// is not the one putSnap stores in that form.
func snapshotForms(t *testing.T, h *History) (inline, buckets, misplaced int) {
	t.Helper()
	err := h.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketBitmaps).ForEachBucket(func(series []byte) error {
			b := tx.Bucket(bucketBitmaps).Bucket(series)
			return b.ForEach(func(k, v []byte) error {
				if v != nil {
					inline++
					if len(v) > maxInlineSnap {
						misplaced++
					}
					return nil
				}
				buckets++
				if len(b.Bucket(k).Get(snapValueKey)) <= maxInlineSnap {
					misplaced++
				}
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return inline, buckets, misplaced
}

func TestSnapshotsSmallInlineLargeInBuckets(t *testing.T) {
	h, _, _ := recorded(t, 31)
	inline, buckets, misplaced := snapshotForms(t, h)
	if inline == 0 || buckets == 0 || misplaced != 0 {
		t.Fatalf("%d snapshots inline, %d in buckets, %d of them in the other form's size: want both forms, each of its size", inline, buckets, misplaced)
	}
}

func TestPutSnapChangesForm(t *testing.T) {
	h := mustOpen(t, testConfig(t, "1m:1d"))
	small := bytes.Repeat([]byte{1}, maxInlineSnap)
	large := bytes.Repeat([]byte{2}, maxInlineSnap+1)
	err := h.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.Bucket(bucketBitmaps).CreateBucket([]byte("s"))
		if err != nil {
			return err
		}
		for i, v := range [][]byte{small, large, small, large, large, small} {
			if err := putSnap(b, 100, v); err != nil {
				t.Fatalf("put %d (%d bytes): %v", i, len(v), err)
			}
			if got := snapValue(b, tsKey(100)); !bytes.Equal(got, v) {
				t.Fatalf("put %d: read %d bytes, want %d", i, len(got), len(v))
			}
			if inBucket := b.Bucket(tsKey(100)) != nil; inBucket != (len(v) > maxInlineSnap) {
				t.Fatalf("put %d (%d bytes): in a bucket %v", i, len(v), inBucket)
			}
		}
		if err := putSnap(b, 200, large); err != nil {
			return err
		}
		if times := snapTimes(b); len(times) != 2 || times[0] != 100 || times[1] != 200 {
			t.Fatalf("snapTimes = %v, want [100 200]", times)
		}
		for _, ts := range []int64{100, 200, 300} {
			if err := deleteSnap(b, ts); err != nil {
				t.Fatalf("delete %d: %v", ts, err)
			}
		}
		if n := b.Stats().KeyN; n != 0 {
			t.Fatalf("%d keys left after deleting every snapshot", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestVersion2File opens a file of the layout before this one, every
// snapshot a bucket of its own: it reads as it was written, records on, and
// is marked with this layout's version.
func TestVersion2File(t *testing.T) {
	h, r, cfg := recorded(t, 32)
	if inline, _, _ := snapshotForms(t, h); inline == 0 {
		t.Fatal("no snapshot recorded inline to move")
	}
	h.Close()
	db, err := bolt.Open(cfg.Path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		err := tx.Bucket(bucketBitmaps).ForEachBucket(func(series []byte) error {
			b := tx.Bucket(bucketBitmaps).Bucket(series)
			for _, ts := range snapTimes(b) {
				k := tsKey(ts)
				v := b.Get(k)
				if v == nil {
					continue
				}
				v = bytes.Clone(v)
				if err := b.Delete(k); err != nil {
					return err
				}
				sb, err := b.CreateBucket(k)
				if err != nil {
					return err
				}
				if err := sb.Put(snapValueKey, v); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(metaVersion, putU64(2))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	h = mustOpen(t, cfg)
	if inline, _, _ := snapshotForms(t, h); inline != 0 {
		t.Fatalf("%d snapshots inline in the version 2 file", inline)
	}
	r.check(t, h, t0, 100)
	var version uint64
	h.view(func(tx *bolt.Tx) error { version = getU64(tx.Bucket(bucketMeta).Get(metaVersion)); return nil })
	if version != formatVersion {
		t.Fatalf("version %d after opening, want %d", version, formatVersion)
	}
	for i := 0; i < 100; i++ {
		r.step(h)
	}
	waitIdle(t, h)
	r.check(t, h, t0, 100)
	if inline, _, _ := snapshotForms(t, h); inline == 0 {
		t.Fatal("no snapshot recorded inline after the version 2 file was opened")
	}
}
