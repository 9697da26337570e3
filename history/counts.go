package history

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// A chunk holds consecutive count points of one series: at most chunkPoints
// points, all in one aligned chunkSpan ms (one minute) of time. Its bbolt key is the big-endian
// time of its first point; its value is a header of uvarints
//
//	n, span (last - first time), first, last, min, max, integral
//
// (integral = sum of value * duration over [first, last), in count-ms) and
// then, for points 1..n-1, uvarint(time delta) and varint(value delta). The
// header alone answers "value at or after last" and whole-chunk aggregates.
type chunk struct {
	first, span                   int64
	n                             uint64
	firstVal, lastVal, minV, maxV uint64
	integral                      uint64
	body                          []byte
}

const (
	chunkPoints = 256
	chunkSpan   = 60_000
)

var errCorrupt = errors.New("history: damaged record in the history file")

func (c *chunk) last() int64 { return c.first + c.span }

func decodeChunk(first int64, v []byte) (chunk, error) {
	var h [7]uint64 // n, span, first, last, min, max, integral
	for i := range h {
		x, n := binary.Uvarint(v)
		if n <= 0 {
			return chunk{}, errCorrupt
		}
		h[i], v = x, v[n:]
	}
	if h[0] == 0 || h[1] > 1<<62 {
		return chunk{}, errCorrupt
	}
	return chunk{first: first, span: int64(h[1]), n: h[0], firstVal: h[2], lastVal: h[3],
		minV: h[4], maxV: h[5], integral: h[6], body: v}, nil
}

func (c *chunk) encode() []byte {
	out := make([]byte, 0, 7*binary.MaxVarintLen64+len(c.body)+2*binary.MaxVarintLen64)
	for _, x := range []uint64{c.n, uint64(c.span), c.firstVal, c.lastVal, c.minV, c.maxV, c.integral} {
		out = binary.AppendUvarint(out, x)
	}
	return append(out, c.body...)
}

func newChunk(ts int64, val uint64) chunk {
	return chunk{first: ts, n: 1, firstVal: val, lastVal: val, minV: val, maxV: val}
}

// fits reports whether a point at ts may be appended.
func (c *chunk) fits(ts int64) bool { return c.n < chunkPoints && ts/chunkSpan == c.first/chunkSpan }

// add appends a point after the last one (ts > c.last()).
func (c *chunk) add(ts int64, val uint64) {
	dt := ts - c.last()
	c.body = binary.AppendUvarint(c.body, uint64(dt))
	c.body = binary.AppendVarint(c.body, int64(val-c.lastVal))
	c.integral += c.lastVal * uint64(dt)
	c.span += dt
	c.lastVal = val
	c.minV, c.maxV = min(c.minV, val), max(c.maxV, val)
	c.n++
}

// each calls fn for every point in time order until fn returns false.
func (c *chunk) each(fn func(ts int64, val uint64) bool) error {
	ts, val, b := c.first, c.firstVal, c.body
	if !fn(ts, val) {
		return nil
	}
	for i := uint64(1); i < c.n; i++ {
		dt, n := binary.Uvarint(b)
		if n <= 0 {
			return errCorrupt
		}
		dv, m := binary.Varint(b[n:])
		if m <= 0 {
			return errCorrupt
		}
		b = b[n+m:]
		ts, val = ts+int64(dt), val+uint64(dv)
		if !fn(ts, val) {
			return nil
		}
	}
	return nil
}

// appendCount stores the point (ts, val) after the series' last point.
func appendCount(b *bolt.Bucket, ts int64, val uint64) error {
	k, v := b.Cursor().Last()
	if k != nil {
		c, err := decodeChunk(keyTs(k), v)
		if err != nil {
			return err
		}
		if c.fits(ts) {
			c.body = append([]byte(nil), c.body...)
			c.add(ts, val)
			return b.Put(k, c.encode())
		}
	}
	c := newChunk(ts, val)
	return b.Put(tsKey(ts), c.encode())
}

// lastCount returns the series' last point (0, 0 if none).
func lastCount(b *bolt.Bucket) (int64, uint64, error) {
	if b == nil {
		return 0, 0, nil
	}
	k, v := b.Cursor().Last()
	if k == nil {
		return 0, 0, nil
	}
	c, err := decodeChunk(keyTs(k), v)
	return c.last(), c.lastVal, err
}

// countAt returns the value of the newest point at or before t (0 if none).
func countAt(b *bolt.Bucket, t int64) (uint64, error) {
	if b == nil {
		return 0, nil
	}
	k, v := seekLE(b.Cursor(), t)
	if k == nil {
		return 0, nil
	}
	c, err := decodeChunk(keyTs(k), v)
	if err != nil || c.last() <= t {
		return c.lastVal, err
	}
	var out uint64
	err = c.each(func(ts int64, val uint64) bool {
		if ts > t {
			return false
		}
		out = val
		return true
	})
	return out, err
}

// Sample is one point of a Range: a time (unix ms) and a value.
type Sample struct {
	Time  int64
	Value float64
}

// Aggregates accepted by Range.
const (
	AggLast = "last"
	AggMin  = "min"
	AggMax  = "max"
	AggAvg  = "avg"
)

// rangeCounts walks the chunks that matter for [from, to] and feeds them to fn.
func rangeCounts(b *bolt.Bucket, from, to int64, fn func(c *chunk) error) error {
	if b == nil {
		return nil
	}
	cur := b.Cursor()
	k, v := seekLE(cur, from)
	if k == nil {
		k, v = cur.First()
	}
	for ; k != nil && keyTs(k) <= to; k, v = cur.Next() {
		c, err := decodeChunk(keyTs(k), v)
		if err != nil {
			return err
		}
		if err := fn(&c); err != nil {
			return err
		}
	}
	return nil
}

// rawRange returns the stored points in [from, to].
func rawRange(b *bolt.Bucket, from, to int64) ([]Sample, error) {
	out := []Sample{}
	err := rangeCounts(b, from, to, func(c *chunk) error {
		if c.last() < from {
			return nil
		}
		return c.each(func(ts int64, val uint64) bool {
			if ts >= from && ts <= to {
				out = append(out, Sample{ts, float64(val)})
			}
			return ts <= to
		})
	})
	return out, err
}

// aggregator turns the step function of a count series into one sample per
// bucket [bs, be) of step ms from `from`, the last bucket ending at to+1.
// A point at time p holds its value over [p, next point). Per bucket:
// last is the value in effect at its end, min and max range over every
// value in effect for some time inside it, avg is the time-weighted mean.
type aggregator struct {
	kind     string
	to, step int64
	bs, be   int64
	tc       int64  // time up to which the bucket is accounted
	cur      uint64 // value in effect at tc
	lo, hi   uint64
	seen     bool
	integral float64
	done     bool
	out      []Sample
}

func newAggregator(kind string, from, to, step int64) *aggregator {
	a := &aggregator{kind: kind, to: to, step: step, bs: from, tc: from}
	a.out = make([]Sample, 0, (to-from)/step+1)
	a.be = min(from+step, to+1)
	return a
}

func (a *aggregator) include(v uint64) {
	if !a.seen {
		a.lo, a.hi, a.seen = v, v, true
		return
	}
	a.lo, a.hi = min(a.lo, v), max(a.hi, v)
}

// carry accounts the current value up to time t inside the bucket.
func (a *aggregator) carry(t int64) {
	if t > a.tc {
		a.integral += float64(a.cur) * float64(t-a.tc)
		a.include(a.cur)
		a.tc = t
	}
}

// closeBucket emits the current bucket and starts the next one.
func (a *aggregator) closeBucket() {
	a.carry(a.be)
	v := float64(a.cur)
	switch a.kind {
	case AggMin:
		v = float64(a.lo)
	case AggMax:
		v = float64(a.hi)
	case AggAvg:
		v = a.integral / float64(a.be-a.bs)
	}
	a.out = append(a.out, Sample{a.bs, v})
	a.bs = a.be
	a.done = a.bs > a.to
	a.be, a.tc = min(a.bs+a.step, a.to+1), a.bs
	a.seen, a.integral = false, 0
}

// advance closes the buckets that end at or before t.
func (a *aggregator) advance(t int64) {
	for !a.done && t >= a.be {
		a.closeBucket()
	}
}

// point feeds one point (in time order).
func (a *aggregator) point(ts int64, val uint64) {
	if ts < a.tc {
		a.cur = val
		return
	}
	a.advance(ts)
	if a.done {
		return
	}
	a.carry(ts)
	a.cur = val
	a.include(val)
}

// feed feeds a chunk, from its header alone when it lies inside one bucket.
func (a *aggregator) feed(c *chunk) error {
	if c.first >= a.tc {
		a.advance(c.first)
	}
	if c.first >= a.tc && c.last() < a.be && !a.done {
		a.carry(c.first)
		a.include(c.minV)
		a.include(c.maxV)
		a.integral += float64(c.integral)
		a.cur, a.tc = c.lastVal, c.last()
		return nil
	}
	return c.each(func(ts int64, val uint64) bool {
		a.point(ts, val)
		return !a.done
	})
}

func (a *aggregator) finish() []Sample {
	for !a.done {
		a.closeBucket()
	}
	return a.out
}

// parseAgg checks an aggregate name (case-insensitive); "" means last.
func parseAgg(agg string) (string, error) {
	switch s := strings.ToLower(agg); s {
	case "", AggLast:
		return AggLast, nil
	case AggMin, AggMax, AggAvg:
		return s, nil
	}
	return "", fmt.Errorf("history: unknown aggregate %q (want last, min, max or avg)", agg)
}
