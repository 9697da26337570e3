package server

import (
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
	c, sub := dial(t, addr), dial(t, addr)
	c.expect("+OK\r\n", "CONFIG", "SET", "notify-keyspace-events", "KEAn")
	sub.expect("*3\r\n$10\r\npsubscribe\r\n$10\r\n__key*__:*\r\n:1\r\n", "PSUBSCRIBE", "__key*__:*")
	sub.send(redisserver.AppendCommand(nil, "SUBSCRIBE", "end"))
	sub.reply()
	for _, cmd := range keyspaceScript {
		c.do(cmd...)
	}
	c.expect(":1\r\n", "PUBLISH", "end", "end")
	var events []string
	for {
		_, elems, ok := arrayElements([]byte(sub.reply()))
		if !ok || len(elems) < 3 {
			t.Fatalf("%s: not a message: %q", addr, elems)
		}
		if bulkBody(t, string(elems[0])) == "message" {
			break
		}
		events = append(events, bulkBody(t, string(elems[2]))+" "+bulkBody(t, string(elems[3])))
	}

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
