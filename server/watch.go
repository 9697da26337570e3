package server

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
			c.watched = append(c.watched, c.s.store.Watch(c.db, key))
		}
	}
	c.out.OK()
}

// errWatchInMulti is Redis's reply to WATCH inside MULTI.
const errWatchInMulti = "ERR WATCH inside MULTI is not allowed"

// watching reports whether c watches key of database db.
func (c *client) watching(db int, key []byte) bool {
	for _, w := range c.watched {
		if w.DB == db && w.Key == string(key) {
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
