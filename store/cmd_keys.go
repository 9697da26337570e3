package store

import (
	"bytes"
	"math"

	"github.com/presenced/presenced/proto"
)

var keyCommands = map[string]handler{
	"del":         del,
	"unlink":      del,
	"exists":      exists,
	"touch":       exists,
	"type":        typeCmd,
	"keys":        keys,
	"scan":        scan,
	"dbsize":      dbsize,
	"randomkey":   randomkey,
	"rename":      renameHandler(false),
	"renamenx":    renameHandler(true),
	"copy":        copyCmd,
	"move":        move,
	"expire":      expireHandler(1000, true),
	"pexpire":     expireHandler(1, true),
	"expireat":    expireHandler(1000, false),
	"pexpireat":   expireHandler(1, false),
	"ttl":         ttlHandler(false, false),
	"pttl":        ttlHandler(true, false),
	"expiretime":  ttlHandler(false, true),
	"pexpiretime": ttlHandler(true, true),
	"persist":     persist,
	"object":      object,
	"flushdb":     flushdb,
	"flushall":    flushall,
	"swapdb":      swapdb,
}

// Error replies of the keyspace commands, word for word as Redis sends
// them.
const (
	errFirstDB  = "ERR invalid first DB index"
	errSecondDB = "ERR invalid second DB index"
	errIntRange = "ERR value is out of range, value must between -2147483648 and 2147483647"
	errNoLFU    = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."
)

// objectHelp is the reply to OBJECT HELP.
var objectHelp = []string{
	"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"ENCODING <key>",
	"    Return the kind of internal representation used in order to store the value",
	"    associated with a <key>.",
	"FREQ <key>",
	"    Return the access frequency index of the <key>. The returned integer is",
	"    proportional to the logarithm of the recent access frequency of the key.",
	"IDLETIME <key>",
	"    Return the idle time of the <key>, that is the approximated number of",
	"    seconds elapsed since the last access to the key.",
	"REFCOUNT <key>",
	"    Return the number of references of the value associated with the specified",
	"    <key>.",
	"HELP",
	"    Prints this help.",
}

func del(c *ctx, args [][]byte) {
	n := int64(0)
	for _, k := range args[1:] {
		if c.del(k) {
			c.touch(c.dbIndex, k)
			c.notify('g', "del", k)
			n++
		}
	}
	c.stamped = true // the keys deleted, not the missing ones
	c.w.Int(n)
}

// exists counts the arguments that name a live key, a key named twice
// counting twice (EXISTS and TOUCH).
func exists(c *ctx, args [][]byte) {
	n := int64(0)
	for _, k := range args[1:] {
		if c.lookup(k) != nil {
			n++
		}
	}
	c.w.Int(n)
}

func typeCmd(c *ctx, args [][]byte) {
	if c.lookup(args[1]) != nil {
		c.w.Simple("string")
		return
	}
	c.w.Simple("none")
}

func dbsize(c *ctx, _ [][]byte) {
	c.w.Int(int64(c.liveKeys()))
}

// renameHandler returns the handler of RENAME or, with nx, RENAMENX.
func renameHandler(nx bool) handler {
	return func(c *ctx, args [][]byte) {
		src := c.get(args[1])
		switch {
		case src == nil:
			c.w.Error(proto.ErrNoSuchKey)
		case bytes.Equal(args[1], args[2]):
			c.unchanged()
			c.replyRenamed(nx, false)
		case nx && c.get(args[2]) != nil:
			c.unchanged()
			c.w.Int(0)
		default:
			if c.get(args[2]) != nil {
				c.dropIn(c.dbIndex, args[2])
			}
			c.db.remove(src)
			c.putIn(c.dbIndex, string(args[2]), src.v, src.expireAt)
			c.notify('g', "rename_from", args[1])
			c.notify('g', "rename_to", args[2])
			c.replyRenamed(nx, true)
		}
	}
}

// replyRenamed replies to RENAME (+OK) or RENAMENX (whether it renamed).
func (c *ctx) replyRenamed(nx, renamed bool) {
	switch {
	case !nx:
		c.w.OK()
	case renamed:
		c.w.Int(1)
	default:
		c.w.Int(0)
	}
}

// parseInt32 parses a C int argument as Redis's getIntFromObject does.
func parseInt32(b []byte) (int64, bool) {
	n, ok := proto.ParseInt(b)
	return n, ok && n >= math.MinInt32 && n <= math.MaxInt32
}

// parseDB parses a database index, replying to errors as MOVE and COPY
// do.
func (c *ctx) parseDB(b []byte) (int, bool) {
	db, msg := parseDB(b)
	if msg != "" {
		c.w.Error(msg)
		return 0, false
	}
	return db, true
}

// parseDB parses a database index; msg is the error reply, if any.
func parseDB(b []byte) (db int, msg string) {
	n, isInt := proto.ParseInt(b)
	_, ok := parseInt32(b)
	switch {
	case !isInt:
		return 0, proto.ErrNotInteger
	case !ok:
		return 0, errIntRange
	case n < 0 || n >= NumDBs:
		return 0, proto.ErrDBIndex
	}
	return int(n), ""
}

// CopyOptions parses the options of COPY source destination [DB
// destination-db] [REPLACE] in args, for a client in database db: the
// destination database and whether to replace, or Redis's error reply.
func CopyOptions(args [][]byte, db int) (dst int, replace bool, msg string) {
	dst = db
	for i := 3; i < len(args); i++ {
		switch {
		case isOption(args[i], "replace"):
			replace = true
		case isOption(args[i], "db") && i+1 < len(args):
			i++
			if dst, msg = parseDB(args[i]); msg != "" {
				return 0, false, msg
			}
		default:
			return 0, false, proto.ErrSyntax
		}
	}
	return dst, replace, ""
}

func copyCmd(c *ctx, args [][]byte) {
	dst, replace, msg := CopyOptions(args, c.dbIndex)
	if msg != "" {
		c.w.Error(msg)
		return
	}
	if dst == c.dbIndex && bytes.Equal(args[1], args[2]) {
		c.w.Error(proto.ErrSameObject)
		return
	}
	src := c.lookup(args[1])
	if src == nil || (!replace && c.getIn(c.dbAt(dst), args[2]) != nil) {
		c.w.Int(0)
		return
	}
	v := src.v.clone()
	if v.encoding() == "int" {
		v.enc = encUnsharedInt // Redis duplicates the shared integer
	}
	c.dropIn(dst, args[2])
	c.putIn(dst, string(args[2]), v, src.expireAt)
	c.notifyIn(dst, 'g', "copy_to", args[2])
	c.touch(dst, args[2])
	c.mark(dst, args[2])
	c.w.Int(1)
}

func move(c *ctx, args [][]byte) {
	dst, ok := c.parseDB(args[2])
	if !ok {
		return
	}
	if dst == c.dbIndex {
		c.w.Error(proto.ErrSameObject)
		return
	}
	e := c.get(args[1])
	if e == nil || c.getIn(c.dbAt(dst), args[1]) != nil {
		c.unchanged()
		c.w.Int(0)
		return
	}
	c.db.remove(e)
	c.putIn(dst, e.key, e.v, e.expireAt)
	c.notify('g', "move_from", args[1])
	c.notifyIn(dst, 'g', "move_to", args[1])
	c.touch(dst, args[1])
	c.mark(dst, args[1])
	c.w.Int(1)
}

// object dispatches OBJECT's subcommands, checking their arity.
func object(c *ctx, args [][]byte) {
	sub := c.subcommand(args)
	switch {
	case sub == nil:
		return
	case sub.Name == "help":
		c.help(objectHelp)
		return
	}
	e := c.get(args[2])
	c.looked(e != nil, args[2], false)
	switch {
	case e == nil:
		c.w.Null()
	case sub.Name == "freq":
		c.w.Error(errNoLFU)
	case sub.Name == "encoding":
		c.w.BulkString(e.v.encoding())
	case sub.Name == "refcount":
		c.w.Int(e.v.refcount())
	default: // idletime: access times are not tracked
		c.w.Int(0)
	}
}

// flushMode checks the optional ASYNC | SYNC argument of FLUSHDB and
// FLUSHALL, replying to errors. Both modes flush at once.
func (c *ctx) flushMode(args [][]byte) bool {
	if len(args) == 1 || (len(args) == 2 && (isOption(args[1], "async") || isOption(args[1], "sync"))) {
		return true
	}
	c.w.Error(proto.ErrSyntax)
	return false
}

func flushdb(c *ctx, args [][]byte) {
	if c.flushMode(args) {
		c.s.markDBLocked(c.dbIndex)
		c.s.mu.versions.touchKeys(c.dbIndex, c.s.mu.dbs[c.dbIndex])
		c.s.mu.dbs[c.dbIndex] = newDB()
		c.s.flushedLocked(c.by)
		c.w.OK()
	}
}

func flushall(c *ctx, args [][]byte) {
	if !c.flushMode(args) {
		return
	}
	for i := range c.s.mu.dbs {
		c.s.markDBLocked(i)
		c.s.mu.versions.touchKeys(i, c.s.mu.dbs[i])
		c.s.mu.dbs[i] = newDB()
	}
	c.s.mu.expiries = nil
	c.s.mu.bitHeap = nil
	c.s.flushedLocked(c.by)
	c.w.OK()
}

func swapdb(c *ctx, args [][]byte) {
	a, ok := parseInt32(args[1])
	if !ok {
		c.w.Error(errFirstDB)
		return
	}
	b, ok := parseInt32(args[2])
	if !ok {
		c.w.Error(errSecondDB)
		return
	}
	if a < 0 || a >= NumDBs || b < 0 || b >= NumDBs {
		c.w.Error(proto.ErrDBIndex)
		return
	}
	c.s.markDBLocked(int(a)) // the keys that leave, then those that arrive
	c.s.markDBLocked(int(b))
	dbs := &c.s.mu.dbs
	// A key of either database changes in both, as Redis signals a swap.
	for _, d := range []*db{dbs[a], dbs[b]} {
		c.s.mu.versions.touchKeys(int(a), d)
		c.s.mu.versions.touchKeys(int(b), d)
	}
	dbs[a], dbs[b] = dbs[b], dbs[a]
	c.s.markDBLocked(int(a))
	c.s.markDBLocked(int(b))
	// The expiry heaps name databases by index: follow the swap.
	swap := func(db *int) {
		switch int64(*db) {
		case a:
			*db = int(b)
		case b:
			*db = int(a)
		}
	}
	for i := range c.s.mu.expiries {
		swap(&c.s.mu.expiries[i].db)
	}
	for i := range c.s.mu.bitHeap {
		swap(&c.s.mu.bitHeap[i].db)
	}
	c.w.OK()
}
