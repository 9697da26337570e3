package store

import (
	"bytes"
	"math"

	"github.com/presenced/presenced/internal/longdouble"
	"github.com/presenced/presenced/proto"
)

var stringCommands = map[string]handler{
	"get":         get,
	"set":         set,
	"setex":       setexHandler(optEX),
	"psetex":      setexHandler(optPX),
	"getex":       getex,
	"getdel":      getdel,
	"mget":        mget,
	"mset":        mset,
	"msetnx":      msetnx,
	"setnx":       setnx,
	"getset":      getset,
	"append":      appendCmd,
	"strlen":      strlen,
	"getrange":    getrange,
	"substr":      getrange,
	"setrange":    setrange,
	"incr":        incrHandler(1),
	"decr":        incrHandler(-1),
	"incrby":      incrby,
	"decrby":      decrby,
	"incrbyfloat": incrbyfloat,
	"lcs":         lcs,
}

// Error replies of the string commands, word for word as Redis sends
// them.
const (
	errDecrOverflow = "ERR decrement would overflow"
	errFloatInf     = "ERR increment would produce NaN or Infinity"
	errOffsetRange  = "ERR offset is out of range"
)

// Options of SET and GETEX.
const (
	optNX = 1 << iota
	optXX
	optGet
	optKeepTTL
	optPersist
	optEX
	optPX
	optEXAT
	optPXAT

	optExpire = optEX | optPX | optEXAT | optPXAT
)

// strOptions are the parsed options of SET or GETEX.
type strOptions struct {
	flags  int
	expire []byte // the time argument of EX, PX, EXAT or PXAT
}

// isOption reports whether arg is the option name, ignoring ASCII case;
// name is lower case.
func isOption(arg []byte, name string) bool {
	if len(arg) != len(name) {
		return false
	}
	for i, c := range arg {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}

// expireOptions maps the names of the expire options to their flags.
var expireOptions = []struct {
	name string
	flag int
}{{"ex", optEX}, {"px", optPX}, {"exat", optEXAT}, {"pxat", optPXAT}}

// parseStrOptions parses the options of SET (forSet) or GETEX with
// Redis's rules: NX and XX exclude each other, KEEPTTL and PERSIST
// exclude the expire options, the expire options exclude each other but
// may repeat (the last time wins). It replies to errors.
func (c *ctx) parseStrOptions(args [][]byte, forSet bool) (strOptions, bool) {
	var o strOptions
	for i := 0; i < len(args); i++ {
		a, f := args[i], o.flags
		switch {
		case forSet && isOption(a, "nx") && f&optXX == 0:
			o.flags |= optNX
		case forSet && isOption(a, "xx") && f&optNX == 0:
			o.flags |= optXX
		case forSet && isOption(a, "get"):
			o.flags |= optGet
		case forSet && isOption(a, "keepttl") && f&(optExpire|optPersist) == 0:
			o.flags |= optKeepTTL
		case !forSet && isOption(a, "persist") && f&(optExpire|optKeepTTL) == 0:
			o.flags |= optPersist
		default:
			flag := expireOption(a)
			if flag == 0 || f&(optKeepTTL|optPersist|optExpire&^flag) != 0 || i+1 == len(args) {
				c.w.Error(proto.ErrSyntax)
				return o, false
			}
			o.flags |= flag
			i++
			o.expire = args[i]
		}
	}
	return o, true
}

// expireOption returns the flag of an EX, PX, EXAT or PXAT option, or 0.
func expireOption(a []byte) int {
	for _, x := range expireOptions {
		if isOption(a, x.name) {
			return x.flag
		}
	}
	return 0
}

// deadlineOf returns the deadline that o's expire option asks for, or 0
// when it has none, replying to errors.
func (c *ctx) deadlineOf(args [][]byte, o strOptions) (int64, bool) {
	if o.flags&optExpire == 0 {
		return 0, true
	}
	unit := int64(1)
	if o.flags&(optEX|optEXAT) != 0 {
		unit = 1000
	}
	return c.deadline(args, o.expire, unit, o.flags&(optEX|optPX) != 0)
}

// setGeneric implements SET and its variants on key and val. It replies
// to errors and, with optGet, with the old value; it reports whether it
// replied and whether it stored val.
func (c *ctx) setGeneric(args [][]byte, key, val []byte, o strOptions) (replied, stored bool) {
	at, ok := c.deadlineOf(args, o)
	if !ok {
		return true, false
	}
	e := c.get(key)
	getOld := o.flags&optGet != 0
	if getOld {
		c.looked(e != nil, key, true)
		c.writeValue(e)
	}
	if (o.flags&optNX != 0 && e != nil) || (o.flags&optXX != 0 && e == nil) {
		c.unchanged()
		return getOld, false
	}
	if e != nil && o.flags&optKeepTTL != 0 {
		at = e.expireAt
	}
	c.store(key, e, rawValue(bytes.Clone(val)), at)
	c.notify('$', "set", key)
	if o.expire != nil {
		c.notify('g', "expire", key)
	}
	return getOld, true
}

// store puts v with deadline at (0: none) under key, reusing the live
// entry e of key when there is one.
func (c *ctx) store(key []byte, e *entry, v value, at int64) {
	if e == nil {
		c.putIn(c.dbIndex, string(key), v, at)
		return
	}
	e.v = v
	c.setExpire(e, at)
}

// writeValue replies with e's value, or null for no entry.
func (c *ctx) writeValue(e *entry) {
	if e == nil {
		c.w.Null()
		return
	}
	c.w.Bulk(e.v.bytes())
}

func get(c *ctx, args [][]byte) {
	c.writeValue(c.lookup(args[1]))
}

func set(c *ctx, args [][]byte) {
	o, ok := c.parseStrOptions(args[3:], true)
	if !ok {
		return
	}
	switch replied, stored := c.setGeneric(args, args[1], args[2], o); {
	case replied:
	case stored:
		c.w.OK()
	default:
		c.w.Null()
	}
}

// setexHandler returns the handler of SETEX (optEX) or PSETEX (optPX).
func setexHandler(flag int) handler {
	return func(c *ctx, args [][]byte) {
		if replied, _ := c.setGeneric(args, args[1], args[3], strOptions{flags: flag, expire: args[2]}); !replied {
			c.w.OK()
		}
	}
}

func setnx(c *ctx, args [][]byte) {
	if _, stored := c.setGeneric(args, args[1], args[2], strOptions{flags: optNX}); stored {
		c.w.Int(1)
	} else {
		c.w.Int(0)
	}
}

func getset(c *ctx, args [][]byte) {
	c.setGeneric(args, args[1], args[2], strOptions{flags: optGet})
}

func getex(c *ctx, args [][]byte) {
	o, ok := c.parseStrOptions(args[2:], false)
	if !ok {
		return
	}
	e := c.lookup(args[1])
	if e == nil {
		c.unchanged()
		c.w.Null()
		return
	}
	at, ok := c.deadlineOf(args, o)
	if !ok {
		return
	}
	c.writeValue(e)
	switch {
	case at != 0 && at <= c.now:
		c.db.remove(e) // EXAT/PXAT in the past delete the key
		c.notify('g', "del", args[1])
	case at != 0:
		c.setExpire(e, at)
		c.notify('g', "expire", args[1])
	case o.flags&optPersist != 0 && e.expireAt != 0:
		c.setExpire(e, 0)
		c.notify('g', "persist", args[1])
	default: // no option, or PERSIST of a key without a TTL
		c.unchanged()
	}
}

func getdel(c *ctx, args [][]byte) {
	e := c.lookup(args[1])
	c.writeValue(e)
	if e != nil {
		c.db.remove(e)
		c.notify('g', "del", args[1])
	} else {
		c.unchanged()
	}
}

func mget(c *ctx, args [][]byte) {
	c.w.Array(len(args) - 1)
	for _, k := range args[1:] {
		c.writeValue(c.lookup(k))
	}
}

// msetPairs checks that args holds key-value pairs after the name,
// replying Redis's arity error otherwise.
func (c *ctx) msetPairs(args [][]byte) bool {
	if len(args)%2 == 0 {
		c.w.Error(proto.ErrArity(proto.Lookup(args[0]).Name))
		return false
	}
	return true
}

// msetAll stores every key-value pair of args, without TTLs.
func (c *ctx) msetAll(args [][]byte) {
	for i := 1; i < len(args); i += 2 {
		c.store(args[i], c.get(args[i]), rawValue(bytes.Clone(args[i+1])), 0)
		c.notify('$', "set", args[i])
	}
}

func mset(c *ctx, args [][]byte) {
	if c.msetPairs(args) {
		c.msetAll(args)
		c.w.OK()
	}
}

func msetnx(c *ctx, args [][]byte) {
	if !c.msetPairs(args) {
		return
	}
	for i := 1; i < len(args); i += 2 {
		if c.get(args[i]) != nil {
			c.unchanged()
			c.w.Int(0)
			return
		}
	}
	c.msetAll(args)
	c.w.Int(1)
}

func appendCmd(c *ctx, args [][]byte) {
	e := c.get(args[1])
	if e == nil {
		e = c.put(args[1], rawValue(bytes.Clone(args[2])))
	} else {
		if e.v.length()+int64(len(args[2])) > MaxStringLen {
			c.w.Error(proto.ErrStringTooLong)
			return
		}
		// Appending adds bits after the end, so no armed bit is cleared.
		e.v.appendBytes(args[2])
	}
	c.notify('$', "append", args[1])
	c.w.Int(e.v.length())
}

func strlen(c *ctx, args [][]byte) {
	if e := c.lookup(args[1]); e != nil {
		c.w.Int(e.v.length())
		return
	}
	c.w.Int(0)
}

func getrange(c *ctx, args [][]byte) {
	start, ok1 := proto.ParseInt(args[2])
	end, ok2 := proto.ParseInt(args[3])
	if !ok1 || !ok2 {
		c.w.Error(proto.ErrNotInteger)
		return
	}
	e := c.lookup(args[1])
	if e == nil {
		c.w.Bulk(nil)
		return
	}
	from, to, ok := byteRange(start, end, e.v.length())
	if !ok {
		c.w.Bulk(nil)
		return
	}
	c.w.Bulk(e.v.rangeBytes(from, to))
}

// byteRange resolves GETRANGE's inclusive start and end, which count
// from the end when negative, against a string of n bytes. It returns
// the half-open range [from, to), or false when it is empty.
func byteRange(start, end, n int64) (from, to int64, ok bool) {
	if start < 0 && end < 0 && start > end {
		return 0, 0, false
	}
	if start < 0 {
		start = max(n+start, 0)
	}
	if end < 0 {
		end = max(n+end, 0)
	}
	end = min(end, n-1)
	if start > end || n == 0 {
		return 0, 0, false
	}
	return start, end + 1, true
}

func setrange(c *ctx, args [][]byte) {
	off, ok := c.intArg(args[2])
	if !ok {
		return
	}
	if off < 0 {
		c.w.Error(errOffsetRange)
		return
	}
	val := args[3]
	e := c.get(args[1])
	switch {
	case len(val) == 0 && e == nil:
		c.unchanged()
		c.w.Int(0)
		return
	case len(val) == 0:
		c.unchanged()
		c.w.Int(e.v.length())
		return
	case off > MaxStringLen-int64(len(val)):
		c.w.Error(proto.ErrStringTooLong)
		return
	case e == nil:
		e = c.put(args[1], value{})
	}
	e.v.setRange(off, val)
	c.dropCleared(e, uint64(off)*8, uint64(off+int64(len(val)))*8)
	c.notify('$', "setrange", args[1])
	c.w.Int(e.v.length())
}

// incrHandler returns the handler of INCR (by 1) or DECR (by -1).
func incrHandler(by int64) handler {
	return func(c *ctx, args [][]byte) { c.incrBy(args[1], by) }
}

func incrby(c *ctx, args [][]byte) {
	if by, ok := proto.ParseInt(args[2]); ok {
		c.incrBy(args[1], by)
		return
	}
	c.w.Error(proto.ErrNotInteger)
}

func decrby(c *ctx, args [][]byte) {
	by, ok := proto.ParseInt(args[2])
	switch {
	case !ok:
		c.w.Error(proto.ErrNotInteger)
	case by == math.MinInt64:
		c.w.Error(errDecrOverflow)
	default:
		c.incrBy(args[1], -by)
	}
}

// incrBy adds by to the integer at key (0 when absent), keeping its TTL.
func (c *ctx) incrBy(key []byte, by int64) {
	e := c.get(key)
	var cur int64
	if e != nil {
		var ok bool
		if cur, ok = e.v.int(); !ok {
			c.w.Error(proto.ErrNotInteger)
			return
		}
	}
	if (by < 0 && cur < 0 && by < math.MinInt64-cur) || (by > 0 && cur > 0 && by > math.MaxInt64-cur) {
		c.w.Error(proto.ErrOverflow)
		return
	}
	n := cur + by
	at := int64(0)
	if e != nil {
		at = e.expireAt
	}
	c.store(key, e, rawValue(proto.AppendInt(nil, n)), at)
	c.notify('$', "incrby", key)
	c.w.Int(n)
}

// incrbyfloat adds in C's long double, as Redis does, and stores the sum
// as Redis prints it, keeping the key's TTL.
func incrbyfloat(c *ctx, args [][]byte) {
	e := c.get(args[1])
	var cur longdouble.Float
	if e != nil {
		var ok bool
		if cur, ok = e.v.longDouble(); !ok {
			c.w.Error(proto.ErrNotFloat)
			return
		}
	}
	by, ok := longdouble.Parse(args[2])
	if !ok {
		c.w.Error(proto.ErrNotFloat)
		return
	}
	sum := cur.Add(by)
	if sum.IsInf() {
		c.w.Error(errFloatInf)
		return
	}
	b := sum.AppendHuman(nil)
	at := int64(0)
	if e != nil {
		at = e.expireAt
	}
	c.store(args[1], e, value{raw: b, enc: encNotInt}, at)
	c.notify('$', "incrbyfloat", args[1])
	c.w.Bulk(b)
}
