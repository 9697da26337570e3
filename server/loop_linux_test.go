//go:build linux

package server

import (
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/presenced/presenced/server/redisserver"
)

// loopConns returns how many connections the server's event loops serve.
func loopConns(s *Server) int {
	n := 0
	for _, l := range s.loops {
		l.mu.Lock()
		n += len(l.conns)
		l.mu.Unlock()
	}
	return n
}

// TestLoopHandsOff checks that a standalone server serves connections
// from its event loops, and hands one to a goroutine of its own before a
// command that needs one, answering the requests before and after it in
// order.
func TestLoopHandsOff(t *testing.T) {
	s := startServer(t)
	a, b := dial(t, s.Addr()), dial(t, s.Addr())
	a.expect("+PONG\r\n", "PING")
	b.expect("+PONG\r\n", "PING")
	if n := loopConns(s); n != 2 {
		t.Fatalf("%d connections served by loops, want 2", n)
	}
	// One write: a write before the hand-off, INFO, a read after it.
	var req []byte
	req = redisserver.AppendCommand(req, "SET", "k", "v")
	req = redisserver.AppendCommand(req, "INFO", "server")
	req = redisserver.AppendCommand(req, "GET", "k")
	a.send(req)
	if got := a.reply(); got != "+OK\r\n" {
		t.Fatalf("SET: got %q", got)
	}
	if got := a.reply(); !strings.Contains(got, "redis_version") {
		t.Fatalf("INFO server: got %q", got)
	}
	if got := a.reply(); got != bulk("v") {
		t.Fatalf("GET after the hand-off: got %q", got)
	}
	if n := loopConns(s); n != 1 {
		t.Fatalf("%d connections served by loops after INFO, want 1", n)
	}
	a.expect(bulk("v"), "GET", "k")
	b.expect(bulk("v"), "GET", "k")
}

// TestLoopHandsOffAtOnce checks connections that need a goroutine from
// their first request, sent as soon as they connect: the loop may hand
// one over before the server has finished taking it in.
func TestLoopHandsOffAtOnce(t *testing.T) {
	s := startServer(t)
	for i := range 200 {
		c := dial(t, s.Addr())
		c.send(redisserver.AppendCommand(nil, "INFO", "server"))
		if got := c.reply(); !strings.Contains(got, "redis_version") {
			t.Fatalf("connection %d: INFO server = %q", i, got)
		}
		c.expect("+PONG\r\n", "PING")
		c.conn.Close()
	}
}

// TestLoopStalledReader checks that a client that does not read its
// replies holds up no other connection: the loop hands it, with the
// replies the socket did not take, to a goroutine of its own, and the
// client gets every reply once it reads.
func TestLoopStalledReader(t *testing.T) {
	s := startServer(t)
	stalled := dial(t, s.Addr())
	// A small receive buffer, so that the replies overflow the sockets'
	// buffers (the server's send buffer grows to 4 MB at most) without
	// so many bytes that the race detector's work on them makes the
	// other connections' replies time out on a loaded machine.
	if err := stalled.conn.NetConn().(*net.TCPConn).SetReadBuffer(16 << 10); err != nil {
		t.Fatal(err)
	}
	value := strings.Repeat("x", 1<<20)
	stalled.expect("+OK\r\n", "SET", "big", value)
	const gets = 12 // three times what the buffers hold
	var req []byte
	for range gets {
		req = redisserver.AppendCommand(req, "GET", "big")
	}
	stalled.send(req)
	// Enough connections that every loop serves some of them.
	for i := range 4 * runtime.GOMAXPROCS(0) {
		c := dial(t, s.Addr())
		c.expect(":"+strconv.Itoa(i+1)+"\r\n", "INCR", "n")
	}
	for i := range gets {
		if got := stalled.reply(); got != bulk(value) {
			t.Fatalf("GET %d: got %d bytes, want the value", i, len(got))
		}
	}
	stalled.expect("+PONG\r\n", "PING")
}

// TestLoopMergedWrites checks that the writes a loop commits for many
// connections as one batch answer each connection with its own replies:
// every client increments a counter of its own (whose value it knows),
// sets a bit it set before (a write that changes nothing), and increments
// a shared counter, at pipeline 1 and in pipelines that mix reads with
// the writes.
func TestLoopMergedWrites(t *testing.T) {
	s := startServer(t)
	const clients, rounds = 24, 60
	shared := make([][]int, clients)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		c := dial(t, s.Addr())
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- mergedClient(c, i, rounds, &shared[i])
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	seen := make(map[int]bool)
	for i, got := range shared {
		for j, v := range got {
			if j > 0 && v <= got[j-1] {
				t.Fatalf("client %d: shared counter went from %d to %d", i, got[j-1], v)
			}
			if seen[v] {
				t.Fatalf("shared counter value %d answered twice", v)
			}
			seen[v] = true
		}
	}
	if len(seen) != clients*rounds {
		t.Fatalf("%d shared counter values, want %d", len(seen), clients*rounds)
	}
	if n := loopConns(s); n != clients {
		t.Fatalf("%d connections served by loops, want %d", n, clients)
	}
}

// TestLoopSplitsLargePass checks the writes of a pass that holds more
// input than one batch may (maxPassWrite): committed as several batches,
// each connection still gets its own replies. Every connection sends its
// writes before any is answered, so that the loop finds them all in one
// pass: a SET of a large value of its own and an INCRBY by its own step.
func TestLoopSplitsLargePass(t *testing.T) {
	s := startServer(t)
	const conns, rounds = 12, 4
	size := maxPassWrite / 5 // a pass of every connection holds twice the bound
	cs := make([]*respConn, conns)
	values := make([]string, conns)
	for i := range cs {
		cs[i] = dial(t, s.Addr())
		values[i] = strings.Repeat(string(rune('a'+i)), size)
	}
	for round := 1; round <= rounds; round++ {
		for i, c := range cs {
			var req []byte
			req = redisserver.AppendCommand(req, "SET", "big:"+strconv.Itoa(i), values[i])
			req = redisserver.AppendCommand(req, "INCRBY", "n:"+strconv.Itoa(i), strconv.Itoa(i+1))
			c.send(req)
		}
		for i, c := range cs {
			if got := c.reply(); got != "+OK\r\n" {
				t.Fatalf("round %d, connection %d: SET = %.40q", round, i, got)
			}
			if got, want := c.reply(), ":"+strconv.Itoa(round*(i+1))+"\r\n"; got != want {
				t.Fatalf("round %d, connection %d: INCRBY = %q, want %q", round, i, got, want)
			}
		}
	}
	for i, c := range cs {
		if got := c.do("GET", "big:"+strconv.Itoa(i)); got != bulk(values[i]) {
			t.Fatalf("connection %d: GET of its value: %d bytes, not its own", i, len(got))
		}
	}
}

// mergedClient runs one client of TestLoopMergedWrites, appending the
// shared counter's values it was answered to shared. It reports what went
// wrong rather than failing the test: it runs on a goroutine of its own.
func mergedClient(c *respConn, i, rounds int, shared *[]int) error {
	own, bit := "own:"+strconv.Itoa(i), strconv.Itoa(i)
	for j := 1; j <= rounds; j++ {
		var cmds [][]string
		var want []string
		if j%3 == 0 {
			cmds = [][]string{{"INCR", own}, {"GET", own}, {"INCR", "shared"}, {"GETBIT", "bits", bit}}
			want = []string{":" + strconv.Itoa(j) + "\r\n", bulk(strconv.Itoa(j)), "", ":1\r\n"}
		} else {
			cmds = [][]string{{"INCR", own}, {"SETBIT", "bits", bit, "1"}, {"INCR", "shared"}}
			want = []string{":" + strconv.Itoa(j) + "\r\n", ":" + strconv.Itoa(min(j-1, 1)) + "\r\n", ""}
		}
		replies, err := pipeline(c.conn, cmds)
		if err != nil {
			return fmt.Errorf("client %d round %d: %v", i, j, err)
		}
		for k, w := range want {
			if w == "" { // INCR shared
				v, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(replies[k], ":"), "\r\n"))
				if err != nil {
					return fmt.Errorf("client %d round %d: INCR shared = %q", i, j, replies[k])
				}
				*shared = append(*shared, v)
			} else if replies[k] != w {
				return fmt.Errorf("client %d round %d: reply %d = %q, want %q", i, j, k, replies[k], w)
			}
		}
	}
	return nil
}

// pipeline sends cmds in one write and returns their replies.
func pipeline(conn *redisserver.Conn, cmds [][]string) ([]string, error) {
	var req []byte
	for _, cmd := range cmds {
		req = redisserver.AppendCommand(req, cmd...)
	}
	if _, err := conn.Write(req); err != nil {
		return nil, err
	}
	replies := make([]string, len(cmds))
	for k := range replies {
		b, err := conn.ReadReply()
		if err != nil {
			return nil, err
		}
		replies[k] = string(b)
	}
	return replies, nil
}

// TestLoopClose checks that closing a server ends the connections its
// loops serve.
func TestLoopClose(t *testing.T) {
	s := startServer(t)
	var conns []*respConn
	for range 3 {
		c := dial(t, s.Addr())
		c.expect("+PONG\r\n", "PING")
		conns = append(conns, c)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range conns {
		c.expectClosed()
	}
	if n := loopConns(s); n != 0 {
		t.Fatalf("%d connections left in the loops", n)
	}
}

// TestClusterServesFromGoroutines checks that a node with replicas serves
// each connection from a goroutine of its own (see serveFromLoop).
func TestClusterServesFromGoroutines(t *testing.T) {
	srvs := startCluster(t, 3)
	for _, s := range srvs {
		dial(t, s.Addr()).expect("+PONG\r\n", "PING")
		if n := loopConns(s); n != 0 {
			t.Fatalf("%s: %d connections served by loops", s.Node().Config().NodeID, n)
		}
	}
}
