//go:build unix

package faulttest

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// proxy forwards the TCP connections it accepts to a target address. A
// node's raft address is advertised as its proxy's address, so every
// connection another node opens to it (raft's transport, forwarded
// writes, read index requests, RAFT INFO) goes through the proxy.
//
// Partitioning a proxy cuts the traffic *to* its node only: connections
// are closed and new ones are refused (the proxy stops listening) until
// it heals. A cut-off follower
// hears nothing from the leader and, after its election timeout, asks
// for votes over its own outgoing connections, which still work; a
// cut-off leader still replicates to the others over its outgoing
// connections, but gets no votes, no forwarded writes and no read index
// requests. The isolated-leader case, where a leader hears from nobody
// and nobody from it, is what SIGSTOP covers.
type proxy struct {
	addr, target string
	wg           sync.WaitGroup

	mu struct {
		sync.Mutex
		ln    net.Listener // nil while cut or down
		cut   bool         // partitioned
		down  bool         // the target is not running
		conns map[net.Conn]struct{}
	}
}

// startProxy listens on addr and forwards to target.
func startProxy(addr, target string) (*proxy, error) {
	p := &proxy{addr: addr, target: target}
	p.mu.conns = make(map[net.Conn]struct{})
	return p, p.update(func() {})
}

func (p *proxy) serve(ln net.Listener) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			continue
		}
		p.wg.Add(1)
		go p.pipe(c)
	}
}

// track registers c so that a partition closes it; during a partition it
// closes c instead and reports false.
func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.cut || p.mu.down {
		c.Close()
		return false
	}
	p.mu.conns[c] = struct{}{}
	return true
}

func (p *proxy) forget(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		c.Close()
		delete(p.mu.conns, c)
	}
}

// pipe connects c to the target and copies both ways until either side
// closes.
func (p *proxy) pipe(c net.Conn) {
	defer p.wg.Done()
	u, err := net.DialTimeout("tcp", p.target, time.Second)
	if err != nil {
		p.forget(c)
		return
	}
	if !p.track(u) {
		p.forget(c)
		return
	}
	done := make(chan struct{})
	go func() {
		io.Copy(u, c)
		p.forget(c, u)
		close(done)
	}()
	io.Copy(c, u)
	p.forget(c, u)
	<-done
}

// partition closes every connection and refuses new ones until heal.
func (p *proxy) partition() { p.update(func() { p.mu.cut = true }) }

// heal lets connections through again, unless the target is down.
func (p *proxy) heal() error { return p.update(func() { p.mu.cut = false }) }

// setDown records whether the target runs. While it does not, the proxy
// refuses connections as the target's address would, rather than
// accepting them and closing them at once: to the caller, a connection
// closed after its request was sent is an unknown outcome, a refused one
// a definite failure.
func (p *proxy) setDown(down bool) error { return p.update(func() { p.mu.down = down }) }

// update applies change, then listens if the proxy is neither cut nor
// down, or closes the listener and every connection if it is.
func (p *proxy) update(change func()) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	change()
	if p.mu.cut || p.mu.down {
		if p.mu.ln != nil {
			p.mu.ln.Close()
			p.mu.ln = nil
		}
		for c := range p.mu.conns {
			c.Close()
			delete(p.mu.conns, c)
		}
		return nil
	}
	if p.mu.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return fmt.Errorf("proxy %s: %w", p.addr, err)
	}
	p.mu.ln = ln
	p.wg.Add(1)
	go p.serve(ln)
	return nil
}

// close stops the proxy and waits for its goroutines.
func (p *proxy) close() {
	p.partition()
	p.wg.Wait()
}
