package server

import (
	"strings"
	"testing"
)

// The replies below are redis-server 7.0.15's, started with
// --requirepass, for the same requests.

const (
	testPassword = "s3cret"
	noAuth       = "-NOAUTH Authentication required.\r\n"
	wrongPass    = "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
)

func TestAuthRequired(t *testing.T) {
	srv := startServer(t, withPassword(testPassword))
	c := dial(t, srv.Addr())
	for _, args := range [][]string{
		{"GET", "k"}, {"SET", "k", "v"}, {"SETBIT", "k", "1", "1"}, {"PING"}, {"ECHO", "x"}, {"SELECT", "1"},
		{"MULTI"}, {"DISCARD"}, {"CLIENT", "SETNAME", "x"}, {"CONFIG", "GET", "*"}, {"INFO"}, {"COMMAND"}, {"FLUSHALL"},
	} {
		c.expect(noAuth, args...)
	}
	// Redis checks that the command exists and its arity before
	// authentication.
	c.expect("-ERR unknown command 'foo', with args beginning with: 'bar' \r\n", "foo", "bar")
	c.expect("-ERR wrong number of arguments for 'get' command\r\n", "GET")
	// A refused EXEC reports why in an EXECABORT.
	c.expect("-EXECABORT Transaction discarded because of: NOAUTH Authentication required.\r\n", "EXEC")
	c.expect("-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n",
		"HELLO", "2")
	c.expect("-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n",
		"HELLO", "2", "SETNAME", "x")
	c.expect("+RESET\r\n", "RESET")
	c.expect(noAuth, "GET", "k")

	c.expect(wrongPass, "AUTH", "wrong")
	c.expect(wrongPass, "AUTH", "other", testPassword)
	c.expect(wrongPass, "AUTH", "default", "wrong")
	c.expect("-ERR syntax error\r\n", "AUTH", "a", "b", "c")
	c.expect(noAuth, "GET", "k")
	c.expect("+OK\r\n", "AUTH", testPassword)
	c.expect("$-1\r\n", "GET", "k")
	c.expect("+OK\r\n", "SET", "k", "v")

	// RESET forgets the authentication.
	c.expect("+RESET\r\n", "RESET")
	c.expect(noAuth, "GET", "k")
	c.expect("+OK\r\n", "AUTH", "default", testPassword)
	c.expect("$1\r\nv\r\n", "GET", "k")
	// A failed AUTH does not undo an earlier one.
	c.expect(wrongPass, "AUTH", "wrong")
	c.expect("$1\r\nv\r\n", "GET", "k")

	q := dial(t, srv.Addr())
	q.expect("+OK\r\n", "QUIT")
	q.expectClosed()
}

func TestHelloAuth(t *testing.T) {
	srv := startServer(t, withPassword(testPassword))
	c := dial(t, srv.Addr())
	authed := c.do("HELLO", "2", "AUTH", "default", testPassword)
	id := intBody(t, c.do("CLIENT", "ID"))
	if authed != helloReply(id) {
		t.Errorf("HELLO 2 AUTH default pass: got %q, want %q", authed, helloReply(id))
	}
	c.expect(helloReply(id), "HELLO", "2")
	c.expect("$1\r\n1\r\n", "ECHO", "1")

	d := dial(t, srv.Addr())
	d.expect(wrongPass, "HELLO", "2", "AUTH", "default", "wrong")
	d.expect(noAuth, "PING")
	d.expect("-ERR Syntax error in HELLO option 'AUTH'\r\n", "HELLO", "2", "AUTH", "default")
	d.expect(noAuth, "PING")
	if got := d.do("HELLO", "2", "AUTH", "default", testPassword, "SETNAME", "named"); !strings.HasPrefix(got, "*14\r\n") {
		t.Errorf("HELLO 2 AUTH default pass SETNAME named: got %q", got)
	}
	d.expect("$5\r\nnamed\r\n", "CLIENT", "GETNAME")
}

func TestUnauthenticatedRequestLimits(t *testing.T) {
	srv := startServer(t, withPassword(testPassword))
	cases := []struct{ in, want string }{
		{"*11\r\n", "-ERR Protocol error: unauthenticated multibulk length\r\n"},
		{"*10\r\n$16385\r\n", "-ERR Protocol error: unauthenticated bulk length\r\n"},
	}
	for _, tc := range cases {
		c := dial(t, srv.Addr())
		c.send([]byte(tc.in))
		if got := c.reply(); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
		c.expectClosed()
	}
	// At the limits, and once authenticated, the requests are served.
	c := dial(t, srv.Addr())
	c.expect(noAuth, "ECHO", strings.Repeat("x", 16384))
	c.expect(noAuth, "DEL", "1", "2", "3", "4", "5", "6", "7", "8", "9")
	c.expect("+OK\r\n", "AUTH", testPassword)
	c.expect(":0\r\n", "DEL", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11")
	c.expect(bulk(strings.Repeat("x", 16385)), "ECHO", strings.Repeat("x", 16385))
}

func TestAuthWithoutPassword(t *testing.T) {
	c := dial(t, startServer(t).Addr())
	c.expect("-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n",
		"AUTH", "x")
	// The default user has no password: any password is accepted for it.
	c.expect("+OK\r\n", "AUTH", "default", "anything")
	c.expect(wrongPass, "AUTH", "other", "anything")
}

func TestRequirePassSetAtRuntime(t *testing.T) {
	srv := startServer(t)
	admin := dial(t, srv.Addr())
	admin.expect("+OK\r\n", "CONFIG", "SET", "requirepass", testPassword)
	// The connection that set it stays authenticated; new ones are not.
	admin.expect("+PONG\r\n", "PING")
	c := dial(t, srv.Addr())
	c.expect(noAuth, "PING")
	c.expect("+OK\r\n", "AUTH", testPassword)
	c.expect("+PONG\r\n", "PING")
}
