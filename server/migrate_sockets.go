package server

import (
	"bufio"
	"net"
	"sync"
	"time"
)

// MIGRATE keeps its connections to its targets for the next MIGRATE to
// the same host and port, as Redis's migrate_cached_sockets does: at most
// migrateSocketsMax of them (a new one makes room by closing another),
// each closed after migrateSocketTTL unused or after an error on it.
// Each remembers the database it last selected, so that a MIGRATE to the
// same database sends no SELECT.
const (
	migrateSocketsMax = 64
	migrateSocketTTL  = 10 * time.Second
)

// migrateConn is a connection MIGRATE keeps to a target.
type migrateConn struct {
	conn    net.Conn
	r       *bufio.Reader
	lastDB  int64 // -1: the next MIGRATE sends SELECT
	lastUse time.Time
}

// close closes the connection.
func (mc *migrateConn) close() { mc.conn.Close() }

// migrateSockets holds the idle connections by target, as its host and
// port read in MIGRATE's arguments. A MIGRATE takes its target's out
// while it uses it, so that MIGRATEs at once to one target use
// connections of their own.
type migrateSockets struct {
	mu    sync.Mutex
	conns map[string]*migrateConn
}

// take returns the idle connection to target, out of the cache, or nil.
func (ms *migrateSockets) take(target string) *migrateConn {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	mc := ms.conns[target]
	delete(ms.conns, target)
	return mc
}

// put keeps mc as the idle connection to target, closing the one it
// replaces or, when the cache is full, another.
func (ms *migrateSockets) put(target string, mc *migrateConn, now time.Time) {
	mc.lastUse = now
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.conns == nil {
		ms.conns = map[string]*migrateConn{}
	}
	if old := ms.conns[target]; old != nil {
		old.close()
	} else if len(ms.conns) >= migrateSocketsMax {
		for t, other := range ms.conns {
			other.close()
			delete(ms.conns, t)
			break
		}
	}
	ms.conns[target] = mc
}

// closeIdle closes the connections unused for longer than
// migrateSocketTTL at now.
func (ms *migrateSockets) closeIdle(now time.Time) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for t, mc := range ms.conns {
		if now.Sub(mc.lastUse) > migrateSocketTTL {
			mc.close()
			delete(ms.conns, t)
		}
	}
}

// closeAll closes every idle connection.
func (ms *migrateSockets) closeAll() {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for t, mc := range ms.conns {
		mc.close()
		delete(ms.conns, t)
	}
}

// count returns how many idle connections the cache holds, for INFO.
func (ms *migrateSockets) count() int {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return len(ms.conns)
}

// expireMigrateSockets closes the idle connections as they pass
// migrateSocketTTL, and all of them when the server closes.
func (s *Server) expireMigrateSockets() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			s.migrateSockets.closeIdle(now)
		case <-s.quit:
			s.migrateSockets.closeAll()
			return
		}
	}
}
