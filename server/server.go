// Package server serves the Redis protocol over TCP: connections and
// their state (database, authentication, MULTI), pipelines, and the
// server-level commands (CLIENT, CONFIG, INFO, COMMAND, ...). Keyspace
// commands go to the store: reads directly, writes through an Applier.
package server

import (
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/presenced/presenced/store"
)

// ErrClosed is returned by Start on a server that was closed.
var ErrClosed = errors.New("server: closed")

// Applier applies batches of write commands. Every change to the store
// goes through it, so that a replicated implementation can order batches
// in a log and stamp them with the log's time.
type Applier interface {
	// Apply applies cmds atomically and appends their replies to out.
	Apply(cmds []store.Command, out *store.Replies) error
}

// localApplier applies batches directly to the store at the wall clock's
// time.
type localApplier struct{ st *store.Store }

func (a localApplier) Apply(cmds []store.Command, out *store.Replies) error {
	a.st.Apply(cmds, time.Now().UnixMilli(), out)
	return nil
}

// Server is a presenced RESP server.
type Server struct {
	store   *store.Store
	applier Applier
	started time.Time

	settings settings
	stats    stats

	mu struct {
		sync.Mutex
		ln      net.Listener
		clients map[*client]struct{}
	}
	nextID atomic.Int64
	closed atomic.Bool
	quit   chan struct{}
	wg     sync.WaitGroup
}

// New returns a server for cfg with an empty store.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	st := store.New()
	s := &Server{store: st, applier: localApplier{st}, quit: make(chan struct{})}
	s.settings.init(cfg)
	s.mu.clients = make(map[*client]struct{})
	return s, nil
}

// Start listens on the configured address and serves clients in the
// background. When it returns without error the server accepts
// connections.
func (s *Server) Start() error {
	if s.closed.Load() {
		return ErrClosed
	}
	cfg := s.settings.config()
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.Port)))
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.mu.ln = ln
	s.mu.Unlock()
	s.started = time.Now()
	s.goFunc(func() { s.acceptLoop(ln) })
	s.goFunc(s.tickLoop)
	return nil
}

// Addr is the address the server listens on, once started.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.ln == nil {
		return ""
	}
	return s.mu.ln.Addr().String()
}

// Close stops accepting, disconnects every client and waits for the
// server's goroutines to end. It is safe to call more than once.
func (s *Server) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(s.quit)
	s.mu.Lock()
	if s.mu.ln != nil {
		s.mu.ln.Close()
	}
	for c := range s.mu.clients {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// goFunc runs f in a goroutine that Close waits for.
func (s *Server) goFunc(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

func (s *Server) acceptLoop(ln net.Listener) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closed.Load() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		s.stats.connections.Add(1)
		c := newClient(s, nc)
		s.mu.Lock()
		if s.closed.Load() {
			s.mu.Unlock()
			nc.Close()
			return
		}
		full := len(s.mu.clients) >= s.settings.config().MaxClients
		if !full {
			s.mu.clients[c] = struct{}{}
		}
		s.mu.Unlock()
		if full {
			s.stats.rejected.Add(1)
			nc.Write([]byte("-ERR max number of clients reached\r\n"))
			nc.Close()
			continue
		}
		s.goFunc(func() {
			c.serve()
			s.mu.Lock()
			delete(s.mu.clients, c)
			s.mu.Unlock()
			s.stats.merge(c)
		})
	}
}

// tickLoop proposes the empty batches that drive active expiry.
func (s *Server) tickLoop() {
	t := time.NewTicker(s.settings.config().TickInterval)
	defer t.Stop()
	var out store.Replies
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
			out.Reset()
			s.applier.Apply(nil, &out)
		}
	}
}

// clients returns a snapshot of the connected clients.
func (s *Server) clientList() []*client {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*client, 0, len(s.mu.clients))
	for c := range s.mu.clients {
		out = append(out, c)
	}
	return out
}
