package store

import "github.com/presenced/presenced/proto"

// getbitsStack is how many offsets GETBITS parses into a buffer on the
// stack; longer lists take one allocation.
const getbitsStack = 512

// getbits implements GETBITS key offset [offset ...]: the bit at each
// offset, in argument order, as GETBIT would read it (0 for a missing key
// or beyond the string). One bad offset fails the whole command before
// anything is read.
func getbits(c *ctx, args [][]byte) {
	var stack [getbitsStack]uint64
	offs := stack[:0]
	if len(args)-2 > len(stack) {
		offs = make([]uint64, 0, len(args)-2)
	}
	for _, a := range args[2:] {
		off, ok := parseBitOffset(a)
		if !ok {
			c.w.Error(proto.ErrBitOffset)
			return
		}
		offs = append(offs, off)
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
