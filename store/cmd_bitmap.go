package store

import (
	"bytes"

	"github.com/presenced/presenced/proto"
)

var bitmapCommands = map[string]handler{
	"setbit":      setbit,
	"getbit":      getbit,
	"bitcount":    bitcount,
	"bitpos":      bitpos,
	"bitop":       bitop,
	"bitfield":    bitfield,
	"bitfield_ro": bitfieldRO,
	"getbits":     getbits,
	"bitscan":     bitscan,
	"bitopcount":  bitopcount,
}

// parseBitOffset parses a bit offset as Redis does: a non-negative
// integer whose byte lies within proto-max-bulk-len.
func parseBitOffset(b []byte) (uint64, bool) {
	v, ok := proto.ParseInt(b)
	if !ok || v < 0 || v>>3 >= MaxStringLen {
		return 0, false
	}
	return uint64(v), true
}

// parseUnit parses the BYTE | BIT argument of BITCOUNT and BITPOS.
func parseUnit(b []byte) (isBit, ok bool) {
	switch {
	case bytes.EqualFold(b, []byte("bit")):
		return true, true
	case bytes.EqualFold(b, []byte("byte")):
		return false, true
	}
	return false, false
}

func setbit(c *ctx, args [][]byte) {
	off, ok := parseBitOffset(args[2])
	if !ok {
		c.w.Error(proto.ErrBitOffset)
		return
	}
	on, ok := proto.ParseInt(args[3])
	if !ok || on&^1 != 0 {
		c.w.Error(proto.ErrBitValue)
		return
	}
	e := c.get(args[1])
	created := e == nil
	if created {
		e = c.put(args[1], value{})
	}
	ttl := int64(0)
	if on == 1 {
		ttl = c.ruleTTL(args[1])
	}
	var old bool
	if ttl > 0 { // a bit-TTL rule arms the bit
		old = !c.setArmed(e, args[1], off, c.ruleDeadline(ttl))
		c.s.scheduleBitsLocked(c.dbIndex, e)
	} else {
		n := e.v.length()
		old = e.v.setBit(off, on == 1)
		c.setbitTimers(e, args[1], off, on == 1, old)
		if !created && old == (on == 1) && e.v.length() == n {
			c.unchanged() // as Redis: neither a new bit value nor a longer string
		}
	}
	if !c.stamped {
		c.notify('$', "setbit", args[1])
	}
	c.w.Bit(old)
}

// setbitRun applies the run of SETBITs to 1 on one key at the start of
// cmds (see setbitRunStarts), as a client's pipeline of heartbeats and
// new ids sends them, on a key no bit-TTL rule covers (execAll gives the
// runs that a rule arms to armRun first): as exec would apply them
// one after another, with the same replies and the same state, but with
// one lookup of the key and the bits set side by side (see
// value.setBits). It returns how many commands it applied, 0 where no run
// of two or more starts. The run ends before a command with a bad
// offset, which exec answers.
func (c *ctx) setbitRun(cmds []Command, out *Replies) int {
	if !setbitRunStarts(cmds) {
		return 0
	}
	first, key := cmds[0], cmds[0].Args[1]
	var stack [probeChunk]uint64
	offs, _ := runOffsets(cmds, stack[:], func(cmd Command) bool { return sameRun(first, cmd, "setbit") })
	if len(offs) < 2 {
		return 0
	}
	c.db, c.dbIndex = c.s.mu.dbs[first.DB], first.DB
	e := c.get(key)
	changed := e == nil
	if changed {
		e = c.put(key, value{})
	}
	n := e.v.length()
	var old [probeChunk]bool
	e.v.setBits(offs, old[:len(offs)])
	length := n // as each SETBIT of the run left the string
	for i, off := range offs {
		c.setbitTimers(e, key, off, true, old[i])
		c.w.Bit(old[i])
		out.Ends = append(out.Ends, out.Len())
		grew := int64(off/8)+1 > length
		length = max(length, int64(off/8)+1)
		if (i == 0 && changed) || !old[i] || grew {
			c.notify('$', "setbit", key) // as exec would for this one
		}
		changed = changed || !old[i]
	}
	if changed || e.v.length() != n {
		c.touch(c.dbIndex, key)
	}
	c.mark(c.dbIndex, key)
	return len(offs)
}

// setbitRunStarts reports whether cmds start with two SETBITs to 1 on one
// key of a valid database: a run of them.
func setbitRunStarts(cmds []Command) bool {
	first := cmds[0]
	return len(cmds) >= 2 && first.DB >= 0 && first.DB < NumDBs &&
		sameRun(first, first, "setbit") && sameRun(first, cmds[1], "setbit")
}

func getbit(c *ctx, args [][]byte) {
	off, ok := parseBitOffset(args[2])
	if !ok {
		c.w.Error(proto.ErrBitOffset)
		return
	}
	e := c.lookup(args[1])
	c.w.Bit(e != nil && e.v.getBit(off))
}
