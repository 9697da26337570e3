package server

import (
	"errors"
	"io"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/presenced/presenced/cluster"

	"github.com/presenced/presenced/server/redisserver"
)

// startServer starts presenced on a free loopback port for the length of
// the test, with the default configuration changed by opts, and returns
// it once it accepts connections.
func startServer(tb testing.TB, opts ...func(*Config)) *Server {
	tb.Helper()
	cfg := DefaultConfig()
	cfg.Bind = "127.0.0.1"
	cfg.Port = 0
	cfg.Dir = tb.TempDir()
	cfg.Cluster = testClusterConfig(cfg.Dir)
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { srv.Close() })
	return srv
}

// testClusterConfig configures a one-node cluster for a test server: raft
// on a free loopback port, log and snapshots in memory, quick to elect
// itself.
func testClusterConfig(dir string) cluster.Config {
	c := cluster.DefaultConfig()
	c.NodeID = "test"
	c.RaftAddr = "127.0.0.1:0"
	c.Dir = dir
	c.AppendOnly = false
	c.HeartbeatTimeout = 50 * time.Millisecond
	c.ElectionTimeout = 50 * time.Millisecond
	c.LeaderLeaseTimeout = 50 * time.Millisecond
	c.LogOutput = io.Discard
	return c
}

// withPassword sets requirepass.
func withPassword(pass string) func(*Config) {
	return func(c *Config) { c.RequirePass = pass }
}

// ioTimeout bounds every wait for a reply or a close, so that a server
// that does not answer fails the test instead of hanging it.
const ioTimeout = redisserver.IOTimeout

// respConn is a raw TCP connection to a server under test: it writes
// whatever bytes a test gives it and reads replies as raw RESP.
type respConn struct {
	tb   testing.TB
	conn *redisserver.Conn
}

// dial connects to addr; the connection is closed when the test ends.
func dial(tb testing.TB, addr string) *respConn {
	tb.Helper()
	conn, err := redisserver.Dial(addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	return &respConn{tb: tb, conn: conn}
}

// send writes raw bytes.
func (c *respConn) send(b []byte) {
	c.tb.Helper()
	if _, err := c.conn.Write(b); err != nil {
		c.tb.Fatalf("write: %v", err)
	}
}

// reply reads the raw bytes of one reply.
func (c *respConn) reply() string {
	c.tb.Helper()
	b, err := c.conn.ReadReply()
	if err != nil {
		c.tb.Fatalf("reading a reply (got %q so far): %v", b, err)
	}
	return string(b)
}

// replies reads n replies and returns their raw bytes, concatenated.
func (c *respConn) replies(n int) string {
	c.tb.Helper()
	var all []byte
	for range n {
		all = append(all, c.reply()...)
	}
	return string(all)
}

// do sends one command as a RESP array and returns its reply.
func (c *respConn) do(args ...string) string {
	c.tb.Helper()
	c.send(redisserver.AppendCommand(nil, args...))
	return c.reply()
}

// expect runs a command and fails the test unless the reply is want.
func (c *respConn) expect(want string, args ...string) {
	c.tb.Helper()
	if got := c.do(args...); got != want {
		c.tb.Errorf("%s: got %q, want %q", formatCommand(argv(args...)), got, want)
	}
}

// expectClosed fails the test unless the server closes the connection
// before sending anything more.
func (c *respConn) expectClosed() {
	c.tb.Helper()
	if rest := c.readToClose(); len(rest) > 0 {
		c.tb.Fatalf("read %q before the close, want nothing", rest)
	}
}

// readToClose returns what the server sends until it closes the
// connection, failing the test when it does not.
func (c *respConn) readToClose() []byte {
	c.tb.Helper()
	rest, err := io.ReadAll(c.conn)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		c.tb.Fatalf("connection not closed by the server: %v (read %q)", err, rest)
	}
	return rest
}

// bulk is the RESP encoding of a bulk string.
func bulk(s string) string {
	return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n"
}

// requireTool returns the path of an external program the test needs,
// skipping the test without it unless CI=true (see
// redisserver.RequireProgram).
func requireTool(tb testing.TB, name string) string {
	tb.Helper()
	return redisserver.RequireProgram(tb, name)
}
