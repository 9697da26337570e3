package store

// KeyspaceSink receives the keyspace events of the writes the store
// applies, as Redis names them for its keyspace notifications: class is
// Redis's letter for the event's class ('g' generic, '$' string, 'x'
// expired, 'n' new key), event the event ("set", "del", "expired", ...).
// It is called under the store's write lock, during Apply, in the order
// the changes happen: it must be quick and must not call the store. key is
// only valid during the call.
type KeyspaceSink func(db int, class byte, event string, key []byte)

// SetKeyspaceSink makes f receive the keyspace events of the batches
// applied from now on; nil (the default) disables them, which then cost a
// check per change.
func (s *Store) SetKeyspaceSink(f KeyspaceSink) {
	if f == nil {
		s.ksink.Store(nil)
		return
	}
	s.ksink.Store(&f)
}

// keyspaceSink returns the keyspace sink, or nil.
func (s *Store) keyspaceSink() KeyspaceSink {
	if p := s.ksink.Load(); p != nil {
		return *p
	}
	return nil
}

// notify reports a keyspace event of key in the current database.
func (c *ctx) notify(class byte, event string, key []byte) {
	c.notifyIn(c.dbIndex, class, event, key)
}

// notifyIn reports a keyspace event of key in database db.
func (c *ctx) notifyIn(db int, class byte, event string, key []byte) {
	if c.ksink != nil {
		c.ksink(db, class, event, key)
	}
}
