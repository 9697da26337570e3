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
	if e == nil {
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
		old = e.v.setBit(off, on == 1)
		c.setbitTimers(e, args[1], off, on == 1, old)
	}
	c.w.Bit(old)
}

func getbit(c *ctx, args [][]byte) {
	off, ok := parseBitOffset(args[2])
	if !ok {
		c.w.Error(proto.ErrBitOffset)
		return
	}
	e := c.get(args[1])
	c.w.Bit(e != nil && e.v.getBit(off))
}
