// Package cluster replicates the store with hashicorp/raft. Every node is
// a raft replica, and a standalone server is a one-node cluster: writes
// are packed into log entries (group commit), stamped with the leader's
// clock, committed by a majority, and applied to the store on every
// replica in log order.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/presenced/presenced/store"
	"go.etcd.io/bbolt"
)

// Tuning that operators have no reason to change.
const (
	logCacheSize      = 512              // recent entries raft keeps decoded in memory
	snapshotsRetained = 2                // snapshots kept in Dir
	tcpMaxPool        = 3                // connections kept per peer
	tcpTimeout        = 10 * time.Second // I/O timeout of the raft transport
	fsyncInterval     = time.Second      // period of FsyncEverySec
	lockTimeout       = time.Second      // wait for another process's lock on the log
)

// Node is one replica of the store. Its Apply method implements the
// server's Applier: on the leader it commits batches of writes through
// the raft log.
type Node struct {
	cfg   Config
	log   hclog.Logger
	raft  *raft.Raft
	fsm   *fsm
	batch *batcher

	bolt      *raftboltdb.BoltStore // nil without AppendOnly
	transport io.Closer             // the transport Open created, or nil

	observer *raft.Observer
	leaders  progress // counts leadership and state changes

	closed   atomic.Bool
	quit     chan struct{}
	raftDown chan struct{}
	wg       sync.WaitGroup
}

// Open starts a node replicating sm. With a nil transport it listens on
// cfg.RaftAddr over TCP; a given transport stays the caller's to close. A
// node with cfg.Bootstrap set and no raft state forms a one-node cluster;
// a node with state recovers it from its log and snapshots.
func Open(cfg Config, sm StateMachine, trans raft.Transport) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	out := cfg.LogOutput
	if out == nil {
		out = os.Stderr
	}
	n := &Node{
		cfg:      cfg,
		log:      hclog.New(&hclog.LoggerOptions{Name: "raft", Output: out, Level: hclog.LevelFromString(cfg.LogLevel)}),
		quit:     make(chan struct{}),
		raftDown: make(chan struct{}),
	}
	n.fsm = &fsm{sm: sm, log: n.log}
	if err := n.start(trans); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// start opens the stores and the transport, and starts raft and the
// node's goroutines.
func (n *Node) start(trans raft.Transport) error {
	logs, stable, snaps, err := n.openStores()
	if err != nil {
		return err
	}
	if trans == nil {
		t, err := raft.NewTCPTransportWithLogger(n.cfg.RaftAddr, nil, tcpMaxPool, tcpTimeout, n.log)
		if err != nil {
			return fmt.Errorf("cluster: raft transport on %s: %w", n.cfg.RaftAddr, err)
		}
		trans, n.transport = t, t
	}
	existing, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		return fmt.Errorf("cluster: reading raft state: %w", err)
	}
	rc := n.raftConfig()
	n.raft, err = raft.NewRaft(rc, n.fsm, logs, stable, snaps, trans)
	if err != nil {
		if n.cfg.AppendOnly {
			return fmt.Errorf("cluster: starting raft from %s: %w", n.cfg.Dir, err)
		}
		return fmt.Errorf("cluster: starting raft: %w", err)
	}
	n.observe()
	if !existing && n.cfg.Bootstrap {
		boot := raft.Configuration{Servers: []raft.Server{{ID: rc.LocalID, Address: trans.LocalAddr()}}}
		if err := n.raft.BootstrapCluster(boot).Error(); err != nil {
			return fmt.Errorf("cluster: bootstrapping: %w", err)
		}
	}
	n.batch = newBatcher(n.raft, n.fsm, &n.cfg, n.quit, n.raftDown)
	n.goFunc(n.batch.proposeLoop)
	n.goFunc(n.batch.completeLoop)
	n.goFunc(func() { n.batch.tickLoop(n.cfg.TickInterval) })
	if n.bolt != nil && n.cfg.AppendFsync == FsyncEverySec {
		n.goFunc(n.fsyncLoop)
	}
	return nil
}

func (n *Node) raftConfig() *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(n.cfg.NodeID)
	rc.HeartbeatTimeout = n.cfg.HeartbeatTimeout
	rc.ElectionTimeout = n.cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = n.cfg.LeaderLeaseTimeout
	rc.CommitTimeout = n.cfg.CommitTimeout
	rc.SnapshotInterval = n.cfg.SnapshotInterval
	rc.SnapshotThreshold = n.cfg.SnapshotThreshold
	rc.TrailingLogs = n.cfg.TrailingLogs
	rc.Logger = n.log
	return rc
}

// openStores opens raft's log, stable and snapshot stores: in Dir with
// AppendOnly, in memory without.
func (n *Node) openStores() (raft.LogStore, raft.StableStore, raft.SnapshotStore, error) {
	if !n.cfg.AppendOnly {
		mem := raft.NewInmemStore()
		return mem, mem, raft.NewInmemSnapshotStore(), nil
	}
	if err := os.MkdirAll(n.cfg.Dir, 0o755); err != nil {
		return nil, nil, nil, fmt.Errorf("cluster: %w", err)
	}
	path := filepath.Join(n.cfg.Dir, "raft.db")
	bolt, err := raftboltdb.New(raftboltdb.Options{
		Path:        path,
		BoltOptions: &bbolt.Options{Timeout: lockTimeout},
		NoSync:      n.cfg.AppendFsync != FsyncAlways,
	})
	if errors.Is(err, bbolt.ErrTimeout) {
		return nil, nil, nil, fmt.Errorf("cluster: raft log %s is locked by another process", path)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("cluster: opening raft log %s: %w", path, err)
	}
	n.bolt = bolt
	logs, err := raft.NewLogCache(logCacheSize, bolt)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("cluster: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(n.cfg.Dir, snapshotsRetained, n.log)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("cluster: opening snapshots in %s: %w", n.cfg.Dir, err)
	}
	return logs, bolt, snaps, nil
}

// observe keeps n.leaders counting raft's leader and state changes, so
// WaitLeader can wait for them.
func (n *Node) observe() {
	ch := make(chan raft.Observation, 16)
	n.observer = raft.NewObserver(ch, true, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.LeaderObservation, raft.RaftState:
			return true
		}
		return false
	})
	n.raft.RegisterObserver(n.observer)
	n.goFunc(func() {
		for {
			select {
			case <-ch:
				n.leaders.advance(n.leaders.get() + 1)
			case <-n.raftDown:
				return
			}
		}
	})
}

// fsyncLoop flushes the log file to disk every second (FsyncEverySec).
func (n *Node) fsyncLoop() {
	t := time.NewTicker(fsyncInterval)
	defer t.Stop()
	for {
		select {
		case <-n.quit:
			return
		case <-t.C:
			if err := n.bolt.Sync(); err != nil {
				n.log.Error("fsync of the raft log failed", "error", err)
			}
		}
	}
}

// goFunc runs f in a goroutine that Close waits for.
func (n *Node) goFunc(f func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// Close fails queued writes with ErrClosed and writes in flight with
// ErrUnknownOutcome, shuts raft down, waits for the node's goroutines and
// closes its files and transport. It is safe to call more than once.
func (n *Node) Close() error {
	if !n.closed.CompareAndSwap(false, true) {
		return nil
	}
	if n.batch != nil {
		n.batch.stop()
	}
	close(n.quit)
	var err error
	if n.raft != nil {
		err = n.raft.Shutdown().Error()
		n.raft.DeregisterObserver(n.observer)
	}
	close(n.raftDown)
	n.wg.Wait()
	if n.bolt != nil && n.cfg.AppendFsync == FsyncEverySec {
		err = errors.Join(err, n.bolt.Sync())
	}
	return errors.Join(err, n.closeStores())
}

// closeStores closes what openStores and start opened.
func (n *Node) closeStores() error {
	var err error
	if n.bolt != nil {
		err = n.bolt.Close()
	}
	if n.transport != nil {
		err = errors.Join(err, n.transport.Close())
	}
	return err
}

// Apply commits cmds as one atomic batch through the raft log and appends
// their replies to out (which must not be nil) once the batch is applied.
// It implements the server's Applier. Errors: ErrNotLeader and ErrClosed
// (not applied), ErrUnknownOutcome (maybe applied), or an error of a
// corrupted entry.
func (n *Node) Apply(cmds []store.Command, out *store.Replies) error {
	if len(cmds) == 0 {
		return nil
	}
	if n.closed.Load() {
		return ErrClosed
	}
	if n.raft.State() != raft.Leader {
		return ErrNotLeader
	}
	return n.batch.apply(cmds, out)
}

// IsLeader reports whether this node is the leader.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// Leader returns the raft address and ID of the leader this node knows
// of, or empty strings if it knows of none.
func (n *Node) Leader() (addr, id string) {
	a, i := n.raft.LeaderWithID()
	return string(a), string(i)
}

// WaitLeader waits until this node knows of a leader and returns its ID.
func (n *Node) WaitLeader(ctx context.Context) (string, error) {
	for {
		seen := n.leaders.get()
		if _, id := n.Leader(); id != "" {
			return id, nil
		}
		if err := n.leaders.wait(ctx, seen+1); err != nil {
			return "", err
		}
	}
}

// WaitApplied waits until this node's store has applied an entry of
// commands at index or later. Raft's own entries (elections, membership,
// barriers) do not reach the store: waiting for one of their indexes
// returns with the next entry of commands, a tick at the latest.
func (n *Node) WaitApplied(ctx context.Context, index uint64) error {
	return n.fsm.applied.wait(ctx, index)
}

// Barrier waits, on the leader, until every entry of the log so far is
// applied to the store; a leader that just started replays its log then.
func (n *Node) Barrier(ctx context.Context) error {
	return n.raftWait(ctx, func(timeout time.Duration) raft.Future { return n.raft.Barrier(timeout) })
}

// Snapshot takes a snapshot of the store now and compacts the log up to
// it (keeping TrailingLogs entries).
func (n *Node) Snapshot() error {
	return n.raftWait(context.Background(), func(time.Duration) raft.Future { return n.raft.Snapshot() })
}

// AddVoter adds a voting member to the cluster, or updates its address.
// It must be called on the leader.
func (n *Node) AddVoter(ctx context.Context, id, addr string) error {
	return n.raftWait(ctx, func(timeout time.Duration) raft.Future {
		return n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, timeout)
	})
}

// RemoveServer removes a member from the cluster. It must be called on
// the leader.
func (n *Node) RemoveServer(ctx context.Context, id string) error {
	return n.raftWait(ctx, func(timeout time.Duration) raft.Future {
		return n.raft.RemoveServer(raft.ServerID(id), 0, timeout)
	})
}

// raftWait runs a raft operation with ctx's deadline as its enqueue
// timeout and waits for it.
func (n *Node) raftWait(ctx context.Context, op func(timeout time.Duration) raft.Future) error {
	var timeout time.Duration
	if d, ok := ctx.Deadline(); ok {
		if timeout = time.Until(d); timeout <= 0 {
			return context.DeadlineExceeded
		}
	}
	err := op(timeout).Error()
	switch {
	case errors.Is(err, raft.ErrNotLeader):
		return ErrNotLeader
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrClosed
	}
	return err
}

// Stats describes a node for INFO and tests.
type Stats struct {
	// State is "Leader", "Follower", "Candidate" or "Shutdown".
	State string
	// LeaderAddr and LeaderID identify the leader this node knows of.
	LeaderAddr, LeaderID string
	// Term is the current raft term.
	Term uint64
	// LastIndex is the index of the last entry in this node's log.
	LastIndex uint64
	// CommitIndex is the index of the last entry known committed.
	CommitIndex uint64
	// AppliedIndex is the index of the last entry applied to the store.
	AppliedIndex uint64
	// Entries counts the log entries this node proposed, ticks included.
	Entries uint64
	// Batches counts the callers' batches committed through this node.
	Batches uint64
	// Commands counts the commands committed through this node.
	Commands uint64
	// Queued is the number of batches waiting for a log entry.
	Queued int
	// Restores counts the snapshots restored into the store: at start, and
	// when the leader sent one to catch this node up.
	Restores uint64
}

// Stats returns the node's current statistics.
func (n *Node) Stats() Stats {
	addr, id := n.Leader()
	return Stats{
		State:        n.raft.State().String(),
		LeaderAddr:   addr,
		LeaderID:     id,
		Term:         n.raft.CurrentTerm(),
		LastIndex:    n.raft.LastIndex(),
		CommitIndex:  n.raft.CommitIndex(),
		AppliedIndex: n.raft.AppliedIndex(),
		Entries:      n.batch.entries.Load(),
		Batches:      n.batch.batches.Load(),
		Commands:     n.batch.commands.Load(),
		Queued:       n.batch.queued(),
		Restores:     n.fsm.restores.Load(),
	}
}
