package main

import (
	"math/bits"
	"time"
)

// subBits sets the histogram's precision: each power-of-two range of
// values is split into 2^subBits buckets, so a quantile is off by less
// than 1/2^subBits (under 1%).
const subBits = 7

// histogram counts durations in log-linear buckets. It is a fixed array,
// so recording never allocates.
type histogram struct {
	counts [(65 - subBits) << subBits]uint64
	n      uint64
}

// bucketOf returns the bucket of v: values below 2^subBits have a bucket
// each; above, the bucket is the bit length and the subBits bits after
// the leading one.
func bucketOf(v uint64) int {
	l := bits.Len64(v)
	if l <= subBits {
		return int(v)
	}
	g := l - subBits
	return g<<subBits | int(v>>(g-1))&(1<<subBits-1)
}

// bucketMid returns the middle of the range of values in bucket b.
func bucketMid(b int) uint64 {
	g, sub := b>>subBits, uint64(b&(1<<subBits-1))
	if g == 0 {
		return sub
	}
	low := (1<<subBits + sub) << (g - 1)
	return low + (uint64(1)<<(g-1))/2
}

// record counts one duration.
func (h *histogram) record(d time.Duration) {
	h.counts[bucketOf(uint64(max(d, 0)))]++
	h.n++
}

// merge adds o's counts to h.
func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
}

// quantile returns the duration below which a fraction q of the recorded
// durations fall, or 0 when nothing was recorded.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.5)
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for b, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(bucketMid(b))
		}
	}
	return 0 // unreachable: the counts add up to n
}
