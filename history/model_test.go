package history

import (
	"encoding/binary"
	"errors"
	"math/rand"
	"sort"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

const t0 = int64(1_700_000_000_000)

type point struct {
	ts  int64
	val uint64
}

type modelSnap struct {
	ts      int64
	bm      *roaring.Bitmap
	byteLen uint64
}

// model is the trivially correct history: every recorded point and bitmap.
type model struct {
	counts map[string][]point
	snaps  map[string][]modelSnap
}

func newModel() *model {
	return &model{counts: map[string][]point{}, snaps: map[string][]modelSnap{}}
}

func (m *model) countAt(series string, t int64) uint64 {
	pts := m.counts[series]
	i := sort.Search(len(pts), func(i int) bool { return pts[i].ts > t })
	if i == 0 {
		return 0
	}
	return pts[i-1].val
}

func (m *model) bitmapAt(series string, t int64) (*roaring.Bitmap, uint64) {
	bm, n := roaring.New(), uint64(0)
	for _, s := range m.snaps[series] {
		if s.ts > t {
			break
		}
		bm, n = s.bm, s.byteLen
	}
	return bm, n
}

// raw returns the points in [from, to] that change the count.
func (m *model) raw(series string, from, to int64) []Sample {
	out := []Sample{}
	prev := uint64(0)
	for _, p := range m.counts[series] {
		if p.val != prev && p.ts >= from && p.ts <= to {
			out = append(out, Sample{p.ts, float64(p.val)})
		}
		prev = p.val
	}
	return out
}

// agg computes each bucket from its definition: the segments of the step
// function inside [bs, be).
func (m *model) agg(series string, from, to, step int64, kind string) []Sample {
	var out []Sample
	for bs := from; bs <= to; bs += step {
		be := min(bs+step, to+1)
		type seg struct {
			start int64
			val   uint64
		}
		segs := []seg{{bs, m.countAt(series, bs)}}
		pts := m.counts[series]
		for i := sort.Search(len(pts), func(i int) bool { return pts[i].ts > bs }); i < len(pts) && pts[i].ts < be; i++ {
			segs = append(segs, seg{pts[i].ts, pts[i].val})
		}
		lo, hi, integral := segs[0].val, segs[0].val, 0.0
		for i, s := range segs {
			end := be
			if i+1 < len(segs) {
				end = segs[i+1].start
			}
			lo, hi = min(lo, s.val), max(hi, s.val)
			integral += float64(s.val) * float64(end-s.start)
		}
		v := float64(segs[len(segs)-1].val)
		switch kind {
		case AggMin:
			v = float64(lo)
		case AggMax:
			v = float64(hi)
		case AggAvg:
			v = integral / float64(be-bs)
		}
		out = append(out, Sample{bs, v})
	}
	return out
}

type testKey struct {
	db  int
	key string
}

var testKeys = []testKey{{0, "a"}, {0, "b"}, {1, "a"}, {0, "online:x"}}

// recorder drives a History and a model with the same random recordings,
// remembering every call so it can be replayed.
type recorder struct {
	rng    *rand.Rand
	m      *model
	calls  []func(h *History)
	counts map[string]uint64
	bms    map[string]*roaring.Bitmap
	now    int64
	// snapEvery is the number of boundaries between bitmap snapshots.
	snapEvery int64
	// changes counts snapshots recorded by RecordChanges; wrongTook is
	// set if it took changes on top of a snapshot that is not the last.
	changes   int
	wrongTook bool
}

func newRecorder(seed int64) *recorder {
	return &recorder{rng: rand.New(rand.NewSource(seed)), m: newModel(), counts: map[string]uint64{},
		bms: map[string]*roaring.Bitmap{}, now: t0 - 100, snapEvery: 5}
}

func (r *recorder) do(h *History, fn func(h *History)) {
	r.calls = append(r.calls, fn)
	fn(h)
}

// mutate changes a key's bitmap: random ids, a dense region and runs, so
// every container kind shows up.
func (r *recorder) mutate(bm *roaring.Bitmap) {
	switch r.rng.Intn(4) {
	case 0:
		for i := 0; i < 50; i++ {
			a := uint64(r.rng.Intn(300000))
			bm.Flip(a, a+uint64(r.rng.Intn(100)))
		}
	case 1:
		start := uint64(r.rng.Intn(1 << 20))
		bm.Flip(start, start+uint64(r.rng.Intn(3000)))
	case 2:
		bm.AddMany(denseIDs(r.rng))
	default:
		bm.Clear()
	}
}

// step records one boundary: some counts, every 5th boundary some bitmaps,
// then Advance.
func (r *recorder) step(h *History) {
	r.now += 100
	ts := r.now
	for _, k := range testKeys {
		s := seriesName(k.db, k.key)
		if r.rng.Intn(3) == 0 {
			v := r.counts[s] + uint64(r.rng.Intn(4))
			if v > 3 && r.rng.Intn(3) == 0 {
				v -= 3
			}
			r.counts[s] = v
			r.m.counts[s] = append(r.m.counts[s], point{ts, v})
			r.do(h, func(h *History) { h.RecordCount(ts, k.db, k.key, v) })
		}
		if (ts/100)%r.snapEvery == 0 && r.rng.Intn(2) == 0 {
			bm := r.bms[s]
			if bm == nil {
				bm = roaring.New()
				r.bms[s] = bm
			}
			r.mutate(bm)
			byteLen := uint64(0)
			if !bm.IsEmpty() {
				byteLen = uint64(bm.Maximum())/8 + 1 + uint64(r.rng.Intn(3))
			}
			snapBm := bm.Clone()
			flips, since, right := r.flips(s, snapBm)
			r.m.snaps[s] = append(r.m.snaps[s], modelSnap{ts, snapBm, byteLen})
			r.do(h, func(h *History) {
				if flips != nil {
					took := h.RecordChanges(ts, k.db, k.key, snapBm, byteLen, flips.Clone(), since)
					r.wrongTook = r.wrongTook || took && !right
					if took {
						r.changes++
						return
					}
				}
				var fl *roaring.Bitmap
				if flips != nil {
					fl = flips.Clone()
				}
				h.RecordBitmap(ts, k.db, k.key, snapBm.Clone(), byteLen, fl, since)
			})
		}
	}
	r.do(h, func(h *History) { h.Advance(ts) })
	if r.rng.Intn(50) == 0 {
		h.Sync()
	}
}

// flips returns what a store may offer RecordChanges for a new snapshot
// cur of series s: nothing, the bits changed since the previous snapshot
// and its time (right), or bits that are not those changes with a time
// that is not the previous snapshot's, which History must refuse.
func (r *recorder) flips(s string, cur *roaring.Bitmap) (flips *roaring.Bitmap, since int64, right bool) {
	snaps := r.m.snaps[s]
	if len(snaps) == 0 {
		return nil, 0, false
	}
	prev := snaps[len(snaps)-1]
	switch r.rng.Intn(4) {
	case 0:
		return nil, 0, false
	case 1:
		return roaring.BitmapOf(1, 2, 3), prev.ts - 100, false
	}
	return roaring.Xor(prev.bm, cur), prev.ts, true
}

// check compares random queries at times in [from, h.Newest()] against the model.
func (r *recorder) check(t *testing.T, h *History, from int64, n int) {
	t.Helper()
	if err := h.Sync(); err != nil {
		t.Fatal(err)
	}
	if r.wrongTook {
		t.Fatal("RecordChanges took changes on top of a snapshot that is not the last")
	}
	newest := h.Newest()
	if newest != r.now {
		t.Fatalf("Newest = %d, want %d", newest, r.now)
	}
	rng := rand.New(rand.NewSource(int64(n)))
	for i := 0; i < n; i++ {
		k := testKeys[rng.Intn(len(testKeys))]
		s := seriesName(k.db, k.key)
		at := from + rng.Int63n(newest-from+1)
		if i%3 == 0 {
			at -= at % 100
		}
		checkAt(t, h, r.m, k, at)
		if i%10 == 0 {
			a := from + rng.Int63n(newest-from+1)
			b := a + rng.Int63n(newest-a+200)
			for _, step := range []int64{0, 100, 700, 5000} {
				for _, kind := range []string{AggLast, AggMin, AggMax, AggAvg} {
					got, err := h.Range(k.db, k.key, a, b, step, kind)
					if err != nil {
						t.Fatal(err)
					}
					var want []Sample
					if step == 0 {
						want = r.m.raw(s, a, min(b, newest))
					} else {
						want = r.m.agg(s, a, min(b, newest), step, kind)
					}
					if !equalSamples(got, want) {
						t.Fatalf("Range(%v, %d, %d, %d, %s)\ngot  %v\nwant %v", k, a, b, step, kind, got, want)
					}
				}
			}
		}
	}
}

// checkAt compares CountAt, BitmapAt and ContainsAt at one time.
func checkAt(t *testing.T, h *History, m *model, k testKey, at int64) {
	t.Helper()
	s := seriesName(k.db, k.key)
	c, err := h.CountAt(k.db, k.key, at)
	if err != nil || c != m.countAt(s, at) {
		t.Fatalf("CountAt(%v, %d) = %d, %v; want %d", k, at, c, err, m.countAt(s, at))
	}
	want, wantLen := m.bitmapAt(s, at)
	checkCountRange(t, h, k, at, want, wantLen)
	bm, n, err := h.BitmapAt(k.db, k.key, at)
	if err != nil || !bm.Equals(want) || n != wantLen {
		t.Fatalf("BitmapAt(%v, %d): %d bits, len %d, %v; want %d bits, len %d", k, at, bm.GetCardinality(), n, err, want.GetCardinality(), wantLen)
	}
	bm.Add(7) // the caller owns it: must not change what is held
	offsets := []uint32{0, 7, 65536*3 + 5, 1 << 20}
	if !want.IsEmpty() {
		offsets = append(offsets, want.Minimum(), want.Maximum(), mustSelect(want))
	}
	for _, off := range offsets {
		in, err := h.ContainsAt(k.db, k.key, at, off)
		if err != nil || in != want.Contains(off) {
			t.Fatalf("ContainsAt(%v, %d, %d) = %v, %v", k, at, off, in, err)
		}
	}
}

// checkCountRange compares CountRangeAt, for spans of several shapes
// relative to the snapshot's length, with a count over want's members.
func checkCountRange(t *testing.T, h *History, k testKey, at int64, want *roaring.Bitmap, wantLen uint64) {
	t.Helper()
	spans := []func(n uint64) (uint64, uint64){
		func(n uint64) (uint64, uint64) { return 0, n * 8 },
		func(n uint64) (uint64, uint64) { return 5, 5 },
		func(n uint64) (uint64, uint64) { return 65536*3 + 7, 65536*3 + 70 },     // inside a container
		func(n uint64) (uint64, uint64) { return 65536*2 + 100, 65536*5 + 3 },    // across containers
		func(n uint64) (uint64, uint64) { return n * 4, n*8 + 1<<20 },            // past the end
		func(n uint64) (uint64, uint64) { return 1 << 18, 1<<18 + 1<<17 + 64*3 }, // whole words and blocks
	}
	for i, span := range spans {
		called := false
		got, err := h.CountRangeAt(k.db, k.key, at, func(n uint64) (uint64, uint64) {
			if n != wantLen {
				t.Fatalf("CountRangeAt(%v, %d): span called with length %d, want %d", k, at, n, wantLen)
			}
			called = true
			return span(n)
		})
		from, to := span(wantLen)
		var n uint64
		for _, x := range want.ToArray() {
			if uint64(x) >= from && uint64(x) < to {
				n++
			}
		}
		if wantLen == 0 {
			n = 0
		}
		if err != nil || got != n || called != (wantLen > 0) {
			t.Fatalf("CountRangeAt(%v, %d) span %d [%d, %d) = %d, %v (span called %v); want %d", k, at, i, from, to, got, err, called, n)
		}
	}
}

func equalSamples(a, b []Sample) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		d := a[i].Value - b[i].Value
		if a[i].Time != b[i].Time || d > 1e-6*max(1, b[i].Value) || d < -1e-6*max(1, b[i].Value) {
			return false
		}
	}
	return true
}

func TestModelRandom(t *testing.T) {
	for seed := int64(1); seed <= 3; seed++ {
		cfg := testConfig(t, "100ms:1d")
		switch seed {
		case 2:
			cfg.CacheBytes = 0
			cfg.FullEvery = 1
		case 3: // rebuild with roaring's XOR instead of a dense buffer
			maxDenseBytes = 0
			defer func() { maxDenseBytes = 256 << 20 }()
		}
		h := mustOpen(t, cfg)
		r := newRecorder(seed)
		if c, err := h.CountAt(0, "a", t0); !errors.Is(err, ErrFuture) {
			t.Fatalf("empty history: %d, %v", c, err)
		}
		for i := 0; i < 600; i++ {
			r.step(h)
		}
		r.check(t, h, t0, 300)
		if r.changes == 0 && cfg.FullEvery > 1 {
			t.Fatal("no snapshot was recorded as changes")
		}
		checkBounds(t, h, t0)
		before := dump(t, h)

		// Replaying every call (a replica after a restart) changes nothing.
		for _, call := range r.calls {
			call(h)
		}
		waitIdle(t, h)
		if after := dump(t, h); !equalDumps(before, after) {
			t.Fatalf("replay changed the file: %d records before, %d after", len(before), len(after))
		}

		// Reopening gives the same file and answers.
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
		if err := h.Close(); err != nil {
			t.Fatal("second Close:", err)
		}
		if _, err := h.CountAt(0, "a", t0); !errors.Is(err, ErrClosed) {
			t.Fatal("query after Close:", err)
		}
		h = mustOpen(t, cfg)
		if got := dump(t, h); !equalDumps(before, got) {
			t.Fatal("reopened file differs")
		}
		r.check(t, h, t0, 100)
		for i := 0; i < 100; i++ {
			r.step(h)
		}
		r.check(t, h, t0, 100)
	}
}

// checkBounds checks the errors outside the held range and unknown keys.
func checkBounds(t *testing.T, h *History, oldest int64) {
	t.Helper()
	newest := h.Newest()
	var re *RangeError
	if _, err := h.CountAt(0, "a", oldest-1); !errors.As(err, &re) || errors.Is(err, ErrFuture) || re.Oldest != oldest || re.Newest != newest {
		t.Fatalf("before oldest: %v", err)
	}
	if _, err := h.ContainsAt(0, "a", newest+1, 1); !errors.Is(err, ErrFuture) {
		t.Fatalf("after newest: %v", err)
	}
	if _, _, err := h.BitmapAt(0, "a", newest+1); !errors.Is(err, ErrFuture) {
		t.Fatalf("after newest: %v", err)
	}
	whole := func(n uint64) (uint64, uint64) { return 0, n * 8 }
	if _, err := h.CountRangeAt(0, "a", newest+1, whole); !errors.Is(err, ErrFuture) {
		t.Fatalf("after newest: %v", err)
	}
	if _, err := h.Range(0, "a", oldest-1, newest, 0, ""); !errors.As(err, &re) {
		t.Fatalf("range before oldest: %v", err)
	}
	if _, err := h.Range(0, "a", oldest, newest, 1, "median"); err == nil {
		t.Fatal("unknown aggregate accepted")
	}
	if _, err := h.Range(0, "a", oldest, newest, 1, ""); err != nil && newest-oldest < MaxSamples {
		t.Fatal(err)
	}
	if _, err := h.Range(0, "a", oldest, oldest+MaxSamples*10, 1, ""); newest-oldest >= MaxSamples && !errors.Is(err, ErrTooManySamples) {
		t.Fatal(err)
	}
	c, err1 := h.CountAt(5, "nokey", newest)
	bm, n, err2 := h.BitmapAt(5, "nokey", newest)
	in, err3 := h.ContainsAt(5, "nokey", newest, 3)
	s, err4 := h.Range(5, "nokey", oldest, newest, 0, "")
	r, err5 := h.CountRangeAt(5, "nokey", newest, whole)
	if c != 0 || !bm.IsEmpty() || n != 0 || in || len(s) != 0 || r != 0 || errors.Join(err1, err2, err3, err4, err5) != nil {
		t.Fatal("unknown key:", c, bm, n, in, s, r, err1, err2, err3, err4, err5)
	}
}

func TestContainsSerialized(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for i := 0; i < 120; i++ {
		bm := roaring.New()
		for c := rng.Intn(8); c >= 0; c-- {
			base := uint64(rng.Intn(16)) << 16
			switch rng.Intn(3) {
			case 0:
				for j := rng.Intn(100); j >= 0; j-- {
					bm.Add(uint32(base) + uint32(rng.Intn(65536)))
				}
			case 1:
				for j := rng.Intn(10000) + 4097; j >= 0; j-- {
					bm.Add(uint32(base) + uint32(rng.Intn(65536)))
				}
			default:
				s := base + uint64(rng.Intn(65536))
				bm.AddRange(s, s+uint64(rng.Intn(3000)))
			}
		}
		if rng.Intn(2) == 0 {
			bm.RunOptimize()
		}
		buf, err := bm.ToBytes()
		if err != nil {
			t.Fatal(err)
		}
		probe := func(x uint32) {
			got, err := containsSerialized(buf, x)
			if err != nil || got != bm.Contains(x) {
				t.Fatalf("bitmap %d: contains(%d) = %v, %v; want %v", i, x, got, err, bm.Contains(x))
			}
		}
		for j := 0; j < 200; j++ {
			probe(uint32(rng.Intn(17 << 16)))
		}
		it := bm.Iterator()
		for it.HasNext() {
			x := it.Next()
			if rng.Intn(50) == 0 {
				probe(x)
				probe(x + 1)
				probe(x - 1)
			}
		}
		for cut := 0; cut < len(buf); cut += 1 + len(buf)/10 {
			containsSerialized(buf[:cut], uint32(rng.Intn(17<<16))) // must not panic
		}
	}
}

func mustSelect(bm *roaring.Bitmap) uint32 {
	x, _ := bm.Select(uint32(bm.GetCardinality() / 2))
	return x
}

// denseIDs returns enough ids in one container to make it a bitmap container.
func denseIDs(rng *rand.Rand) []uint32 {
	ids := make([]uint32, 5000)
	for i := range ids {
		ids[i] = uint32(65536*3 + rng.Intn(20000))
	}
	return ids
}

// TestRangeLong checks Range over a long series whose chunks are shorter
// than the steps (answered from chunk headers) and longer (point by point).
func TestRangeLong(t *testing.T) {
	h := mustOpen(t, testConfig(t, "1m:1d"))
	m := newModel()
	rng := rand.New(rand.NewSource(9))
	s := seriesName(0, "k")
	v := uint64(100)
	var ts int64
	for ts = t0; ts < t0+3*3600_000; ts += 100 * (1 + rng.Int63n(40)) {
		v = uint64(max(int64(v)+int64(rng.Intn(7))-3, 0))
		h.RecordCount(ts, 0, "k", v)
		m.counts[s] = append(m.counts[s], point{ts, v})
		if rng.Intn(20) == 0 {
			h.Advance(ts)
		}
	}
	h.Advance(ts)
	if err := h.Sync(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		from := t0 + rng.Int63n(3*3600_000)
		if i%2 == 0 {
			from -= from % 60_000
		}
		to := from + rng.Int63n(3600_000)
		step := []int64{1000, 59_000, 60_000, 300_000, 900_000}[i%5]
		for _, kind := range []string{AggLast, AggMin, AggMax, AggAvg} {
			got, err := h.Range(0, "k", from, to, step, kind)
			want := m.agg(s, from, min(to, ts), step, kind)
			if err != nil || !equalSamples(got, want) {
				t.Fatalf("Range(%d, %d, %d, %s): %v\ngot  %v\nwant %v", from, to, step, kind, err, got, want)
			}
		}
	}
	if got, want := mustRange(t, h, t0, ts), m.raw(s, t0, ts); !equalSamples(got, want) {
		t.Fatalf("raw: %d samples, want %d", len(got), len(want))
	}
}

func mustRange(t *testing.T, h *History, from, to int64) []Sample {
	s, err := h.Range(0, "k", from, to, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestHeaderCards checks a snapshot's container counts against a count of
// each container's members, up to the last container of the 32-bit space,
// with and without run containers.
func TestHeaderCards(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	bm := roaring.New()
	bm.AddMany(denseIDs(rng))
	bm.AddRange(1<<20, 1<<20+70000)
	bm.AddMany([]uint32{1, 70000, 1<<32 - 300, 1<<32 - 1})
	want := map[uint16]int{}
	for _, x := range bm.ToArray() {
		want[uint16(x>>16)]++
	}
	for _, optimized := range []bool{false, true} {
		if optimized {
			bm.RunOptimize()
		}
		cards, err := headerCards(bm)
		if err != nil {
			t.Fatal(err)
		}
		if len(cards) != 4*len(want) {
			t.Fatalf("%d containers listed, want %d", len(cards)/4, len(want))
		}
		for i := 0; i < len(cards); i += 4 {
			key, card := binary.LittleEndian.Uint16(cards[i:]), int(binary.LittleEndian.Uint16(cards[i+2:]))+1
			if want[key] != card || (i > 0 && key <= binary.LittleEndian.Uint16(cards[i-4:])) {
				t.Fatalf("container %d: key %d card %d, want %d (ascending keys)", i/4, key, card, want[key])
			}
		}
	}
	if cards, err := headerCards(roaring.New()); err != nil || len(cards) != 0 {
		t.Fatalf("empty bitmap: %v, %v", cards, err)
	}
}
