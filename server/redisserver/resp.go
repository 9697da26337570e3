package redisserver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// ErrMalformed is returned by ReadReply for bytes that are not a
// well-formed RESP2 reply.
var ErrMalformed = errors.New("redisserver: malformed reply")

// AppendCommand appends args to dst as a RESP array of bulk strings, the
// form in which clients send commands, and returns the extended slice.
func AppendCommand[S ~string | ~[]byte](dst []byte, args ...S) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(args)), 10)
	dst = append(dst, "\r\n"...)
	for _, a := range args {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(a)), 10)
		dst = append(dst, "\r\n"...)
		dst = append(dst, a...)
		dst = append(dst, "\r\n"...)
	}
	return dst
}

// ReadReply reads exactly one RESP2 or RESP3 reply from r (a simple
// string, a non-empty error, an integer, a bulk string or an array, nested
// arrays and null bulk strings and arrays included, and RESP3's null,
// double, boolean, big number, blob error, verbatim string, map, set,
// push and attribute, the last with the reply it comes with) and returns
// its raw bytes. On an error it returns the bytes read so far; malformed
// input gives an error that wraps ErrMalformed.
func ReadReply(r *bufio.Reader) ([]byte, error) {
	return appendReply(nil, r)
}

// appendReply appends the raw bytes of one reply from r to b.
func appendReply(b []byte, r *bufio.Reader) ([]byte, error) {
	start := len(b)
	b, err := appendLine(b, r)
	if err != nil {
		return b, err
	}
	line := b[start:]
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return b, fmt.Errorf("%w: line %q", ErrMalformed, line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+', ',', '(', '#':
		return b, nil
	case '_':
		if len(body) != 0 {
			return b, fmt.Errorf("%w: null %q", ErrMalformed, line)
		}
		return b, nil
	case '-':
		if len(body) == 0 {
			return b, fmt.Errorf("%w: empty error", ErrMalformed)
		}
		return b, nil
	case ':':
		if _, err := strconv.ParseInt(string(body), 10, 64); err != nil {
			return b, fmt.Errorf("%w: integer %q", ErrMalformed, line)
		}
		return b, nil
	case '$', '*', '=', '!', '%', '~', '>', '|':
	default:
		return b, fmt.Errorf("%w: type byte in %q", ErrMalformed, line)
	}
	n, err := strconv.Atoi(string(body))
	if err != nil || n < -1 {
		return b, fmt.Errorf("%w: length in %q", ErrMalformed, line)
	}
	switch line[0] {
	case '$', '=', '!':
		return appendBulkBody(b, r, n)
	case '%':
		n *= 2
	case '|':
		n = 2*n + 1 // the attribute's pairs, then its reply
	}
	for range n {
		if b, err = appendReply(b, r); err != nil {
			return b, err
		}
	}
	return b, nil
}

// appendLine appends the bytes of r up to and including the next '\n',
// however long the line is.
func appendLine(b []byte, r *bufio.Reader) ([]byte, error) {
	for {
		chunk, err := r.ReadSlice('\n')
		b = append(b, chunk...)
		if err != bufio.ErrBufferFull {
			return b, err
		}
	}
}

// appendBulkBody appends the n bytes of a bulk string and the CRLF after
// them; n == -1 is a null bulk string, which has no body. The buffer grows
// with the bytes that arrive, not with what the length claims.
func appendBulkBody(b []byte, r *bufio.Reader, n int) ([]byte, error) {
	if n < 0 {
		return b, nil
	}
	w := bytes.NewBuffer(b)
	_, err := io.CopyN(w, r, int64(n))
	if err == nil {
		_, err = io.CopyN(w, r, 2)
	}
	b = w.Bytes()
	if err == nil && !bytes.HasSuffix(b, []byte("\r\n")) {
		err = fmt.Errorf("%w: bulk of %d bytes not followed by CRLF", ErrMalformed, n)
	}
	return b, err
}

// IOTimeout bounds each read and write of a Conn made by Dial, so that a
// server that stops answering fails the caller instead of hanging it. It
// is a bound for a broken exchange, not a wait.
const IOTimeout = 10 * time.Second

// Conn is a client connection that speaks raw RESP: it sends commands or
// arbitrary bytes and returns replies as the bytes the server sent, so
// that callers can compare them exactly. Every Read, Write, ReadReply and
// Do must finish within IOTimeout, or the bound SetTimeout set. A Conn is
// not safe for concurrent use.
type Conn struct {
	nc      net.Conn
	r       *bufio.Reader
	buf     []byte // the command Do encodes, reused
	timeout time.Duration
}

// Dial connects to the RESP server at the TCP address addr.
func Dial(addr string) (*Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, IOTimeout)
	if err != nil {
		return nil, err
	}
	return newConn(nc, IOTimeout), nil
}

// DialUnix connects to the RESP server at the unix socket path.
func DialUnix(path string) (*Conn, error) {
	nc, err := net.DialTimeout("unix", path, IOTimeout)
	if err != nil {
		return nil, err
	}
	return newConn(nc, IOTimeout), nil
}

func newConn(nc net.Conn, timeout time.Duration) *Conn {
	return &Conn{nc: nc, r: bufio.NewReader(nc), timeout: timeout}
}

// SetTimeout makes d the bound of each later Read, Write, ReadReply and
// Do, for a caller that runs commands known to be slow (IOTimeout is the
// bound until then).
func (c *Conn) SetTimeout(d time.Duration) { c.timeout = d }

// NetConn returns the underlying network connection, for its addresses.
// Reading from it directly skips bytes that Conn has buffered.
func (c *Conn) NetConn() net.Conn { return c.nc }

// Write sends b as it is: a pipeline, an inline command or bytes that are
// not RESP at all.
func (c *Conn) Write(b []byte) (int, error) {
	if err := c.nc.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	return c.nc.Write(b)
}

// Read reads raw bytes of the server's replies, after those ReadReply
// has consumed; io.ReadAll(c) reads everything up to the server's close.
func (c *Conn) Read(p []byte) (int, error) {
	if err := c.nc.SetReadDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// ReadReply reads the raw bytes of the next reply (see the function
// ReadReply).
func (c *Conn) ReadReply() ([]byte, error) {
	if err := c.nc.SetReadDeadline(time.Now().Add(c.timeout)); err != nil {
		return nil, err
	}
	return ReadReply(c.r)
}

// Do sends args as one command and returns the raw bytes of its reply.
// An error reply is a reply like any other, not an error.
func (c *Conn) Do(args ...[]byte) ([]byte, error) {
	return c.roundTrip(AppendCommand(c.buf[:0], args...))
}

// expect runs the command args and fails unless the reply is want.
func (c *Conn) expect(want string, args ...string) error {
	got, err := c.roundTrip(AppendCommand(c.buf[:0], args...))
	if err == nil && string(got) != want {
		err = fmt.Errorf("%s replied %q, want %q", args[0], got, want)
	}
	return err
}

// roundTrip sends the encoded command cmd, keeping its buffer for the
// next one, and reads its reply.
func (c *Conn) roundTrip(cmd []byte) ([]byte, error) {
	c.buf = cmd
	if _, err := c.Write(cmd); err != nil {
		return nil, err
	}
	return c.ReadReply()
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }
