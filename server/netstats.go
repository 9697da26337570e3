package server

import (
	"sync"
	"sync/atomic"
	"time"
)

// netStats counts what clients sent and were sent: the bytes, and the
// reads and writes that moved some, for INFO stats.
type netStats struct {
	in, out       atomic.Int64
	reads, writes atomic.Int64
}

// read counts a read of n bytes.
func (ns *netStats) read(n int) {
	ns.in.Add(int64(n))
	ns.reads.Add(1)
}

// wrote counts a write of n bytes, if it wrote some.
func (ns *netStats) wrote(n int) {
	if n > 0 {
		ns.out.Add(int64(n))
		ns.writes.Add(1)
	}
}

// Redis's instantaneous metrics: every 100 ms the server samples how
// many commands it ran and how many bytes it read and wrote, and INFO
// reports each one's rate averaged over the last 16 samples.
const (
	metricSamples = 16
	metricPeriod  = 100 * time.Millisecond
)

// rateMetric is one instantaneous metric: its latest samples, per
// second, and the reading of the sample before.
type rateMetric struct {
	samples   [metricSamples]int64
	next      int
	lastTime  time.Time
	lastCount int64
}

// track takes a sample: count is the total at now. The first sample,
// with nothing before it, is 0, as in Redis at its start.
func (m *rateMetric) track(now time.Time, count int64) {
	var perSec int64
	if ms := now.Sub(m.lastTime).Milliseconds(); ms > 0 && !m.lastTime.IsZero() {
		perSec = (count - m.lastCount) * 1000 / ms
	}
	m.samples[m.next] = perSec
	m.next = (m.next + 1) % metricSamples
	m.lastTime, m.lastCount = now, count
}

// rate returns the average of the samples.
func (m *rateMetric) rate() int64 {
	var sum int64
	for _, s := range m.samples {
		sum += s
	}
	return sum / metricSamples
}

// instantMetrics are the server's instantaneous metrics.
type instantMetrics struct {
	mu           sync.Mutex
	ops, in, out rateMetric
}

// sampleMetrics samples the instantaneous metrics every metricPeriod
// until the server closes.
func (s *Server) sampleMetrics() {
	t := time.NewTicker(metricPeriod)
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			m := &s.instant
			m.mu.Lock()
			m.ops.track(now, s.stats.processed.Load())
			m.in.track(now, s.stats.net.in.Load())
			m.out.track(now, s.stats.net.out.Load())
			m.mu.Unlock()
		case <-s.quit:
			return
		}
	}
}

// instantaneous returns the commands run a second and the kilobytes read
// and written a second, as INFO reports them.
func (s *Server) instantaneous() (ops int64, inKbps, outKbps float64) {
	m := &s.instant
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ops.rate(), float64(m.in.rate()) / 1024, float64(m.out.rate()) / 1024
}
