package server

import (
	"bufio"
	"errors"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/presenced/presenced/proto"
	"github.com/presenced/presenced/store"
)

// MIGRATE's replies, word for word as Redis 7.0 sends them, and
// presenced's own for a key that changed while it was sent.
const (
	errMigrateKeys    = "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string"
	errMigrateConnect = "IOERR error or timeout connecting to the client"
	errMigrateWrite   = "IOERR error or timeout writing to target instance"
	errMigrateRead    = "IOERR error or timeout reading from target instance"
	errMigrateTarget  = "ERR Target instance replied with error: "
	errMigrateChanged = "ERR a key changed while MIGRATE sent it: the target has a copy, and the key was not deleted here"
)

// migration is a parsed MIGRATE.
type migration struct {
	addr          string
	target        string // host:port as the arguments spell them, the socket cache's key
	db            int64
	timeout       time.Duration
	copy, replace bool
	asking        bool   // send RESTORE-ASKING, as a node in cluster mode does
	user          []byte // AUTH2's username, nil for AUTH's form
	password      []byte // nil: no AUTH
	keys          [][]byte
}

// migrate answers MIGRATE host port key|"" destination-db timeout [COPY]
// [REPLACE] [AUTH password | AUTH2 username password] [KEYS key ...] as
// Redis 7.0 does: it sends the keys found to the target as RESTOREs
// (after AUTH and SELECT), then, unless COPY, deletes those the target
// restored. The keys are read at one moment (after the read barrier, as
// a read is), and deleted in one log entry only if none changed since
// (a WATCHCHECK): Redis, which blocks while it migrates, never meets a
// change in between.
func migrate(c *client, args [][]byte) {
	m, bad := parseMigration(args)
	if bad != "" {
		c.out.Error(bad)
		return
	}
	m.asking = c.s.clusterEnabled()
	if !c.readonly && !c.peer {
		if err := c.readBarrier(); err != nil {
			c.out.Error(replyError(err))
			return
		}
	}
	keys := c.s.store.Migration(c.db, m.keys, time.Now().UnixMilli())
	if len(keys) == 0 {
		c.out.Simple("NOKEY")
		return
	}
	restored, reply := m.send(&c.s.migrateSockets, keys)
	if !m.copy && len(restored) > 0 {
		if failed := c.deleteMigrated(restored); failed != "" && reply == "" {
			reply = failed
		}
	}
	if reply != "" {
		c.out.Error(reply)
		return
	}
	c.out.OK()
}

// parseMigration reads MIGRATE's arguments, or returns the error reply
// for them, checked in Redis's order.
func parseMigration(args [][]byte) (migration, string) {
	m := migration{keys: args[3:4]}
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch strings.ToLower(string(args[j])) {
		case "copy":
			m.copy = true
		case "replace":
			m.replace = true
		case "auth":
			if more < 1 {
				return m, proto.ErrSyntax
			}
			j++
			m.password = args[j]
		case "auth2":
			if more < 2 {
				return m, proto.ErrSyntax
			}
			m.user, m.password = args[j+1], args[j+2]
			j += 2
		case "keys":
			if len(args[3]) != 0 {
				return m, errMigrateKeys
			}
			m.keys = args[j+1:]
			j = len(args)
		default:
			return m, proto.ErrSyntax
		}
	}
	timeout, ok := proto.ParseInt(args[5])
	if !ok {
		return m, proto.ErrNotInteger
	}
	if m.db, ok = proto.ParseInt(args[4]); !ok {
		return m, proto.ErrNotInteger
	}
	if timeout <= 0 {
		timeout = 1000
	}
	m.timeout = time.Duration(min(timeout, int64(time.Duration(1<<62)/time.Millisecond))) * time.Millisecond
	m.addr = net.JoinHostPort(string(args[1]), strconv.FormatInt(atoi(args[2]), 10))
	m.target = string(args[1]) + ":" + string(args[2])
	return m, ""
}

// atoi reads a port as C's atoi does: an optional sign and the digits
// that follow, 0 when there are none.
func atoi(b []byte) int64 {
	s := strings.TrimLeft(string(b), " \t\n\v\f\r")
	end := 0
	if end < len(s) && (s[end] == '-' || s[end] == '+') {
		end++
	}
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	n, _ := strconv.ParseInt(s[:end], 10, 32)
	return n
}

// send sends keys to the target, on the connection the cache keeps to it
// or a new one, and returns those it restored and the error reply, if
// any. As Redis does, it tries again once on a new connection after a
// socket error that was no timeout and came before the target answered
// any key: a cached connection the target has closed since meets one.
func (m *migration) send(cache *migrateSockets, keys []store.Migrated) ([]store.Migrated, string) {
	restored, reply, retry := m.attempt(cache, keys)
	if retry {
		restored, reply, _ = m.attempt(cache, keys)
	}
	return restored, reply
}

// attempt is one try of send; retry reports a failure send may try again.
// A connection that failed is closed; one that did not goes back to the
// cache, remembering the database selected if the target refused no key.
func (m *migration) attempt(cache *migrateSockets, keys []store.Migrated) (restored []store.Migrated, reply string, retry bool) {
	mc := cache.take(m.target)
	if mc == nil {
		conn, err := net.DialTimeout("tcp", m.addr, m.timeout)
		var dnsErr *net.DNSError
		var addrErr *net.AddrError
		switch {
		case errors.As(err, &dnsErr) || errors.As(err, &addrErr):
			return nil, errMigrateConnect, false
		case err != nil:
			// Redis connects without waiting and learns of a refused or
			// timed-out connection as it writes.
			return nil, errMigrateWrite, !isTimeout(err)
		}
		mc = &migrateConn{conn: conn, r: bufio.NewReader(conn), lastDB: -1}
	}
	failed := func(reply string, err error) ([]store.Migrated, string, bool) {
		mc.close()
		return nil, reply, !isTimeout(err)
	}
	sel := mc.lastDB != m.db
	mc.conn.SetWriteDeadline(time.Now().Add(m.timeout))
	if _, err := mc.conn.Write(m.request(keys, sel)); err != nil {
		return failed(errMigrateWrite, err)
	}
	line := func() (string, error) {
		mc.conn.SetReadDeadline(time.Now().Add(m.timeout))
		s, err := mc.r.ReadString('\n')
		return strings.TrimRight(s, "\r\n"), err
	}
	var auth, selected string
	var err error
	if m.password != nil {
		if auth, err = line(); err != nil {
			return failed(errMigrateRead, err)
		}
	}
	if sel {
		if selected, err = line(); err != nil {
			return failed(errMigrateRead, err)
		}
	}
	for i, k := range keys {
		got, err := line()
		if err != nil {
			mc.close()
			if reply == "" {
				return restored, errMigrateRead, i == 0 && !isTimeout(err)
			}
			return restored, reply, false
		}
		switch refusal := firstRefusal(auth, selected, got); {
		case refusal == "":
			restored = append(restored, k)
		case reply == "":
			reply = errMigrateTarget + refusal[1:]
		}
	}
	mc.lastDB = m.db
	if reply != "" {
		mc.lastDB = -1
	}
	cache.put(m.target, mc, time.Now())
	return restored, reply, false
}

// firstRefusal returns the first error line among replies.
func firstRefusal(replies ...string) string {
	for _, r := range replies {
		if strings.HasPrefix(r, "-") {
			return r
		}
	}
	return ""
}

// request is what MIGRATE sends: AUTH when asked, SELECT unless sel is
// false, and a RESTORE (or RESTORE-ASKING) of each key.
func (m *migration) request(keys []store.Migrated, sel bool) []byte {
	var w proto.Writer
	if m.password != nil {
		if m.user != nil {
			w.Array(3)
			w.BulkString("AUTH")
			w.Bulk(m.user)
		} else {
			w.Array(2)
			w.BulkString("AUTH")
		}
		w.Bulk(m.password)
	}
	if sel {
		w.Array(2)
		w.BulkString("SELECT")
		w.BulkInt(m.db)
	}
	for _, k := range keys {
		n := 4
		if m.replace {
			n++
		}
		w.Array(n)
		if m.asking {
			w.BulkString("RESTORE-ASKING")
		} else {
			w.BulkString("RESTORE")
		}
		w.Bulk(k.Key)
		w.BulkInt(k.TTL)
		w.Bulk(k.Payload)
		if m.replace {
			w.BulkString("REPLACE")
		}
	}
	return w.B
}

// deleteMigrated deletes the keys a target restored, in one log entry
// that a WATCHCHECK of their versions guards, and returns the error
// reply when they were not deleted.
func (c *client) deleteMigrated(keys []store.Migrated) string {
	watched := make([]store.Watched, len(keys))
	del := [][]byte{[]byte("DEL")}
	for i, k := range keys {
		watched[i] = k.Watched
		del = append(del, k.Key)
	}
	batch := []store.Command{store.WatchCheck(1, watched), {DB: c.db, Args: del, Spec: delSpec}}
	replies, saved := c.newReplies(), c.out
	c.out = replies
	err := c.runStore(batch, true, time.Now())
	replies, c.out = c.out, saved
	switch {
	case err != nil:
		return replyError(err)
	case !store.WatchPassed(replies.Reply(0)):
		return errMigrateChanged
	}
	return ""
}

// delSpec is DEL's entry of the command table.
var delSpec = proto.Lookup([]byte("del"))
