package main

import (
	"fmt"
	"net"
	"time"

	"github.com/presenced/presenced/server/redisserver"
)

// client is a plain request/reply connection for set-up and checks (PING,
// INFO, MEMORY PURGE, BITCOUNT), not for load.
type client struct {
	conn net.Conn
	rd   *respReader
	wbuf []byte
}

// dial connects to addr; every request then must finish within timeout.
func dial(addr string, timeout time.Duration) (*client, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return &client{conn: conn, rd: newRespReader(conn, 16<<10)}, nil
}

// do sends one command and returns its reply (see respReader.read).
func (c *client) do(timeout time.Duration, args ...string) (any, error) {
	if err := c.conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	c.wbuf = redisserver.AppendCommand(c.wbuf[:0], args...)
	if _, err := c.conn.Write(c.wbuf); err != nil {
		return nil, err
	}
	return c.rd.read()
}

// doInt sends one command that must reply with an integer.
func (c *client) doInt(timeout time.Duration, args ...string) (int64, error) {
	v, err := c.do(timeout, args...)
	if err != nil {
		return 0, err
	}
	n, ok := v.(int64)
	if !ok {
		return 0, fmt.Errorf("%s: reply %v is not an integer", args[0], v)
	}
	return n, nil
}

func (c *client) close() error { return c.conn.Close() }
