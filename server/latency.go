package server

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/presenced/presenced/proto"
)

// Latency tracking follows Redis 7.0's (`latency-tracking`, on by
// default): each call of a command or subcommand records the time it
// took in a histogram of that command, which LATENCY HISTOGRAM and INFO
// latencystats read. The histogram is Redis's own, an HdrHistogram of
// nanoseconds from 1 to 10^9 with 2 significant digits, into which a call
// goes as Redis puts it, its whole microseconds times 1000; the readers
// walk it as Redis's do. So the same times give the same replies, bucket
// for bucket.

// The HdrHistogram's shape: with 2 significant digits, each bucket
// splits its range into 128 sub-buckets (the first into 256), each
// bucket twice as wide as the one before; hdrCounts covers values up to
// hdrMaxValue, as hdr_init sizes the counts for it.
const (
	hdrHalfCount  = 128
	hdrMaxValue   = 1_000_000_000
	hdrCounts     = 24 * hdrHalfCount
	hdrFirstLevel = 1024 // LATENCY HISTOGRAM's first bucket ends here, in ns
)

// hdrIndex returns the index of the count that value v (in ns, from 0
// to hdrMaxValue) adds to.
func hdrIndex(v int64) int {
	bucket := bits.Len64(uint64(v)|(2*hdrHalfCount-1)) - 8
	return bucket*hdrHalfCount + int(v>>bucket)
}

// hdrLowest and hdrHighest return the least and the greatest value that
// count i holds.
func hdrLowest(i int) int64 {
	if i < 2*hdrHalfCount {
		return int64(i)
	}
	bucket := i/hdrHalfCount - 1
	return int64(i%hdrHalfCount+hdrHalfCount) << bucket
}

func hdrHighest(i int) int64 {
	width := int64(1)
	if i >= 2*hdrHalfCount {
		width <<= i/hdrHalfCount - 1
	}
	return hdrLowest(i) + width - 1
}

// latencyHistogram is the HdrHistogram of one command's calls.
type latencyHistogram struct {
	counts [hdrCounts]atomic.Int64
}

// record adds calls calls that took usec microseconds each.
func (h *latencyHistogram) record(usec, calls int64) {
	v := min(max(usec*1000, 1), hdrMaxValue)
	h.counts[hdrIndex(v)].Add(calls)
}

// latencyCounts is a copy of a histogram's counts, for its readers.
type latencyCounts struct {
	counts [hdrCounts]int64
	total  int64
}

// valueAt returns the value at percentile p (0 to 100), as Redis's
// hdr_value_at_percentile does: the greatest value of the count where
// the calls reach p percent of them (the least, for p 0).
func (lc *latencyCounts) valueAt(p float64) int64 {
	want := max(int64(min(p, 100)/100*float64(lc.total)+0.5), 1)
	var sum int64
	for i, n := range lc.counts {
		if sum += n; sum >= want {
			if p == 0 {
				return hdrLowest(i)
			}
			return hdrHighest(i)
		}
	}
	return 0
}

// cumulative returns LATENCY HISTOGRAM's buckets, as Redis's
// fillCommandCDF walks the histogram: at each power of two from
// hdrFirstLevel ns, the calls so far, where they grew, under the greatest
// microsecond of the count that power starts. A power past the counts
// reports at their last one, as the walk runs off their end.
func (lc *latencyCounts) cumulative() (usec, calls []int64) {
	var sum, reported int64
	next := 0
	for level := int64(hdrFirstLevel); sum < lc.total; level *= 2 {
		end := min(hdrIndex(level), hdrCounts-1)
		for ; next <= end; next++ {
			sum += lc.counts[next]
		}
		if sum > reported {
			usec, calls = append(usec, hdrHighest(end)/1000), append(calls, sum)
			reported = sum
		}
	}
	return usec, calls
}

// latencyTracker holds the histograms of the commands called, by
// proto.Spec.Stat; a command's histogram is made at its first call.
type latencyTracker struct {
	hists []atomic.Pointer[latencyHistogram]
}

func newLatencyTracker() *latencyTracker {
	return &latencyTracker{hists: make([]atomic.Pointer[latencyHistogram], len(proto.Counted))}
}

// record adds calls calls of the command stat that took usec
// microseconds each.
func (t *latencyTracker) record(stat int, usec, calls int64) {
	p := &t.hists[stat]
	h := p.Load()
	if h == nil {
		p.CompareAndSwap(nil, new(latencyHistogram))
		h = p.Load()
	}
	h.record(usec, calls)
}

// counts copies the histogram of the command stat, and reports whether
// it was called.
func (t *latencyTracker) counts(stat int) (*latencyCounts, bool) {
	h := t.hists[stat].Load()
	if h == nil {
		return nil, false
	}
	lc := &latencyCounts{}
	for i := range h.counts {
		lc.counts[i] = h.counts[i].Load()
		lc.total += lc.counts[i]
	}
	return lc, lc.total > 0
}

// reset forgets every histogram, as CONFIG RESETSTAT does.
func (t *latencyTracker) reset() {
	for i := range t.hists {
		t.hists[i].Store(nil)
	}
}

// infoLatencyStats writes INFO's Latencystats section: for each command
// called, its times at the percentiles latency-tracking-info-percentiles
// names, in microseconds.
func (s *Server) infoLatencyStats(b *strings.Builder) {
	b.WriteString("# Latencystats\r\n")
	percentiles := s.settings.current().LatencyPercentiles
	for stat, spec := range proto.Counted {
		lc, ok := s.latency.counts(stat)
		if !ok {
			continue
		}
		fmt.Fprintf(b, "latency_percentiles_usec_%s:", spec.FullName())
		for i, p := range percentiles {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(b, "p%s=%.3f", formatPercentile(p), float64(lc.valueAt(p))/1000)
		}
		b.WriteString("\r\n")
	}
}

// formatPercentile formats p as Redis does: %f, without its trailing
// zeros.
func formatPercentile(p float64) string {
	s := strings.TrimRight(strconv.FormatFloat(p, 'f', 6, 64), "0")
	return strings.TrimSuffix(s, ".")
}

// parsePercentiles parses latency-tracking-info-percentiles: numbers from
// 0 to 100, apart by spaces. It returns Redis's complaint, or "".
func parsePercentiles(v string) ([]float64, string) {
	var ps []float64
	for _, f := range strings.Fields(v) {
		p, err := strconv.ParseFloat(f, 64)
		switch {
		case err != nil:
			return nil, "Invalid latency-tracking-info-percentiles parameters"
		case p < 0 || p > 100:
			return nil, "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"
		}
		ps = append(ps, p)
	}
	return ps, ""
}

// latencyHistogramCommand answers LATENCY HISTOGRAM [command ...]: each
// command named (a container names its subcommands, "container|sub" one
// of them, and a name that is no command nothing), or every command when
// none is, that was called since the start or CONFIG RESETSTAT, with its
// calls and its cumulative distribution.
func (c *client) latencyHistogramCommand(names [][]byte) {
	var stats []int
	if len(names) == 0 {
		for stat := range proto.Counted {
			stats = append(stats, stat)
		}
	}
	for _, name := range names {
		stats = append(stats, statsNamed(name)...)
	}
	type entry struct {
		name string
		lc   *latencyCounts
	}
	var out []entry
	for _, stat := range stats {
		if lc, ok := c.s.latency.counts(stat); ok {
			out = append(out, entry{proto.Counted[stat].FullName(), lc})
		}
	}
	c.out.Map(len(out))
	for _, e := range out {
		c.out.BulkString(e.name)
		c.out.Map(2)
		c.out.BulkString("calls")
		c.out.Int(e.lc.total)
		c.out.BulkString("histogram_usec")
		usec, calls := e.lc.cumulative()
		c.out.Map(len(usec))
		for i := range usec {
			c.out.Int(usec[i])
			c.out.Int(calls[i])
		}
	}
}

// statsNamed returns the histograms LATENCY HISTOGRAM finds for name, as
// Redis's lookupCommandBySds finds a command: by its name, or a
// subcommand's as container|subcommand, whatever the case; a container
// brings its subcommands.
func statsNamed(name []byte) []int {
	spec := specNamed(name)
	switch {
	case spec == nil:
		return nil
	case len(spec.Subcommands) == 0:
		return []int{spec.Stat}
	}
	var stats []int
	for _, s := range spec.Subcommands {
		stats = append(stats, s.Stat)
	}
	return stats
}
