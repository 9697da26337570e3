package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/presenced/presenced/history"
	"github.com/presenced/presenced/server/redisserver"
)

func TestSpreadTemplateEncodesLikeAppendCommand(t *testing.T) {
	tmpl := newSpreadTemplate([]string{"GETBIT", "k"}, []string{"AT"}, nil)
	got := tmpl.appendTo(nil, &listIDs{42, 1700000000})
	want := redisserver.AppendCommand(nil, "GETBIT", "k", "42", "AT", "1700000000")
	if !bytes.Equal(got, want) {
		t.Errorf("GETBIT AT: %q, want %q", got, want)
	}
	if tmpl.ids() != 2 || tmpl.replies() != 1 {
		t.Errorf("ids %d, replies %d; want 2, 1", tmpl.ids(), tmpl.replies())
	}
	mixed := newSpreadTemplate(nil, []string{"x", "y"}, nil, []string{"z"})
	got = mixed.appendTo(nil, &listIDs{1, 2, 3})
	want = redisserver.AppendCommand(nil, "1", "x", "y", "2", "3", "z")
	if !bytes.Equal(got, want) {
		t.Errorf("integers first and adjacent: %q, want %q", got, want)
	}
}

func TestDropIDsDrawsWhatItDrops(t *testing.T) {
	d := dropIDs{req: newTemplate([]string{"GETBIT", "k"}, 1), n: 1}
	ids := &listIDs{5, 99, 6, 98}
	got := d.appendTo(nil, ids)
	got = d.appendTo(got, ids)
	want := redisserver.AppendCommand(nil, "GETBIT", "k", "5")
	want = redisserver.AppendCommand(want, "GETBIT", "k", "6")
	if !bytes.Equal(got, want) || len(*ids) != 0 {
		t.Errorf("two GETBITs: %q (%d ids left), want %q", got, len(*ids), want)
	}
	if d.ids() != 2 || d.replies() != 1 {
		t.Errorf("ids %d, replies %d; want 2, 1", d.ids(), d.replies())
	}
}

func TestHistoryIDSources(t *testing.T) {
	cs := countSeries{start: 1000, counts: []uint32{7, 8, 9}}
	z := &seriesIDs{cs: cs, i: 1}
	for i, want := range []uint64{1001, 1001<<countBits | 8, 1002, 1002<<countBits | 9} {
		if got := z.next(); got != want {
			t.Fatalf("ZADD integer %d: %d, want %d", i, got, want)
		}
	}
	zip := &zipIDs{srcs: []idSource{&listIDs{1, 2}, offsetIDs{base: 100, src: &listIDs{10, 20}}}}
	w := newWindowIDs(&listIDs{500, 700}, 300)
	for i, c := range []struct {
		src  idSource
		want []uint64
	}{{zip, []uint64{1, 110, 2, 120}}, {w, []uint64{200, 500, 400, 700}}} {
		for j, want := range c.want {
			if got := c.src.next(); got != want {
				t.Fatalf("source %d, value %d: %d, want %d", i, j, got, want)
			}
		}
	}
}

func TestCountSeriesIsABoundedWalk(t *testing.T) {
	cs := newCountSeries(1_700_000_000, 100_000, 3)
	prev := int64(1) << (countBits - 1)
	moved := 0
	for i, c := range cs.counts {
		if d := int64(c) - prev; d > countWalk || d < -countWalk || c >= 1<<countBits {
			t.Fatalf("second %d: %d after %d", i, c, prev)
		}
		if int64(c) != prev {
			moved++
		}
		prev = int64(c)
	}
	if moved < len(cs.counts)*99/100 {
		t.Errorf("the count changed in only %d of %d seconds", moved, len(cs.counts))
	}
	if cs.end() != 1_700_000_000+99_999 || cs.at(cs.end()) != cs.counts[99_999] || cs.at(cs.start) != cs.counts[0] {
		t.Errorf("end %d, at(end) %d, at(start) %d", cs.end(), cs.at(cs.end()), cs.at(cs.start))
	}
}

func TestCountBucketsAsBITHISTORYDefinesThem(t *testing.T) {
	cs := countSeries{start: 100, counts: []uint32{1, 2, 3, 4, 5, 6}}
	for agg, want := range map[string][]history.Sample{
		"last": {{Time: 100_000, Value: 2}, {Time: 102_000, Value: 4}, {Time: 104_000, Value: 6}},
		"avg":  {{Time: 100_000, Value: 1.5}, {Time: 102_000, Value: 3.5}, {Time: 104_000, Value: 5006.0 / 1001}},
	} {
		if got := cs.buckets(100, 105, 2, agg); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", agg, got, want)
		}
	}
}

// churnModel is snapshot k's ids of d as a set, straight from its
// definition.
func churnModel(d churnDay, k int) map[uint32]bool {
	set := map[uint32]bool{}
	for j := range d.online {
		set[uint32(d.perm.at((uint64(k)*d.leave+j)%d.perm.space))] = true
	}
	return set
}

func TestChurnDayMatchesItsModel(t *testing.T) {
	d := newChurnDay(5000, 1000, 4)
	if d.leave != 20 {
		t.Fatalf("%d leave a minute, want 2%% of 1000", d.leave)
	}
	words := d.first()
	bm := roaring.FromDense(words, true)
	// Enough snapshots to wrap around the id space.
	for k := range 300 {
		if k > 0 {
			prev := bm
			d.advance(words, k-1)
			bm = roaring.FromDense(words, true)
			if changed := roaring.Xor(prev, bm).GetCardinality(); changed != 2*d.leave {
				t.Fatalf("snapshot %d: %d ids changed, want %d", k, changed, 2*d.leave)
			}
		}
		model := churnModel(d, k)
		if bm.GetCardinality() != uint64(len(model)) || uint64(len(model)) != d.online {
			t.Fatalf("snapshot %d: %d ids, model %d", k, bm.GetCardinality(), len(model))
		}
		for id := range model {
			if !bm.Contains(id) {
				t.Fatalf("snapshot %d lacks %d", k, id)
			}
		}
		if !bm.Contains(d.id(k, 17)) || bm.Contains(d.id(k, d.online+17)) {
			t.Fatalf("snapshot %d: id() places ids wrongly", k)
		}
	}
}

func TestSpanNamesDaysAndHours(t *testing.T) {
	for d, want := range map[time.Duration]string{30 * 24 * time.Hour: "30 days", 24 * time.Hour: "1 day",
		12 * time.Hour: "12 hours", time.Hour: "1 hour", 90 * time.Minute: "1h30m0s", 5 * time.Second: "5s"} {
		if got := span(d); got != want {
			t.Errorf("span(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestRecordedHistoryAnswersTheModel records a count series and a few
// snapshots as the benchmark does and reads them back through the
// history package.
func TestRecordedHistoryAnswersTheModel(t *testing.T) {
	dir := t.TempDir()
	cs := newCountSeries(time.Now().Unix()-3600, 3000, 1)
	if _, size, err := recordHistory(dir, cs.record); err != nil || size <= 0 {
		t.Fatalf("recording counts: size %d, %v", size, err)
	}
	sdir := t.TempDir()
	day := &snapshotDay{churnDay: newChurnDay(100_000, 10_000, 2), n: 5, byteLen: 12_500,
		start: time.Now().Truncate(time.Minute).Add(-10 * time.Minute).UnixMilli()}
	if _, _, err := recordHistory(sdir, day.record); err != nil {
		t.Fatalf("recording snapshots: %v", err)
	}
	h, err := history.Open(history.DefaultConfig(filepath.Join(dir, historyFile)))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, ms := range []int64{cs.start * 1000, cs.start*1000 + 999, (cs.start+1234)*1000 + 500, cs.end() * 1000} {
		if got, err := h.CountAt(0, countsKey, ms); err != nil || got != uint64(cs.at(ms/1000)) {
			t.Errorf("count at %d ms: %d, %v; want %d", ms, got, err, cs.at(ms/1000))
		}
	}
	hs, err := history.Open(history.DefaultConfig(filepath.Join(sdir, historyFile)))
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	words := day.first()
	for k := range day.n {
		if k > 0 {
			day.advance(words, k-1)
		}
		bm := roaring.FromDense(words, true)
		got, n, err := hs.BitmapAt(0, membersKey, day.start+int64(k)*60_000+min(59_999, int64(day.n-1-k)*60_000))
		if err != nil {
			t.Errorf("snapshot %d: %v", k, err)
		} else if n != day.byteLen || !got.Equals(bm) {
			t.Errorf("snapshot %d: %d ids, byte length %d, %v; want %d ids, %d", k, got.GetCardinality(), n, err, bm.GetCardinality(), day.byteLen)
		}
	}
	if !day.last.Equals(roaring.FromDense(words, true)) {
		t.Error("the last bitmap kept is not the last snapshot")
	}
}

func TestNewHistoryRequestsDoNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 64<<10)
	ids := newWindowIDs(offsetIDs{base: 1e9, src: newRandomIDs(1, 1, 1e6)}, 1000)
	zip := &zipIDs{srcs: []idSource{newRandomIDs(1, 2, 1e8), ids}}
	for name, r := range map[string]request{
		"spread": newSpreadTemplate([]string{"GETBIT", "k"}, []string{"AT"}, nil),
		"drop":   dropIDs{req: newTemplate([]string{"GETBIT", "k"}, 1), n: 1},
	} {
		if n := testing.AllocsPerRun(100, func() { buf = r.appendTo(buf[:0], zip) }); n != 0 {
			t.Errorf("%s allocates %v times", name, n)
		}
	}
}

func TestMarkdownRendersHistoryTables(t *testing.T) {
	rep := &Report{Groups: []Group{
		{Title: "q", Latencies: []LatencyRow{
			{Workload: "a", Presenced: Measurement{P50: 200 * time.Microsecond, P99: 900 * time.Microsecond},
				Reference: Measurement{P50: 100 * time.Microsecond, P99: 300 * time.Microsecond}, RefName: "redis-server `X`", Limit: targetCountAt},
			{Workload: "b", Presenced: Measurement{P50: 2 * time.Millisecond, P99: 7 * time.Millisecond},
				Reference: Measurement{P50: time.Millisecond, P99: 3 * time.Millisecond}, RefName: "presenced alone", Factor: targetWriteP99},
			{Workload: "c", Presenced: Measurement{P50: time.Millisecond, P99: 11 * time.Millisecond}, Limit: targetBitmapAt},
			{Workload: "e", Presenced: Measurement{P50: time.Millisecond, P99: 4 * time.Millisecond}, Limit: targetTickPause,
				Longest: 12 * time.Millisecond, LongestCPU: 3 * time.Millisecond},
		}},
		{Title: "d", Sizes: []SizeRow{{Workload: "day", Bytes: 1_234_000_000, Snapshots: 1440, Span: 24 * time.Hour,
			Raw: 12_500_000, Limit: targetDisk}}},
	}}
	checkMarkdown(t, rep,
		"| workload | presenced p50 | presenced p99 | target | met | reference | reference p50 | reference p99 |",
		"| a | 200µs | 900µs | p99 ≤ 1.00ms | yes | redis-server `X` | 100µs | 300µs |",
		"| b | 2.00ms | 7.00ms | p99 ≤ 2.0× reference | no | presenced alone | 1.00ms | 3.00ms |",
		"| c | 1.00ms | 11.00ms | p99 ≤ 10.00ms | no | – | – | – |",
		"| e | 1.00ms | 4.00ms | longest ≤ 10.00ms (took 12.00ms; 3.00ms of CPU at most) | no | – | – | – |",
		"| day | 1.23 GB | 856.9 kB | ≤ 2.00 GB | yes | 3.60 GB | 18.00 GB |",
	)
}

// historyRowNames returns the names of g's history rows, checking that
// their figures are plausible.
func historyRowNames(t *testing.T, g Group) []string {
	t.Helper()
	var names []string
	for _, r := range g.Latencies {
		names = append(names, r.Workload)
		measured := []Measurement{r.Presenced}
		switch {
		case r.RefName != "":
			measured = append(measured, r.Reference)
		case r.Longest == 0: // a bound on the longest time needs no reference
			t.Errorf("%s: no reference", r.Workload)
		}
		for _, m := range measured {
			if m.P50 <= 0 || m.P99 < m.P50 || m.P99 > time.Minute {
				t.Errorf("%s: implausible latencies %+v", r.Workload, m)
			}
		}
		if r.Bound() <= 0 {
			t.Errorf("%s: no bound", r.Workload)
		}
		if r.Longest > 0 && (r.LongestCPU <= 0 || r.LongestCPU > r.Longest) {
			t.Errorf("%s: the longest took %v, the most CPU %v", r.Workload, r.Longest, r.LongestCPU)
		}
	}
	for _, r := range g.Sizes {
		names = append(names, r.Workload)
		if r.Bytes <= 0 || r.Snapshots <= 0 || r.Raw <= 0 || r.Span <= 0 {
			t.Errorf("%s: implausible %+v", r.Workload, r)
		}
	}
	return names
}

// TestHistoryQuickRun runs the history group in quick mode against real
// servers and checks that the report has its rows with plausible figures.
// It asserts nothing about speed.
func TestHistoryQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers and records history")
	}
	redisserver.RequireProgram(t, "redis-server")
	bin := buildPresenced(t)
	args := []string{"-quick", "-only", "history", "-presenced", bin}
	o, err := parseOptions(args, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	var out, log bytes.Buffer
	rep, err := run(o, commandLine(args), &out, &log)
	if err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log.String())
	}
	if len(rep.Groups) != 3 {
		t.Errorf("%d groups, want 3", len(rep.Groups))
	}
	for _, g := range rep.Groups {
		names := historyRowNames(t, g)
		if want := wantRows[g.Title]; len(names) == 0 || strings.Join(names, "\n") != strings.Join(want, "\n") {
			t.Errorf("group %q has rows %q, want %q", g.Title, names, want)
		}
		for _, n := range names {
			if !strings.Contains(out.String(), "| "+n+" |") {
				t.Errorf("the report lacks the row %q", n)
			}
		}
	}
	if t.Failed() {
		t.Logf("report:\n%s\nlog:\n%s", out.String(), log.String())
	}
}
