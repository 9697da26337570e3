//go:build unix

package server

import (
	"net"
	"syscall"
)

// rawConn returns access to nc's descriptor, or nil when it has none (a
// connection wrapped by another layer).
func rawConn(nc net.Conn) syscall.RawConn {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// serveRaw is serve's loop, run inside one RawConn.Read until the
// connection ends.
//
// The point is the read a request saves. Go's Read resets the descriptor's
// readiness before it reads, so every Read after a request's reply first
// reads nothing (EAGAIN), and only then waits. Inside RawConn.Read the
// readiness is reset once, before the first read: a read that returned
// less than its room left nothing behind that came before it, and whatever
// comes after it makes the descriptor ready again, so the loop waits at
// once and reads only when there is something to read.
//
// While a command runs, this goroutine holds the descriptor's read lock,
// so a Close from another goroutine returns once the command has (the
// descriptor closes then): Server.Close does not wait for it holding its
// lock, and an outbox closes its connection from a goroutine of its own.
func (c *client) serveRaw(rc syscall.RawConn) {
	rc.Read(func(fd uintptr) bool {
		for {
			room := c.readRoom()
			n, err := syscall.Read(int(fd), room)
			switch err {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait until there is more to read
			}
			full, err := c.filled(max(n, 0), len(room), err)
			if err != nil {
				c.endCut()
				return true
			}
			if !c.consume(full) {
				return true
			}
			if !c.batchOpen && !full {
				return false // nothing was left behind: wait
			}
		}
	})
}

// peerClosed reports whether the other end of nc has closed it, by
// peeking at what is there to read without waiting: end of file says so.
// It reports false where nc has no descriptor.
func peerClosed(nc net.Conn) bool {
	rc := rawConn(nc)
	if rc == nil {
		return false
	}
	closed := false
	rc.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = n == 0 && err == nil
	})
	return closed
}
