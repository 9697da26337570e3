package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// sniffTimeout bounds how long an accepted connection may take to send its
// first byte before it is dropped.
const sniffTimeout = 10 * time.Second

// maxRaftRPCType is the largest first byte of a raft transport connection:
// raft's RPC type codes are small integers, while RESP requests start with
// '*' or a printable inline command.
const maxRaftRPCType = 31

// mux listens on a node's raft address and serves two protocols on it:
// raft's transport, and RESP for other nodes (forwarded writes, read index
// requests, joins). It tells them apart by the first byte a connection
// sends. It implements raft.StreamLayer for the transport; Peers returns
// the listener of RESP connections.
type mux struct {
	ln   net.Listener
	addr net.Addr // the address other nodes dial

	raft  chan net.Conn
	peers *connListener
	sec   *PeerTLS // nil: plain TCP

	closeOnce sync.Once
	closed    chan struct{}
}

// listenMux listens on addr; other nodes reach it at advertise, or at
// the address listened on if advertise is empty, which must then not be
// the unspecified address (every interface). With sec, connections both
// ways are TLS.
func listenMux(addr, advertise string, sec *PeerTLS) (*mux, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if a, ok := ln.Addr().(*net.TCPAddr); ok && advertise == "" && a.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("%s listens on every interface, which other nodes cannot dial: set --raft-advertise to the address they reach this node at", addr)
	}
	m := &mux{ln: ln, addr: ln.Addr(), raft: make(chan net.Conn), closed: make(chan struct{}), sec: sec}
	if sec != nil {
		m.ln = tls.NewListener(ln, sec.Server)
	}
	if advertise != "" {
		a, err := net.ResolveTCPAddr("tcp", advertise)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("advertised address: %w", err)
		}
		m.addr = a
	}
	m.peers = &connListener{conns: make(chan net.Conn), closed: m.closed, addr: m.addr}
	go m.acceptLoop()
	return m, nil
}

func (m *mux) acceptLoop() {
	for {
		nc, err := m.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			m.Close()
			return
		}
		go m.route(nc)
	}
}

// route reads a connection's first byte and hands it to raft or to the
// RESP listener.
func (m *mux) route(nc net.Conn) {
	var first [1]byte
	nc.SetReadDeadline(time.Now().Add(sniffTimeout))
	if _, err := nc.Read(first[:]); err != nil {
		nc.Close()
		return
	}
	nc.SetReadDeadline(time.Time{})
	pc := &peekedConn{Conn: nc, first: first[:]}
	dst := m.peers.conns
	if first[0] <= maxRaftRPCType {
		dst = m.raft
	}
	select {
	case dst <- pc:
	case <-m.closed:
		nc.Close()
	}
}

// Accept implements net.Listener for raft's transport.
func (m *mux) Accept() (net.Conn, error) {
	select {
	case nc := <-m.raft:
		return nc, nil
	case <-m.closed:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener; it closes both protocols' listeners.
func (m *mux) Close() error {
	var err error
	m.closeOnce.Do(func() {
		close(m.closed)
		err = m.ln.Close()
	})
	return err
}

// Addr implements net.Listener: it is the address other nodes dial.
func (m *mux) Addr() net.Addr { return m.addr }

// Dial implements raft.StreamLayer.
func (m *mux) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return dialPeer(ctx, string(addr), m.sec)
}

// dialPeer connects to the raft address of another node, with TLS when
// sec is set: the handshake is done, within ctx, when it returns.
func dialPeer(ctx context.Context, addr string, sec *PeerTLS) (net.Conn, error) {
	if sec == nil {
		return new(net.Dialer).DialContext(ctx, "tcp", addr)
	}
	return (&tls.Dialer{Config: sec.Client}).DialContext(ctx, "tcp", addr)
}

// connListener is a net.Listener of connections accepted elsewhere.
type connListener struct {
	conns  chan net.Conn
	closed chan struct{}
	addr   net.Addr
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case nc := <-l.conns:
		return nc, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close does nothing: the listener closes with the mux that feeds it.
func (l *connListener) Close() error { return nil }

func (l *connListener) Addr() net.Addr { return l.addr }

// peekedConn is a connection whose first bytes were already read.
type peekedConn struct {
	net.Conn
	first []byte
}

func (c *peekedConn) Read(p []byte) (int, error) {
	if len(c.first) > 0 {
		n := copy(p, c.first)
		c.first = c.first[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
