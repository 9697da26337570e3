package server

import (
	"bufio"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/presenced/presenced/server/redisserver"
)

// TestClientPauseMatchesRedis runs the same pauses on presenced and on
// redis-server and compares what they hold up: with WRITE, a read goes
// on, a write waits until CLIENT UNPAUSE, after the replies of what its
// client sent before it, and counts as a blocked client; with ALL, a
// read waits until the pause ends.
func TestClientPauseMatchesRedis(t *testing.T) {
	run := func(addr string) []string {
		admin, reader := dial(t, addr), dial(t, addr)
		writer := dialRaw(t, addr)
		var seen []string
		note := func(s string) { seen = append(seen, s) }
		admin.expect("+OK\r\n", "SET", "k", "v")
		admin.expect("+OK\r\n", "CLIENT", "PAUSE", "100000", "WRITE")
		note(reader.do("GET", "k"))
		writer.send(append(redisserver.AppendCommand(nil, "GET", "k"), redisserver.AppendCommand(nil, "SET", "k", "w")...))
		note(writer.reply(time.Minute)) // the GET's, before the pause ends
		if reply := writer.reply(300 * time.Millisecond); reply != "" {
			note("the write was not held: " + reply)
		}
		note(reader.do("GET", "k"))
		blocked := func() string {
			_, fields := infoFields(t, admin.do("INFO", "clients"))
			return "blocked_clients " + fields["blocked_clients"]
		}
		note(blocked())
		admin.expect("+OK\r\n", "CLIENT", "UNPAUSE")
		note(writer.reply(time.Minute))
		note(reader.do("GET", "k"))
		note(blocked())

		admin.expect("+OK\r\n", "CLIENT", "PAUSE", "300")
		begin := time.Now()
		note(reader.do("GET", "k"))
		if waited := time.Since(begin); waited < 200*time.Millisecond {
			note("a read went on during a pause of every command, after " + waited.String())
		}
		return seen
	}
	want := run(redisserver.StartForTest(t, redisserver.Options{}).Addr())
	got := run(startServer(t).Addr())
	if len(got) != len(want) {
		t.Fatalf("presenced: %q\nredis-server: %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d: presenced %q, redis-server %q", i, got[i], want[i])
		}
	}
}

// timedConn is a connection whose reads wait as long as a test says.
type timedConn struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

// dialRaw connects to addr; the connection is closed when the test ends.
func dialRaw(t *testing.T, addr string) *timedConn {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &timedConn{t: t, nc: nc, r: bufio.NewReader(nc)}
}

// send writes b.
func (c *timedConn) send(b []byte) {
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

// reply returns the next reply, or "" if none began within d.
func (c *timedConn) reply(d time.Duration) string {
	c.nc.SetReadDeadline(time.Now().Add(d))
	b, err := redisserver.ReadReply(c.r)
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout() && len(b) == 0:
		return ""
	case err != nil:
		c.t.Fatalf("reading a reply: %v", err)
	}
	return string(b)
}

// TestClientNoEvictFlag checks CLIENT INFO's flags after CLIENT NO-EVICT
// on and off, against redis-server's.
func TestClientNoEvictFlag(t *testing.T) {
	flags := func(addr string) []string {
		c := dial(t, addr)
		var out []string
		for _, mode := range []string{"on", "off"} {
			c.expect("+OK\r\n", "CLIENT", "NO-EVICT", mode)
			out = append(out, clientField(bulkBody(t, c.do("CLIENT", "INFO")), "flags"))
		}
		return out
	}
	got, want := flags(startServer(t).Addr()), flags(redisserver.StartForTest(t, redisserver.Options{}).Addr())
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("flags after NO-EVICT on, off: %q, redis-server %q", got, want)
	}
}
