//go:build unix

package server

import (
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/presenced/presenced/server/redisserver"
)

// TestEndMidRequest checks, against redis-server, a client that sends
// complete requests and the start of one more, then ends its side of the
// connection: Redis runs and answers the requests it read whole, and then
// closes the connection. The input fills the room of presenced's first
// read exactly, and presenced finds the end of the input behind it at
// once: the batch, which would have gone on with the next read, ends
// there. Both ways of serving a connection are checked, the event loop
// of a standalone node and the goroutine of a node with replicas.
func TestEndMidRequest(t *testing.T) {
	input, keys := cutInput(readChunk)
	want := strings.Repeat("+OK\r\n", keys)
	redis := redisserver.StartForTest(t, redisserver.Options{})
	if got := endedOverTCP(t, redis.Addr(), input); got != want {
		t.Fatalf("redis-server answered %d bytes, want %d replies of +OK", len(got), keys)
	}
	nodes := []struct {
		name string
		srv  *Server
	}{{"standalone", startServer(t)}, {"leader of three", startCluster(t, 3)[0]}}
	for _, node := range nodes {
		name, srv := node.name, node.srv
		if got := endedBeforeRead(t, srv, input); got != want {
			t.Fatalf("%s: answered %q, want %d replies of +OK", name, got, keys)
		}
		c := dial(t, srv.Addr())
		c.expect(":"+strconv.Itoa(keys)+"\r\n", append([]string{"EXISTS"}, cutKeys(keys)...)...)
		c.expect(":0\r\n", "EXISTS", "cut:end")
		c.expect("+OK\r\n", "FLUSHALL")
	}
}

// cutInput returns size bytes of requests: SETs of cut:0, cut:1 and so on,
// then the start of a SET of cut:end. It also returns how many SETs are
// whole.
func cutInput(size int) (string, int) {
	head := "*3\r\n$3\r\nSET\r\n$7\r\ncut:end\r\n$100\r\n"
	var b strings.Builder
	n := 0
	for {
		next := string(redisserver.AppendCommand(nil, "SET", "cut:"+strconv.Itoa(n), "v"))
		if b.Len()+len(next)+len(head) >= size {
			break
		}
		b.WriteString(next)
		n++
	}
	b.WriteString(head)
	b.WriteString(strings.Repeat("x", size-b.Len())) // fewer than the 100 announced
	return b.String(), n
}

// cutKeys returns the keys of cutInput's n whole SETs.
func cutKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "cut:" + strconv.Itoa(i)
	}
	return keys
}

// endedOverTCP sends input to addr, ends the sending side, and returns
// everything the server sends until it closes the connection.
func endedOverTCP(t *testing.T, addr, input string) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, input); err != nil {
		t.Fatal(err)
	}
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	return readAll(t, conn)
}

// endedBeforeRead has srv accept a connection whose input, and its end,
// are all there before the server first reads it, and returns everything
// the server sends until it closes the connection.
func endedBeforeRead(t *testing.T, srv *Server, input string) string {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	server, client := fileConn(t, fds[0]), fileConn(t, fds[1])
	defer client.Close()
	if _, err := io.WriteString(client, input); err != nil {
		t.Fatal(err)
	}
	if err := client.(*net.UnixConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	ln := &handedListener{conns: make(chan net.Conn, 1), done: make(chan struct{})}
	ln.conns <- server
	defer ln.Close()
	go srv.acceptLoop(ln, false)
	return readAll(t, client)
}

// fileConn returns a net.Conn of the socket fd, which it takes over.
func fileConn(t *testing.T, fd int) net.Conn {
	t.Helper()
	f := os.NewFile(uintptr(fd), "socket")
	defer f.Close()
	nc, err := net.FileConn(f)
	if err != nil {
		t.Fatal(err)
	}
	return nc
}

// readAll returns what conn receives until the other side closes it.
func readAll(t *testing.T, conn net.Conn) string {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(ioTimeout))
	b, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("reading to the close (got %q): %v", b, err)
	}
	return string(b)
}

// handedListener is a net.Listener that accepts the connections handed to
// it on conns, until it is closed.
type handedListener struct {
	conns chan net.Conn
	done  chan struct{}
}

// Accept implements net.Listener.
func (l *handedListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener.
func (l *handedListener) Close() error {
	close(l.done)
	return nil
}

// Addr implements net.Listener.
func (l *handedListener) Addr() net.Addr { return &net.UnixAddr{Net: "unix"} }
