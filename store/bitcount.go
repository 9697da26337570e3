package store

import (
	"encoding/binary"
	"math/bits"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/presenced/presenced/proto"
)

// errBitArg is BITPOS's reply to a bit argument other than 0 or 1.
const errBitArg = "ERR The bit argument must be 1 or 0."

// bitcount implements BITCOUNT key [start end [BYTE | BIT]]: a missing
// key counts 0 whatever the arguments (Redis 7.0), else BitcountSpan says
// what to count.
func bitcount(c *ctx, args [][]byte) {
	e := c.lookup(args[1])
	if e == nil {
		c.w.Int(0)
		return
	}
	from, to, msg := BitcountSpan(args, e.v.length())
	if msg != "" {
		c.w.Error(msg)
		return
	}
	c.w.Int(e.v.countBits(from, to))
}

// BitcountSpan parses BITCOUNT key [start end [BYTE | BIT]] for a string of
// length bytes, in Redis 7.0's order of checks (two negative indexes with
// start > end count nothing before the unit is parsed). It returns the
// bits [from, to) to count (none when from == to) or the error reply.
func BitcountSpan(args [][]byte, length int64) (from, to uint64, errReply string) {
	if len(args) == 2 {
		return 0, uint64(length) * 8, ""
	}
	if len(args) != 4 && len(args) != 5 {
		return 0, 0, proto.ErrSyntax
	}
	start, ok := proto.ParseInt(args[2])
	end, ok2 := proto.ParseInt(args[3])
	if !ok || !ok2 {
		return 0, 0, proto.ErrNotInteger
	}
	if start < 0 && end < 0 && start > end {
		return 0, 0, ""
	}
	isBit := false
	if len(args) == 5 {
		if isBit, ok = parseUnit(args[4]); !ok {
			return 0, 0, proto.ErrSyntax
		}
	}
	from, to, _ = bitSpan(start, end, length, isBit)
	return from, to, ""
}

// bitpos implements BITPOS key bit [start [end [BYTE | BIT]]] in Redis
// 7.0's order of checks: the bit first, then the key (a missing one is an
// endless run of zeros, whatever the other arguments), then start, the
// unit and end.
func bitpos(c *ctx, args [][]byte) {
	bit, ok := c.intArg(args[2])
	if !ok {
		return
	}
	if bit != 0 && bit != 1 {
		c.w.Error(errBitArg)
		return
	}
	e := c.lookup(args[1])
	if e == nil {
		c.w.Int(-bit)
		return
	}
	if len(args) > 6 {
		c.w.Error(proto.ErrSyntax)
		return
	}
	start, end := int64(0), int64(-1)
	isBit, endGiven := false, len(args) >= 5
	if len(args) >= 4 {
		if start, ok = c.intArg(args[3]); !ok {
			return
		}
	}
	if len(args) == 6 {
		if isBit, ok = parseUnit(args[5]); !ok {
			c.w.Error(proto.ErrSyntax)
			return
		}
	}
	if endGiven {
		if end, ok = c.intArg(args[4]); !ok {
			return
		}
	}
	from, to, ok := bitSpan(start, end, e.v.length(), isBit)
	if !ok {
		c.w.Int(-1)
		return
	}
	pos := e.v.nextBit(bit == 1, from, to)
	if pos < 0 && bit == 0 && !endGiven {
		// Without an explicit end the string counts as padded with zeros.
		pos = int64(to)
	}
	c.w.Int(pos)
}

// bitSpan turns Redis's inclusive start and end, in bytes or bits and
// negative when counted from the end, over a string of n bytes into the
// bit range [from, to). ok is false when the range is empty.
func bitSpan(start, end, n int64, isBit bool) (from, to uint64, ok bool) {
	total := n
	if isBit {
		total = n * 8
	}
	if start < 0 {
		start += total
	}
	if end < 0 {
		end += total
	}
	start, end = max(start, 0), max(end, 0)
	if end >= total {
		end = total - 1
	}
	if start > end {
		return 0, 0, false
	}
	if isBit {
		return uint64(start), uint64(end) + 1, true
	}
	return uint64(start) * 8, uint64(end+1) * 8, true
}

// countBits counts the set bits in [from, to), a range within the string.
func (v *value) countBits(from, to uint64) int64 {
	switch {
	case from >= to:
		return 0
	case v.bm == nil:
		return countRaw(v.raw, from, to)
	case from == 0 && to >= uint64(v.n)*8:
		return int64(v.bm.GetCardinality())
	}
	return int64(v.bm.CardinalityInRange(from, to))
}

// byteMask selects bits [lo, hi) of a byte, bit 0 being the MSB;
// 0 <= lo < hi <= 8.
func byteMask(lo, hi uint64) byte {
	return byte(0xff>>lo) & byte(0xff<<(8-hi))
}

// countRaw counts the set bits of b in [from, to), with from < to <=
// len(b)*8.
func countRaw(b []byte, from, to uint64) int64 {
	first, last := from/8, (to-1)/8
	if first == last {
		return int64(bits.OnesCount8(b[first] & byteMask(from%8, (to-1)%8+1)))
	}
	n := bits.OnesCount8(b[first]&byteMask(from%8, 8)) + bits.OnesCount8(b[last]&byteMask(0, (to-1)%8+1))
	return int64(n) + popcount(b[first+1:last])
}

// popcount counts the set bits of b.
func popcount(b []byte) int64 {
	n := 0
	for ; len(b) >= 8; b = b[8:] {
		n += bits.OnesCount64(binary.LittleEndian.Uint64(b))
	}
	for _, x := range b {
		n += bits.OnesCount8(x)
	}
	return int64(n)
}

// nextBit returns the position of the first bit in [from, to) that is set
// (on) or clear (!on), or -1 if there is none; [from, to) lies within the
// string.
func (v *value) nextBit(on bool, from, to uint64) int64 {
	if v.bm == nil {
		return nextRaw(v.raw, on, from, to)
	}
	if !on {
		return nextAbsent(v.bm, from, to)
	}
	if x := v.bm.NextValue(uint32(from)); x >= 0 && uint64(x) < to {
		return x
	}
	return -1
}

// nextRaw is nextBit for raw bytes.
func nextRaw(b []byte, on bool, from, to uint64) int64 {
	for i := from / 8; i <= (to-1)/8; i++ {
		x := b[i]
		if !on {
			x = ^x
		}
		lo, hi := uint64(0), uint64(8)
		if i == from/8 {
			lo = from % 8
		}
		if i == (to-1)/8 {
			hi = (to-1)%8 + 1
		}
		if x &= byteMask(lo, hi); x != 0 {
			return int64(i*8) + int64(bits.LeadingZeros8(x))
		}
	}
	return -1
}

// nextAbsent returns the first integer in [from, to) missing from bm, or
// -1, by a binary search over range cardinalities: a run of set bits
// costs O(log n) container scans instead of a walk over every bit.
func nextAbsent(bm *roaring.Bitmap, from, to uint64) int64 {
	if !bm.Contains(uint32(from)) {
		return int64(from)
	}
	full := func(end uint64) bool { return bm.CardinalityInRange(from, end) == end-from }
	if full(to) {
		return -1
	}
	lo, hi := from+1, to // [from, lo) is full, [from, hi) is not
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if full(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return int64(hi - 1)
}
