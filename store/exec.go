package store

import "github.com/presenced/presenced/proto"

// handler executes one command; args[0] is the command name. Handlers of
// read-only commands must not change the store: they also run under the
// read lock.
type handler func(c *ctx, args [][]byte)

// handlers maps command IDs (proto.Spec.ID) to their implementation.
var handlers = func() []handler {
	hs := make([]handler, len(proto.Commands))
	for _, group := range []map[string]handler{bitmapCommands, stringCommands, keyCommands, dumpCommands, bitTimerCommands, historyCommands, hllCommands, {"watchcheck": watchcheck}} {
		for name, h := range group {
			spec := proto.Lookup([]byte(name))
			if spec == nil {
				panic("store: no command table entry for " + name)
			}
			hs[spec.ID] = h
		}
	}
	return hs
}()

// Handles reports whether the store executes the command; the server
// handles the others (connection state, server introspection).
func Handles(spec *proto.Spec) bool {
	return spec.Parent == nil && handlers[spec.ID] != nil
}

// ctx is the state of one command's execution.
type ctx struct {
	s       *Store
	db      *db
	dbIndex int
	now     int64 // unix ms
	w       *proto.Writer
	write   bool         // under the write lock, applying at log time
	sink    EventSink    // where the batch's bit events go; nil: nowhere
	ksink   KeyspaceSink // where its keyspace events go; nil: nowhere
	hist    *history     // history's configuration on the write path; nil: off
	by      *Replies     // where the running batch's replies go
	// marked is the key of database markedDB that the latest write of
	// the Apply marked (see mark), in the store's markedKey; nil when
	// none did.
	marked   []byte
	markedDB int
	// skip is how many commands after a WATCHCHECK that failed belong
	// to its transaction (see watchRun).
	skip int
	// stamped is set by a write command's handler that changed none of
	// its keys, or stamped the ones it changed itself: the others keep
	// their versions, as Redis signals only real changes to WATCH.
	stamped bool
	// hits and misses count the context's lookups to read (see lookup),
	// added to the store's Lookups by end.
	hits, misses int64
}

// end adds the context's counts to the store's and clears it.
func (c *ctx) end() {
	c.flushLookups()
	*c = ctx{}
}

// flushLookups moves the context's counts of lookups to the store's, so
// that a caller answered next sees them.
func (c *ctx) flushLookups() {
	if c.hits != 0 {
		c.s.hits.Add(c.hits)
	}
	if c.misses != 0 {
		c.s.misses.Add(c.misses)
	}
	c.hits, c.misses = 0, 0
}

func (c *ctx) exec(cmd Command) {
	args := cmd.Args
	if len(args) == 0 {
		c.w.Error(proto.ErrSyntax)
		return
	}
	spec := cmd.Spec
	if spec == nil {
		spec = proto.Lookup(args[0])
	}
	if spec == nil || handlers[spec.ID] == nil {
		c.w.Error(proto.ErrUnknownCommand(args))
		return
	}
	if !spec.CheckArity(len(args)) {
		c.w.Error(proto.ErrArity(spec.Name))
		return
	}
	if cmd.DB < 0 || cmd.DB >= NumDBs {
		c.w.Error(proto.ErrDBIndex)
		return
	}
	if !c.write && spec.Flags&proto.Write != 0 {
		c.w.Error("ERR store: write command '" + spec.Name + "' on the read path")
		return
	}
	c.db, c.dbIndex = c.s.mu.dbs[cmd.DB], cmd.DB
	from := c.w.Len()
	c.stamped = false
	handlers[spec.ID](c, args)
	if c.write && spec.Flags&proto.Write != 0 {
		if !c.stamped && (c.w.Len() == from || c.w.B[from] != '-') {
			eachWrittenKey(spec, args, func(key []byte) { c.touch(c.dbIndex, key) })
		}
		if c.hist != nil {
			spec.EachKey(args, func(key []byte) { c.mark(c.dbIndex, key) })
		}
	}
}

// touch records a change of key in database db (see versions).
func (c *ctx) touch(db int, key []byte) { c.s.touchLocked(db, key, c.by) }

// unchanged says that the running write command changed none of its
// keys: they keep their versions.
func (c *ctx) unchanged() { c.stamped = true }

// eachWrittenKey calls f with each key in args that a write command
// changes in the database it runs in: its keys, but for the sources of
// BITOP and PFMERGE, which they only read, and COPY's keys, which COPY
// touches itself (its copy may go to another database).
func eachWrittenKey(spec *proto.Spec, args [][]byte, f func(key []byte)) {
	switch spec.Name {
	case "bitop":
		f(args[2])
	case "pfmerge":
		f(args[1])
	case "copy":
	default:
		spec.EachKey(args, f)
	}
}

// alive reports whether e exists and its TTL has not passed. Redis counts
// a key as expired once the clock is past its deadline.
func (c *ctx) alive(e *entry) bool {
	return e != nil && (e.expireAt == 0 || c.now <= e.expireAt)
}

// get returns the live entry of key in the current database, or nil.
func (c *ctx) get(key []byte) *entry {
	return c.getIn(c.db, key)
}

// lookup is get for reading key, as Redis's lookupKeyRead: it counts a
// keyspace hit or miss, and a miss publishes a keymiss event. Writes look
// their keys up with get, which counts neither, as Redis's lookupKeyWrite.
func (c *ctx) lookup(key []byte) *entry {
	e := c.get(key)
	c.looked(e != nil, key, true)
	return e
}

// looked counts a lookup to read key that found it or not; a miss
// publishes a keymiss event if notify (OBJECT's lookups do not).
func (c *ctx) looked(found bool, key []byte, notify bool) {
	switch {
	case found:
		c.hits++
	case notify:
		c.misses++
		c.notify('m', "keymiss", key)
	default:
		c.misses++
	}
}

// getIn is get for any database. On the write path an expired entry found
// on the way is removed, so that writes see a clean keyspace.
func (c *ctx) getIn(d *db, key []byte) *entry {
	e := d.keys[string(key)]
	if e == nil || c.alive(e) {
		return e
	}
	if c.write {
		d.remove(e)
		c.s.mu.stats.ExpiredKeys++
		c.s.touchLocked(c.s.dbIndexOf(d), key, nil)
		c.notifyIn(c.s.dbIndexOf(d), 'x', "expired", key)
	}
	return nil
}

// put stores v under key in the current database, replacing any previous
// entry and its TTL, and returns the new entry.
func (c *ctx) put(key []byte, v value) *entry {
	return c.putIn(c.dbIndex, string(key), v, 0)
}

// putIn stores v with deadline expireAt (0: none) under key in database i.
// The deadlines of v's bits come along (RENAME, MOVE, COPY's copy). A key
// that was not there is a "new" keyspace event (see dropIn).
func (c *ctx) putIn(i int, key string, v value, expireAt int64) *entry {
	d := c.s.mu.dbs[i]
	if old := d.keys[key]; old != nil {
		d.remove(old)
	} else if c.ksink != nil { // the conversion would allocate for every new key
		c.notifyIn(i, 'n', "new", []byte(key))
	}
	e := &entry{key: key, v: v}
	d.add(e)
	c.setExpireIn(i, e, expireAt)
	if v.t != nil {
		v.t.heapAt = 0 // the old entry's heap item is stale now
		c.s.scheduleBitsLocked(i, e)
	}
	return e
}

// dropIn removes key from database i without a keyspace event, as Redis
// deletes a destination it then adds anew (RENAME, COPY REPLACE, RESTORE
// REPLACE): the add is a "new" event.
func (c *ctx) dropIn(i int, key []byte) {
	d := c.s.mu.dbs[i]
	if e := d.keys[string(key)]; e != nil {
		d.remove(e)
	}
}

// del removes key from the current database and reports whether it was
// there.
func (c *ctx) del(key []byte) bool {
	e := c.get(key)
	if e == nil {
		return false
	}
	c.db.remove(e)
	return true
}

// setExpire sets e's deadline (0 removes it).
func (c *ctx) setExpire(e *entry, at int64) {
	c.setExpireIn(c.dbIndex, e, at)
}

func (c *ctx) setExpireIn(i int, e *entry, at int64) {
	d := c.s.mu.dbs[i]
	switch {
	case e.expireAt == 0 && at != 0:
		d.expiring++
	case e.expireAt != 0 && at == 0:
		d.expiring--
	}
	e.expireAt = at
	c.s.scheduleLocked(i, e)
}

// dbAt returns database i, for commands that work across databases.
func (c *ctx) dbAt(i int) *db { return c.s.mu.dbs[i] }

// dbIndexOf returns the index of database d.
func (s *Store) dbIndexOf(d *db) int {
	for i, x := range s.mu.dbs {
		if x == d {
			return i
		}
	}
	return 0
}

// intArg parses an integer argument as Redis's getLongLongFromObjectOrReply
// does, replying the "not an integer" error when it is not one.
func (c *ctx) intArg(b []byte) (int64, bool) {
	n, ok := proto.ParseInt(b)
	if !ok {
		c.w.Error(proto.ErrNotInteger)
	}
	return n, ok
}
