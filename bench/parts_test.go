package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/presenced/presenced/server/redisserver"
)

func TestHistogramQuantilesMatchSortedModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h histogram
	var model []time.Duration
	for range 100_000 {
		// Log-uniform from 1ns to about 1s.
		d := time.Duration(math.Exp(rng.Float64() * 20.7))
		h.record(d)
		model = append(model, d)
	}
	slices.Sort(model)
	for _, q := range []float64{0, 0.01, 0.5, 0.9, 0.99, 0.999, 1} {
		want := model[max(int(math.Ceil(q*float64(len(model))))-1, 0)]
		got := h.quantile(q)
		if err := math.Abs(float64(got-want)) / float64(want); err > 1.0/(1<<subBits) {
			t.Errorf("quantile(%v) = %v, want %v (error %.4f)", q, got, want, err)
		}
	}
	var empty histogram
	if empty.quantile(0.5) != 0 {
		t.Error("quantile of an empty histogram is not 0")
	}
}

func TestHistogramBucketsAreOrderedAndTight(t *testing.T) {
	prev := -1
	for v := uint64(0); v < 1<<40; v = v*17/16 + 1 {
		b := bucketOf(v)
		if b < prev {
			t.Fatalf("bucketOf(%d) = %d, below bucket %d of a smaller value", v, b, prev)
		}
		prev = b
		mid := bucketMid(b)
		if math.Abs(float64(mid)-float64(v)) > float64(v)/(1<<subBits) {
			t.Fatalf("value %d lands in bucket %d whose middle is %d", v, b, mid)
		}
	}
	if b := bucketOf(math.MaxUint64); b >= len(histogram{}.counts) {
		t.Fatalf("bucketOf(max) = %d, out of range", b)
	}
}

func TestHistogramMerge(t *testing.T) {
	var a, b histogram
	a.record(time.Millisecond)
	b.record(3 * time.Millisecond)
	b.record(3 * time.Millisecond)
	a.merge(&b)
	if a.n != 3 || a.quantile(0.5) < 2*time.Millisecond {
		t.Fatalf("merged: n=%d, median %v", a.n, a.quantile(0.5))
	}
}

func TestPermutationIsABijection(t *testing.T) {
	for _, space := range []uint64{1, 2, 3, 1000, 1 << 10, 12345, 1<<16 + 1} {
		for _, seed := range []uint64{0, 1, 99} {
			p := newPermutation(space, seed)
			seen := make([]bool, space)
			for i := range space {
				v := p.at(i)
				if v >= space || seen[v] {
					t.Fatalf("space %d seed %d: at(%d) = %d repeats or is out of range", space, seed, i, v)
				}
				seen[v] = true
			}
		}
	}
}

func TestPermutationLooksRandom(t *testing.T) {
	p, q := newPermutation(4_000_000_000, 1), newPermutation(4_000_000_000, 2)
	var sum float64
	const n = 10_000
	ascending := 0
	for i := range uint64(n) {
		v := p.at(i)
		if v >= 4_000_000_000 {
			t.Fatalf("at(%d) = %d out of range", i, v)
		}
		if i > 0 && v > p.at(i-1) {
			ascending++
		}
		if v == q.at(i) {
			t.Fatalf("seeds 1 and 2 agree at %d", i)
		}
		sum += float64(v)
	}
	if mean := sum / n; math.Abs(mean-2e9) > 1e8 {
		t.Errorf("mean id %.3g, want about 2e9", mean)
	}
	if ascending < n*4/10 || ascending > n*6/10 {
		t.Errorf("%d of %d steps go up; the order is not random", ascending, n)
	}
}

func TestRandomIDsStayInSpace(t *testing.T) {
	r := newRandomIDs(1, 2, 1000)
	hits := make([]int, 1000)
	for range 100_000 {
		v := r.next()
		if v >= 1000 {
			t.Fatalf("id %d out of space", v)
		}
		hits[v]++
	}
	if slices.Min(hits) == 0 {
		t.Error("some ids never drawn in 100 draws each on average")
	}
}

// TestRowIDs checks that rows with the same ids send the same ids in a
// repetition, and rows with other ids (or another repetition) send
// others: the rows that must set new bits do.
func TestRowIDs(t *testing.T) {
	const space, n = 100_000_000, 10_000
	draw := func(w workload, rep int, conn uint64) []uint64 {
		r := newRandomIDs(w.seed(1, rep), conn, space)
		ids := make([]uint64, n)
		for i := range ids {
			ids[i] = r.next()
		}
		return ids
	}
	p64 := setbitWorkload("p64", 64, Target{})
	p1 := setbitWorkload("p1", 1, Target{})
	if !slices.Equal(draw(p64, 0, 3), draw(p1, 0, 3)) {
		t.Error("rows with the same ids send different ids")
	}
	p64.ids, p1.ids = 64, 1
	for _, other := range [][]uint64{draw(p1, 0, 3), draw(p64, 1, 3), draw(p64, 0, 4)} {
		seen := make(map[uint64]bool, n)
		for _, id := range other {
			seen[id] = true
		}
		repeats := 0
		for _, id := range draw(p64, 0, 3) {
			if seen[id] {
				repeats++
			}
		}
		// By chance about n*n/space = 1.
		if repeats > 10 {
			t.Errorf("%d of %d ids repeat another row's, repetition's or connection's", repeats, n)
		}
	}
}

func TestShareCoversEverything(t *testing.T) {
	for _, n := range []uint64{0, 1, 7, 1000, 50_000_001} {
		for _, k := range []int{1, 3, 4, 50} {
			var next uint64
			for i := range k {
				from, to := share(n, k, i)
				if from != next || to < from {
					t.Fatalf("share(%d, %d, %d) = [%d, %d), want to start at %d", n, k, i, from, to, next)
				}
				next = to
			}
			if next != n {
				t.Fatalf("shares of %d over %d end at %d", n, k, next)
			}
		}
	}
}

// replies is a stream of every RESP reply type.
const replies = "+OK\r\n:12\r\n:-3\r\n$5\r\nhel\rl\r\n$-1\r\n*2\r\n:1\r\n$0\r\n\r\n-ERR bad thing\r\n*-1\r\n*0\r\n"

func TestRespReaderReadsEveryTypeAcrossSplits(t *testing.T) {
	// One byte per Read and a 4-byte first buffer exercise refills and
	// growth at every position.
	rd := newRespReader(iotest.OneByteReader(strings.NewReader(replies)), 4)
	want := []any{"OK", int64(12), int64(-3), "hel\rl", nil, []any{int64(1), ""}, replyError("ERR bad thing"), nil, []any{}}
	for i, w := range want {
		got, err := rd.read()
		if re, ok := w.(replyError); ok {
			if !errors.Is(err, re) {
				t.Fatalf("reply %d: error %v, want %v", i, err, re)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, w) {
			t.Fatalf("reply %d: %#v, %v; want %#v", i, got, err, w)
		}
	}
	if _, err := rd.read(); err != io.EOF {
		t.Fatalf("after the last reply: %v, want EOF", err)
	}
}

func TestRespReaderSkip(t *testing.T) {
	rd := newRespReader(iotest.OneByteReader(strings.NewReader(replies)), 4)
	var errs []string
	for {
		err := rd.skip()
		if err == io.EOF {
			break
		}
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if !reflect.DeepEqual(errs, []string{"ERR bad thing"}) {
		t.Fatalf("skip errors %q, want only the error reply", errs)
	}
}

func TestRespReaderRejectsMalformedReplies(t *testing.T) {
	for _, in := range []string{"+OK\n", "$5\r\nhelloXX", "?x\r\n", "\r\n", ":x\r\n", "$-2\r\n", "*abc\r\n"} {
		rd := newRespReader(strings.NewReader(in), 16)
		if _, err := rd.read(); !errors.Is(err, errProtocol) {
			t.Errorf("read(%q) = %v, want a protocol error", in, err)
		}
	}
}

func TestTemplateEncodesLikeAppendCommand(t *testing.T) {
	setbit := newTemplate([]string{"SETBIT", "k"}, 1, "1")
	fixed := newTemplate([]string{"BITCOUNT", "some:key"}, 0)
	for _, v := range []uint64{0, 7, 1234567, math.MaxUint64} {
		got := setbit.appendTo(nil, &listIDs{v})
		want := redisserver.AppendCommand(nil, "SETBIT", "k", strconv.FormatUint(v, 10), "1")
		if !bytes.Equal(got, want) {
			t.Errorf("template with %d: %q, want %q", v, got, want)
		}
		if got, want := fixed.appendTo(nil, nil), redisserver.AppendCommand(nil, "BITCOUNT", "some:key"); !bytes.Equal(got, want) {
			t.Errorf("fixed template: %q, want %q", got, want)
		}
	}
}

func TestHotPathDoesNotAllocate(t *testing.T) {
	tmpl := newTemplate([]string{"SETBIT", "k"}, 1, "1")
	buf := make([]byte, 0, 1024)
	ids := newRandomIDs(1, 1, 100_000_000)
	if n := testing.AllocsPerRun(100, func() { buf = tmpl.appendTo(buf[:0], ids) }); n != 0 {
		t.Errorf("encoding a command allocates %v times", n)
	}
	stream := bytes.Repeat([]byte(":1\r\n"), 200)
	src := bytes.NewReader(stream)
	rd := newRespReader(src, 4096)
	var h histogram
	if n := testing.AllocsPerRun(100, func() {
		src.Reset(stream)
		for range 200 {
			if err := rd.skip(); err != nil {
				t.Fatal(err)
			}
		}
		h.record(time.Microsecond)
	}); n != 0 {
		t.Errorf("reading replies allocates %v times", n)
	}
}

func TestTargetAndRatio(t *testing.T) {
	atLeast, atMost := Target{AtLeast: true, Ratio: 1}, Target{Ratio: 0.05}
	if atLeast.String() != "≥ 1.0×" || atMost.String() != "≤ 0.05×" {
		t.Errorf("targets render as %q and %q", atLeast, atMost)
	}
	cases := []struct {
		t     Target
		ratio float64
		met   bool
	}{
		{atLeast, 1, true}, {atLeast, 0.99, false}, {atMost, 0.05, true}, {atMost, 0.051, false},
		{atLeast, math.NaN(), false}, {atMost, math.NaN(), false},
	}
	for _, c := range cases {
		if c.t.Met(c.ratio) != c.met {
			t.Errorf("%v met by %v: %v, want %v", c.t, c.ratio, !c.met, c.met)
		}
	}
	r := Row{Presenced: Measurement{Value: 3}, Redis: Measurement{Value: 4}}
	if r.Ratio() != 0.75 {
		t.Errorf("ratio 3/4 = %v", r.Ratio())
	}
	r.Redis.Value = 0
	if !math.IsNaN(r.Ratio()) || formatRatio(r.Ratio()) != "n/a" {
		t.Errorf("ratio over zero = %v", r.Ratio())
	}
}

func TestFormatRatio(t *testing.T) {
	for r, want := range map[float64]string{
		269.4: "269×", 1.154: "1.15×", 0.5031: "0.503×", 0.05004: "0.0500×", 0.00123: "0.00123×", 12.34: "12.3×",
	} {
		if got := formatRatio(r); got != want {
			t.Errorf("formatRatio(%v) = %q, want %q", r, got, want)
		}
	}
}

func TestMedian(t *testing.T) {
	v := []float64{5, 1, 3}
	if median(v) != 3 || median([]float64{4, 1, 3, 2}) != 2.5 {
		t.Error("wrong median")
	}
	if !reflect.DeepEqual(v, []float64{5, 1, 3}) {
		t.Error("median reordered its input")
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[uint64]string{
		2_000_000: "2M", 100_000_000: "100M", 4_000_000_000: "4e9", 20_000: "20k",
		500_000: "500k", 40_000_000: "40M", 1234: "1234", 1_500_000: "1.5M",
	} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParseOptions(t *testing.T) {
	o, err := parseOptions(nil, io.Discard)
	if err != nil || !reflect.DeepEqual(o.cfg, DefaultConfig()) {
		t.Fatalf("no flags: %+v, %v", o.cfg, err)
	}
	o, err = parseOptions([]string{"-duration", "1s", "-quick", "-reps", "2"}, io.Discard)
	want := QuickConfig()
	want.Duration, want.Reps = time.Second, 2
	if err != nil || !o.quick || !reflect.DeepEqual(o.cfg, want) {
		t.Fatalf("-quick with overrides: %+v, %v", o.cfg, err)
	}
	o, err = parseOptions([]string{"-only", "heartbeats, replication"}, io.Discard)
	if want := []string{"heartbeats", "modes", "cluster", "failover", "restart"}; err != nil || !reflect.DeepEqual(o.cfg.Groups, want) {
		t.Fatalf("-only: groups %q, %v; want %q", o.cfg.Groups, err, want)
	}
	for _, bad := range [][]string{{"-small-ids", "200000000"}, {"-wide-space", "5000000000"}, {"-reps", "0"}, {"-nope"},
		{"-only", "heartbeats,nope"}, {"-only", ""}, {"-nodes", "2"}} {
		if _, err := parseOptions(bad, io.Discard); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestFailoverLoadWaitsForEverySurvivor(t *testing.T) {
	kill := time.Unix(100, 0)
	l := &failoverLoad{quit: make(chan struct{})}
	for _, addr := range []string{"a", "dead", "b", "a"} {
		l.conns = append(l.conns, &failoverConn{addr: addr})
	}
	l.conns[0].healed.Store(kill.Add(300 * time.Millisecond).UnixNano())
	l.conns[2].healed.Store(kill.Add(100 * time.Millisecond).UnixNano())
	if _, _, err := l.waitRecovered("dead", 5*time.Millisecond); err == nil {
		t.Fatal("recovered with a survivor's connection that never wrote")
	}
	l.conns[3].healed.Store(kill.Add(700 * time.Millisecond).UnixNano())
	first, every, err := l.waitRecovered("dead", time.Second)
	if err != nil || first.Sub(kill) != 100*time.Millisecond || every.Sub(kill) != 700*time.Millisecond {
		t.Fatalf("first %v, every %v after the kill, %v; want 100ms, 700ms", first.Sub(kill), every.Sub(kill), err)
	}
	l.conns[1].errs.Store(3)
	l.conns[3].errs.Store(2)
	if l.failed() != 5 {
		t.Errorf("failed() = %d, want 5", l.failed())
	}
}

func TestMarkerSplitsRoundTrips(t *testing.T) {
	srv := redisserver.StartForTest(t, redisserver.Options{})
	var marker atomic.Uint64
	marker.Add(1) // the window is open for the whole run
	res, err := drive(targetOf(srv), loadSpec{req: setbitTemplate, pipeline: 1, conns: 2, count: 50, marker: &marker,
		ids: func(c int) idSource { return newRandomIDs(1, uint64(c), 1000) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.marked.n != 50 || res.rtt.n != 0 {
		t.Errorf("open window: %d marked, %d outside; want 50, 0", res.marked.n, res.rtt.n)
	}
	marker.Add(1)
	res, err = drive(targetOf(srv), loadSpec{req: setbitTemplate, pipeline: 1, conns: 2, count: 50, marker: &marker,
		ids: func(c int) idSource { return newRandomIDs(1, uint64(c), 1000) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.marked.n != 0 || res.rtt.n != 50 {
		t.Errorf("closed window: %d marked, %d outside; want 0, 50", res.marked.n, res.rtt.n)
	}
}

func TestCommandLine(t *testing.T) {
	got := commandLine([]string{"-out", "bench/RESULTS.md", "-presenced", "my bin", ""})
	if want := `go run ./bench -out bench/RESULTS.md -presenced "my bin" ""`; got != want {
		t.Errorf("commandLine = %s, want %s", got, want)
	}
}

func TestProcReaders(t *testing.T) {
	rss, err := readRSS(os.Getpid())
	if err != nil || rss < 1<<20 {
		t.Errorf("own RSS %d, %v", rss, err)
	}
	// Burn some CPU so the tick-based counter moves.
	deadline := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(deadline) {
	}
	cpu, err := processCPU(os.Getpid())
	if err != nil || cpu <= 0 {
		t.Errorf("own CPU time %v, %v", cpu, err)
	}
	if _, err := readRSS(-1); err == nil {
		t.Error("RSS of pid -1 read without error")
	}
}

func TestMarkdownRendersGroupsAndNotes(t *testing.T) {
	rep := &Report{
		Date: time.Date(2025, 1, 2, 3, 4, 0, 0, time.UTC), Command: "go run ./bench",
		Machine: Machine{CPU: "cpu", Cores: 2, GoVersion: "go1.x", RedisVersion: "7.0.15"},
		Groups: []Group{
			{Title: "T", Throughput: true, Rows: []Row{{Workload: "w", Target: targetHeartbeat,
				Presenced: Measurement{Value: 2e6, P50: time.Millisecond, P99: 2500 * time.Microsecond, GenCPU: 0.5, SrvCPU: 1},
				Redis:     Measurement{Value: 1e6, P50: 900 * time.Microsecond, P99: 2 * time.Second}}}},
			{Title: "M", Rows: []Row{{Workload: "m", Target: targetMemSmall,
				Presenced: Measurement{Value: 3 << 20}, Redis: Measurement{Value: 12 << 20}}}},
			{Title: "F", Times: []TimeRow{
				{Workload: "f", Limit: 2 * time.Second, Presenced: []time.Duration{3 * time.Second, time.Second, 1500 * time.Millisecond}},
				{Workload: "r", Presenced: []time.Duration{4 * time.Second}, Redis: []time.Duration{20 * time.Millisecond}}}},
			{Title: "P", Pauses: []PauseRow{{Workload: "p", Server: "presenced", Took: 30 * time.Millisecond,
				Outside: Measurement{Value: 5000, P50: time.Millisecond, P99: 2 * time.Millisecond},
				During:  Measurement{P50: 3 * time.Millisecond, P99: 25 * time.Millisecond}, Max: 40 * time.Millisecond}}},
		},
		Notes: []string{"a note"},
	}
	checkMarkdown(t, rep,
		"Produced by `go run ./bench` on 2025-01-02 03:04 UTC.",
		"| w | 2.00M | 1.00M | 2.00× | ≥ 1.0× | yes | 1.00ms | 2.50ms | 900µs | 2.00s |",
		"| m | 3.0 MiB | 12.0 MiB | 0.250× | ≤ 0.5× | yes |",
		"| w | 1.00 | 0.50 | 0.00 | 0.00 |",
		"| f | 1.50s | 1.00s | 3.00s | 3 | ≤ 2.00s | yes | – |",
		"| r | 4.00s | 4.00s | 4.00s | 1 | – | – | 20.00ms |",
		"| p | presenced | 5000 | 1.00ms | 2.00ms | 3.00ms | 25.00ms | 40.00ms | 30.00ms |",
		"- a note",
	)
}

// checkMarkdown checks that rep's Markdown has every line of want.
func checkMarkdown(t *testing.T, rep *Report, want ...string) {
	t.Helper()
	md := string(rep.Markdown())
	for _, w := range want {
		if !strings.Contains(md, w) {
			t.Errorf("report lacks %q:\n%s", w, md)
		}
	}
}

// TestLogSpendPerEntry checks the averages an entry's description gives:
// the leader's counters for the entries and its log, the other nodes'
// together for a follower's log.
func TestLogSpendPerEntry(t *testing.T) {
	s := logSpend{took: time.Second, nodes: []logCounters{
		{writes: 100, writeUsec: 30_000},
		{writes: 400, writeUsec: 200_000, entries: 400, entryUsec: 800_000, commands: 16_000},
		{writes: 300, writeUsec: 120_000},
	}}
	want := "40 commands an entry, one entry every 2.50ms; 2.00ms from proposal to apply, of which the leader's log write 500µs and a follower's 375µs"
	if got := s.perEntry(); got != want {
		t.Errorf("perEntry() = %q, want %q", got, want)
	}
	one := logSpend{took: time.Second, nodes: []logCounters{{writes: 1000, writeUsec: 450_000, entries: 1000, entryUsec: 500_000, commands: 26_000}}}
	want = "26 commands an entry, one entry every 1.00ms; 500µs from proposal to apply, of which the leader's log write 450µs"
	if got := one.perEntry(); got != want {
		t.Errorf("one node: perEntry() = %q, want %q", got, want)
	}
	if got := (&logSpend{}).perEntry(); got != "no entry committed" {
		t.Errorf("nothing counted: %q", got)
	}
}

// TestLogSpendPerEntryAfterALeaderChange checks that the node that
// committed the most entries counts as the leader, and that the text says
// leadership moved.
func TestLogSpendPerEntryAfterALeaderChange(t *testing.T) {
	s := logSpend{took: time.Second, nodes: []logCounters{
		{writes: 10, writeUsec: 10_000, entries: 10, entryUsec: 20_000, commands: 100},
		{writes: 90, writeUsec: 45_000},
		{writes: 100, writeUsec: 100_000, entries: 90, entryUsec: 90_000, commands: 900},
	}}
	want := "10 commands an entry, one entry every 11.11ms; 1.00ms from proposal to apply, of which the leader's log write 1.00ms and a follower's 550µs (leadership moved during the runs)"
	if got := s.perEntry(); got != want {
		t.Errorf("perEntry() = %q, want %q", got, want)
	}
}

func TestLeaderChanged(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("connection to 127.0.0.1:1: %w", replyError("UNCERTAIN Leadership changed while the write was being committed")), true},
		{replyError("TRYAGAIN Leadership changed before the write entered the log"), true},
		{replyError("CLUSTERDOWN No leader is reachable from this node, retry later"), true},
		{replyError("ERR wrong number of arguments for 'setbit' command"), false},
		{replyError("UNCERTAINTY"), false},
		{errors.New("UNCERTAIN, but not a reply"), false},
		{nil, false},
	} {
		if got := leaderChanged(tc.err); got != tc.want {
			t.Errorf("leaderChanged(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
