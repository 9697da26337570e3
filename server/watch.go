package server

import "github.com/presenced/presenced/store"

// watchedKey is a key that WATCH follows, with the version it had then
// (see store.KeyVersion).
type watchedKey struct {
	db      int
	key     string
	version uint64
}

// watch answers WATCH key [key ...]. It reads each key's version from
// this node's store as a read does, after the read barrier: a follower
// that had not applied this connection's last write yet would read a
// version that its EXEC then finds changed. A key watched already keeps
// its first version, as in Redis.
func watch(c *client, args [][]byte) {
	if c.multi {
		c.out.Error(errWatchInMulti)
		return
	}
	if !c.readonly {
		if err := c.readBarrier(); err != nil {
			c.out.Error(replyError(err))
			return
		}
	}
	for _, key := range args[1:] {
		if !c.watching(c.db, key) {
			c.watched = append(c.watched, watchedKey{db: c.db, key: string(key), version: c.s.store.KeyVersion(c.db, key)})
		}
	}
	c.out.OK()
}

// errWatchInMulti is Redis's reply to WATCH inside MULTI.
const errWatchInMulti = "ERR WATCH inside MULTI is not allowed"

// watching reports whether c watches key of database db.
func (c *client) watching(db int, key []byte) bool {
	for _, w := range c.watched {
		if w.db == db && w.key == string(key) {
			return true
		}
	}
	return false
}

// unwatch answers UNWATCH.
func unwatch(c *client, _ [][]byte) {
	c.watched = nil
	c.out.OK()
}

// watchCheck returns the WATCHCHECK of the keys watched, ahead of a
// transaction of n keyspace commands.
func watchCheck(watched []watchedKey, n int) store.Command {
	dbs, keys, vers := make([]int, len(watched)), make([][]byte, len(watched)), make([]uint64, len(watched))
	for i, w := range watched {
		dbs[i], keys[i], vers[i] = w.db, []byte(w.key), w.version
	}
	return store.WatchCheck(n, dbs, keys, vers)
}
