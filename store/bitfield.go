package store

import (
	"bytes"

	"github.com/presenced/presenced/proto"
)

// Error replies of BITFIELD, word for word as Redis sends them.
const (
	errBitfieldType     = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."
	errBitfieldOverflow = "ERR Invalid OVERFLOW type specified"
	errBitfieldRO       = "ERR BITFIELD_RO only supports the GET subcommand"
)

// overflow is a BITFIELD OVERFLOW mode.
type overflow int

const (
	overflowWrap overflow = iota // wrap around, as in two's complement
	overflowSat                  // saturate at the type's minimum or maximum
	overflowFail                 // do nothing and reply nil
)

// fieldOp is one GET, SET or INCRBY of a BITFIELD call.
type fieldOp struct {
	kind   byte   // 'g'et, 's'et or 'i'ncrby
	signed bool   // iN rather than uN
	bits   uint   // width: 1-64 signed, 1-63 unsigned
	off    uint64 // bit offset of the field's most significant bit
	arg    int64  // SET value or INCRBY increment
	ow     overflow
}

func bitfield(c *ctx, args [][]byte)   { bitfieldGeneric(c, args, false) }
func bitfieldRO(c *ctx, args [][]byte) { bitfieldGeneric(c, args, true) }

// bitfieldGeneric implements BITFIELD and, when readOnly, BITFIELD_RO. A
// call with only GETs reads (and creates nothing); any SET or INCRBY
// first grows the string, as a bitmap, to cover every field written.
func bitfieldGeneric(c *ctx, args [][]byte, readOnly bool) {
	ops, errText := parseFieldOps(args[2:])
	if errText != "" {
		c.w.Error(errText)
		return
	}
	var last uint64 // highest bit written, +1; 0 for a read-only call
	for _, op := range ops {
		if op.kind != 'g' {
			last = max(last, op.off+uint64(op.bits))
		}
	}
	var e *entry
	switch {
	case last == 0:
		e = c.lookup(args[1])
	case readOnly:
		c.w.Error(errBitfieldRO)
		return
	case last > MaxStringLen*8:
		// Beyond the 2^32 bits a bitmap holds; Redis would grow the
		// string past proto-max-bulk-len.
		c.w.Error(proto.ErrStringTooLong)
		return
	default:
		if e = c.get(args[1]); e == nil {
			e = c.put(args[1], value{})
		}
		e.v.toBitmap()
		e.v.n = max(e.v.n, int64((last-1)/8)+1)
	}
	ttl := int64(0)
	if last > 0 {
		ttl = c.ruleTTL(args[1])
	}
	c.w.Array(len(ops))
	c.unchanged() // until a write applies: not GETs, nor writes that overflow under FAIL
	for _, op := range ops {
		if op.kind == 'g' {
			c.w.Int(fieldGet(e, op))
			continue
		}
		old := e.v.getField(op.off, op.bits)
		nv, ret, ok := op.apply(old)
		if !ok {
			c.w.Null()
			continue
		}
		c.stamped = false
		e.v.setField(op.off, op.bits, nv)
		c.fieldWritten(e, args[1], op.off, op.bits, ttl)
		c.w.Int(int64(ret))
	}
	if !c.stamped {
		c.notify('$', "setbit", args[1])
	}
}

// fieldGet reads op's field of e (zero when e is nil) as an integer.
func fieldGet(e *entry, op fieldOp) int64 {
	if e == nil {
		return 0
	}
	u := e.v.getField(op.off, op.bits)
	if op.signed {
		return signExtend(u, op.bits)
	}
	return int64(u)
}

// parseFieldOps parses BITFIELD's subcommands, returning Redis's error
// text for the first bad one.
func parseFieldOps(args [][]byte) ([]fieldOp, string) {
	var ops []fieldOp
	ow := overflowWrap
	for j := 0; j < len(args); j++ {
		rem := len(args) - j - 1
		var op fieldOp
		sub := args[j]
		switch {
		case bytes.EqualFold(sub, []byte("get")) && rem >= 2:
			op.kind = 'g'
		case bytes.EqualFold(sub, []byte("set")) && rem >= 3:
			op.kind = 's'
		case bytes.EqualFold(sub, []byte("incrby")) && rem >= 3:
			op.kind = 'i'
		case bytes.EqualFold(sub, []byte("overflow")) && rem >= 1:
			j++
			var ok bool
			if ow, ok = parseOverflow(args[j]); !ok {
				return nil, errBitfieldOverflow
			}
			continue
		default:
			return nil, proto.ErrSyntax
		}
		var ok bool
		if op.signed, op.bits, ok = parseFieldType(args[j+1]); !ok {
			return nil, errBitfieldType
		}
		if op.off, ok = parseFieldOffset(args[j+2], op.bits); !ok {
			return nil, proto.ErrBitOffset
		}
		if op.kind != 'g' {
			if op.arg, ok = proto.ParseInt(args[j+3]); !ok {
				return nil, proto.ErrNotInteger
			}
			j++
		}
		op.ow = ow
		ops = append(ops, op)
		j += 2
	}
	return ops, ""
}

func parseOverflow(b []byte) (overflow, bool) {
	for i, name := range []string{"wrap", "sat", "fail"} {
		if bytes.EqualFold(b, []byte(name)) {
			return overflow(i), true
		}
	}
	return 0, false
}

// parseFieldType parses iN (1 <= N <= 64) or uN (1 <= N <= 63); the
// letter is case-sensitive, as in Redis.
func parseFieldType(b []byte) (signed bool, bits uint, ok bool) {
	if len(b) == 0 || (b[0] != 'i' && b[0] != 'u') {
		return false, 0, false
	}
	signed = b[0] == 'i'
	n, ok := proto.ParseInt(b[1:])
	if !ok || n < 1 || (signed && n > 64) || (!signed && n > 63) {
		return false, 0, false
	}
	return signed, uint(n), true
}

// parseFieldOffset parses a bit offset, or #N for N fields of width bits
// (the product wraps around as in Redis's C arithmetic).
func parseFieldOffset(b []byte, bits uint) (uint64, bool) {
	hash := len(b) > 0 && b[0] == '#'
	if hash {
		b = b[1:]
	}
	v, ok := proto.ParseInt(b)
	if !ok {
		return 0, false
	}
	if hash {
		v *= int64(bits)
	}
	if v < 0 || v>>3 >= MaxStringLen {
		return 0, false
	}
	return uint64(v), true
}

// apply computes a SET or INCRBY on a field holding old: the value to
// store, the value to reply with, and false when OVERFLOW FAIL refuses.
func (op fieldOp) apply(old uint64) (store, reply uint64, ok bool) {
	var over bool
	if op.signed {
		o := signExtend(old, op.bits)
		v, incr := o, op.arg
		if op.kind == 's' {
			v, incr = op.arg, 0
		}
		n, limited := signedOverflow(v, incr, op.bits, op.ow)
		if !limited {
			n = v + incr
		}
		store, over = uint64(n), limited
		reply = uint64(n)
		if op.kind == 's' {
			reply = uint64(o)
		}
	} else {
		v, incr := old, op.arg
		if op.kind == 's' {
			v, incr = uint64(op.arg), 0
		}
		n, limited := unsignedOverflow(v, incr, op.bits, op.ow)
		if !limited {
			n = v + uint64(incr)
		}
		store, over = n, limited
		reply = n
		if op.kind == 's' {
			reply = old
		}
	}
	if over && op.ow == overflowFail {
		return 0, 0, false
	}
	return store, reply, true
}

// unsignedOverflow reports whether value+incr leaves the range of a
// bits-wide unsigned integer and, if so, the value to store instead
// under ow. It follows Redis's checkUnsignedBitfieldOverflow, including
// its treatment of negative SET values as huge ones.
func unsignedOverflow(value uint64, incr int64, bits uint, ow overflow) (uint64, bool) {
	maxv := uint64(1)<<bits - 1
	maxincr := int64(maxv - value)
	minincr := -int64(value)
	switch {
	case value > maxv || (incr > 0 && incr > maxincr):
		if ow == overflowSat {
			return maxv, true
		}
	case incr < 0 && incr < minincr:
		if ow == overflowSat {
			return 0, true
		}
	default:
		return 0, false
	}
	return (value + uint64(incr)) & maxv, true
}

// signedOverflow is unsignedOverflow for a bits-wide signed integer,
// following Redis's checkSignedBitfieldOverflow with its wrapping
// arithmetic (so SET i8 with -2^63 saturates at the maximum, as there).
func signedOverflow(value, incr int64, bits uint, ow overflow) (int64, bool) {
	maxv := int64(uint64(1)<<(bits-1) - 1)
	minv := -maxv - 1
	maxincr := int64(uint64(maxv) - uint64(value))
	minincr := minv - value
	switch {
	case value > maxv || (bits != 64 && incr > maxincr) || (value >= 0 && incr > 0 && incr > maxincr):
		if ow == overflowSat {
			return maxv, true
		}
	case value < minv || (bits != 64 && incr < minincr) || (value < 0 && incr < 0 && incr < minincr):
		if ow == overflowSat {
			return minv, true
		}
	default:
		return 0, false
	}
	return signExtend(uint64(value)+uint64(incr), bits), true
}

// signExtend interprets the low bits of u as a two's complement integer.
func signExtend(u uint64, bits uint) int64 {
	shift := 64 - bits
	return int64(u<<shift) >> shift
}

// getField reads the bits-wide field at bit off, most significant bit
// first; bits past the end read as zero.
func (v *value) getField(off uint64, bits uint) uint64 {
	var u uint64
	for i := range uint64(bits) {
		u <<= 1
		if v.getBit(off + i) {
			u |= 1
		}
	}
	return u
}

// setField writes the low bits of u into the field at bit off of a
// bitmap value whose length already covers it.
func (v *value) setField(off uint64, bits uint, u uint64) {
	for i := range uint64(bits) {
		x := uint32(off + i)
		on := u>>(uint64(bits)-1-i)&1 != 0
		if on && v.bm.CheckedAdd(x) || !on && v.bm.CheckedRemove(x) {
			v.changed(x)
		}
	}
}
