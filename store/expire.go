package store

import (
	"bytes"
	"math"

	"github.com/presenced/presenced/proto"
)

// Error replies of the expire commands, word for word as Redis sends
// them.
const (
	errExpireNX    = "ERR NX and XX, GT or LT options at the same time are not compatible"
	errExpireGTLT  = "ERR GT and LT options at the same time are not compatible"
	errUnsupported = "ERR Unsupported option "
)

// Conditions of EXPIRE and its variants.
const (
	expireNX = 1 << iota // only when the key has no TTL
	expireXX             // only when the key has a TTL
	expireGT             // only when the new deadline is later
	expireLT             // only when the new deadline is earlier
)

// errInvalidExpire replies Redis's "invalid expire time" error for the
// command args[0].
func (c *ctx) errInvalidExpire(args [][]byte) {
	c.w.Error(proto.ErrInvalidExpire(proto.Lookup(args[0]).Name))
}

// deadline converts the time argument of a SET or GETEX option to an
// absolute deadline in unix ms, replying to errors as Redis does: the
// time must be positive and the deadline must fit in 64 bits. unit is 1000
// for seconds and 1 for milliseconds; relative times count from now.
func (c *ctx) deadline(args [][]byte, arg []byte, unit int64, relative bool) (int64, bool) {
	t, ok := c.intArg(arg)
	if !ok {
		return 0, false
	}
	at, ok := expireAt(t, unit, relative, c.now)
	if !ok {
		c.errInvalidExpire(args)
	}
	return at, ok
}

// expireAt is the deadline (unix ms) of a time t in unit, counted from now
// when relative, and whether it is valid: t must be positive and the
// deadline must fit in 64 bits.
func expireAt(t, unit int64, relative bool, now int64) (int64, bool) {
	if t <= 0 || t > math.MaxInt64/unit {
		return 0, false
	}
	t *= unit
	if relative {
		t += now // wraps to negative on overflow, as in Redis
	}
	return t, t > 0
}

// expireHandler returns the handler of EXPIRE (unit 1000, relative),
// PEXPIRE (1, relative), EXPIREAT (1000, absolute) or PEXPIREAT.
func expireHandler(unit int64, relative bool) handler {
	return func(c *ctx, args [][]byte) {
		c.expire(args, unit, relative)
	}
}

func (c *ctx) expire(args [][]byte, unit int64, relative bool) {
	cond, ok := c.parseExpireConditions(args[3:])
	if !ok {
		return
	}
	when, ok := c.intArg(args[2])
	if !ok {
		return
	}
	if when > math.MaxInt64/unit || when < math.MinInt64/unit {
		c.errInvalidExpire(args)
		return
	}
	when *= unit
	if relative {
		if when > math.MaxInt64-c.now {
			c.errInvalidExpire(args)
			return
		}
		when += c.now
	}
	e := c.get(args[1])
	if e == nil || !expireAllowed(cond, e.expireAt, when) {
		c.unchanged()
		c.w.Int(0)
		return
	}
	if when <= c.now {
		c.db.remove(e) // a deadline already passed deletes the key
		c.notify('g', "del", args[1])
	} else {
		c.setExpire(e, when)
		c.notify('g', "expire", args[1])
	}
	c.w.Int(1)
}

// parseExpireConditions parses the NX | XX | GT | LT options of EXPIRE,
// replying to errors.
func (c *ctx) parseExpireConditions(args [][]byte) (int, bool) {
	cond := 0
	for _, a := range args {
		switch {
		case isOption(a, "nx"):
			cond |= expireNX
		case isOption(a, "xx"):
			cond |= expireXX
		case isOption(a, "gt"):
			cond |= expireGT
		case isOption(a, "lt"):
			cond |= expireLT
		default:
			if i := bytes.IndexByte(a, 0); i >= 0 {
				a = a[:i] // Redis prints the option as a C string
			}
			c.w.Error(errUnsupported + string(a))
			return 0, false
		}
	}
	switch {
	case cond&expireNX != 0 && cond != expireNX:
		c.w.Error(errExpireNX)
		return 0, false
	case cond&(expireGT|expireLT) == expireGT|expireLT:
		c.w.Error(errExpireGTLT)
		return 0, false
	}
	return cond, true
}

// expireAllowed checks EXPIRE's conditions for a key whose deadline is
// cur (0: none) and the new deadline when. As in Redis, a key without a
// TTL counts as expiring never for GT and LT.
func expireAllowed(cond int, cur, when int64) bool {
	switch {
	case cond&expireNX != 0 && cur != 0,
		cond&expireXX != 0 && cur == 0,
		cond&expireGT != 0 && (cur == 0 || when <= cur),
		cond&expireLT != 0 && cur != 0 && when >= cur:
		return false
	}
	return true
}

// ttlHandler returns the handler of TTL (inMs false, absolute false),
// PTTL, EXPIRETIME and PEXPIRETIME.
func ttlHandler(inMs, absolute bool) handler {
	return func(c *ctx, args [][]byte) {
		e := c.lookup(args[1])
		switch {
		case e == nil:
			c.w.Int(-2)
		case e.expireAt == 0:
			c.w.Int(-1)
		default:
			t := e.expireAt
			if !absolute {
				t = max(t-c.now, 0)
			}
			if !inMs {
				t = roundToSeconds(t)
			}
			c.w.Int(t)
		}
	}
}

// roundToSeconds rounds t >= 0 milliseconds to the nearest second, half
// up, as Redis's (t+500)/1000 does, without overflowing near MaxInt64.
func roundToSeconds(t int64) int64 {
	return t/1000 + (t%1000+500)/1000
}

func persist(c *ctx, args [][]byte) {
	e := c.get(args[1])
	if e == nil || e.expireAt == 0 {
		c.unchanged()
		c.w.Int(0)
		return
	}
	c.setExpire(e, 0)
	c.notify('g', "persist", args[1])
	c.w.Int(1)
}

// liveKeys counts the keys of the current database that have not
// expired. Keys whose TTL passed since the last tick are still in the
// map; they are found through the expiry heap, whose items below now are
// visited by pruning the subtrees that start at or after now.
func (c *ctx) liveKeys() int {
	d := c.db
	if d.expiring == 0 {
		return len(d.keys)
	}
	h := c.s.mu.expiries
	var dead map[*entry]struct{}
	stack := []int{0}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i >= len(h) || h[i].at >= c.now {
			continue
		}
		stack = append(stack, 2*i+1, 2*i+2)
		if e := h[i].e; h[i].db == c.dbIndex && d.keys[e.key] == e && !c.alive(e) {
			if dead == nil {
				dead = make(map[*entry]struct{})
			}
			dead[e] = struct{}{}
		}
	}
	return len(d.keys) - len(dead)
}
