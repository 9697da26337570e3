package history

import (
	"fmt"
	"path/filepath"
	"sort"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	bolt "go.etcd.io/bbolt"
)

// testConfig is a config for a file in a fresh temporary directory.
func testConfig(t testing.TB, retention string) Config {
	cfg := DefaultConfig(filepath.Join(t.TempDir(), "history.db"))
	tiers, err := ParseRetention(retention)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Retention = tiers
	cfg.FullEvery = 3
	cfg.CacheBytes = 64 << 10
	cfg.LockTimeout = 0
	return cfg
}

func mustOpen(t testing.TB, cfg Config) *History {
	t.Helper()
	h, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// waitIdle waits until everything queued is written and no compaction pass
// has work left.
func waitIdle(t testing.TB, h *History) {
	t.Helper()
	if err := h.Sync(); err != nil {
		t.Fatal(err)
	}
	q := &h.q
	q.mu.Lock()
	defer q.mu.Unlock()
	for (q.compacting || len(q.ops) > 0 || q.done < q.enqueued) && !q.exited {
		q.cond.Wait()
	}
}

// dump lists every record of the file as "bucket/sub key=value" lines, sorted.
func dump(t testing.TB, h *History) []string {
	t.Helper()
	var out []string
	err := h.view(func(tx *bolt.Tx) error {
		var walk func(prefix string, b *bolt.Bucket) error
		walk = func(prefix string, b *bolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				if v == nil {
					return walk(fmt.Sprintf("%s/%x", prefix, k), b.Bucket(k))
				}
				out = append(out, fmt.Sprintf("%s %x=%x", prefix, k, v))
				return nil
			})
		}
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error { return walk(string(name), b) })
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func equalDumps(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func bitmapOf(vals ...uint32) *roaring.Bitmap { return roaring.BitmapOf(vals...) }
