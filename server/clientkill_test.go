package server

import (
	"strconv"
	"strings"
	"testing"

	"github.com/presenced/presenced/server/redisserver"
)

// TestClientKill runs the same connections through CLIENT KILL against
// redis-server, a standalone presenced (whose connections event loops
// serve until one blocks) and a follower of a cluster (a goroutine a
// connection).
func TestClientKill(t *testing.T) {
	t.Run("redis-server", func(t *testing.T) {
		clientKillScenario(t, redisserver.StartForTest(t, redisserver.Options{}).Addr())
	})
	t.Run("standalone", func(t *testing.T) {
		clientKillScenario(t, startServer(t).Addr())
	})
	t.Run("follower", func(t *testing.T) {
		_, _, f := leaderAndFollower(t)
		clientKillScenario(t, f.Addr())
	})
}

func clientKillScenario(t *testing.T, addr string) {
	admin := dial(t, addr)
	id := func(c *respConn) string { return strconv.FormatInt(intBody(t, c.do("CLIENT", "ID")), 10) }
	local := func(c *respConn) string { return c.conn.NetConn().LocalAddr().String() }
	listed := func(id string) bool {
		for _, line := range strings.Split(bulkBody(t, admin.do("CLIENT", "LIST")), "\n") {
			if clientField(line, "id") == id {
				return true
			}
		}
		return false
	}

	// By id: the connection is closed and gone from CLIENT LIST at once.
	byID := dial(t, addr)
	victim := id(byID)
	admin.expect(":1\r\n", "CLIENT", "KILL", "ID", victim)
	byID.expectClosed()
	if listed(victim) {
		t.Errorf("client %s is still listed after CLIENT KILL", victim)
	}
	admin.expect(":0\r\n", "CLIENT", "KILL", "ID", victim)

	// A connection blocked in WAIT, with a write behind it that is never
	// run, and a subscriber, by type.
	waiting := dial(t, addr)
	waitingID := id(waiting)
	waiting.send(redisserver.AppendCommand(redisserver.AppendCommand(nil, "WAIT", "5", "0"), "SET", "behind-wait", "1"))
	admin.expect(":1\r\n", "CLIENT", "KILL", "ID", waitingID)
	waiting.expectClosed()
	admin.expect(":0\r\n", "EXISTS", "behind-wait")
	sub := dial(t, addr)
	sub.expect("*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n", "SUBSCRIBE", "ch")
	admin.expect(":1\r\n", "CLIENT", "KILL", "TYPE", "pubsub")
	sub.expectClosed()

	// By the client's address, in either form, and by the server's; each
	// connection is answered first, so that the server has accepted it.
	byAddr := dial(t, addr)
	byAddr.expect("+PONG\r\n", "PING")
	admin.expect(":1\r\n", "CLIENT", "KILL", "ADDR", local(byAddr), "USER", "default")
	byAddr.expectClosed()
	oldForm := dial(t, addr)
	oldForm.expect("+PONG\r\n", "PING")
	admin.expect("+OK\r\n", "CLIENT", "KILL", local(oldForm))
	oldForm.expectClosed()
	admin.expect("-ERR No such client\r\n", "CLIENT", "KILL", local(oldForm))
	first, second := dial(t, addr), dial(t, addr)
	first.expect("+PONG\r\n", "PING")
	second.expect("+PONG\r\n", "PING")
	admin.expect(":2\r\n", "CLIENT", "KILL", "LADDR", addr)
	first.expectClosed()
	second.expectClosed()
	// No other client of the client port is left (the leader's calls on
	// a follower come in on its raft address).
	admin.expect(":0\r\n", "CLIENT", "KILL", "TYPE", "normal", "LADDR", addr)
	admin.expect("+PONG\r\n", "PING")

	// Itself, answered first; what it sent after is not run.
	self := dial(t, addr)
	self.send(redisserver.AppendCommand(redisserver.AppendCommand(nil, "CLIENT", "KILL", "ID", id(self), "SKIPME", "no"), "SET", "after-kill", "1"))
	if got := self.reply(); got != ":1\r\n" {
		t.Errorf("CLIENT KILL of itself: %q", got)
	}
	self.expectClosed()
	admin.expect(":0\r\n", "EXISTS", "after-kill")
	admin.expect("+OK\r\n", "CLIENT", "KILL", local(admin))
	admin.expectClosed()
}

// TestClientUnblock ends WAITs with CLIENT UNBLOCK, as a timeout and as
// an error, against redis-server and a standalone presenced.
func TestClientUnblock(t *testing.T) {
	for name, addr := range map[string]string{
		"redis-server": redisserver.StartForTest(t, redisserver.Options{}).Addr(),
		"presenced":    startServer(t).Addr(),
	} {
		admin, waiting := dial(t, addr), dial(t, addr)
		id := strconv.FormatInt(intBody(t, waiting.do("CLIENT", "ID")), 10)
		admin.expect(":0\r\n", "CLIENT", "UNBLOCK", id)
		admin.expect("-ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR\r\n", "CLIENT", "UNBLOCK", id, "SOON")
		admin.expect("-ERR value is not an integer or out of range\r\n", "CLIENT", "UNBLOCK", "x")
		for _, tc := range []struct{ reason, reply string }{
			{"", ":0\r\n"}, {"TIMEOUT", ":0\r\n"}, {"error", "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"},
		} {
			waiting.send(redisserver.AppendCommand(nil, "WAIT", "1", "0"))
			unblock := []string{"CLIENT", "UNBLOCK", id}
			if tc.reason != "" {
				unblock = append(unblock, tc.reason)
			}
			// CLIENT LIST flags the connection b once its WAIT blocks.
			for i := 0; clientField(bulkBody(t, admin.do("CLIENT", "LIST", "ID", id)), "flags") != "b"; i++ {
				if i == 10000 {
					t.Fatalf("%s: WAIT 1 0 never shows as blocked: it answered %q", name, waiting.reply())
				}
			}
			admin.expect(":1\r\n", unblock...)
			if got := waiting.reply(); got != tc.reply {
				t.Errorf("%s: WAIT after CLIENT UNBLOCK %s: %q, want %q", name, tc.reason, got, tc.reply)
			}
		}
		waiting.expect("+PONG\r\n", "PING")
	}
}
