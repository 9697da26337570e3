package server

import (
	"strconv"

	"github.com/presenced/presenced/store"
)

// bitEventPrefix starts the channel of a key's bit events:
// __bitevent__:<key> carries "join <offset>", "leave <offset>" and
// "expire <offset>".
const bitEventPrefix = "__bitevent__:"

// watchBitEvents has the store report bit events to this node's
// subscribers while anyone subscribes, and costs the store nothing
// otherwise. Every node applies the same log, so a subscriber sees each
// event once on whichever node it subscribes; as with Redis pub/sub,
// delivery is at most once.
func (s *Server) watchBitEvents() {
	s.pubsub.onListen = func(listening bool) {
		if listening {
			s.store.SetEventSink(s.publishBitEvent)
		} else {
			s.store.SetEventSink(nil)
		}
		s.updateKeyspaceSink()
	}
}

// publishBitEvent is the store's event sink: it publishes one event on
// its key's channel. Events of every database share the channel.
func (s *Server) publishBitEvent(_ int, key []byte, kind store.EventKind, offset uint64) {
	var buf [32]byte
	msg := append(append(buf[:0], kind.String()...), ' ')
	msg = strconv.AppendUint(msg, offset, 10)
	s.pubsub.publish(bitEventPrefix+string(key), msg)
}
