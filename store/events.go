package store

import "sync/atomic"

// EventKind says what happened to a bit.
type EventKind uint8

const (
	// EventJoin: a bit went from 0 to 1 through SETBIT, BITSETEX or
	// BITPSETEX.
	EventJoin EventKind = iota + 1
	// EventLeave: a bit went from 1 to 0 through SETBIT.
	EventLeave
	// EventExpire: a bit was cleared because its deadline passed.
	EventExpire
)

// String returns "join", "leave" or "expire".
func (k EventKind) String() string {
	switch k {
	case EventJoin:
		return "join"
	case EventLeave:
		return "leave"
	case EventExpire:
		return "expire"
	}
	return "unknown"
}

// EventSink receives the bit events of the batches the store applies. It
// is called under the store's write lock, during Apply, in the order the
// changes happen: it must be quick and must not call the store. key is
// only valid during the call.
type EventSink func(db int, key []byte, kind EventKind, offset uint64)

// sinkHolder holds the event sink; the zero value holds none.
type sinkHolder struct {
	p atomic.Pointer[EventSink]
}

// SetEventSink makes f receive the bit events of the batches applied from
// now on; nil (the default) disables events, which then cost one check
// per changed bit and no allocation.
func (s *Store) SetEventSink(f EventSink) {
	if f == nil {
		s.sink.p.Store(nil)
		return
	}
	s.sink.p.Store(&f)
}

// load returns the sink, or nil.
func (h *sinkHolder) load() EventSink {
	if p := h.p.Load(); p != nil {
		return *p
	}
	return nil
}

// emit reports an event of the current command's key to the batch's
// sink, if any.
func (c *ctx) emit(key []byte, kind EventKind, off uint64) {
	if c.sink != nil {
		c.sink(c.dbIndex, key, kind, off)
	}
}
