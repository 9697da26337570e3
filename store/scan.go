package store

import (
	"math/rand/v2"
	"strconv"

	"github.com/presenced/presenced/proto"
	"github.com/tidwall/btree"
)

// The index keeps every entry of a database ordered by (hash of the key,
// key). A SCAN cursor is the hash to resume from, and a page always ends
// between two hashes, so a full iteration returns each key that is
// present throughout exactly once, however keys come and go in between.

// scanDefaultCount is SCAN's default COUNT, as in Redis.
const scanDefaultCount = 10

// randomKeyTries is how many random picks RANDOMKEY makes before it
// walks the index for a key that has not expired.
const randomKeyTries = 16

func newIndex() *btree.BTreeG[*entry] {
	return btree.NewBTreeGOptions(entryLess, btree.Options{NoLocks: true})
}

func entryLess(a, b *entry) bool {
	if a.hash != b.hash {
		return a.hash < b.hash
	}
	return a.key < b.key
}

// keyHash is a fixed hash of key (64-bit FNV-1a, then the splitmix64
// finalizer to spread similar keys): the same on every replica and across
// restarts, so that SCAN cursors stay valid wherever a client continues.
func keyHash(key string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= 1099511628211
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

// add inserts e, whose key must not be in d yet.
func (d *db) add(e *entry) {
	e.hash = keyHash(e.key)
	d.keys[e.key] = e
	d.index.Set(e)
}

// scanPage visits the entries from hash cursor on: count of them, then
// the rest of the last hash visited. It returns the cursor of the next
// page, 0 when the index is done.
func (d *db) scanPage(cursor uint64, count int, visit func(*entry)) uint64 {
	var next, last uint64
	n := 0
	d.index.Ascend(&entry{hash: cursor}, func(e *entry) bool {
		if n >= count && e.hash != last {
			next = e.hash
			return false
		}
		visit(e)
		n++
		last = e.hash
		return true
	})
	return next
}

// parseCursor parses a SCAN cursor as Redis does with strtoul: an
// optional sign and decimal digits within 64 bits, a negative number
// wrapping around, an empty string being 0.
func parseCursor(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, true
	}
	neg := b[0] == '-'
	if neg || b[0] == '+' {
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// scanOptions are SCAN's MATCH, COUNT and TYPE.
type scanOptions struct {
	pattern  string // "" for all keys
	count    int
	typeName []byte // nil for all types
}

// parseScanOptions parses args as SCAN's options, replying to errors.
func (c *ctx) parseScanOptions(args [][]byte) (scanOptions, bool) {
	o := scanOptions{count: scanDefaultCount}
	for ; len(args) > 0; args = args[2:] {
		if len(args) < 2 {
			c.w.Error(proto.ErrSyntax)
			return o, false
		}
		switch {
		case isOption(args[0], "count"):
			n, ok := c.intArg(args[1])
			if !ok {
				return o, false
			}
			if n < 1 {
				c.w.Error(proto.ErrSyntax)
				return o, false
			}
			o.count = int(n)
		case isOption(args[0], "match"):
			o.pattern = string(args[1])
			if o.pattern == "*" {
				o.pattern = ""
			}
		case isOption(args[0], "type"):
			o.typeName = args[1]
		default:
			c.w.Error(proto.ErrSyntax)
			return o, false
		}
	}
	return o, true
}

// wants reports whether a live entry passes the MATCH and TYPE filters.
// Every value is a string.
func (o *scanOptions) wants(e *entry) bool {
	return (o.typeName == nil || isOption(o.typeName, "string")) &&
		(o.pattern == "" || globMatch(o.pattern, e.key))
}

func scan(c *ctx, args [][]byte) {
	cursor, ok := parseCursor(args[1])
	if !ok {
		c.w.Error(proto.ErrCursor)
		return
	}
	o, ok := c.parseScanOptions(args[2:])
	if !ok {
		return
	}
	var found []string
	next := c.db.scanPage(cursor, o.count, func(e *entry) {
		if c.alive(e) && o.wants(e) {
			found = append(found, e.key)
		}
	})
	c.w.Array(2)
	c.w.BulkString(strconv.FormatUint(next, 10))
	c.writeKeys(found)
}

func keys(c *ctx, args [][]byte) {
	o := scanOptions{pattern: string(args[1])}
	if o.pattern == "*" {
		o.pattern = ""
	}
	var found []string
	c.db.index.Scan(func(e *entry) bool {
		if c.alive(e) && o.wants(e) {
			found = append(found, e.key)
		}
		return true
	})
	c.writeKeys(found)
}

// EachKey calls f with each live key of database db at time now (unix
// ms), in the index's order, until f returns false. It holds the read
// lock throughout, so f must not call the store.
func (s *Store) EachKey(db int, now int64, f func(key string) bool) {
	var out Replies
	s.read(now, &out, func(c *ctx) bool {
		s.mu.dbs[db].index.Scan(func(e *entry) bool {
			return !c.alive(e) || f(e.key)
		})
		return true
	})
}

func (c *ctx) writeKeys(keys []string) {
	c.w.Array(len(keys))
	for _, k := range keys {
		c.w.BulkString(k)
	}
}

func randomkey(c *ctx, _ [][]byte) {
	if e := c.randomEntry(); e != nil {
		c.w.BulkString(e.key)
		return
	}
	c.w.Null()
}

// randomEntry picks a live entry of the current database at random, or
// returns nil when there is none. When random picks keep hitting expired
// keys, it takes the first live entry after a random place instead.
func (c *ctx) randomEntry() *entry {
	n := c.db.index.Len()
	if n == 0 {
		return nil
	}
	for range randomKeyTries {
		if e, _ := c.db.index.GetAt(rand.IntN(n)); c.alive(e) {
			return e
		}
	}
	var found *entry
	pick := func(e *entry) bool {
		if c.alive(e) {
			found = e
			return false
		}
		return true
	}
	start, _ := c.db.index.GetAt(rand.IntN(n))
	c.db.index.Ascend(start, pick)
	if found == nil {
		c.db.index.Scan(pick)
	}
	return found
}
