package store

import (
	"strconv"

	"github.com/presenced/presenced/proto"
)

// A BITSCAN cursor is the offset to look at next, so that a page starts
// where the previous one stopped and offsets only ever grow: a full scan
// returns every bit that stays set throughout exactly once, however other
// bits change in between (those may or may not be returned).

// emptyScan is the reply of a scan that is over: cursor 0, no elements.
const emptyScan = "*2\r\n$1\r\n0\r\n*0\r\n"

// bitscan implements BITSCAN key cursor [COUNT count]: up to count
// offsets of set bits from the cursor on, ascending, as bulk strings like
// SSCAN's members, and the cursor to continue from (0 when done). Checks
// and error replies follow Redis's SSCAN: the cursor first, then the key
// (a missing one is an empty scan whatever the options), then the
// options. SSCAN's MATCH is not supported, since offsets are numbers, so
// it is a syntax error like any other unknown option (as TYPE is for
// SSCAN too).
func bitscan(c *ctx, args [][]byte) {
	cursor, ok := parseCursor(args[2])
	if !ok {
		c.w.Error(proto.ErrCursor)
		return
	}
	e := c.lookup(args[1])
	if e == nil {
		c.w.Raw([]byte(emptyScan))
		return
	}
	count, ok := c.parseBitscanCount(args[3:])
	if !ok {
		return
	}
	found, next := e.v.scanBits(cursor, count)
	c.w.Array(2)
	c.w.BulkString(strconv.FormatUint(next, 10))
	c.w.Array(len(found))
	for _, off := range found {
		c.w.BulkInt(int64(off))
	}
}

// parseBitscanCount parses BITSCAN's options, COUNT only, as SSCAN
// parses its own, replying to errors: a COUNT without a value and any
// other word are syntax errors, a value that is not an integer is
// "not an integer", and one below 1 a syntax error. The last COUNT wins.
func (c *ctx) parseBitscanCount(opts [][]byte) (int64, bool) {
	count := int64(scanDefaultCount)
	for ; len(opts) > 0; opts = opts[2:] {
		if len(opts) < 2 || !isOption(opts[0], "count") {
			c.w.Error(proto.ErrSyntax)
			return 0, false
		}
		n, ok := c.intArg(opts[1])
		if !ok {
			return 0, false
		}
		if n < 1 {
			c.w.Error(proto.ErrSyntax)
			return 0, false
		}
		count = n
	}
	return count, true
}

// scanBits returns up to count offsets of set bits from offset from on,
// ascending, and the offset to continue from: the next set bit after
// them, or 0 when there is none.
func (v *value) scanBits(from uint64, count int64) (found []uint64, next uint64) {
	end := uint64(v.length()) * 8
	for from < end {
		pos := v.nextBit(true, from, end)
		if pos < 0 {
			break
		}
		if int64(len(found)) == count {
			return found, uint64(pos)
		}
		found = append(found, uint64(pos))
		from = uint64(pos) + 1
	}
	return found, 0
}
