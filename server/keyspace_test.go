package server

import (
	"fmt"
	"testing"

	"github.com/presenced/presenced/server/redisserver"
)

// keyspaceScript exercises every write command's keyspace events, those
// that change nothing (and so publish none) included.
var keyspaceScript = [][]string{
	{"SET", "k", "v"}, {"SET", "k", "v2", "EX", "100"}, {"SET", "k", "v3", "KEEPTTL"}, {"SETEX", "s", "10", "x"},
	{"PSETEX", "p", "10000", "x"}, {"SETNX", "k", "z"}, {"SETNX", "n1", "z"}, {"SET", "k", "w", "NX"}, {"SET", "nx", "w", "XX"},
	{"GETSET", "k", "v4"}, {"MSET", "a", "1", "b", "2"}, {"MSETNX", "a", "1", "c", "3"}, {"MSETNX", "c", "3", "d", "4"},
	{"APPEND", "k", "x"}, {"APPEND", "newapp", "x"}, {"SETRANGE", "k", "1", "yy"}, {"SETRANGE", "k", "1", ""},
	{"SETRANGE", "sr", "2", "ab"}, {"INCR", "cnt"}, {"INCRBY", "cnt", "5"}, {"DECR", "cnt"}, {"DECRBY", "cnt", "2"}, {"INCR", "k"},
	{"INCRBYFLOAT", "cnt", "1.5"}, {"INCRBYFLOAT", "fl", "-2e3"}, {"INCRBYFLOAT", "k", "1"}, {"INCRBYFLOAT", "cnt", "inf"},
	{"SETBIT", "bm", "7", "1"}, {"SETBIT", "bm", "7", "1"}, {"SETBIT", "bm", "100", "0"}, {"SETBIT", "bm", "3", "0"},
	{"SETBIT", "bm", "9", "1"}, {"SETBIT", "bm", "9", "1"}, {"SETBIT", "bm", "300", "1"},
	{"BITFIELD", "bf", "SET", "u8", "0", "255"}, {"BITFIELD", "bf", "GET", "u8", "0"}, {"BITFIELD", "bf", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "1"},
	{"BITOP", "OR", "dest", "bm", "bf"}, {"BITOP", "AND", "dest", "nokey"}, {"BITOP", "AND", "nokey2", "nokey"},
	{"EXPIRE", "k", "100"}, {"EXPIRE", "k", "100", "NX"}, {"PEXPIRE", "a", "0"}, {"EXPIRE", "nokey", "5"},
	{"PERSIST", "k"}, {"PERSIST", "k"}, {"GETEX", "s", "PERSIST"}, {"GETEX", "p", "EX", "50"}, {"GETEX", "b", "PXAT", "1"}, {"GETEX", "k"},
	{"GETDEL", "c"}, {"GETDEL", "nokey"}, {"DEL", "d", "nokey", "newapp"}, {"UNLINK", "sr"},
	{"RENAME", "k", "k2"}, {"RENAME", "k2", "n1"}, {"RENAMENX", "n1", "s"}, {"RENAME", "n1", "n1"},
	{"COPY", "n1", "cp"}, {"COPY", "n1", "cp"}, {"COPY", "n1", "cp", "REPLACE"}, {"COPY", "n1", "cp", "DB", "2"},
	{"MOVE", "cp", "3"}, {"MOVE", "nokey", "3"},
	{"PFADD", "hll", "a", "b"}, {"PFADD", "hll", "a"}, {"PFADD", "hll"}, {"PFADD", "hll2"}, {"PFCOUNT", "hll"},
	{"PFMERGE", "hll3", "hll", "hll2"}, {"PFMERGE", "hll3"}, {"PFADD", "a", "x"},
	{"RESTORE", "r", "0", "\x00\x05hello\n\x00cr\xdfve4 \n"}, {"RESTORE", "r", "0", "\x00\x05hello\n\x00cr\xdfve4 \n", "REPLACE"},
	{"RESTORE", "r", "1", "\x00\x05hello\n\x00cr\xdfve4 \n", "REPLACE", "ABSTTL"},
	{"SELECT", "1"}, {"SET", "other", "1"}, {"DEL", "other"}, {"SELECT", "0"},
	{"MULTI"}, {"SET", "tx", "1"}, {"INCR", "tx"}, {"EXEC"},
}

// TestKeyspaceNotifications subscribes to every keyspace and keyevent
// channel of redis-server and of presenced, runs the same writes on both
// and compares what the subscribers receive, in order.
func TestKeyspaceNotifications(t *testing.T) {
	sameAsRedis(t, "keyspace events", 100, keyspaceEvents)
}

// keyspaceEvents runs keyspaceScript on addr with every class of events
// on, and returns the messages a subscriber to __key*__:* received, as
// "channel message", then checks that a key's expiry is published too.
func keyspaceEvents(t *testing.T, addr string) []string {
	c, sub := subscribedToEvents(t, addr, "KEAn", "__key*__:*")
	for _, cmd := range keyspaceScript {
		c.do(cmd...)
	}
	events := eventsUntilEnd(t, addr, c, sub)

	// A key whose TTL passes is published as expired, whenever the
	// server finds it so.
	c.expect("+OK\r\n", "SET", "short", "v", "PX", "1")
	for intBody(t, c.do("EXISTS", "short")) == 1 {
	}
	for seen := map[string]bool{}; !seen["__keyevent@0__:expired short"]; {
		_, elems, _ := arrayElements([]byte(sub.reply()))
		seen[bulkBody(t, string(elems[2]))+" "+bulkBody(t, string(elems[3]))] = true
	}
	return events
}

// TestKeyspaceNotificationsOnEveryNode writes through the leader and
// reads the events from a follower's subscriber: every node publishes the
// events of the log it applies.
func TestKeyspaceNotificationsOnEveryNode(t *testing.T) {
	_, l, f := leaderAndFollower(t)
	dial(t, f.Addr()).expect("+OK\r\n", "CONFIG", "SET", "notify-keyspace-events", "E$g")
	sub := dial(t, f.Addr())
	sub.expect("*3\r\n$10\r\npsubscribe\r\n$11\r\n__keyevent*\r\n:1\r\n", "PSUBSCRIBE", "__keyevent*")
	w := dial(t, l.Addr())
	w.expect(":0\r\n", "SETBIT", "online", "42", "1")
	w.expect(":1\r\n", "DEL", "online", "nokey")
	for _, want := range []string{"__keyevent@0__:setbit online", "__keyevent@0__:del online"} {
		_, elems, ok := arrayElements([]byte(sub.reply()))
		if !ok || len(elems) != 4 {
			t.Fatalf("not a pmessage: %q", elems)
		}
		if got := bulkBody(t, string(elems[2])) + " " + bulkBody(t, string(elems[3])); got != want {
			t.Errorf("the follower published %q, want %q", got, want)
		}
	}
}

// lookupScript reads and writes keys present and missing, with errors
// before and after the lookups, so that each command's count of keyspace
// hits and misses, and its keymiss events, are compared with Redis's:
// reads count their lookups, writes do not (GETSET and SET ... GET read
// first), and OBJECT and MEMORY USAGE count without an event.
var lookupScript = [][]string{
	{"SET", "a", "1"}, {"GET", "a"}, {"GET", "nokey"}, {"MGET", "a", "nokey", "b", "a"}, {"STRLEN", "nokey"}, {"STRLEN", "a"},
	{"GETRANGE", "nokey", "0", "1"}, {"GETRANGE", "a", "x", "1"}, {"GETBIT", "nokey", "1"}, {"GETBIT", "a", "1"}, {"GETBIT", "a", "x"},
	{"BITCOUNT", "nokey"}, {"BITCOUNT", "a"}, {"BITCOUNT", "nokey", "0", "x"}, {"BITCOUNT", "a", "0", "x"}, {"BITCOUNT", "a", "0", "1", "FOO"},
	{"BITPOS", "nokey", "1"}, {"BITPOS", "a", "0"}, {"BITPOS", "a", "2"}, {"BITPOS", "nokey", "1", "x"},
	{"BITFIELD", "nokey", "GET", "u8", "0"}, {"BITFIELD", "bf", "SET", "u8", "0", "1"}, {"BITFIELD", "bf", "GET", "u8", "0"},
	{"BITFIELD_RO", "nokey", "GET", "u8", "0"}, {"BITFIELD_RO", "bf", "SET", "u8", "0", "1"}, {"BITFIELD", "nokey", "GET", "u8", "x"},
	{"BITOP", "OR", "dest", "a", "nokey"}, {"BITOP", "NOT", "dest", "nokey"}, {"BITOP", "FOO", "dest", "a"},
	{"EXISTS", "a", "nokey", "a"}, {"TOUCH", "a", "nokey"}, {"TYPE", "nokey"}, {"TYPE", "a"},
	{"TTL", "nokey"}, {"PTTL", "a"}, {"EXPIRETIME", "nokey"}, {"PEXPIRETIME", "a"},
	{"OBJECT", "ENCODING", "nokey"}, {"OBJECT", "ENCODING", "a"}, {"OBJECT", "REFCOUNT", "a"}, {"OBJECT", "FREQ", "a"},
	{"MEMORY", "USAGE", "nokey"}, {"MEMORY", "USAGE", "a"},
	{"PFADD", "nokey2"}, {"PFADD", "h", "x"}, {"PFCOUNT", "h"}, {"PFCOUNT", "h", "nokey", "a"}, {"PFCOUNT", "nokey", "h"},
	{"PFMERGE", "h", "nokey"}, {"PFMERGE", "hm", "h", "nokey"}, {"PFCOUNT", "nokey"}, {"DEL", "nokey2"},
	{"DUMP", "nokey"}, {"DUMP", "a"}, {"COPY", "nokey", "x"}, {"COPY", "a", "c"}, {"COPY", "a", "c"}, {"MOVE", "nokey", "1"},
	{"RENAME", "nokey", "x"}, {"RENAME", "c", "c2"}, {"GETEX", "nokey"}, {"GETEX", "a", "PERSIST"}, {"GETEX", "a", "FOO"},
	{"GETDEL", "nokey"}, {"GETDEL", "c2"}, {"GETSET", "nokey2", "v"}, {"GETSET", "nokey2", "w"},
	{"SET", "nokey3", "v", "GET"}, {"SET", "a", "2", "GET", "NX"}, {"SET", "a", "3", "XX"}, {"SET", "a", "4", "GET", "EX", "x"},
	{"INCR", "n"}, {"INCRBYFLOAT", "f", "1.5"}, {"APPEND", "n2", "x"}, {"SETRANGE", "n3", "0", "x"}, {"SETBIT", "s", "1", "1"},
	{"SETNX", "a", "v"}, {"MSETNX", "a", "1", "z", "2"}, {"MSET", "m", "1"}, {"DEL", "nokey"}, {"UNLINK", "a", "nokey"},
	{"EXPIRE", "nokey", "10"}, {"PERSIST", "nokey"}, {"LCS", "s", "nokey"}, {"LCS", "s", "nokey", "FOO"},
	{"RESTORE", "r", "0", "\x00\x05hello\n\x00cr\xdfve4 \n"}, {"DBSIZE"}, {"KEYS", "*"}, {"SCAN", "0"}, {"RANDOMKEY"},
	{"MULTI"}, {"GET", "nokey"}, {"GET", "m"}, {"SET", "t", "1", "GET"}, {"EXEC"},
	{"SELECT", "3"}, {"GET", "other"}, {"SELECT", "0"},
}

// TestKeyspaceLookups compares, command by command, the keyspace hits
// and misses INFO counts and the keymiss events published with
// redis-server's, pipelined GETBITs (one run, counted as a lookup each)
// and CONFIG RESETSTAT included.
func TestKeyspaceLookups(t *testing.T) {
	sameAsRedis(t, "lookups", len(lookupScript), keyspaceLookups)
}

// keyspaceLookups runs lookupScript on addr and returns, for each
// command, the hits and misses it added, then the keymiss events a
// subscriber received.
func keyspaceLookups(t *testing.T, addr string) []string {
	c, sub := subscribedToEvents(t, addr, "Km", "__keyspace*")
	counts := func() (hits, misses string) {
		_, f := infoFields(t, c.do("INFO", "stats"))
		return f["keyspace_hits"], f["keyspace_misses"]
	}
	c.expect("+OK\r\n", "CONFIG", "RESETSTAT")
	var out []string
	if h, m := counts(); h != "0" || m != "0" {
		t.Errorf("%s: %s hits and %s misses after CONFIG RESETSTAT", addr, h, m)
	}
	prevHits, prevMisses := "0", "0"
	step := func(what string) {
		h, m := counts()
		out = append(out, fmt.Sprintf("%s: hits %s -> %s, misses %s -> %s", what, prevHits, h, prevMisses, m))
		prevHits, prevMisses = h, m
	}
	inMulti := false // INFO would be queued: the transaction is one step
	for _, cmd := range lookupScript {
		c.do(cmd...)
		switch cmd[0] {
		case "MULTI":
			inMulti = true
		case "EXEC":
			inMulti = false
		}
		if !inMulti {
			step(formatCommand(argv(cmd...)))
		}
	}
	var run []byte
	for _, key := range []string{"nokey", "nokey", "nokey", "s", "s", "s", "s"} {
		run = redisserver.AppendCommand(run, "GETBIT", key, "1")
	}
	c.send(run)
	c.replies(7)
	step("7 pipelined GETBITs")
	return append(out, eventsUntilEnd(t, addr, c, sub)...)
}

// subscribedToEvents sets notify-keyspace-events to flags on addr and
// returns a connection and a subscriber to pattern, and to the channel
// "end" that eventsUntilEnd publishes on.
func subscribedToEvents(t *testing.T, addr, flags, pattern string) (c, sub *respConn) {
	c, sub = dial(t, addr), dial(t, addr)
	c.expect("+OK\r\n", "CONFIG", "SET", "notify-keyspace-events", flags)
	sub.do("PSUBSCRIBE", pattern)
	sub.expect("*3\r\n$9\r\nsubscribe\r\n$3\r\nend\r\n:2\r\n", "SUBSCRIBE", "end")
	return c, sub
}

// eventsUntilEnd publishes on the channel "end", which sub subscribed to
// after its patterns, through c, and returns what sub received before
// that message, as "channel message".
func eventsUntilEnd(t *testing.T, addr string, c, sub *respConn) []string {
	c.expect(":1\r\n", "PUBLISH", "end", "end")
	var events []string
	for {
		_, elems, ok := arrayElements([]byte(sub.reply()))
		if !ok || len(elems) < 3 {
			t.Fatalf("%s: not a message: %q", addr, elems)
		}
		if bulkBody(t, string(elems[0])) == "message" {
			return events
		}
		events = append(events, bulkBody(t, string(elems[2]))+" "+bulkBody(t, string(elems[3])))
	}
}
