package server

import (
	"strconv"
	"strings"
)

// Keyspace notifications, as Redis's notify-keyspace-events configures
// them: the classes of events to publish, and whether on each key's
// channel (__keyspace@<db>__:<key>, the event as message, K) or on each
// event's (__keyevent@<db>__:<event>, the key as message, E). The events
// come from the store's apply path (see store.KeyspaceSink), so every node
// publishes the events of every write to its own subscribers, as it does
// bit events.
const (
	notifyKeyspace = 1 << iota // K
	notifyKeyevent             // E
	notifyGeneric              // g
	notifyString               // $
	notifyList                 // l
	notifySet                  // s
	notifyHash                 // h
	notifyZset                 // z
	notifyExpired              // x
	notifyEvicted              // e
	notifyStream               // t
	notifyKeyMiss              // m
	notifyModule               // d
	notifyNew                  // n

	// notifyAll is A: every class but m and n.
	notifyAll = notifyGeneric | notifyString | notifyList | notifySet | notifyHash | notifyZset | notifyExpired | notifyEvicted | notifyStream | notifyModule
)

// keyspaceClasses are the letters of the flags, in the order Redis writes
// them back (K, E and m after the classes).
const keyspaceClasses = "g$lshzxetdn"

// keyspaceLetters maps each letter of notify-keyspace-events to its flag.
var keyspaceLetters = map[byte]int{
	'K': notifyKeyspace, 'E': notifyKeyevent, 'g': notifyGeneric, '$': notifyString, 'l': notifyList,
	's': notifySet, 'h': notifyHash, 'z': notifyZset, 'x': notifyExpired, 'e': notifyEvicted,
	't': notifyStream, 'm': notifyKeyMiss, 'd': notifyModule, 'n': notifyNew, 'A': notifyAll,
}

// parseKeyspaceEvents parses a notify-keyspace-events value.
func parseKeyspaceEvents(v string) (int, bool) {
	flags := 0
	for i := 0; i < len(v); i++ {
		f, ok := keyspaceLetters[v[i]]
		if !ok {
			return 0, false
		}
		flags |= f
	}
	return flags, true
}

// formatKeyspaceEvents writes flags back as Redis does: A for all of its
// classes (which leaves n out, as Redis does), else each class, then K, E
// and m.
func formatKeyspaceEvents(flags int) string {
	var b strings.Builder
	if flags&notifyAll == notifyAll {
		b.WriteByte('A')
	} else {
		for i := 0; i < len(keyspaceClasses); i++ {
			if flags&keyspaceLetters[keyspaceClasses[i]] != 0 {
				b.WriteByte(keyspaceClasses[i])
			}
		}
	}
	for _, c := range "KEm" {
		if flags&keyspaceLetters[byte(c)] != 0 {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// updateKeyspaceSink has the store report keyspace events while the
// configuration asks for some and anyone subscribes, and costs it nothing
// otherwise. Called as either changes.
func (s *Server) updateKeyspaceSink() {
	flags := s.settings.config().NotifyKeyspaceEvents
	s.keyspaceFlags.Store(int32(flags))
	if flags&(notifyKeyspace|notifyKeyevent) != 0 && s.pubsub.listening() {
		s.store.SetKeyspaceSink(s.publishKeyspaceEvent)
	} else {
		s.store.SetKeyspaceSink(nil)
	}
}

// publishKeyspaceEvent is the store's keyspace sink.
func (s *Server) publishKeyspaceEvent(db int, class byte, event string, key []byte) {
	flags := int(s.keyspaceFlags.Load())
	if flags&keyspaceLetters[class] == 0 {
		return
	}
	dbTag := "@" + strconv.Itoa(db) + "__:"
	if flags&notifyKeyspace != 0 {
		s.pubsub.publish("__keyspace"+dbTag+string(key), []byte(event))
	}
	if flags&notifyKeyevent != 0 {
		s.pubsub.publish("__keyevent"+dbTag+event, key)
	}
}
