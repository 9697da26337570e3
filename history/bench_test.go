package history

import (
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

const (
	second = int64(1000)
	minute = 60 * second
	day    = 24 * 60 * minute
)

// TestMain removes the histories the benchmarks share.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, h := range []*History{countsH, churnH} {
		if h != nil {
			remove(h)
		}
	}
	os.Exit(code)
}

// remove closes h and deletes its directory.
func remove(h *History) {
	h.Close()
	os.RemoveAll(filepath.Dir(h.cfg.Path))
}

var (
	countsOnce sync.Once
	countsH    *History
)

// perSecondCounts returns a History holding 30 days of one count point per
// second for key "online" (built once per process, in a temporary directory).
func perSecondCounts(b *testing.B) *History {
	countsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "history-bench")
		if err != nil {
			b.Fatal(err)
		}
		cfg := DefaultConfig(filepath.Join(dir, "history.db"))
		cfg.Retention = []Tier{{Step: 60e9, Keep: 90 * 24 * 3600e9}}
		h, err := Open(cfg)
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewSource(1))
		v := uint64(10_000_000)
		for ts := t0; ts < t0+30*day; ts += second {
			v = v + uint64(rng.Intn(2001)) - 1000
			h.RecordCount(ts, 0, "online", v)
			if ts%minute == 0 {
				h.Advance(ts)
			}
		}
		h.Advance(t0 + 30*day)
		if err := h.Sync(); err != nil {
			b.Fatal(err)
		}
		countsH = h
	})
	return countsH
}

func BenchmarkCountAt30Days(b *testing.B) {
	h := perSecondCounts(b)
	rng := rand.New(rand.NewSource(2))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := h.CountAt(0, "online", t0+rng.Int63n(30*day)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRange7Days5Min(b *testing.B) {
	h := perSecondCounts(b)
	for _, c := range []struct {
		agg string
		off int64
	}{{AggLast, 0}, {AggAvg, 0}, {AggMax, 0}, {AggAvg, 7 * second}} {
		off, agg := c.off, c.agg
		b.Run(agg+"/from+"+FormatTime(off), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				from := ceilTo(t0+20*day, minute) + off
				s, err := h.Range(0, "online", from, from+7*day, 5*minute, agg)
				if err != nil || len(s) != 7*24*12+1 {
					b.Fatal(len(s), err)
				}
			}
		})
	}
}

// churnHistory records snapshots minutes of a key holding 10M ids out of
// 100M with 2% churn per minute, one snapshot per minute.
func churnHistory(b *testing.B, snapshots int, cacheBytes int64, fullEvery int) (*History, []int64) {
	dir, err := os.MkdirTemp("", "history-bench")
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig(filepath.Join(dir, "history.db"))
	cfg.CacheBytes, cfg.FullEvery = cacheBytes, fullEvery
	h, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewSource(3))
	const space, online, churn = 100_000_000, 10_000_000, 100_000 // 2% = 100k out + 100k in
	bm := roaring.New()
	members := make([]uint32, 0, online)
	for len(members) < online {
		x := uint32(rng.Intn(space))
		if bm.CheckedAdd(x) {
			members = append(members, x)
		}
	}
	var times []int64
	flip := func(flips *roaring.Bitmap, x uint32) {
		if !flips.CheckedAdd(x) {
			flips.Remove(x)
		}
	}
	for i := 0; i < snapshots; i++ {
		var flips *roaring.Bitmap
		if i > 0 {
			flips = roaring.New()
			for j := 0; j < churn; j++ {
				k := rng.Intn(len(members))
				bm.Remove(members[k])
				flip(flips, members[k])
				for {
					x := uint32(rng.Intn(space))
					if bm.CheckedAdd(x) {
						members[k] = x
						flip(flips, x)
						break
					}
				}
			}
		}
		ts := t0 + int64(i)*minute
		h.RecordBitmap(ts, 0, "online", bm.Clone(), space/8, flips, ts-minute)
		h.Advance(ts)
		times = append(times, ts)
	}
	if err := h.Sync(); err != nil {
		b.Fatal(err)
	}
	return h, times
}

// BenchmarkSnapshotBytes reports the bytes stored per snapshot.
func BenchmarkSnapshotBytes(b *testing.B) {
	for _, fe := range []int{16, 32, 64} {
		b.Run("full-every-"+itoa(fe), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				h, times := churnHistory(b, 64, 0, fe)
				defer remove(h)
				info, err := h.Info(0, "online")
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(info.Bytes)/float64(len(times)), "bytes/snapshot")
				b.ReportMetric(float64(info.Bytes)/float64(len(times))*1440/1e9, "GB/day")
				tot, _ := h.Totals()
				b.ReportMetric(float64(tot.Bytes)/float64(len(times)), "file-bytes/snapshot")
			}
		})
	}
}

func itoa(n int) string { return string(rune('0'+n/10)) + string(rune('0'+n%10)) }

var (
	churnOnce  sync.Once
	churnH     *History
	churnTimes []int64
)

// sharedChurn is churnHistory with 64 snapshots, built once per process.
func sharedChurn(b *testing.B) (*History, []int64) {
	churnOnce.Do(func() { churnH, churnTimes = churnHistory(b, 64, DefaultCacheBytes, DefaultFullEvery) })
	return churnH, churnTimes
}

func BenchmarkBitmapAt(b *testing.B) {
	h, times := sharedChurn(b)
	for _, cold := range []bool{true, false} {
		name := "hot"
		if cold {
			name = "cold"
		}
		b.Run(name, func(b *testing.B) {
			rng := rand.New(rand.NewSource(4))
			for i := 0; i < b.N; i++ {
				if cold {
					h.cache.clear()
				}
				at := times[rng.Intn(len(times)-1)] + rng.Int63n(minute)
				if !cold {
					at = times[10+rng.Intn(4)] // a few times asked again and again
				}
				bm, _, err := h.BitmapAt(0, "online", at)
				if err != nil || bm.GetCardinality() != 10_000_000 {
					b.Fatal(at, err)
				}
			}
		})
	}
}

func BenchmarkContainsAt(b *testing.B) {
	h, times := sharedChurn(b)
	h.cache.clear()
	rng := rand.New(rand.NewSource(5))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := h.ContainsAt(0, "online", times[rng.Intn(len(times))], uint32(rng.Intn(100_000_000))); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCountRangeAt(b *testing.B) {
	h, times := sharedChurn(b)
	h.cache.clear()
	rng := rand.New(rand.NewSource(4))
	whole := func(n uint64) (uint64, uint64) { return 0, n * 8 }
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		at := times[rng.Intn(len(times)-1)] + rng.Int63n(minute)
		if n, err := h.CountRangeAt(0, "online", at, whole); err != nil || n != 10_000_000 {
			b.Fatal(at, n, err)
		}
	}
}

// BenchmarkEncodeSnap measures the encoding of a snapshot of 10M ids in
// 100M that differs from the previous one in 100k ids, from the two
// bitmaps (xor) and with the changed bits known (flips), as the store
// hands them.
func BenchmarkEncodeSnap(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	prev := roaring.New()
	for range 10_000_000 {
		prev.Add(uint32(rng.Intn(100_000_000)))
	}
	cur := prev.Clone()
	for range 100_000 {
		cur.Add(uint32(rng.Intn(100_000_000)))
	}
	flips := roaring.Xor(prev, cur)
	for _, known := range []bool{false, true} {
		name := "xor"
		if known {
			name = "flips"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				d := flips.Clone()
				if !known {
					d = roaring.Xor(prev, cur)
				}
				x, err := serializeXor(d)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := encodeSnap(x, 0, cur, 100_000_000/8, DefaultFullEvery); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
