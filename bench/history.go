package main

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/presenced/presenced/history"
)

// The history group measures reads of the past (AT, BITHISTORY) on
// history files that the benchmark records offline with the history
// package and presenced then opens, the disk a day of minute snapshots
// takes, and write latency while presenced snapshots a live key. Where
// Redis has a comparable live command, redis-server runs it in the same
// run: the recipe's sorted set of counts, or the same bitmap as a string.

// The history row groups: reads of the past and disk, and write latency
// while snapshots are written; -only history runs both.
const (
	groupHistory       = "history-reads"
	groupHistoryWrites = "history-writes"
)

// Keys of the history group.
const (
	countsKey  = "online:history:counts"  // the per-second count series
	membersKey = "online:history:members" // the minute snapshots
)

// historyFile is the history's file in presenced's data directory.
const historyFile = "history.db"

const (
	// historyStep is BITHISTORY's STEP in the range rows.
	historyStep = 300 * time.Second
	// snapshotEvery is the time between the snapshots of the disk row.
	snapshotEvery = time.Minute
	// churnPercent of the online ids leave between two snapshots, and as
	// many others join.
	churnPercent = 2
	// countWalk is the largest change of the count series in a second.
	countWalk = 500
	// countBits is the width of a count in the recipe's sorted-set member
	// (the second above it): counts stay below 2^countBits.
	countBits = 24
	// checks is how many answers of each kind are checked against the
	// model before a row is measured.
	checks = 20
	// snapshotLead opens a window of the write rows this long before the
	// boundary at which presenced snapshots the live key.
	snapshotLead = 20 * time.Millisecond
	// snapshotPoll is how often HISTORY INFO is polled to see whether the
	// snapshot of a window is written.
	snapshotPoll = 5 * time.Millisecond
	// newestSnapshotField is the field of HISTORY INFO key that gives the
	// time (unix ms) of the key's newest snapshot, 0 when it has none.
	newestSnapshotField = "newest_snapshot_ms"
	// nothingKeys is a --history-keys pattern no key matches.
	nothingKeys = "bench:history:none"
)

// Targets from the history issue.
var (
	targetCountAt  = time.Millisecond
	targetBitmapAt = 10 * time.Millisecond
	targetRange    = 20 * time.Millisecond
	targetDisk     = int64(2e9)
	targetWriteP99 = 2.0 // with snapshots / without
)

// history runs the read and disk rows of the history issue.
func (s *suite) history() error {
	queries := Group{Title: "History: reads of the past", Note: s.historyQueriesNote()}
	if err := s.historyCountRows(&queries); err != nil {
		return err
	}
	disk, err := s.historySnapshotRows(&queries)
	if err != nil {
		return err
	}
	s.rep.Groups = append(s.rep.Groups, queries, disk)
	return nil
}

// historyWrites runs the write-latency rows of the history issue.
func (s *suite) historyWrites() error {
	writes, err := s.historyWriteRows()
	if err != nil {
		return err
	}
	s.rep.Groups = append(s.rep.Groups, writes)
	return nil
}

// historyQueriesNote describes the query rows.
func (s *suite) historyQueriesNote() string {
	return fmt.Sprintf("One query at a time (one connection, pipeline 1) for %v per run; medians of %d runs per server, alternating which goes first. "+
		"Count rows: presenced opens a history file recorded with the history package (one count a second for %s ending a minute before the run, key `%s`, a random walk changing by up to %d every second); `AT` takes a random second of that stretch, `BITHISTORY` a random window of %s in it. "+
		"redis-server holds the recipe it replaces: a sorted set with one member per second (score the unix second, member the second and the count packed in one integer), read with `ZREVRANGEBYSCORE %s <t> -inf LIMIT 0 1` for a count and `ZRANGEBYSCORE %s <from> <to>` (every point, aggregated by the client) for a chart. "+
		"Snapshot rows: presenced opens the file of minute snapshots of the disk table below (key `%s`); `AT` takes a random second from the first snapshot to a minute after the last, so reads seldom hit the same snapshot twice; redis-server holds the last snapshot as a string (one SET of its raw bytes) and runs the same command live. Offsets are random in the id space; every kind of answer is checked against the model first.",
		s.cfg.Duration, s.cfg.Reps, span(s.cfg.HistoryCounts), countsKey, countWalk, span(s.cfg.HistoryRange), countsKey, countsKey, membersKey)
}

// span writes a stretch of time in days or hours when it is a whole
// number of them: "30 days", "12 hours".
func span(d time.Duration) string {
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "day"}, {time.Hour, "hour"}} {
		if d >= u.d && d%u.d == 0 {
			if n := d / u.d; n > 1 {
				return fmt.Sprintf("%d %ss", n, u.name)
			}
			return "1 " + u.name
		}
	}
	return d.String()
}

// countSeries is the per-second count series of the count rows: counts[i]
// is the count from second start+i on.
type countSeries struct {
	start  int64 // unix seconds
	counts []uint32
}

// newCountSeries is n seconds of a random walk from start that changes by
// at most countWalk a second and stays in [0, 2^countBits).
func newCountSeries(start int64, n int, seed uint64) countSeries {
	rng := rand.New(rand.NewPCG(seed, 5))
	cs := countSeries{start: start, counts: make([]uint32, n)}
	c := int64(1) << (countBits - 1)
	for i := range cs.counts {
		c += rng.Int64N(2*countWalk+1) - countWalk
		c = min(max(c, 0), 1<<countBits-1)
		cs.counts[i] = uint32(c)
	}
	return cs
}

// end is the last second of the series.
func (cs countSeries) end() int64 { return cs.start + int64(len(cs.counts)) - 1 }

// at is the count at second t, in [start, end].
func (cs countSeries) at(t int64) uint32 { return cs.counts[t-cs.start] }

// record records the series into h as the store would: a count and an
// advance at each second's boundary.
func (cs countSeries) record(h *history.History) {
	for i, c := range cs.counts {
		ts := (cs.start + int64(i)) * 1000
		h.RecordCount(ts, 0, countsKey, uint64(c))
		h.Advance(ts)
	}
}

// seriesIDs yields the integers of the recipe's ZADDs for the points
// from i on: the second (the score), then the second and the count packed
// (the member).
type seriesIDs struct {
	cs     countSeries
	i      int
	member bool
}

func (z *seriesIDs) next() uint64 {
	t := uint64(z.cs.start + int64(z.i))
	if !z.member {
		z.member = true
		return t
	}
	z.member = false
	v := t<<countBits | uint64(z.cs.counts[z.i])
	z.i++
	return v
}

// offsetIDs yields base plus the values of src.
type offsetIDs struct {
	base uint64
	src  idSource
}

func (o offsetIDs) next() uint64 { return o.base + o.src.next() }

// zipIDs yields one value of each source in turn: the offset and the time
// of GETBIT key <offset> AT <time>.
type zipIDs struct {
	srcs []idSource
	i    int
}

func (z *zipIDs) next() uint64 {
	v := z.srcs[z.i].next()
	z.i = (z.i + 1) % len(z.srcs)
	return v
}

// windowIDs yields windows of a fixed width as pairs from, to: to from
// ends, from = to - width.
type windowIDs struct {
	ends  idSource
	width uint64
	to    uint64
	first bool // the next value is a window's from
}

func newWindowIDs(ends idSource, width uint64) *windowIDs {
	return &windowIDs{ends: ends, width: width, first: true}
}

func (w *windowIDs) next() uint64 {
	if w.first {
		w.first = false
		w.to = w.ends.next()
		return w.to - w.width
	}
	w.first = true
	return w.to
}

// spreadTemplate is a command whose integer arguments sit among fixed
// ones, GETBIT key <offset> AT <time>: the integers come from the id
// source in order. It is a request of one command.
type spreadTemplate struct {
	parts [][]byte // the encoded fixed arguments before each integer, then after the last
}

// newSpreadTemplate encodes a command of len(parts)-1 integers: parts[i]
// are the fixed arguments before integer i, the last part those after the
// last integer.
func newSpreadTemplate(parts ...[]string) spreadTemplate {
	args := len(parts) - 1
	var t spreadTemplate
	for _, p := range parts {
		args += len(p)
		var enc []byte
		for _, a := range p {
			enc = appendBulk(enc, []byte(a))
		}
		t.parts = append(t.parts, enc)
	}
	head := append([]byte{'*'}, strconv.Itoa(args)...)
	t.parts[0] = append(append(head, "\r\n"...), t.parts[0]...)
	return t
}

func (t spreadTemplate) appendTo(buf []byte, ids idSource) []byte {
	buf = append(buf, t.parts[0]...)
	for _, p := range t.parts[1:] {
		buf = appendUint(buf, ids.next())
		buf = append(buf, p...)
	}
	return buf
}

func (t spreadTemplate) ids() int     { return len(t.parts) - 1 }
func (t spreadTemplate) replies() int { return 1 }

// dropIDs is req followed by drawing n more ids that it drops: the live
// reference of a query AT a time draws the time and ignores it, so that
// both servers of a row get the same offsets.
type dropIDs struct {
	req request
	n   int
}

func (d dropIDs) appendTo(buf []byte, ids idSource) []byte {
	buf = d.req.appendTo(buf, ids)
	for range d.n {
		ids.next()
	}
	return buf
}

func (d dropIDs) ids() int     { return d.req.ids() + d.n }
func (d dropIDs) replies() int { return d.req.replies() }

// historyPair starts presenced on the data directory dir (holding a
// history file) and redis-server.
func (s *suite) historyPair(dir string) (pair, error) {
	var p pair
	var err error
	if p[0], err = startPresenced(s.cfg.Presenced, "--dir", dir); err != nil {
		return p, err
	}
	if p[1], err = startRedis(); err != nil {
		p[0].Close()
	}
	return p, err
}

// recordHistory opens the history file in dir, has record fill it, waits
// until all of it is written and closes it; it returns how long that took
// and the size of the file.
func recordHistory(dir string, record func(h *history.History)) (time.Duration, int64, error) {
	path := filepath.Join(dir, historyFile)
	start := time.Now()
	h, err := history.Open(history.DefaultConfig(path))
	if err != nil {
		return 0, 0, err
	}
	record(h)
	err = h.Sync()
	if cerr := h.Close(); err == nil {
		err = cerr
	}
	took := time.Since(start)
	if err != nil {
		return took, 0, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return took, 0, err
	}
	return took, fi.Size(), nil
}

// historyCountRows records the count series, serves it from presenced and
// the recipe's sorted set from redis-server, and measures the count and
// range rows.
func (s *suite) historyCountRows(g *Group) error {
	dir, err := os.MkdirTemp("", "bench-history-counts-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	n := int(s.cfg.HistoryCounts / time.Second)
	cs := newCountSeries(time.Now().Add(-time.Minute).Unix()-int64(n), n, s.cfg.Seed)
	took, size, err := recordHistory(dir, cs.record)
	if err != nil {
		return fmt.Errorf("recording %d counts: %w", n, err)
	}
	s.logf("history: recorded %d per-second counts in %v, %d bytes", n, took, size)
	s.rep.Notes = append(s.rep.Notes, fmt.Sprintf("Recording %s of per-second counts (%d points) with the history package took %.1fs; the file is %s.",
		span(s.cfg.HistoryCounts), n, took.Seconds(), formatSize(float64(size))))
	p, err := s.historyPair(dir)
	if err != nil {
		return err
	}
	defer p.close()
	if err := s.loadCountZset(p[1], cs); err != nil {
		return err
	}
	width := uint64(s.cfg.HistoryRange / time.Second)
	if err := checkCounts(p, cs, int64(width), s.cfg.Seed); err != nil {
		return err
	}
	seconds := uint64(len(cs.counts))
	times := func(seed, stream uint64) idSource {
		return offsetIDs{base: uint64(cs.start), src: newRandomIDs(seed, stream, seconds)}
	}
	windows := func(seed, stream uint64) idSource {
		return newWindowIDs(offsetIDs{base: uint64(cs.start) + width, src: newRandomIDs(seed, stream, seconds-width)}, width)
	}
	step := strconv.Itoa(int(historyStep / time.Second))
	zrange := newTemplate([]string{"ZRANGEBYSCORE", countsKey}, 2)
	rangeName := fmt.Sprintf("`BITHISTORY %s <from> <to> STEP %s` over %s", countsKey, step, span(s.cfg.HistoryRange))
	for _, q := range []historyQuery{
		{name: fmt.Sprintf("`BITCOUNT %s AT <t>`, %s of per-second counts", countsKey, span(s.cfg.HistoryCounts)),
			reqs: [2]request{newTemplate([]string{"BITCOUNT", countsKey, "AT"}, 1), newTemplate([]string{"ZREVRANGEBYSCORE", countsKey}, 1, "-inf", "LIMIT", "0", "1")},
			ref:  "redis-server `ZREVRANGEBYSCORE " + countsKey + " <t> -inf LIMIT 0 1`", pick: times, limit: targetCountAt},
		{name: rangeName,
			reqs: [2]request{newTemplate([]string{"BITHISTORY", countsKey}, 2, "STEP", step), zrange},
			ref:  "redis-server `ZRANGEBYSCORE " + countsKey + " <from> <to>`", pick: windows, limit: targetRange},
		{name: rangeName + " AGGREGATE avg",
			reqs: [2]request{newTemplate([]string{"BITHISTORY", countsKey}, 2, "STEP", step, "AGGREGATE", "avg"), zrange},
			ref:  "redis-server `ZRANGEBYSCORE " + countsKey + " <from> <to>`", pick: windows, limit: targetRange},
	} {
		row, err := s.historyQueryRow(p, q)
		if err != nil {
			return err
		}
		g.Latencies = append(g.Latencies, row)
	}
	return nil
}

// loadCountZset loads the recipe's sorted set of cs into srv.
func (s *suite) loadCountZset(srv server, cs countSeries) error {
	zadd := newTemplate([]string{"ZADD", countsKey}, 2)
	n := 2 * uint64(len(cs.counts))
	conns := s.cfg.LoadConns
	res, err := drive(targetOf(srv), loadSpec{req: zadd, pipeline: s.cfg.LoadPipeline, conns: conns, count: n,
		ids: func(i int) idSource {
			from, _ := connShare(n, 2, conns, i)
			return &seriesIDs{cs: cs, i: int(from / 2)}
		}})
	if err != nil {
		return fmt.Errorf("loading the count series into redis-server: %w", err)
	}
	s.noteLoad(fmt.Sprintf("%d counts as a sorted set", len(cs.counts)), "ZADD", serverNames[1], res)
	return nil
}

// checkCounts checks BITCOUNT AT on presenced and the recipe's lookup on
// redis-server at random seconds, and BITHISTORY over a random window of
// width seconds, against the series.
func checkCounts(p pair, cs countSeries, width int64, seed uint64) error {
	c, err := dial(p[0].Addr(), 10*time.Second)
	if err != nil {
		return err
	}
	defer c.close()
	cr, err := dial(p[1].Addr(), 10*time.Second)
	if err != nil {
		return err
	}
	defer cr.close()
	rng := rand.New(rand.NewPCG(seed, 6))
	for range checks {
		t := cs.start + rng.Int64N(int64(len(cs.counts)))
		ts := strconv.FormatInt(t, 10)
		if err := expectInt(c, uint64(cs.at(t)), "BITCOUNT", countsKey, "AT", ts); err != nil {
			return fmt.Errorf("presenced at %d: %w", t, err)
		}
		v, err := cr.do(time.Minute, "ZREVRANGEBYSCORE", countsKey, ts, "-inf", "LIMIT", "0", "1")
		if err != nil {
			return err
		}
		if got, ok := v.([]any); !ok || len(got) != 1 || got[0] != strconv.FormatUint(uint64(t)<<countBits|uint64(cs.at(t)), 10) {
			return fmt.Errorf("redis-server's count at %d: %v, want %d", t, v, cs.at(t))
		}
	}
	to := cs.start + width + rng.Int64N(int64(len(cs.counts))-width)
	for _, agg := range []string{"last", "avg"} {
		if err := checkRange(c, cs, to-width, to, agg); err != nil {
			return err
		}
	}
	return nil
}

// checkRange checks BITHISTORY countsKey from to STEP historyStep
// AGGREGATE agg against the series.
func checkRange(c *client, cs countSeries, from, to int64, agg string) error {
	step := int64(historyStep / time.Second)
	v, err := c.do(time.Minute, "BITHISTORY", countsKey, strconv.FormatInt(from, 10), strconv.FormatInt(to, 10),
		"STEP", strconv.FormatInt(step, 10), "AGGREGATE", agg)
	if err != nil {
		return fmt.Errorf("BITHISTORY: %w", err)
	}
	got, _ := v.([]any)
	want := cs.buckets(from, to, step, agg)
	if len(got) != len(want) {
		return fmt.Errorf("BITHISTORY %d %d STEP %d AGGREGATE %s: %d samples, want %d", from, to, step, agg, len(got), len(want))
	}
	for i, w := range want {
		pair, _ := got[i].([]any)
		if len(pair) != 2 {
			return fmt.Errorf("BITHISTORY sample %d: %v", i, got[i])
		}
		val, err := strconv.ParseFloat(fmt.Sprint(pair[1]), 64)
		if pair[0] != w.Time || err != nil || math.Abs(val-w.Value) > 1e-9*w.Value {
			return fmt.Errorf("BITHISTORY %s sample %d: %v, want [%d %v]", agg, i, pair, w.Time, w.Value)
		}
	}
	return nil
}

// buckets is what BITHISTORY from to STEP step AGGREGATE agg (last or
// avg; times in seconds) answers for the series: per bucket of step
// seconds from from, the last one ending 1 ms after to, its start in ms
// and the count at its end (last) or the time-weighted mean count over it
// (avg).
func (cs countSeries) buckets(from, to, step int64, agg string) []history.Sample {
	var out []history.Sample
	for bs := from * 1000; bs <= to*1000; bs += step * 1000 {
		be := min(bs+step*1000, to*1000+1)
		v := float64(cs.at((be - 1) / 1000))
		if agg == "avg" {
			var sum float64
			for sec := bs / 1000; sec*1000 < be; sec++ {
				sum += float64(cs.at(sec)) * float64(min(be, (sec+1)*1000)-max(bs, sec*1000))
			}
			v = sum / float64(be-bs)
		}
		out = append(out, history.Sample{Time: bs, Value: v})
	}
	return out
}

// historyQuery is a query row: presenced's query and redis-server's
// reference, and the times (and offsets) they take.
type historyQuery struct {
	name  string
	reqs  [2]request
	ref   string // what redis-server runs
	pick  func(seed, stream uint64) idSource
	limit time.Duration
}

// historyQueryRow measures q one query at a time on both of p.
func (s *suite) historyQueryRow(p pair, q historyQuery) (LatencyRow, error) {
	row, err := s.throughput(p.targets(), workload{name: q.name, reqs: q.reqs, pipeline: 1, conns: 1, random: true, pick: q.pick})
	if err != nil {
		return LatencyRow{}, err
	}
	return LatencyRow{Workload: q.name, Presenced: row.Presenced, Reference: row.Redis, RefName: q.ref, Limit: q.limit}, nil
}

// churnDay is the online ids of the snapshot rows: at snapshot k, the ids
// at positions [k*leave, k*leave+online) of a permutation of the id space
// (modulo its size). From one snapshot to the next the leave ids online
// the longest go and leave fresh ones join: the churn, spread uniformly
// over the id space.
type churnDay struct {
	perm          permutation
	online, leave uint64
}

func newChurnDay(space, online, seed uint64) churnDay {
	return churnDay{perm: newPermutation(space, seed), online: online, leave: online * churnPercent / 100}
}

// id returns the j-th id online at snapshot k, for j < online; j beyond
// that gives ids offline at k as long as j < space - online.
func (d churnDay) id(k int, j uint64) uint32 {
	return uint32(d.perm.at((uint64(k)*d.leave + j) % d.perm.space))
}

// first returns snapshot 0's ids as a dense bitmap: bit i%64 of word
// i/64 is id i.
func (d churnDay) first() []uint64 {
	words := make([]uint64, (d.perm.space+63)/64)
	for j := range d.online {
		id := d.id(0, j)
		words[id/64] |= 1 << (id % 64)
	}
	return words
}

// advance turns the dense bitmap of snapshot k's ids into snapshot k+1's
// and returns the ids that changed between the two.
func (d churnDay) advance(words []uint64, k int) *roaring.Bitmap {
	flips := roaring.New()
	for j := range d.leave {
		gone, joined := d.id(k, j), d.id(k, d.online+j)
		words[gone/64] &^= 1 << (gone % 64)
		words[joined/64] |= 1 << (joined % 64)
		flips.Add(gone)
		flips.Add(joined)
	}
	return flips
}

// snapshotDay is the day of minute snapshots: the first at start (unix
// ms), n in all.
type snapshotDay struct {
	churnDay
	start   int64
	n       int
	byteLen uint64
	last    *roaring.Bitmap // the last snapshot, once recorded
}

// record records the snapshots into h as the store would, with the count
// at each snapshot and the ids changed since the previous one, and keeps
// the last bitmap.
func (d *snapshotDay) record(h *history.History) {
	words := d.first()
	for k := range d.n {
		var flips *roaring.Bitmap
		if k > 0 {
			flips = d.advance(words, k-1)
		}
		bm := roaring.FromDense(words, true)
		ts := d.start + int64(k)*snapshotEvery.Milliseconds()
		since := ts - snapshotEvery.Milliseconds()
		h.RecordCount(ts, 0, membersKey, bm.GetCardinality())
		if flips == nil || !h.RecordChanges(ts, 0, membersKey, bm, d.byteLen, flips, since) {
			h.RecordBitmap(ts, 0, membersKey, bm, d.byteLen, flips, since)
		}
		h.Advance(ts)
	}
	d.last = roaring.FromDense(words, true)
}

// historySnapshotRows records the day of snapshots, reports its size (a
// group of its own) and measures the snapshot rows (rows of g) on it.
func (s *suite) historySnapshotRows(g *Group) (Group, error) {
	dir, err := os.MkdirTemp("", "bench-history-snapshots-")
	if err != nil {
		return Group{}, err
	}
	defer os.RemoveAll(dir)
	n := s.cfg.HistorySnapshots
	end := time.Now().Truncate(snapshotEvery).Add(-snapshotEvery)
	day := &snapshotDay{churnDay: newChurnDay(s.cfg.Space, s.cfg.HistoryIDs, s.cfg.Seed), n: n,
		start: end.Add(-time.Duration(n-1) * snapshotEvery).UnixMilli(), byteLen: (s.cfg.Space + 7) / 8}
	took, size, err := recordHistory(dir, day.record)
	if err != nil {
		return Group{}, fmt.Errorf("recording %d snapshots: %w", n, err)
	}
	what := fmt.Sprintf("%d minute snapshots of %s online in %s, %d%% churn a minute", n, count(day.online), count(s.cfg.Space), churnPercent)
	s.logf("history: recorded %s in %v, %d bytes", what, took, size)
	s.rep.Notes = append(s.rep.Notes, fmt.Sprintf("Recording %s with the history package took %.1fs.", what, took.Seconds()))
	disk := Group{Title: "History: disk for minute snapshots", Sizes: []SizeRow{{Workload: what, Bytes: size, Snapshots: n,
		Span: time.Duration(n) * snapshotEvery, Raw: int64(day.byteLen), Limit: targetDisk}}, Note: fmt.Sprintf(
		"The history package records a snapshot of key `%s` a minute (`RecordBitmap`, as presenced's store does at each interval, with the key's count) into a fresh file with the default settings; at each minute the %d%% of the ids online the longest leave and as many fresh ones join, at random places in the id space. The figure is the file's size once everything is written; the recipe it replaces copies the raw bitmap of the %s-id space (%s) to another store every 5 minutes, or every minute.",
		membersKey, churnPercent, count(s.cfg.Space), formatSize(float64(day.byteLen)))}

	p, err := s.historyPair(dir)
	if err != nil {
		return Group{}, err
	}
	defer p.close()
	records, err := historyInfoOf(p[0], membersKey, "bytes_on_disk")
	if err != nil {
		return Group{}, err
	}
	disk.Note += fmt.Sprintf(" Of the file, the key's records take %s (`HISTORY INFO %s`, bytes_on_disk); the rest is bbolt's pages and free space.", formatSize(float64(records)), membersKey)
	if err := setRaw(p[1], membersKey, day.last, day.byteLen); err != nil {
		return Group{}, err
	}
	if err := checkSnapshots(p, day, s.cfg.Seed); err != nil {
		return Group{}, err
	}
	first := uint64(day.start / 1000)
	seconds := uint64(n) * uint64(snapshotEvery/time.Second)
	at := func(seed, stream uint64) idSource {
		return offsetIDs{base: first, src: newRandomIDs(seed, stream, seconds)}
	}
	offsetAt := func(seed, stream uint64) idSource {
		return &zipIDs{srcs: []idSource{newRandomIDs(seed, stream, s.cfg.Space), at(seed, stream+1000)}}
	}
	for _, q := range []historyQuery{
		{name: fmt.Sprintf("`GETBIT %s <offset> AT <t>`, %s-id snapshots", membersKey, count(day.online)),
			reqs: [2]request{newSpreadTemplate([]string{"GETBIT", membersKey}, []string{"AT"}, nil), dropIDs{req: newTemplate([]string{"GETBIT", membersKey}, 1), n: 1}},
			ref:  "redis-server `GETBIT " + membersKey + " <offset>`", pick: offsetAt, limit: targetBitmapAt},
		{name: fmt.Sprintf("`BITCOUNT %s 0 -1 AT <t>`, %s-id snapshots", membersKey, count(day.online)),
			reqs: [2]request{newTemplate([]string{"BITCOUNT", membersKey, "0", "-1", "AT"}, 1), newTemplate([]string{"BITCOUNT", membersKey, "0", "-1"}, 0)},
			ref:  "redis-server `BITCOUNT " + membersKey + " 0 -1`", pick: at, limit: targetBitmapAt},
	} {
		row, err := s.historyQueryRow(p, q)
		if err != nil {
			return Group{}, err
		}
		g.Latencies = append(g.Latencies, row)
	}
	return disk, nil
}

// setRaw stores bm as a string of byteLen bytes in key of srv, in one SET.
func setRaw(srv server, key string, bm *roaring.Bitmap, byteLen uint64) error {
	b := make([]byte, byteLen)
	it := bm.Iterator()
	for it.HasNext() {
		id := it.Next()
		b[id/8] |= 0x80 >> (id % 8)
	}
	c, err := dial(srv.Addr(), 10*time.Second)
	if err != nil {
		return err
	}
	defer c.close()
	if _, err := c.do(time.Minute, "SET", key, string(b)); err != nil {
		return err
	}
	return expectInt(c, bm.GetCardinality(), "BITCOUNT", key)
}

// checkSnapshots checks GETBIT AT and BITCOUNT AT on presenced against
// the churn model at random snapshots.
func checkSnapshots(p pair, day *snapshotDay, seed uint64) error {
	c, err := dial(p[0].Addr(), 10*time.Second)
	if err != nil {
		return err
	}
	defer c.close()
	rng := rand.New(rand.NewPCG(seed, 7))
	for range checks {
		k := rng.IntN(day.n)
		// A second within snapshot k's minute.
		t := strconv.FormatInt(day.start/1000+int64(k)*int64(snapshotEvery/time.Second)+rng.Int64N(60), 10)
		if err := expectInt(c, day.online, "BITCOUNT", membersKey, "0", "-1", "AT", t); err != nil {
			return fmt.Errorf("snapshot %d: %w", k, err)
		}
		for want, j := range map[uint64]uint64{1: rng.Uint64N(day.online), 0: day.online + rng.Uint64N(day.perm.space-day.online)} {
			id := strconv.FormatUint(uint64(day.id(k, j)), 10)
			if err := expectInt(c, want, "GETBIT", membersKey, id, "AT", t); err != nil {
				return fmt.Errorf("snapshot %d, id %s: %w", k, id, err)
			}
		}
	}
	return nil
}

// historyWriteRows measures SETBIT latency on two presenced holding a
// live key of HistoryIDs ids: one records it every HistoryInterval, the
// other records nothing.
func (s *suite) historyWriteRows() (Group, error) {
	interval := s.cfg.HistoryInterval.String()
	var nodes [2]server
	for i, keys := range []string{heartbeatKey, nothingKeys} {
		srv, err := startPresenced(s.cfg.Presenced, "--history-interval", interval, "--history-keys", keys)
		if err != nil {
			return Group{}, err
		}
		defer srv.Close()
		nodes[i] = srv
		res, err := s.loadPerm(srv, setbitTemplate, newPermutation(s.cfg.Space, s.cfg.Seed), 0, s.cfg.HistoryIDs)
		if err != nil {
			return Group{}, err
		}
		s.noteLoad(fmt.Sprintf("%s ids in %s with --history-keys %s", count(s.cfg.HistoryIDs), count(s.cfg.Space), keys), "SETBIT", serverNames[0], res)
	}
	run := max(s.cfg.Duration, 3*s.cfg.HistoryInterval)
	var runs [2][]*loadResult
	var windows windowStats
	for rep := range s.cfg.Reps {
		for k := range 2 {
			i := k ^ rep%2
			// The recording node first writes out what it still holds,
			// so that its disk writes do not spill into the next run.
			if _, err := historyInfoOf(nodes[0], heartbeatKey, newestSnapshotField); err != nil {
				return Group{}, err
			}
			// The reference node's windows last as long as the recording
			// node's did on average (its first run comes first).
			span := windows.mean()
			if i == 0 {
				span = 0
			}
			res, w, err := s.writeRun(nodes[i], rep, run, span)
			if err != nil {
				return Group{}, err
			}
			runs[i] = append(runs[i], res)
			if i == 0 {
				windows.n, windows.open = windows.n+w.n, windows.open+w.open
			}
		}
	}
	var during, whole, windowsWithout, without []histogram
	for _, r := range runs[0] {
		all := r.rtt
		all.merge(&r.marked)
		during, whole = append(during, r.marked), append(whole, all)
	}
	for _, r := range runs[1] {
		all := r.rtt
		all.merge(&r.marked)
		windowsWithout, without = append(windowsWithout, r.marked), append(without, all)
	}
	ref := "presenced with `--history-keys " + nothingKeys + "`, whole runs"
	refWindows := "presenced with `--history-keys " + nothingKeys + "`, round trips in windows at the same boundaries"
	name := fmt.Sprintf("`SETBIT %s <random id> 1` on a %s-id key snapshot every %v", heartbeatKey, count(s.cfg.HistoryIDs), s.cfg.HistoryInterval)
	return Group{Title: "History: write latency while snapshots are written", Latencies: []LatencyRow{
		{Workload: name + ": round trips overlapping a snapshot", Presenced: quantiles(during), Reference: quantiles(windowsWithout), RefName: refWindows, Factor: targetWriteP99},
		{Workload: name + ": whole runs", Presenced: quantiles(whole), Reference: quantiles(without), RefName: ref, Factor: targetWriteP99},
	}, Note: fmt.Sprintf(
		"Two presenced in the default mode, each loaded with %s distinct random ids in `%s` (SETBIT, %d connections, pipeline %d), both with `--history-interval %v`: one records that key (`--history-keys %s`), the other nothing (`--history-keys %s`). "+
			"`SETBIT %s <random id> 1`, pipeline 1, %d connections, %v per run, medians of %d runs per server, alternating. "+
			"A snapshot window opens %v before each boundary that is a multiple of the interval and closes when `HISTORY INFO %s` shows the snapshot of that boundary written (%d windows, open %v each on average); round trips overlapping a window count as overlapping a snapshot. "+
			"The reference for them is the same statistic on the node that records nothing, over windows opened at the same boundaries and kept open as long as the recording node's were on average: a p99 over the few thousand round trips of a run's windows, compared with one over as few taken at the same moments of the clock, not with the p99 of whole runs, which one stall of the machine moves less.",
		count(s.cfg.HistoryIDs), heartbeatKey, s.cfg.LoadConns, s.cfg.LoadPipeline, s.cfg.HistoryInterval, heartbeatKey, nothingKeys,
		heartbeatKey, s.cfg.Conns, run, s.cfg.Reps, snapshotLead, heartbeatKey, windows.n, windows.mean().Round(time.Millisecond))}, nil
}

// quantiles returns the medians over hs of their p50 and p99.
func quantiles(hs []histogram) Measurement {
	var p50, p99 []time.Duration
	for i := range hs {
		p50 = append(p50, hs[i].quantile(0.5))
		p99 = append(p99, hs[i].quantile(0.99))
	}
	return Measurement{P50: medianDuration(p50), P99: medianDuration(p99)}
}

// windowStats counts snapshot windows and the time they were open.
type windowStats struct {
	n    int
	open time.Duration
}

// mean is how long a window was open on average.
func (w windowStats) mean() time.Duration {
	if w.n == 0 {
		return 0
	}
	return w.open / time.Duration(w.n)
}

// writeRun runs SETBIT load on srv for run and marks windows at the
// snapshot boundaries (see snapshotWindows): until srv has written the
// snapshot of heartbeatKey when span is 0, else for span.
func (s *suite) writeRun(srv server, rep int, run, span time.Duration) (*loadResult, windowStats, error) {
	watch := span == 0
	var marker atomic.Uint64
	seed := s.cfg.Seed + uint64(rep)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var werr error
	var w windowStats
	wg.Add(1)
	go func() {
		defer wg.Done()
		w, werr = s.snapshotWindows(srv, &marker, stop, span)
	}()
	res, err := drive(targetOf(srv), loadSpec{req: setbitTemplate, pipeline: 1, conns: s.cfg.Conns, duration: run, marker: &marker,
		ids: func(c int) idSource { return newRandomIDs(seed, uint64(c), s.cfg.Space) }})
	close(stop)
	wg.Wait()
	switch {
	case err != nil:
		return nil, w, err
	case werr != nil:
		return nil, w, werr
	case w.n == 0 || res.marked.n == 0:
		return nil, w, errors.New("no round trip overlapped a snapshot window")
	}
	s.logf("history writes, recording=%v: %.0f ops/s, p99 %v outside windows, %d snapshot windows open %v in all, p99 overlapping them %v",
		watch, res.opsPerSec(), res.rtt.quantile(0.99), w.n, w.open, res.marked.quantile(0.99))
	return res, w, nil
}

// snapshotWindows opens a window on marker snapshotLead before each
// boundary (a multiple of HistoryInterval in unix time) until stop is
// closed, and closes it once srv says the snapshot of heartbeatKey at that
// boundary is written (span 0), or span after it opened. It returns how
// many windows it closed and how long they were open in all.
func (s *suite) snapshotWindows(srv server, marker *atomic.Uint64, stop <-chan struct{}, span time.Duration) (windowStats, error) {
	var w windowStats
	c, err := dial(srv.Addr(), 10*time.Second)
	if err != nil {
		return w, err
	}
	defer c.close()
	for {
		every := s.cfg.HistoryInterval.Milliseconds()
		boundary := (time.Now().Add(snapshotLead).UnixMilli()/every + 1) * every
		select {
		case <-stop:
			return w, nil
		case <-time.After(time.Until(time.UnixMilli(boundary).Add(-snapshotLead))):
		}
		marker.Add(1)
		start := time.Now()
		var err error
		if span == 0 {
			err = waitSnapshot(c, heartbeatKey, boundary, time.Minute)
		} else {
			time.Sleep(span)
		}
		marker.Add(1)
		if err != nil {
			return w, err
		}
		w.n, w.open = w.n+1, w.open+time.Since(start)
	}
}

// waitSnapshot polls HISTORY INFO key until its newest snapshot is at
// boundary (unix ms) or later, for at most timeout.
func waitSnapshot(c *client, key string, boundary int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		newest, err := historyInfo(c, key, newestSnapshotField)
		if err != nil {
			return err
		}
		if newest >= boundary {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("HISTORY INFO %s: no snapshot at %d within %v (newest %d)", key, boundary, timeout, newest)
		}
		time.Sleep(snapshotPoll)
	}
}

// historyInfoOf is historyInfo on a fresh connection to srv.
func historyInfoOf(srv server, key, field string) (int64, error) {
	c, err := dial(srv.Addr(), 10*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.close()
	return historyInfo(c, key, field)
}

// historyInfo returns the integer field of HISTORY INFO key. The server
// first waits until its history holds everything recorded so far.
func historyInfo(c *client, key, field string) (int64, error) {
	v, err := c.do(time.Minute, "HISTORY", "INFO", key)
	if err != nil {
		return 0, err
	}
	info, _ := v.(string)
	text := infoField(info, field)
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("HISTORY INFO %s: %s %q", key, field, text)
	}
	return n, nil
}
