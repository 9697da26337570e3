//go:build linux || darwin

package cluster

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"
)

// connAlive reports whether an idle connection is still open at the other
// end, by peeking at it without blocking: a node that shut down closed
// it, and a request sent on it would end in an unknown outcome although
// the node never saw it. An idle peer sends nothing, so any byte or
// error but "would block" means the connection is done.
func connAlive(nc net.Conn) bool {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn() // a peer that closes sends an alert, a byte like any
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := false
	err = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		alive = n < 0 && (errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK))
		return true // never wait for readiness
	})
	return err == nil && alive
}
