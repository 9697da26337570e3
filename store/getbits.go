package store

import (
	"bytes"

	"github.com/presenced/presenced/proto"
)

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
	e := c.lookup(args[1])
	var bits [offsetsStack]bool
	for len(offs) > 0 {
		n := min(len(offs), len(bits))
		if e != nil {
			e.v.getBits(offs[:n], bits[:n])
		}
		for _, on := range bits[:n] {
			c.w.Bit(on)
		}
		offs = offs[n:]
	}
}

// getbitRun answers the run of GETBITs on one key at the start of cmds, as
// a client's pipeline sends them, with one lookup of the key and the
// offsets' bits read side by side (see value.getBits); it returns how
// many commands it answered, 0 where no run of two or more starts. The
// run ends before a command with a bad offset, which exec answers.
func (c *ctx) getbitRun(cmds []Command, out *Replies) int {
	if len(cmds) < 2 || !isGetbitOf(cmds[0], cmds[0]) || !isGetbitOf(cmds[1], cmds[0]) {
		return 0 // not even the start of a run: nothing parsed twice
	}
	var stack [probeChunk]uint64
	offs, _ := runOffsets(cmds, stack[:], func(cmd Command) bool { return isGetbitOf(cmd, cmds[0]) })
	if len(offs) < 2 {
		return 0
	}
	var bits [probeChunk]bool
	c.db, c.dbIndex = c.s.mu.dbs[cmds[0].DB], cmds[0].DB
	key := cmds[0].Args[1]
	// A lookup a GETBIT, as each would make: all hits, or all misses,
	// which publish a keymiss each.
	if e := c.get(key); e != nil {
		e.v.getBits(offs, bits[:len(offs)])
		c.hits += int64(len(offs))
	} else {
		for range offs {
			c.looked(false, key, true)
		}
	}
	for _, on := range bits[:len(offs)] {
		c.w.Bit(on)
		out.Ends = append(out.Ends, out.Len())
	}
	return len(offs)
}

// runOffsets parses into buf the offsets (the third arguments) of the
// commands at the start of cmds that inRun accepts, at most len(buf) of
// them. It stops before a command whose offset is bad, and reports
// whether it did.
func runOffsets(cmds []Command, buf []uint64, inRun func(Command) bool) (offs []uint64, badOffset bool) {
	offs = buf[:0]
	for _, cmd := range cmds[:min(len(cmds), len(buf))] {
		if !inRun(cmd) {
			break
		}
		off, ok := parseBitOffset(cmd.Args[2])
		if !ok {
			return offs, true
		}
		offs = append(offs, off)
	}
	return offs, false
}

// isGetbitOf reports whether cmd is a GETBIT key offset on the key and in
// the database of first, a valid database.
func isGetbitOf(cmd, first Command) bool {
	return len(cmd.Args) == 3 && cmd.is("getbit") && cmd.DB == first.DB &&
		cmd.DB >= 0 && cmd.DB < NumDBs && bytes.Equal(cmd.Args[1], first.Args[1])
}
