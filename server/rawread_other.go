//go:build !unix

package server

import (
	"net"
	"syscall"
)

// rawConn returns nil: serve reads with the connection's Read.
func rawConn(net.Conn) syscall.RawConn { return nil }

// serveRaw is never called where rawConn returns nil.
func (c *client) serveRaw(syscall.RawConn) {}

// peerClosed reports false: without a descriptor it cannot peek.
func peerClosed(net.Conn) bool { return false }
