// Package server serves the Redis protocol over TCP: connections and
// their state (database, authentication, MULTI), pipelines, and the
// server-level commands (CLIENT, CONFIG, INFO, COMMAND, ...). Keyspace
// commands go to the store: reads directly, writes through an Applier.
package server

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/presenced/presenced/cluster"
	"github.com/presenced/presenced/history"
	"github.com/presenced/presenced/proto"
	"github.com/presenced/presenced/store"
)

// ErrClosed is returned by Start on a server that was closed.
var ErrClosed = errors.New("server: closed")

// Server is a presenced RESP server: a node of a raft cluster (a one-node
// cluster when standalone) and the RESP endpoints in front of it.
type Server struct {
	store       *store.Store
	node        *cluster.Node
	history     *history.History // nil with history off
	started     time.Time
	startupHeap uint64 // the heap in use when New began, MEMORY STATS's startup.allocated
	// maxWriteBytes is the log's bound on a batch of writes
	// (cluster.Config.MaxBatchBytes): a connection cuts a longer batch.
	maxWriteBytes int

	settings settings
	stats    stats
	slowlog  slowlog
	latency  *latencyTracker
	events   latencyEvents
	instant  instantMetrics
	pause    clientPause
	// migrateSockets are MIGRATE's idle connections to its targets.
	migrateSockets migrateSockets
	// runID is the server's run_id: 40 hex digits drawn at its start.
	runID    string
	pubsub   hub
	relayed  relayOrder // the latest message delivered of each member that relays to this node
	monitors monitorHub
	buffers  bufferBudget // the large buffers connections keep for their next batch
	tracking tracking
	sentinel sentinelState
	// keyspaceFlags is notify-keyspace-events, for the store's sink.
	keyspaceFlags atomic.Int32
	// log is the server's log, where raft's goes (cluster.Config.LogOutput).
	log *log.Logger

	mu struct {
		sync.Mutex
		ln        net.Listener   // the TCP port
		listeners []net.Listener // ln, the TLS port and the unix socket
		tlsAddr   string         // the TLS port's address, "" without one
		clients   map[*client]struct{}
	}
	// loops serve clients' connections where the platform allows it and
	// the node is its cluster's only voter (see serveFromLoop).
	loops    []*eventLoop
	nextLoop atomic.Uint64
	nextID   atomic.Int64
	closed   atomic.Bool
	quit     chan struct{}
	wg       sync.WaitGroup

	aclLog aclLog   // failed authentications, for ACL LOG
	tls    tlsState // the TLS port's settings and, with tls-cluster, the raft address's

	shutdown     chan struct{} // closed once a client sent SHUTDOWN
	shutdownOnce sync.Once
	noSave       atomic.Bool // the SHUTDOWN said NOSAVE: Close takes no snapshot
	bgSave       atomic.Bool // a BGSAVE or BGREWRITEAOF is under way
}

// New opens the cluster node of cfg.Cluster, which recovers the store
// from its raft log and snapshots (or bootstraps or joins a cluster), and
// returns a server in front of it.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if join := cfg.Cluster.Join; join != "" && cfg.Port != 0 && cluster.SameEndpoint(join, net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.Port))) {
		return nil, fmt.Errorf("--join %s is this node's own client port: name another member's", join)
	}
	s := &Server{store: store.New(), quit: make(chan struct{}), shutdown: make(chan struct{}), runID: newRunID()}
	s.buffers.limit = keptBudget
	s.maxWriteBytes = cfg.Cluster.MaxBatchBytes
	s.log = log.New(cmp.Or(cfg.Cluster.LogOutput, io.Writer(os.Stderr)), "presenced: ", log.LstdFlags)
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s.startupHeap = m.HeapAlloc
	s.stats.counters = make([]counter, len(proto.Counted))
	s.latency = newLatencyTracker()
	var peerTLS *cluster.PeerTLS
	if cfg.TLS != nil {
		l, err := cfg.TLS.load()
		if err != nil {
			return nil, err
		}
		s.tls.cur.Store(l)
		if cfg.TLS.Cluster {
			peerTLS = s.tls.peerTLS()
		}
	}
	s.settings.init(cfg)
	s.watchBitEvents()
	s.tracking.init(s)
	s.mu.clients = make(map[*client]struct{})
	cc := cfg.Cluster
	cc.Password = func() string { return s.settings.config().RequirePass }
	if also := cc.LogWritten; also != nil {
		cc.LogWritten = func(d time.Duration) {
			s.logWritten(d)
			also(d)
		}
	} else {
		cc.LogWritten = s.logWritten
	}
	cc.TLS = peerTLS
	s.store.SetExpiryObserver(s.expiryTook)
	if cfg.History.Enabled {
		if err := s.openHistory(cfg); err != nil {
			return nil, err
		}
		// History travels with the snapshots a new node installs.
		cc.Attachment = s.history
	}
	node, err := cluster.Open(cc, cluster.FromStore(s.store), nil)
	if err != nil {
		s.closeHistory()
		return nil, err
	}
	s.node = node
	return s, nil
}

// newRunID draws a run_id: 40 hex digits, new at each start, by which
// clients tell a restarted server, as Redis's.
func newRunID() string {
	b := make([]byte, 20)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// openHistory opens the history file in cfg.Dir and has the store record
// into it, as cfg.History says.
func (s *Server) openHistory(cfg Config) error {
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	hc := history.DefaultConfig(filepath.Join(cfg.Dir, historyFile))
	hc.Retention = cfg.History.Retention
	h, err := history.Open(hc)
	if err != nil {
		return err
	}
	s.history = h
	s.store.SetHistory(h, store.HistoryConfig{Interval: cfg.History.Interval.Milliseconds(), Keys: cfg.History.Keys})
	return nil
}

// closeHistory closes the history file, if open.
func (s *Server) closeHistory() error {
	if s.history == nil {
		return nil
	}
	return s.history.Close()
}

// Start listens on the configured address (and the TLS port and unix
// socket, if configured) and serves clients in the background. When it returns without error the server accepts
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
	// The TLS port and the unix socket, each if configured, serve
	// clients as the TCP port does.
	listeners := []net.Listener{ln}
	tlsLn, err := s.listenTLS(cfg)
	if err == nil && tlsLn != nil {
		listeners = append(listeners, tlsLn)
	}
	var unixLn net.Listener
	if err == nil {
		unixLn, err = s.listenUnix(cfg)
	}
	if err == nil && unixLn != nil {
		listeners = append(listeners, unixLn)
	}
	if err == nil {
		err = s.startLoops()
	}
	if err != nil {
		for _, l := range listeners {
			l.Close()
		}
		return err
	}
	tlsAddr := ""
	if tlsLn != nil {
		tlsAddr = tlsLn.Addr().String()
	}
	s.mu.Lock()
	s.mu.ln, s.mu.listeners, s.mu.tlsAddr = ln, listeners, tlsAddr
	s.mu.Unlock()
	s.started = time.Now()
	for _, l := range listeners {
		s.goFunc(func() { s.acceptLoop(l, false) })
	}
	s.goFunc(func() { s.acceptLoop(s.node.PeerListener(), true) })
	s.goFunc(s.announceSwitches)
	s.goFunc(s.sampleMetrics)
	s.goFunc(s.expireMigrateSockets)
	return nil
}

// ShutdownRequested is closed once a client has sent SHUTDOWN. The server
// goes on serving: the process that runs it is to stop it, as it does on
// SIGTERM.
func (s *Server) ShutdownRequested() <-chan struct{} { return s.shutdown }

// requestShutdown closes ShutdownRequested's channel, once: the first
// SHUTDOWN decides whether Close takes a snapshot (not after NOSAVE).
func (s *Server) requestShutdown(noSave bool) {
	s.shutdownOnce.Do(func() {
		s.noSave.Store(noSave)
		close(s.shutdown)
	})
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

// TLSAddr returns the address of the TLS port, "" when the server has
// none or has not started.
func (s *Server) TLSAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.tlsAddr
}

// Node returns the server's cluster node.
func (s *Server) Node() *cluster.Node { return s.node }

// handoverWait bounds how long a stopping leader waits for another voter
// to take its leadership over: a few round trips when one is up.
const handoverWait = time.Second

// Close stops accepting, disconnects every client, takes a snapshot of
// the node's state (see cluster.Node.Checkpoint; not after SHUTDOWN
// NOSAVE), waits for the server's goroutines to end and closes the
// cluster node. It is safe to call more than once.
func (s *Server) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(s.quit)
	s.mu.Lock()
	for _, l := range s.mu.listeners {
		l.Close()
	}
	s.mu.Unlock()
	// A connection's Close returns once the command it runs has (see
	// serveRaw), and commands may take s.mu or wait for the node: each
	// closes in a goroutine of its own.
	for _, c := range s.clientList() {
		s.goFunc(c.closeConn)
	}
	s.stopLoops()
	// A leader hands its leadership to another voter before it stops, so
	// that writes wait for a hand-over rather than for the other nodes'
	// election timeout. Should nobody take over within handoverWait (or
	// raft's election timeout, if shorter), the node stops anyway and the
	// others elect a leader as they do after a crash; a node that does not
	// lead, or leads alone, has nothing to hand over.
	ctx, cancel := context.WithTimeout(context.Background(), handoverWait)
	_ = s.node.Handover(ctx, "")
	cancel()
	// A clean stop leaves a snapshot of what the node applied, so that it
	// starts again by loading that rather than by replaying the log since
	// its last one (SHUTDOWN NOSAVE skips it, as it skips Redis's save).
	var err error
	if !s.noSave.Load() {
		err = s.node.Checkpoint()
	}
	// The node goes first: it fails the writes clients wait for, so that
	// their connections can end.
	err = errors.Join(err, s.node.Close())
	s.wg.Wait()
	// The node applies nothing more: what it recorded can be flushed.
	return errors.Join(err, s.closeHistory())
}

// goFunc runs f in a goroutine that Close waits for.
func (s *Server) goFunc(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// acceptLoop serves the connections of ln: clients', or other nodes' when
// peer is set.
func (s *Server) acceptLoop(ln net.Listener, peer bool) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closed.Load() {
				return
			}
			if isTimeout(err) {
				continue
			}
			return
		}
		s.stats.connections.Add(1)
		c := newClient(s, nc, peer)
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
		if !peer && s.serveFromLoop(c) {
			continue
		}
		s.goFunc(func() {
			c.serve()
			s.dropClient(c)
		})
	}
}

// dropClient forgets a client whose connection ended, keeping its counts.
func (s *Server) dropClient(c *client) {
	c.gone.Store(true)
	s.buffers.release(&c.keptIn)
	s.buffers.release(&c.keptOut)
	s.mu.Lock()
	delete(s.mu.clients, c)
	s.stats.merge(c)
	s.mu.Unlock()
}

// forget takes a client out of the connected ones before its connection
// ends; dropClient keeps its counts once it has.
func (s *Server) forget(c *client) {
	c.gone.Store(true)
	s.mu.Lock()
	delete(s.mu.clients, c)
	s.mu.Unlock()
}

// clientByID returns the connected client with ID id, or nil.
func (s *Server) clientByID(id int64) *client {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.mu.clients {
		if c.id == id {
			return c
		}
	}
	return nil
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

// isTimeout reports whether err is a deadline that passed.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
