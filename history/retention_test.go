package history

import (
	"errors"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestRetentionCompaction(t *testing.T) {
	cfg := testConfig(t, "200ms:2s,1s:10s")
	cfg.FullEvery = 4
	h := mustOpen(t, cfg)
	r := newRecorder(11)
	r.snapEvery = 1
	for i := 0; i < 300; i++ {
		r.step(h)
	}
	waitIdle(t, h)
	newest := h.Newest()
	oldest := newest - 10_000
	if h.Oldest() != oldest {
		t.Fatalf("Oldest = %d, want %d", h.Oldest(), oldest)
	}
	for at := oldest; at <= newest; at += 100 {
		for _, k := range testKeys {
			s := seriesName(k.db, k.key)
			c, err := h.CountAt(k.db, k.key, at)
			if err != nil || c != r.m.countAt(s, at) {
				t.Fatalf("CountAt(%v, %d) = %d, %v; want %d", k, at, c, err, r.m.countAt(s, at))
			}
			if at%1000 == 0 || (at >= newest-2000 && at%200 == 0) {
				checkAt(t, h, r.m, k, at)
			}
		}
	}
	checkBounds(t, h, oldest)
	for _, k := range testKeys {
		info, err := h.Info(k.db, k.key)
		if err != nil {
			t.Fatal(err)
		}
		recorded := len(r.m.snaps[seriesName(k.db, k.key)])
		if int(info.Snapshots) >= recorded/3 {
			t.Errorf("%v: %d snapshots kept of %d recorded", k, info.Snapshots, recorded)
		}
		// The last pass ran at most 1 s before newest: older than 3 s, at
		// most one snapshot per second is left; 1 to 2 s old, one per 200 ms.
		checkSpacing(t, keptSnapTimes(t, h, k), oldest, newest-3000, 1000)
		checkSpacing(t, keptSnapTimes(t, h, k), newest-2000, newest-1000, 200)
		if info.OldestSnapshot < oldest-3000 || info.OldestCount < oldest-chunkSpan {
			t.Errorf("%v: held too old: %+v", k, info)
		}
	}
	var re *RangeError
	if _, _, err := h.BitmapAt(0, "a", oldest-100); !errors.As(err, &re) || re.Oldest != oldest {
		t.Fatalf("dropped time: %v", err)
	}
	tot, err := h.Totals()
	if err != nil {
		t.Fatal(err)
	}
	var snaps, points uint64
	for _, k := range testKeys {
		info, _ := h.Info(k.db, k.key)
		snaps, points = snaps+info.Snapshots, points+info.Points
	}
	if tot.Snapshots != snaps || tot.Points != points || tot.Bytes <= 0 || tot.Oldest != oldest || tot.Newest != newest {
		t.Fatalf("Totals %+v; keys hold %d snapshots, %d points", tot, snaps, points)
	}

	// Recording goes on correctly after compaction rewrote chains.
	for i := 0; i < 30; i++ {
		r.step(h)
	}
	waitIdle(t, h)
	for at := ceilTo(h.Newest()-2000, 200); at <= h.Newest(); at += 200 {
		for _, k := range testKeys {
			checkAt(t, h, r.m, k, at)
		}
	}
}

func TestKeepSnap(t *testing.T) {
	tiers, _ := ParseRetention("1m:2d,1h:90d")
	const min, hour, day = 60_000, 3_600_000, 86_400_000
	now := int64(100 * day)
	for _, c := range []struct {
		ts, next int64
		keep     bool
	}{
		{now - 10*min, 0, true},                             // newest
		{now - 10*min + 5000, now - 10*min + 9000, false},   // same minute as the next
		{now - 10*min, now - 9*min, true},                   // whole minute
		{now - 3*day + 5*min, now - 3*day + 20*min, false},  // hour tier: next is in the same hour
		{now - 3*day + 5*min, now - 3*day + hour + 1, true}, // holds the state at the hour
		{now - 3*day + 5*min, now - 3*day + hour, false},    // the next holds it
		{now - 3*day, now - 3*day + min, true},              // at the hour itself
		{now - 91*day, now - 90*day - 1, false},             // past the last tier, the next holds the cutoff
		{now - 91*day, now - 90*day + 1, true},              // holds the state at the cutoff
	} {
		if got := keepSnap(tiers, now, c.ts, c.next); got != c.keep {
			t.Errorf("keepSnap(age %d ms, next +%d ms) = %v", now-c.ts, c.next-c.ts, got)
		}
	}
}

// checkSpacing checks that no two snapshots in [from, to) share a step
// bucket (k*step, (k+1)*step].
func checkSpacing(t *testing.T, times []int64, from, to, step int64) {
	t.Helper()
	seen := map[int64]int64{}
	for _, ts := range times {
		if ts < from || ts >= to {
			continue
		}
		if prev, ok := seen[ceilTo(ts, step)]; ok {
			t.Errorf("snapshots %d and %d both kept at step %d", prev, ts, step)
		}
		seen[ceilTo(ts, step)] = ts
	}
}

func keptSnapTimes(t *testing.T, h *History, k testKey) []int64 {
	var out []int64
	err := h.view(func(tx *bolt.Tx) error {
		if b := seriesBucket(tx, bucketBitmaps, seriesName(k.db, k.key)); b != nil {
			out = snapTimes(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
