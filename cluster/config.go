package cluster

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Values of Config.AppendFsync, as in redis.conf.
const (
	FsyncAlways   = "always"   // fsync the log before a write is acknowledged
	FsyncEverySec = "everysec" // fsync the log once a second
	FsyncNo       = "no"       // leave flushing to the operating system
)

// PeerTLS is the TLS settings of a node's raft address: Server for the
// connections it accepts (which should require a client certificate),
// Client for those it makes to other nodes.
type PeerTLS struct {
	Server, Client *tls.Config
}

// Config configures a Node.
type Config struct {
	// NodeID names this node in the cluster; it must never be reused for
	// another node.
	NodeID string
	// RaftAddr is the host:port the raft transport listens on and other
	// nodes reach this node at. Unused when Open is given a transport.
	RaftAddr string
	// RaftAdvertise, if set, is the address other nodes reach this node's
	// RaftAddr at, when that differs (behind a proxy or NAT).
	RaftAdvertise string
	// Dir holds the raft log ("raft.db") and the snapshots ("snapshots/")
	// when AppendOnly is set.
	Dir string
	// Bootstrap makes a node that starts without any raft state form a new
	// one-node cluster of itself. A node that joins an existing cluster
	// starts with Bootstrap off and waits to be added.
	Bootstrap bool
	// Join is the RESP address (host:port) of a member of the cluster to
	// join when the node starts without raft state: the node asks it to
	// add this node as a voter. Empty, such a node bootstraps if
	// Bootstrap is set and otherwise waits to be added.
	Join string
	// Recover makes the node, as it starts, the only voter of its cluster,
	// with the state it holds in Dir (raft's RecoverCluster): for a
	// cluster that lost a majority of its voters for good, which can
	// commit nothing, not even their removal. Its state then includes
	// every entry of its log, committed or not. It needs AppendOnly and
	// state in Dir, and neither Bootstrap nor Join.
	Recover bool
	// AppendOnly keeps the raft log and snapshots in Dir, so that the node
	// restarts with its data. Off, they live in memory: the data survives
	// as long as a majority of the nodes stays up.
	AppendOnly bool
	// AppendFsync says when the log file is flushed to disk with
	// AppendOnly: FsyncAlways before each commit is acknowledged (no
	// acknowledged write is lost on power loss), FsyncEverySec once a
	// second (up to a second of writes lost on power loss), FsyncNo when
	// the operating system decides. A crash of the process alone loses
	// nothing in any mode.
	AppendFsync string
	// TickInterval is how often the leader proposes an empty entry that
	// carries its clock, so that keys expire at the same log position on
	// every replica even when nobody writes.
	TickInterval time.Duration

	// HeartbeatTimeout is how long a follower waits without hearing from
	// the leader before it starts an election (randomized up to twice
	// that). Together with ElectionTimeout it bounds failover: the
	// defaults, tuned for nodes on a LAN or loopback, elect a new leader
	// within about a second of the old one dying.
	HeartbeatTimeout time.Duration
	// ElectionTimeout is how long a candidate waits for votes before it
	// starts another election (randomized up to twice that). At least
	// HeartbeatTimeout.
	ElectionTimeout time.Duration
	// LeaderLeaseTimeout is how long a leader keeps leading without
	// hearing from a majority. At most HeartbeatTimeout.
	LeaderLeaseTimeout time.Duration
	// CommitTimeout is the longest the leader goes without sending
	// entries or heartbeats to followers, which bounds how stale a
	// follower's knowledge of the commit index is.
	CommitTimeout time.Duration

	// SnapshotInterval is how often raft checks whether to snapshot.
	SnapshotInterval time.Duration
	// SnapshotThreshold is how many entries past the last snapshot make
	// raft take a new one and compact the log.
	SnapshotThreshold uint64
	// SnapshotBytes is how many bytes of entries past the last snapshot
	// make the node take a new one: with group commit, entries vary from
	// a few bytes (ticks) to MaxEntryBytes, so the log is bounded by size
	// as well as by count. Without AppendOnly, where the log is in
	// memory, it is the most: there a snapshot is due once the log has
	// grown by the size of the last snapshot, or 16 MB if that is more.
	SnapshotBytes int64
	// TrailingLogs is how many entries a snapshot leaves in the log, so
	// that a follower slightly behind catches up without a snapshot.
	TrailingLogs uint64

	// MaxEntryBytes bounds the encoded commands of one log entry; a single
	// batch larger than that still gets an entry of its own.
	MaxEntryBytes int
	// MaxEntryCommands bounds the commands of one log entry, with the same
	// exception.
	MaxEntryCommands int
	// MaxBatchBytes bounds the encoded commands of one batch of writes (a
	// connection's pipeline, or its MULTI block): a larger one is refused
	// with an error. Every node writes an entry whole before it takes
	// the next one the leader sends, so the writes behind a large entry
	// wait for it on every follower. A node that is its cluster's only
	// voter takes larger batches: no other node waits for it there.
	MaxBatchBytes int
	// MaxInflight is how many entries the leader has being committed at
	// once; batches arriving meanwhile wait and share the next entry. The
	// log is written by one goroutine, so more entries in flight only
	// wait longer: 1 measured best in every persistence mode.
	MaxInflight int

	// LeaderWait bounds how long a write or a linearizable read waits for
	// a reachable leader (during an election, say) before it fails with
	// ErrNoLeader.
	LeaderWait time.Duration
	// Password, if not nil, returns the password other nodes require of
	// this one's calls (their requirepass).
	Password func() string
	// TLS, if not nil, encrypts and authenticates what nodes send each
	// other on their raft addresses: raft's transport and the calls of
	// Peers. Every node must have it, or none.
	TLS *PeerTLS

	// Attachment, if not nil, is node-local state shipped with snapshots:
	// a copy of it is appended to a snapshot when the snapshot is sent to
	// a follower or restored, and restoring hands it to the Attachment.
	Attachment Attachment

	// LogOutput receives raft's log; nil means standard error.
	LogOutput io.Writer
	// LogWritten, when set, is told how long each write to the raft log
	// took, its flush included with AppendFsync always; the server's
	// latency monitor records the slow ones.
	LogWritten func(time.Duration)
	// LogLevel is the least severe raft log level written: "trace",
	// "debug", "info", "warn" or "error".
	LogLevel string
}

// DefaultConfig returns a configuration for one node on loopback that
// keeps its data in ./data and fsyncs every commit. NodeID, RaftAddr and
// Dir are for the caller to set in a real cluster.
func DefaultConfig() Config {
	return Config{
		NodeID:             "node1",
		RaftAddr:           "127.0.0.1:7379",
		Dir:                "data",
		Bootstrap:          true,
		AppendOnly:         true,
		AppendFsync:        FsyncAlways,
		TickInterval:       100 * time.Millisecond,
		HeartbeatTimeout:   300 * time.Millisecond,
		ElectionTimeout:    300 * time.Millisecond,
		LeaderLeaseTimeout: 200 * time.Millisecond,
		CommitTimeout:      10 * time.Millisecond,
		SnapshotInterval:   30 * time.Second,
		SnapshotThreshold:  8192,
		SnapshotBytes:      64 << 20,
		TrailingLogs:       256,
		MaxEntryBytes:      256 << 10,
		MaxEntryCommands:   16384,
		MaxBatchBytes:      4 << 20,
		MaxInflight:        1,
		LeaderWait:         2 * time.Second,
		LogLevel:           "warn",
	}
}

// Validate reports the first problem of c, in plain words.
func (c *Config) Validate() error {
	if err := checkNodeID(c.NodeID); err != nil {
		return err
	}
	switch {
	case c.Join != "" && c.Bootstrap:
		return errors.New("cluster: a node either bootstraps a cluster or joins one, not both")
	case c.AppendOnly && c.Dir == "":
		return errors.New("cluster: Dir must not be empty with AppendOnly")
	case c.Recover && (!c.AppendOnly || c.Join != "" || c.Bootstrap):
		return errors.New("cluster: Recover needs AppendOnly (a raft log on disk to recover), and neither Join nor Bootstrap")
	case c.AppendFsync != FsyncAlways && c.AppendFsync != FsyncEverySec && c.AppendFsync != FsyncNo:
		return fmt.Errorf("cluster: AppendFsync must be %q, %q or %q, not %q", FsyncAlways, FsyncEverySec, FsyncNo, c.AppendFsync)
	case c.TickInterval <= 0:
		return errors.New("cluster: TickInterval must be positive")
	case c.HeartbeatTimeout < 5*time.Millisecond || c.ElectionTimeout < 5*time.Millisecond ||
		c.LeaderLeaseTimeout < 5*time.Millisecond || c.CommitTimeout < time.Millisecond:
		return errors.New("cluster: raft timeouts must be at least 5ms (CommitTimeout 1ms)")
	case c.ElectionTimeout < c.HeartbeatTimeout:
		return errors.New("cluster: ElectionTimeout must be at least HeartbeatTimeout")
	case c.LeaderLeaseTimeout > c.HeartbeatTimeout:
		return errors.New("cluster: LeaderLeaseTimeout must be at most HeartbeatTimeout")
	case c.SnapshotInterval < 5*time.Millisecond:
		return errors.New("cluster: SnapshotInterval must be at least 5ms")
	case c.SnapshotThreshold == 0 || c.SnapshotBytes <= 0:
		return errors.New("cluster: SnapshotThreshold and SnapshotBytes must be positive")
	case c.MaxEntryBytes <= 0 || c.MaxEntryCommands <= 0 || c.MaxBatchBytes <= 0:
		return errors.New("cluster: MaxEntryBytes, MaxEntryCommands and MaxBatchBytes must be positive")
	case c.MaxInflight <= 0:
		return errors.New("cluster: MaxInflight must be positive")
	case c.LeaderWait <= 0:
		return errors.New("cluster: LeaderWait must be positive")
	case hclog.LevelFromString(c.LogLevel) == hclog.NoLevel:
		return fmt.Errorf("cluster: LogLevel must be trace, debug, info, warn or error, not %q", c.LogLevel)
	}
	return nil
}
