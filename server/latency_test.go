package server

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/presenced/presenced/server/redisserver"
)

// TestHdrCounts checks the HdrHistogram's counts against their
// definition: values below 256 have a count each; above, the range of
// 2^b to 2^(b+1) is cut into 128 counts 2^(b-7) wide; the counts are in
// order of their values, with nothing between them.
func TestHdrCounts(t *testing.T) {
	for i := range hdrCounts - 1 {
		if hdrHighest(i)+1 != hdrLowest(i+1) {
			t.Fatalf("count %d ends at %d, count %d starts at %d", i, hdrHighest(i), i+1, hdrLowest(i+1))
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		v := r.Int64N(hdrMaxValue + 1)
		if r.IntN(2) == 0 {
			v = r.Int64N(4096)
		}
		width := int64(1)
		if v >= 256 {
			for width<<8 <= v {
				width <<= 1
			}
		}
		i := hdrIndex(v)
		if lo := v - v%width; hdrLowest(i) != lo || hdrHighest(i) != lo+width-1 {
			t.Fatalf("value %d: count %d holds %d to %d, want %d to %d", v, i, hdrLowest(i), hdrHighest(i), lo, lo+width-1)
		}
	}
	if i := hdrIndex(hdrMaxValue); i >= hdrCounts {
		t.Errorf("the greatest value's count is %d, past %d", i, hdrCounts)
	}
}

// TestLatencyCountsReadAsRedis checks the readings of a histogram
// against what redis-server replied for the same times: the percentiles
// INFO latencystats printed for single calls (4 and 42 microseconds, 339
// for the p50 of a config|get, 2 for p0), the bucket LATENCY HISTOGRAM
// gave a 42-microsecond SET (66), and the buckets of its documentation's
// example (1, 2, 4, 8, 16, 33); then, for random times, the buckets
// against their definition: at each power of two from 1024 ns, the calls
// within its first count, under that count's greatest microsecond.
func TestLatencyCountsReadAsRedis(t *testing.T) {
	one := func(usec int64) *latencyCounts {
		var h latencyHistogram
		h.record(usec, 1)
		t := newLatencyTracker()
		t.hists[0].Store(&h)
		lc, _ := t.counts(0)
		return lc
	}
	for _, c := range []struct {
		usec int64
		p    float64
		want string
	}{{4, 50, "4.015"}, {42, 99.9, "42.239"}, {339, 50, "339.967"}, {2, 0, "2.000"}, {45, 100, "45.055"}} {
		if got := fmt.Sprintf("%.3f", float64(one(c.usec).valueAt(c.p))/1000); got != c.want {
			t.Errorf("p%v of one call of %d us: %s, redis-server %s", c.p, c.usec, got, c.want)
		}
	}
	if usec, calls := one(42).cumulative(); !slices.Equal(usec, []int64{66}) || !slices.Equal(calls, []int64{1}) {
		t.Errorf("one call of 42 us: buckets %v %v, redis-server 66: 1", usec, calls)
	}
	var h latencyHistogram
	for _, usec := range []int64{1, 2, 3, 5, 12, 20} {
		h.record(usec, 1)
	}
	tr := newLatencyTracker()
	tr.hists[0].Store(&h)
	lc, _ := tr.counts(0)
	if usec, _ := lc.cumulative(); !slices.Equal(usec, []int64{1, 2, 4, 8, 16, 33}) {
		t.Errorf("buckets %v, want Redis's 1 2 4 8 16 33", usec)
	}

	r := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		var h latencyHistogram
		var times []int64
		for range 1 + r.IntN(50) {
			usec := r.Int64N(1 << r.IntN(22))
			times = append(times, usec)
			h.record(usec, 1)
		}
		tr := newLatencyTracker()
		tr.hists[0].Store(&h)
		lc, _ := tr.counts(0)
		var wantUsec, wantCalls []int64
		var before int64
		for level := int64(hdrFirstLevel); before < int64(len(times)); level *= 2 {
			last := min(level+level/hdrHalfCount-1, hdrHighest(hdrCounts-1))
			var n int64
			for _, usec := range times {
				if min(max(usec*1000, 1), hdrMaxValue) <= last {
					n++
				}
			}
			if n > before {
				wantUsec, wantCalls = append(wantUsec, last/1000), append(wantCalls, n)
				before = n
			}
		}
		if usec, calls := lc.cumulative(); !slices.Equal(usec, wantUsec) || !slices.Equal(calls, wantCalls) {
			t.Fatalf("times %v: buckets %v %v, want %v %v", times, usec, calls, wantUsec, wantCalls)
		}
	}
}

// digits matches the numbers of a reply, which timing decides.
var digits = regexp.MustCompile(`[0-9]+`)

// TestLatencyMonitorMatchesRedis runs the same slow command (PFSELFTEST,
// a few hundred milliseconds on both) on presenced and on redis-server
// with latency-monitor-threshold below its time, and compares LATENCY's
// replies with their numbers left out: LATEST, HISTORY, GRAPH and
// DOCTOR, then RESET and what the monitor holds after it, in RESP2 and
// RESP3. DOCTOR advises
// against transparent huge pages when the process has some, and
// redis-server turns them off for itself: where this process (the
// server's) has some, DOCTOR's replies are left out.
func TestLatencyMonitorMatchesRedis(t *testing.T) {
	ref := dialTarget(t, "redis-server", redisserver.StartForTest(t, redisserver.Options{}).Addr())
	sut := dialTarget(t, "presenced", startServer(t).Addr())
	// PFSELFTEST takes seconds in a race-detector build.
	sut.conn.SetTimeout(pfSelfTestTimeout)
	// The threshold is half the time PFSELFTEST takes on the quicker of
	// the two, so that it is an event on both and nothing else is.
	quickest := time.Hour
	for _, d := range []*diffTarget{ref, sut} {
		begin := time.Now()
		if _, err := d.do(argv("PFSELFTEST")); err != nil {
			t.Fatal(err)
		}
		quickest = min(quickest, time.Since(begin))
	}
	threshold := fmt.Sprint(max(quickest.Milliseconds()/2, 1))
	for _, proto := range []string{"2", "3"} {
		replies := map[string][]string{}
		for _, d := range []*diffTarget{ref, sut} {
			for _, args := range [][]string{
				{"HELLO", proto}, {"CONFIG", "SET", "latency-monitor-threshold", threshold}, {"PFSELFTEST"},
				{"LATENCY", "LATEST"}, {"LATENCY", "HISTORY", "command"}, {"LATENCY", "GRAPH", "command"},
				{"LATENCY", "DOCTOR"}, {"LATENCY", "RESET", "COMMAND", "nosuch"}, {"LATENCY", "LATEST"},
				{"LATENCY", "DOCTOR"}, {"CONFIG", "SET", "latency-monitor-threshold", "0"}, {"LATENCY", "DOCTOR"},
			} {
				reply, err := d.do(argv(args...))
				if err != nil {
					t.Fatal(err)
				}
				replies[d.name] = append(replies[d.name], digits.ReplaceAllString(string(reply), "#"))
			}
		}
		hugePages := anonHugePages() > 0
		for i, want := range replies["redis-server"] {
			if hugePages && strings.Contains(want, "Dave") {
				continue
			}
			if got := replies["presenced"][i]; got != want {
				t.Errorf("RESP%s, reply %d: %q\nredis-server: %q", proto, i, got, want)
			}
		}
	}
}

// TestLatencyHistogramMatchesRedis calls the same commands on presenced
// and on redis-server after CONFIG RESETSTAT, and compares LATENCY
// HISTOGRAM's and INFO latencystats' replies: the same commands, the
// same calls, each histogram ending with every call, at one of Redis's
// bucket bounds; the same percentiles in the same form.
func TestLatencyHistogramMatchesRedis(t *testing.T) {
	bounds := map[string]bool{}
	for level := int64(hdrFirstLevel); level < 1<<31; level *= 2 {
		bounds[fmt.Sprint(hdrHighest(min(hdrIndex(level), hdrCounts-1))/1000)] = true
	}
	ref := dial(t, redisserver.StartForTest(t, redisserver.Options{}).Addr())
	sut := dial(t, startServer(t).Addr())
	for _, c := range []*respConn{ref, sut} {
		c.do("CONFIG", "RESETSTAT")
		for range 5 {
			c.do("SET", "k", "v")
			c.do("GET", "k")
		}
		c.do("CONFIG", "GET", "maxmemory")
		c.do("CONFIG", "SET", "latency-tracking-info-percentiles", "0 50 99.99")
	}
	histograms := func(c *respConn) map[string][]string {
		out := map[string][]string{}
		_, elems, _ := arrayElements([]byte(c.do("LATENCY", "HISTOGRAM", "set", "GET", "config", "nosuch")))
		for i := 0; i+1 < len(elems); i += 2 {
			_, fields, _ := arrayElements(elems[i+1])
			_, buckets, _ := arrayElements(fields[3])
			var flat []string
			for _, b := range buckets {
				flat = append(flat, strings.TrimSuffix(strings.TrimPrefix(string(b), ":"), "\r\n"))
			}
			out[bulkBody(t, string(elems[i]))] = append([]string{string(fields[1])}, flat...)
		}
		return out
	}
	got, want := histograms(sut), histograms(ref)
	if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want))) {
		t.Fatalf("LATENCY HISTOGRAM lists %v, redis-server %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	for name, h := range got {
		calls := strings.TrimSuffix(strings.TrimPrefix(h[0], ":"), "\r\n")
		if h[0] != want[name][0] || h[len(h)-1] != calls {
			t.Errorf("%s: calls %s, last bucket %s; redis-server's calls %s", name, h[0], h[len(h)-1], want[name][0])
		}
		for j := 1; j < len(h); j += 2 {
			if !bounds[h[j]] {
				t.Errorf("%s: a bucket at %s us, not one of Redis's", name, h[j])
			}
		}
	}
	stats := func(c *respConn) []string {
		var lines []string
		for _, l := range strings.Split(bulkBody(t, c.do("INFO", "latencystats")), "\r\n") {
			lines = append(lines, digits.ReplaceAllString(l, "#"))
		}
		slices.Sort(lines)
		return lines
	}
	if got, want := stats(sut), stats(ref); !slices.Equal(got, want) {
		t.Errorf("INFO latencystats:\n%q\nredis-server:\n%q", got, want)
	}
}

// TestLatencyEventsOfLogAndExpiry checks the events presenced's own slow
// work makes, above latency-monitor-threshold: a raft log write is
// aof-fsync-always with appendfsync always and aof-write-alone with
// everysec, none with appendonly no; an expiry is expire-cycle; and
// DOCTOR gives Redis's advice for each.
func TestLatencyEventsOfLogAndExpiry(t *testing.T) {
	for _, c := range []struct {
		appendOnly bool
		fsync      string
		events     string
		advice     []string
	}{
		{true, "always", "aof-fsync-always expire-cycle", []string{"Your fsync policy is set to 'always'", "large objects"}},
		{true, "everysec", "aof-write-alone expire-cycle", []string{"use local disks", "SSD disks", "data=writeback", "large objects"}},
		{false, "always", "expire-cycle", []string{"large objects"}},
	} {
		srv := startServer(t, func(cfg *Config) {
			cfg.Cluster.AppendOnly, cfg.Cluster.AppendFsync = c.appendOnly, c.fsync
		})
		conn := dial(t, srv.Addr())
		conn.expect("+OK\r\n", "CONFIG", "SET", "latency-monitor-threshold", "10000")
		// Far above what the node's own writes and expiries take.
		srv.logWritten(9999 * time.Millisecond) // under the threshold
		srv.logWritten(15 * time.Second)
		srv.expiryTook(12 * time.Second)
		_, elems, _ := arrayElements([]byte(conn.do("LATENCY", "LATEST")))
		var events []string
		for _, e := range elems {
			_, fields, _ := arrayElements(e)
			events = append(events, bulkBody(t, string(fields[0])))
			if worst := string(fields[3]); !slices.Contains([]string{":15000\r\n", ":12000\r\n"}, worst) {
				t.Errorf("%s: worst %q", events[len(events)-1], worst)
			}
		}
		if got := strings.Join(events, " "); got != c.events {
			t.Errorf("appendonly %v, appendfsync %s: events %q, want %q", c.appendOnly, c.fsync, got, c.events)
		}
		doctor := bulkBody(t, conn.do("LATENCY", "DOCTOR"))
		for _, a := range c.advice {
			if !strings.Contains(doctor, a) {
				t.Errorf("appendonly %v, appendfsync %s: DOCTOR gives no advice on %q:\n%s", c.appendOnly, c.fsync, a, doctor)
			}
		}
	}
}
