package store

import (
	"bytes"
	"strconv"

	"github.com/presenced/presenced/proto"
)

var hllCommands = map[string]handler{
	"pfadd":   pfadd,
	"pfcount": pfcount,
	"pfmerge": pfmerge,
	"pfdebug": pfdebug,
}

// hllOf returns the bytes of v if it is a HyperLogLog. A string in
// bitmap form is materialized only once its first bytes read "HYLL".
func hllOf(v *value) ([]byte, bool) {
	if v.isBitmap() && (v.n < hllHeaderLen || string(v.rangeBytes(0, 4)) != "HYLL") {
		return nil, false
	}
	s := v.bytes()
	return s, isHLL(s)
}

// ownHLL returns the HyperLogLog e holds as raw bytes the command may
// change in place, first making e's value its own raw string as Redis's
// dbUnshareStringValue does; it replies WRONGTYPE and returns nil when
// the value is not a HyperLogLog.
func (c *ctx) ownHLL(e *entry) []byte {
	s, ok := hllOf(&e.v)
	if !ok {
		c.w.Error(errNotHLL)
		return nil
	}
	if e.v.isBitmap() {
		e.v = value{raw: s}
	}
	e.v.enc = encRaw
	return e.v.raw
}

// readHLL looks key up to read the HyperLogLog it holds, and returns its
// entry and bytes, or nil ones with ok when there is no such key; it
// replies WRONGTYPE and returns false when the value is not a
// HyperLogLog.
func (c *ctx) readHLL(key []byte) (e *entry, s []byte, ok bool) {
	if e = c.lookup(key); e == nil {
		return nil, nil, true
	}
	if s, ok = hllOf(&e.v); !ok {
		c.w.Error(errNotHLL)
		return nil, nil, false
	}
	return e, s, true
}

func pfadd(c *ctx, args [][]byte) {
	key := args[1]
	e := c.get(key)
	changed := e == nil
	var s []byte
	if e == nil {
		e = c.put(key, value{raw: newHLL(), enc: encRaw})
		s = e.v.raw
	} else if s = c.ownHLL(e); s == nil {
		return
	}
	for _, element := range args[2:] {
		var r int
		s, r = hllAdd(s, element)
		e.v.raw = s // kept on error too, as Redis keeps what came before
		if r < 0 {
			c.w.Error(errInvalidHLL)
			return
		}
		changed = changed || r == 1
	}
	if !changed {
		c.unchanged()
		c.w.Int(0)
		return
	}
	hllInvalidate(s)
	c.notify('$', "pfadd", key)
	c.w.Int(1)
}

// pfcount counts the union of the keys' HyperLogLogs. Of one key, it
// answers from the cardinality cached in the key's header, and otherwise
// computes it and, on the write path, caches it there as Redis does: the
// server sends a PFCOUNT of one key through the log, so that every
// replica's bytes stay the same, unless ReadUnchanged finds it would
// change nothing.
func pfcount(c *ctx, args [][]byte) {
	if len(args) > 2 {
		var regs [hllRegisters]uint8
		for _, key := range args[1:] {
			_, s, ok := c.readHLL(key)
			if !ok {
				return
			}
			if s != nil && !hllMaxInto(&regs, s) {
				c.w.Error(errInvalidHLL)
				return
			}
		}
		c.w.Int(int64(hllCountRegisters(&regs)))
		return
	}
	key := args[1]
	e, s, ok := c.readHLL(key)
	if !ok {
		return
	}
	if e == nil {
		c.w.Int(0)
		return
	}
	if c.write && !e.v.isBitmap() {
		e.v.enc = encRaw // Redis makes the value its own raw string first
	}
	n, cached := hllCachedCount(s)
	if !cached {
		if n, ok = hllCount(s); !ok {
			c.w.Error(errInvalidHLL)
			return
		}
		if c.write {
			s = c.ownHLL(e)
			hllSetCachedCount(s, n)
			c.touch(c.dbIndex, key)
			c.mark(c.dbIndex, key)
		}
	}
	c.w.Int(int64(n))
}

func pfmerge(c *ctx, args [][]byte) {
	var regs [hllRegisters]uint8
	dense := false
	for _, key := range args[1:] {
		_, s, ok := c.readHLL(key)
		if !ok {
			return
		}
		if s == nil {
			continue
		}
		dense = dense || s[4] == hllEncDense
		if !hllMaxInto(&regs, s) {
			c.w.Error(errInvalidHLL)
			return
		}
	}
	e := c.get(args[1])
	if e == nil {
		e = c.put(args[1], value{raw: newHLL(), enc: encRaw})
	}
	s := c.ownHLL(e) // a HyperLogLog: it was read above
	if dense && s[4] == hllEncSparse {
		s, _ = hllToDense(s) // valid: it was merged above
	}
	for i, v := range regs {
		if v != 0 {
			s, _ = hllSet(s, i, v)
		}
	}
	hllInvalidate(s)
	e.v.raw = s
	c.notify('$', "pfadd", args[1])
	c.w.OK()
}

// pfdebug is Redis's PFDEBUG: GETREG (the registers, turning a sparse
// string dense), DECODE (a sparse string's opcodes), ENCODING and
// TODENSE. Like Redis, it tells WATCH of no change, even when it turns a
// string dense.
func pfdebug(c *ctx, args [][]byte) {
	sub, key := args[1], args[2]
	e := c.get(key)
	if e == nil {
		c.w.Error("ERR The specified key does not exist")
		return
	}
	s := c.ownHLL(e)
	if s == nil {
		return
	}
	c.unchanged()
	sparse := s[4] == hllEncSparse
	switch {
	case isOption(sub, "getreg"), isOption(sub, "todense"):
		if sparse {
			d, ok := hllToDense(s)
			if !ok {
				c.w.Error(errInvalidHLL)
				return
			}
			e.v.raw, s = d, d
		}
		if isOption(sub, "todense") {
			c.w.Bit(sparse) // 1: it was sparse and turned dense
			return
		}
		c.w.Array(hllRegisters)
		for i := range hllRegisters {
			c.w.Int(int64(denseGet(s[hllHeaderLen:], i)))
		}
	case isOption(sub, "decode"):
		if !sparse {
			c.w.Error("ERR HLL encoding is not sparse")
			return
		}
		var b []byte
		for p := hllHeaderLen; p < len(s); {
			span, v, size := opcode(s, p)
			switch {
			case isZero(s[p]):
				b = strconv.AppendInt(append(b, "z:"...), int64(span), 10)
			case isXZero(s[p]):
				b = strconv.AppendInt(append(b, "Z:"...), int64(span), 10)
			default:
				b = strconv.AppendInt(append(strconv.AppendInt(append(b, "v:"...), int64(v), 10), ','), int64(span), 10)
			}
			b = append(b, ' ')
			p += size
		}
		c.w.Bulk(bytes.TrimRight(b, " "))
	case isOption(sub, "encoding"):
		if sparse {
			c.w.Simple("sparse")
		} else {
			c.w.Simple("dense")
		}
	default:
		c.w.Error(proto.ErrPFDebugSubcommand(sub))
	}
}

// countCached reports whether cmd is a PFCOUNT of one key that running
// would not change: its key is missing, is no HyperLogLog (an error), or
// holds one whose count is cached, in a value already its own raw string
// (or in bitmap form, which PFCOUNT leaves as it is).
func (c *ctx) countCached(cmd Command) bool {
	if len(cmd.Args) != 2 || !cmd.is("pfcount") || cmd.DB < 0 || cmd.DB >= NumDBs {
		return false
	}
	e := c.getIn(c.s.mu.dbs[cmd.DB], cmd.Args[1])
	if e == nil {
		return true
	}
	s, ok := hllOf(&e.v)
	if !ok {
		return true
	}
	_, cached := hllCachedCount(s)
	return cached && (e.v.isBitmap() || e.v.enc == encRaw)
}

// elementsCounted reports whether cmd is a PFADD that running would not
// change: of elements whose registers hold as much as each offers
// already, to a HyperLogLog that is its own raw string already.
func (c *ctx) elementsCounted(cmd Command) bool {
	if !cmd.is("pfadd") || len(cmd.Args) < 2 || cmd.DB < 0 || cmd.DB >= NumDBs {
		return false
	}
	e := c.getIn(c.s.mu.dbs[cmd.DB], cmd.Args[1])
	if e == nil || e.v.isBitmap() || e.v.enc != encRaw || !isHLL(e.v.raw) {
		return false
	}
	for _, element := range cmd.Args[2:] {
		i, count := hllPattern(element)
		if v, ok := hllGet(e.v.raw, i); !ok || v < count {
			return false
		}
	}
	return true
}
