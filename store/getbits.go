package store

import "github.com/presenced/presenced/proto"

// offsetsStack is how many offsets a command parses into a buffer on the
// stack; longer lists take one allocation.
const offsetsStack = 512

// parseBitOffsets parses args as bit offsets into buf, or into a new
// slice when buf is too small, and reports false when one is not an
// offset.
func parseBitOffsets(args [][]byte, buf []uint64) ([]uint64, bool) {
	offs := buf[:0]
	if len(args) > cap(buf) {
		offs = make([]uint64, 0, len(args))
	}
	for _, a := range args {
		off, ok := parseBitOffset(a)
		if !ok {
			return nil, false
		}
		offs = append(offs, off)
	}
	return offs, true
}

// getbits implements GETBITS key offset [offset ...]: the bit at each
// offset, in argument order, as GETBIT would read it (0 for a missing key
// or beyond the string). One bad offset fails the whole command before
// anything is read.
func getbits(c *ctx, args [][]byte) {
	var stack [offsetsStack]uint64
	offs, ok := parseBitOffsets(args[2:], stack[:])
	if !ok {
		c.w.Error(proto.ErrBitOffset)
		return
	}
	c.w.Array(len(offs))
	e := c.get(args[1])
	for _, off := range offs {
		if e != nil && e.v.getBit(off) {
			c.w.Int(1)
		} else {
			c.w.Int(0)
		}
	}
}
