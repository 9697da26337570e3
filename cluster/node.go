// Package cluster replicates the store with hashicorp/raft. Every node is
// a raft replica, and a standalone server is a one-node cluster: writes
// are packed into log entries (group commit), stamped with the leader's
// clock, committed by a majority, and applied to the store on every
// replica in log order.
package cluster

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
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
	logCacheSize      = 4                // recent entries raft keeps in memory, for replication
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
	stable    raft.StableStore      // without AppendOnly, the term and vote and the membership (see openVoteStore); nil with
	logWrites *timedLogs            // the log store raft writes through
	attaching atomic.Bool           // snapshots opened carry the Attachment (set once raft started)
	catchUp   *catchUpTransport     // raft's transport on a node that joined without raft state; nil otherwise
	serial    *serialTransport      // the network transport Open created, or nil
	listed    bool                  // a membership applied listed this node as a voter (see noteMembership)
	mux       *mux                  // the listener Open created, or nil
	peers     Peers                 // nil: writes are not forwarded
	relays    *relayer              // commands for other members (Relay); nil without peers
	relayTo   atomic.Pointer[relayMembers]

	observer *raft.Observer
	leaders  progress // counts leadership and state changes
	ready    progress // the latest term in which this node led and committed an entry

	leaderReads   coalescer // read index requests served as the leader
	followerReads coalescer // read index requests sent to the leader

	closed   atomic.Bool
	quit     chan struct{}
	raftDown chan struct{}
	wg       sync.WaitGroup
}

// Network is how a node reaches the others: raft's transport, and Peers
// for the calls of its own (forwarded writes, read indexes, membership).
type Network struct {
	Raft  raft.Transport
	Peers Peers // nil: a follower refuses writes with ErrNotLeader
}

// Open starts a node replicating sm. With a nil network it listens on
// cfg.RaftAddr over TCP, for raft and for other nodes' RESP calls (served
// by whoever accepts on PeerListener); a given network stays the caller's
// to close. A node with cfg.Bootstrap set and no raft state forms a
// one-node cluster; a node with state recovers it from its log and
// snapshots.
func Open(cfg Config, sm StateMachine, network *Network) (*Node, error) {
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
	n.fsm = &fsm{sm: sm, att: cfg.Attachment, log: n.log, saves: newSaves(time.Now()), dueBySize: !cfg.AppendOnly, maxDue: cfg.SnapshotBytes, due: make(chan struct{}, 1), behind: make(chan struct{}, 1)}
	n.fsm.snapshotDue.Store(cfg.SnapshotBytes)
	n.leaderReads.fn = n.leaderReadIndex
	n.followerReads.fn = n.followerReadIndex
	if err := n.start(network); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// start opens the stores and the transport, and starts raft and the
// node's goroutines.
func (n *Node) start(network *Network) error {
	logs, stable, snaps, err := n.openStores()
	if err != nil {
		return err
	}
	var trans raft.Transport
	if network == nil {
		m, err := listenMux(n.cfg.RaftAddr, n.cfg.RaftAdvertise, n.cfg.TLS)
		if err != nil {
			return fmt.Errorf("cluster: raft address: %w", err)
		}
		t := raft.NewNetworkTransportWithLogger(m, tcpMaxPool, tcpTimeout, n.log)
		n.serial = newSerialTransport(t, raft.ServerID(n.cfg.NodeID), n.raftDown)
		n.goFunc(n.serial.relay)
		trans, n.mux = n.serial, m
		p := NewRESPPeers(n.cfg.Password, n.cfg.TLS)
		p.callBytes = n.cfg.MaxBatchBytes
		n.peers = p
	} else {
		trans, n.peers = network.Raft, network.Peers
	}
	if n.peers != nil {
		n.relays = newRelayer(n.peers, n.cfg.NodeID, maxRelayBytes, n.log)
	}
	existing, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		return fmt.Errorf("cluster: reading raft state: %w", err)
	}
	if !n.cfg.AppendOnly {
		existing = false // a term and vote alone (see openVoteStore): it bootstraps or joins
	}
	if !existing && !n.cfg.Bootstrap {
		// It may be a member that lost its log: to --appendonly no, or
		// with its --dir.
		n.catchUp = newCatchUpTransport(trans, raft.ServerID(n.cfg.NodeID), &n.fsm.applied)
		trans = n.catchUp
		n.goFunc(func() { n.catchUp.relay(n.raftDown) })
	}
	rc := n.raftConfig()
	if n.cfg.Recover {
		if err := n.recoverAlone(rc, logs, stable, snaps, trans, existing); err != nil {
			return err
		}
	}
	n.raft, err = raft.NewRaft(rc, n.fsm, logs, stable, snaps, trans)
	if err != nil {
		if n.cfg.AppendOnly {
			return fmt.Errorf("cluster: starting raft from %s: %w", n.cfg.Dir, err)
		}
		return fmt.Errorf("cluster: starting raft: %w", err)
	}
	if n.serial != nil {
		n.serial.follow(n.raft)
	}
	// NewRaft restored the node's own newest snapshot: from now on a
	// snapshot is opened to be sent to a follower, or restored from one.
	n.attaching.Store(true)
	n.batch = newBatcher(n.raft, n.fsm, &n.cfg, n.quit, n.raftDown)
	n.batch.bound = n.checkBatchSize
	n.batch.logFailure = n.LogFailure
	n.observe()
	switch {
	case !existing && n.cfg.Bootstrap:
		boot := raft.Configuration{Servers: []raft.Server{{ID: rc.LocalID, Address: trans.LocalAddr()}}}
		if err := n.raft.BootstrapCluster(boot).Error(); err != nil {
			return fmt.Errorf("cluster: bootstrapping: %w", err)
		}
	case !existing && n.cfg.Join != "":
		if err := n.join(string(trans.LocalAddr())); err != nil {
			return err
		}
		if n.stable != nil {
			n.markMember(true)
		}
	case n.cfg.Join != "":
		if err := n.checkJoined(string(trans.LocalAddr())); err != nil {
			return err
		}
	}
	moved, err := n.checkOwnAddress(string(trans.LocalAddr()))
	if err != nil {
		return err
	}
	if n.SoleVoter() {
		if err := n.standNow(); err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
	}
	n.goFunc(n.batch.proposeLoop)
	n.goFunc(n.batch.completeLoop)
	n.goFunc(func() { n.batch.tickLoop(n.cfg.TickInterval) })
	if n.bolt != nil && n.cfg.AppendFsync == FsyncEverySec {
		n.goFunc(n.fsyncLoop)
	}
	n.goFunc(n.compactLoop)
	if moved {
		n.moveSelf(string(trans.LocalAddr()))
	}
	return nil
}

// recoverAlone rewrites this node's raft state so that it is the only
// voter of its cluster (Config.Recover): raft's RecoverCluster restores the
// newest snapshot, applies every entry of the log after it (committed or
// not: the lost majority may never have had them), snapshots the result
// with a membership of this node alone, and empties the log. NewRaft then
// starts from that snapshot.
func (n *Node) recoverAlone(rc *raft.Config, logs raft.LogStore, stable raft.StableStore, snaps raft.SnapshotStore, trans raft.Transport, existing bool) error {
	if !existing {
		return fmt.Errorf("cluster: nothing to recover: data dir %s holds no raft state", n.cfg.Dir)
	}
	alone := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: rc.LocalID, Address: trans.LocalAddr()}}}
	if err := raft.RecoverCluster(rc, n.fsm, logs, stable, snaps, trans, alone); err != nil {
		return fmt.Errorf("cluster: recovering data dir %s: %w", n.cfg.Dir, err)
	}
	return nil
}

// checkOwnAddress compares the raft address at which the membership in
// this node's state lists it with addr, where it is now. It reports
// whether they differ on the cluster's only voter, which moves to addr
// (see moveSelf); it refuses a member of a larger cluster, whose other
// members would go on calling it at the old address: it would never hear
// from a leader, and stand for election in vain.
func (n *Node) checkOwnAddress(addr string) (moved bool, err error) {
	if n.cfg.Join != "" {
		return false, nil // checkJoined asked a member instead
	}
	var was string
	for _, s := range n.raft.GetConfiguration().Configuration().Servers {
		if s.ID == raft.ServerID(n.cfg.NodeID) {
			was = string(s.Address)
		}
	}
	switch {
	case was == "" || was == addr:
		return false, nil
	case n.SoleVoter():
		return true, nil
	}
	return false, movedError(n.cfg.Dir, n.cfg.NodeID, "its record of the membership", was, addr)
}

// movedError refuses to restart node id of data dir dir at raft address
// addr, where by (the members, or the node's record of them) has it at
// was.
func movedError(dir, id, by, was, addr string) error {
	return fmt.Errorf("cluster: data dir %s holds node %s, at raft address %s by %s, not %s: start it with --raft-addr %s (or, behind a proxy that forwards %s here, --raft-advertise %s), or move it with RAFT REMOVE %s on a member and --join from an empty --dir",
		dir, id, was, by, addr, was, was, was, id)
}

// moveSelf records addr as this node's raft address in the membership,
// on the cluster's only voter restarted at another address: raft changes
// a member's address only by a change of the membership (an AddVoter of
// the same ID). A failure is logged: the node serves either way, only
// the address it lists for itself is stale.
func (n *Node) moveSelf(addr string) {
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.LeaderWait)
	defer cancel()
	err := n.withLeader(ctx, func(_ string, self bool) error {
		if !self {
			return ErrNotLeader
		}
		return n.raftWait(ctx, func(timeout time.Duration) raft.Future {
			return n.raft.AddVoter(raft.ServerID(n.cfg.NodeID), raft.ServerAddress(addr), 0, timeout)
		})
	})
	if err != nil {
		n.log.Warn("could not record this node's new raft address in the membership", "addr", addr, "error", err)
	}
}

// standNow has a node that is its cluster's only voter stand for election
// at once, where raft would first wait out a heartbeat timeout (300-600 ms
// with the defaults) for a leader that cannot exist without this node's
// vote. Shortening the heartbeat timeout makes raft re-arm a follower's
// timer to fire now, and a follower that never heard from a leader then
// stands; the configured timeout is restored at once. A timeout that
// cannot be shortened (it equals LeaderLeaseTimeout) is left as it is.
func (n *Node) standNow() error {
	rc := n.raft.ReloadableConfig()
	if rc.HeartbeatTimeout <= n.cfg.LeaderLeaseTimeout {
		return nil
	}
	shorter := rc
	shorter.HeartbeatTimeout = n.cfg.LeaderLeaseTimeout
	if err := n.raft.ReloadConfig(shorter); err != nil {
		return err
	}
	return n.raft.ReloadConfig(rc)
}

// joinTimeout bounds the wait for the cluster a node joins to add it.
const joinTimeout = 30 * time.Second

// join asks the member at cfg.Join to add this node, at raft address
// addr, as a voter. A member that already has this node at addr (a node
// that lost its state and rejoins) counts as success.
func (n *Node) join(addr string) error {
	if n.peers == nil {
		return errors.New("cluster: joining needs the TCP network")
	}
	if SameEndpoint(n.cfg.Join, addr) {
		return fmt.Errorf("cluster: --join %s is this node's own raft address: name a member's client port", n.cfg.Join)
	}
	ctx, cancel := context.WithTimeout(context.Background(), joinTimeout)
	defer cancel()
	member := n.clientPortPeers()
	var info map[string]string
	err := retryUnsent(ctx, func() (err error) {
		info, err = member.Info(ctx, n.cfg.Join)
		return err
	})
	if err == nil {
		if theirs, ok := info["tls_cluster"]; ok && (theirs == "1") != (n.cfg.TLS != nil) {
			return fmt.Errorf("cluster: --join %s: its cluster's nodes have --tls-cluster %s, this node %s: every member needs the same", n.cfg.Join, yesNo(theirs == "1"), yesNo(n.cfg.TLS != nil))
		}
		err = retryUnsent(ctx, func() error { return member.AddVoter(ctx, n.cfg.Join, n.cfg.NodeID, addr, true) })
	}
	var re *RemoteError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &re) && re.Reply == alreadyMember(n.cfg.NodeID, addr).(*replyError).reply:
		return nil
	case errors.As(err, &re) && strings.HasPrefix(re.Reply, "ERR unknown command"):
		return fmt.Errorf("cluster: --join %s is not a presenced node (it replied %q)", n.cfg.Join, re.Reply)
	case errors.Is(err, errPassword), errors.As(err, &re) && isAuthRefusal(re.Reply):
		return fmt.Errorf("cluster: --join %s refused this node's password: every member needs the same --requirepass (%v)", n.cfg.Join, err)
	}
	return fmt.Errorf("cluster: joining through %s: %w", n.cfg.Join, err)
}

// retryUnsent calls call until it fails otherwise than before sending its
// request (a member still starting, say), a member refuses this node's
// password, or ctx ends.
func retryUnsent(ctx context.Context, call func() error) error {
	err := call()
	for errors.Is(err, errNotSent) && !errors.Is(err, errPassword) && ctx.Err() == nil {
		select {
		case <-time.After(retryPause):
		case <-ctx.Done():
		}
		err = call()
	}
	return err
}

// yesNo is a yes-or-no flag's value.
func yesNo(on bool) string {
	if on {
		return "yes"
	}
	return "no"
}

// clientPortPeers calls on the member at cfg.Join, a client port, which
// serves plain TCP whether or not the raft addresses use TLS.
func (n *Node) clientPortPeers() Peers {
	if p, ok := n.peers.(*RESPPeers); ok && p.sec != nil {
		return NewRESPPeers(n.cfg.Password, nil)
	}
	return n.peers
}

// checkJoined refuses to restart a node whose data dir holds a cluster
// that the member at cfg.Join is not part of: the member answers, and
// does not list this node at addr. It says so when the member lists the
// node at another address, or when the node was removed from the cluster
// (its own latest configuration leaves it out). A member that does not
// answer (the whole cluster restarting, say) is not evidence either way.
func (n *Node) checkJoined(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.LeaderWait)
	defer cancel()
	members, err := n.clientPortPeers().Members(ctx, n.cfg.Join)
	if err != nil {
		n.log.Warn("could not check the membership of the cluster to join", "join", n.cfg.Join, "error", err)
		return nil
	}
	var ids []string
	for _, m := range members {
		switch {
		case m.ID == n.cfg.NodeID && m.Address == addr:
			return nil
		case m.ID == n.cfg.NodeID:
			return movedError(n.cfg.Dir, n.cfg.NodeID, "the members of --join "+n.cfg.Join, m.Address, addr)
		}
		ids = append(ids, m.ID+"@"+m.Address)
	}
	if n.removed() {
		return fmt.Errorf("cluster: data dir %s holds node %s, which RAFT REMOVE took out of the cluster of --join %s: to add it back, start it without --join and send RAFT ADD %s %s to a member; or join it anew from an empty --dir",
			n.cfg.Dir, n.cfg.NodeID, n.cfg.Join, n.cfg.NodeID, addr)
	}
	return fmt.Errorf("cluster: data dir %s belongs to another cluster than --join %s, whose members are %s: a node joins from an empty --dir, and takes the cluster's data",
		n.cfg.Dir, n.cfg.Join, strings.Join(ids, ", "))
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

// openStores opens raft's log, stable and snapshot stores, the latter
// wrapped to check each snapshot stored against the log (see
// divergent.go) and to ship the Attachment if there is one.
func (n *Node) openStores() (raft.LogStore, raft.StableStore, raft.SnapshotStore, error) {
	logs, stable, snaps, err := n.openRaftStores()
	if err != nil {
		return nil, nil, nil, err
	}
	snaps = watchedSnapshots{snaps, n.logWrites, n.log}
	if n.cfg.Attachment == nil {
		return logs, stable, snaps, nil
	}
	leading := func() bool { return n.raft.State() == raft.Leader }
	return logs, stable, attachedSnapshots{snaps, n.cfg.Attachment, &n.attaching, leading}, nil
}

// openRaftStores opens raft's log, stable and snapshot stores: in Dir
// with AppendOnly; without, the log and snapshots in memory and the
// stable store as openVoteStore says.
func (n *Node) openRaftStores() (raft.LogStore, raft.StableStore, raft.SnapshotStore, error) {
	if !n.cfg.AppendOnly {
		mem := raft.NewInmemStore()
		n.logWrites = &timedLogs{LogStore: memLogs{mem}, written: n.cfg.LogWritten}
		stable, err := n.openVoteStore(mem)
		if err != nil {
			return nil, nil, nil, err
		}
		n.stable = stable
		n.fsm.membership = n.noteMembership
		return n.logWrites, stable, newMemSnapshots(), nil
	}
	if err := n.claimDataDir(); err != nil {
		return nil, nil, nil, err
	}
	path := filepath.Join(n.cfg.Dir, "raft.db")
	bolt, err := openBolt(raftboltdb.Options{
		Path: path,
		// The log grows and is compacted in runs of whole pages: a free
		// list of runs (hashmap) is a fraction of the size of one of
		// pages, and not writing it at each commit saves page writes;
		// bbolt rebuilds it when it opens the file.
		BoltOptions: &bbolt.Options{Timeout: lockTimeout, FreelistType: bbolt.FreelistMapType, NoFreelistSync: true},
		NoSync:      n.cfg.AppendFsync != FsyncAlways,
	})
	if errors.Is(err, bbolt.ErrTimeout) {
		return nil, nil, nil, fmt.Errorf("cluster: raft log %s is locked by another process", path)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("cluster: opening raft log %s: %w", path, err)
	}
	n.bolt = bolt
	n.logWrites = &timedLogs{LogStore: bolt, written: n.cfg.LogWritten}
	logs, err := raft.NewLogCache(logCacheSize, n.logWrites)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("cluster: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(n.cfg.Dir, snapshotsRetained, n.log)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("cluster: opening snapshots in %s: %w", n.cfg.Dir, err)
	}
	snapIndex, snapTerm, err := verifySnapshot(snaps, n.cfg.Dir)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := verifyLog(bolt, snapIndex, path); err != nil {
		return nil, nil, nil, err
	}
	dropped, err := dropDivergentLog(bolt, snapIndex, snapTerm)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("cluster: raft log %s: %w", path, err)
	}
	if dropped > 0 {
		n.log.Warn("dropped log entries that diverge from the newest snapshot", "from", snapIndex, "entries", dropped, "snapshot-term", snapTerm)
	}
	return logs, bolt, snaps, nil
}

// openBolt opens a raft-boltdb file. bbolt panics on some damaged files
// instead of returning an error: that becomes an error too.
func openBolt(opts raftboltdb.Options) (store *raftboltdb.BoltStore, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cluster: %s is damaged, refusing to start: %v", opts.Path, r)
		}
	}()
	return raftboltdb.New(opts)
}

// verifySnapshot checks the checksums of the newest snapshot in dir and
// returns the index and term of the last entry it holds (0 without a
// snapshot). Raft would fall back to an older snapshot, whose log may be
// compacted away: a node refuses to start instead.
func verifySnapshot(snaps *raft.FileSnapshotStore, dir string) (index, term uint64, err error) {
	list, err := snaps.List()
	if err != nil {
		return 0, 0, fmt.Errorf("cluster: listing snapshots in %s: %w", dir, err)
	}
	if len(list) == 0 {
		return 0, 0, nil
	}
	path := filepath.Join(dir, "snapshots", list[0].ID, "state.bin")
	_, rc, err := snaps.Open(list[0].ID)
	if err == nil {
		br := bufio.NewReader(rc)
		if _, _, _, err = readFrameHeader(br); err == nil {
			var h [snapshotHeaderLen]byte
			if _, err = io.ReadFull(br, h[:]); err == nil {
				_, err = decodeSnapshotHeader(h)
			}
		}
		rc.Close()
	}
	if err != nil {
		return 0, 0, fmt.Errorf("cluster: snapshot %s is damaged, refusing to start without it: %w", path, err)
	}
	return list[0].Index, list[0].Term, nil
}

// verifyLog checks the index of every entry in the log at path, and the
// checksum and version of every entry of commands, so that a damaged log
// stops the node at start rather than being skipped when replayed (it
// leaves decoding the commands to the replay, which would take as long
// again). The entries after snapIndex, the newest snapshot's, are the
// ones replayed, and must all be there. Up to it the log may lack runs
// of entries: a follower that installed a snapshot keeps what it had of
// the log before it, and appends the entries after it (raft never reads
// the gap, and its stores need not be contiguous).
func verifyLog(logs raft.LogStore, snapIndex uint64, path string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cluster: raft log %s is damaged, refusing to start: %v", path, r)
		}
	}()
	first, err := logs.FirstIndex()
	if err != nil {
		return fmt.Errorf("cluster: raft log %s: %w", path, err)
	}
	last, err := logs.LastIndex()
	if err != nil {
		return fmt.Errorf("cluster: raft log %s: %w", path, err)
	}
	for i := first; i <= last && i > 0; i++ {
		var l raft.Log
		err := logs.GetLog(i, &l)
		if errors.Is(err, raft.ErrLogNotFound) && i <= snapIndex {
			i = pastGap(logs, i, min(snapIndex+1, last)) - 1
			continue
		}
		if err != nil {
			return fmt.Errorf("cluster: raft log %s: entry %d: %w", path, i, err)
		}
		if l.Index != i {
			// A page of an older commit, where this one's never
			// reached the disk.
			return fmt.Errorf("cluster: raft log %s is damaged at entry %d, refusing to start: it holds entry %d", path, i, l.Index)
		}
		if l.Type != raft.LogCommand {
			continue
		}
		if _, err := checkEntry(l.Data); err != nil {
			return fmt.Errorf("cluster: raft log %s is damaged at entry %d, refusing to start: %w", path, i, err)
		}
	}
	return nil
}

// pastGap returns the first index after the run of missing entries
// that starts at i, looking no further than limit (which it returns if it
// gets there). It steps ahead in doubling strides, then bisects the last
// one, so a gap of any length costs a few dozen lookups. Should the
// strides step over entries that another gap follows, those go
// unchecked: they are older than the snapshot, and never replayed here.
func pastGap(logs raft.LogStore, i, limit uint64) uint64 {
	has := func(j uint64) bool {
		var l raft.Log
		return !errors.Is(logs.GetLog(j, &l), raft.ErrLogNotFound)
	}
	missing, found := i, limit // missing lacks its entry; found has it, or is limit
	for stride := uint64(1); missing+stride < limit; stride *= 2 {
		if has(missing + stride) {
			found = missing + stride
			break
		}
		missing += stride
	}
	between := int(found - missing - 1)
	return missing + 1 + uint64(sort.Search(between, func(k int) bool { return has(missing + 1 + uint64(k)) }))
}

// nodeIDFile names, in a data dir, the file that says which node the
// dir's raft state belongs to.
const nodeIDFile = "node-id"

// claimDataDir creates Dir if it does not exist and claims it for this
// node (see claimDir).
func (n *Node) claimDataDir() error {
	if err := os.MkdirAll(n.cfg.Dir, 0o755); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	return claimDir(n.cfg.Dir, n.cfg.NodeID)
}

// claimDir records in dir that it holds node id's state, or refuses a dir
// that holds another node's.
func claimDir(dir, id string) error {
	path := filepath.Join(dir, nodeIDFile)
	owner, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.WriteFile(path, []byte(id+"\n"), 0o644); err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("cluster: %w", err)
	case strings.TrimSpace(string(owner)) != id:
		return fmt.Errorf("cluster: data dir %s holds node %q's state, not node %q's (see %s)",
			dir, strings.TrimSpace(string(owner)), id, path)
	}
	return nil
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
			case o := <-ch:
				n.leaders.advance(n.leaders.get() + 1)
				if o.Data == raft.Leader {
					n.goFunc(n.becomeReady)
				}
			case <-n.raftDown:
				return
			}
		}
	})
}

// snapshotRetryDelay is the least time between a snapshot that failed
// to compact the log and the next try: Redis's wait before it retries a
// failed background save.
const snapshotRetryDelay = 5 * time.Second

// compactLoop takes a snapshot, which compacts the log, whenever the
// entries applied since the last one exceed SnapshotBytes. After one
// fails (a full disk, say) it waits snapshotRetryDelay before the next:
// the entries applied meanwhile each make one due, and each try writes
// the whole state.
func (n *Node) compactLoop() {
	for {
		select {
		case <-n.quit:
			return
		case <-n.fsm.due:
		}
		err := n.raft.Snapshot().Error()
		if err == nil || errors.Is(err, raft.ErrNothingNewToSnapshot) {
			continue
		}
		n.log.Warn("snapshot to compact the log failed", "error", err, "retry-in", snapshotRetryDelay)
		select {
		case <-n.quit:
			return
		case <-time.After(snapshotRetryDelay):
		}
	}
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
	if n.relays != nil {
		n.relays.close()
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
	if c, ok := n.stable.(io.Closer); ok {
		err = errors.Join(err, c.Close())
	}
	if n.serial != nil {
		err = errors.Join(err, n.serial.Close())
	}
	if p, ok := n.peers.(*RESPPeers); ok && n.mux != nil {
		p.Close()
	}
	return err
}

// Apply commits cmds as one atomic batch through the raft log and appends
// their replies to out (which must not be nil) once the batch is applied.
// On a follower it forwards the batch to the leader. While no leader is
// reachable it retries for up to Config.LeaderWait. It implements the
// server's Applier. Errors: ErrNoLeader, ErrNotLeader, ErrRemoved and
// ErrClosed (not applied), a *TooLargeError, *LogWriteError or
// *PasswordError (not applied), ErrUnknownOutcome (maybe applied), a
// *RemoteError relayed from the leader, or an error of a corrupted entry.
func (n *Node) Apply(cmds []store.Command, out *store.Replies) error {
	if len(cmds) == 0 {
		return nil
	}
	if n.closed.Load() {
		return ErrClosed
	}
	if n.raft.State() == raft.Leader {
		// The common case, without the retry loop's timer.
		if err := n.batch.apply(cmds, out, true); err != ErrNotLeader {
			return err
		}
	} else if err := n.checkBatchSize(batchSize(cmds)); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.LeaderWait)
	defer cancel()
	return n.withLeader(ctx, func(addr string, self bool) error {
		if self {
			return n.batch.apply(cmds, out, true)
		}
		if n.peers == nil {
			return ErrNotLeader
		}
		return n.peers.Forward(ctx, addr, cmds, out)
	})
}

// checkBatchSize refuses a batch of writes whose encoding may take more
// than Config.MaxBatchBytes, unless this node is the only voter: with no
// other voter, no lease waits for anyone while the entry is written.
func (n *Node) checkBatchSize(size int) error {
	if size <= n.cfg.MaxBatchBytes || n.SoleVoter() {
		return nil
	}
	return &TooLargeError{size, n.cfg.MaxBatchBytes}
}

// ApplyLocal is Apply without forwarding: on a node that does not lead it
// fails with ErrNotLeader. A node serves other nodes' forwarded writes
// with it, so that a write is forwarded at most once; their size was
// checked where they came from (a call forwards batches up to
// Config.MaxBatchBytes together, see RESPPeers.Forward).
func (n *Node) ApplyLocal(cmds []store.Command, out *store.Replies) error {
	if len(cmds) == 0 {
		return nil
	}
	if n.closed.Load() {
		return ErrClosed
	}
	if n.raft.State() != raft.Leader {
		return ErrNotLeader
	}
	return n.batch.apply(cmds, out, false)
}

// Tick commits an empty entry, which carries the leader's clock, and waits
// until this node has applied it: the store's time then reaches the
// leader's present, where a quiet leader, which proposes no ticks while
// nothing is due (see StateMachine.Due), leaves it behind. A history query
// of a recent time calls it. On a follower it asks the leader (RAFT TICK).
// Errors are Apply's and ReadBarrier's.
func (n *Node) Tick(ctx context.Context) error {
	if n.closed.Load() {
		return ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.LeaderWait)
	defer cancel()
	return n.withLeader(ctx, func(addr string, self bool) error {
		if self {
			_, err := n.TickLocal()
			return err
		}
		if n.peers == nil {
			return ErrNotLeader
		}
		index, err := n.peers.Tick(ctx, addr)
		if err != nil {
			return err
		}
		if n.fsm.applied.wait(ctx, index) != nil {
			return n.logFailure(ErrBehind)
		}
		return nil
	})
}

// TickLocal is Tick without asking another node: on a node that does not
// lead it fails with ErrNotLeader. It returns an index at or after the
// entry's: the commit index, since the applied index may not count the
// entry yet when its caller is answered (see proposal.apply).
func (n *Node) TickLocal() (uint64, error) {
	if n.closed.Load() {
		return 0, ErrClosed
	}
	if n.raft.State() != raft.Leader {
		return 0, ErrNotLeader
	}
	err := n.batch.apply(nil, new(store.Replies), false)
	return n.raft.CommitIndex(), err
}

// logFailure returns err, or, while this node's last write to its raft
// log failed (its disk is full, say), an error that says so: such a node
// can neither lead (raft steps a leader down when its log write fails) nor
// keep up as a follower, which is why err happened.
func (n *Node) logFailure(err error) error {
	failed := n.LogFailure()
	if failed == nil {
		return err
	}
	return logWriteError(err, failed)
}

// LogFailure returns the error of the latest write to this node's raft
// log if it failed (a full disk, say), nil once one succeeds.
func (n *Node) LogFailure() error { return n.logWrites.failure() }

// removed reports whether this node's latest configuration (committed or
// not) lists members but not this node: RAFT REMOVE took it out. A node
// that has not joined yet knows no members.
func (n *Node) removed() bool {
	servers := n.raft.GetConfiguration().Configuration().Servers
	for _, s := range servers {
		if s.ID == raft.ServerID(n.cfg.NodeID) {
			return false
		}
	}
	return len(servers) > 0
}

// retryPause bounds how long a call that found no usable leader waits for
// news of one before it tries again.
const retryPause = 50 * time.Millisecond

// withLeader calls call with the leader's raft address, and whether that
// is this node, until it succeeds or fails in a way that retrying cannot
// help, or ctx ends: then a call that never reached a leader fails with
// ErrNoLeader (a *LogWriteError while this node cannot write its log). It
// fails at once with a *PasswordError when the leader refuses this node's
// password, and, on a node removed from the cluster, with ErrRemoved while
// no leader is known.
func (n *Node) withLeader(ctx context.Context, call func(addr string, self bool) error) error {
	for {
		seen := n.leaders.get()
		err := ErrNoLeader
		if addr, id := n.Leader(); id != "" {
			err = call(addr, id == n.cfg.NodeID)
			if errors.Is(err, errPassword) {
				return &PasswordError{From: n.RaftAddr(), To: addr}
			}
		} else if n.removed() {
			return ErrRemoved
		}
		if !errors.Is(err, errNotSent) && err != ErrNotLeader && err != ErrNoLeader {
			return err
		}
		wait, cancel := context.WithTimeout(ctx, retryPause)
		n.leaders.wait(wait, seen+1)
		cancel()
		if ctx.Err() != nil || n.closed.Load() {
			return n.logFailure(ErrNoLeader)
		}
	}
}

// becomeReady commits an entry in the term this node just started to
// lead, which commits every entry before it: from then on its commit
// index is a valid read index.
func (n *Node) becomeReady() {
	term := n.raft.CurrentTerm()
	var out store.Replies
	if n.batch.apply(nil, &out, false) == nil && n.raft.CurrentTerm() == term {
		n.ready.advance(term)
	}
}

// ReadIndex returns, on the leader, an index such that the store reflects
// every write acknowledged before the call once it has applied the index:
// the index applied once an entry proposed after the call has committed,
// which confirms that a majority still follows this node (see
// leaderReadIndex). Concurrent calls share the confirmation.
func (n *Node) ReadIndex(ctx context.Context) (uint64, error) {
	if n.raft.State() != raft.Leader {
		return 0, ErrNotLeader
	}
	return n.leaderReads.do(ctx)
}

// WriteIndex returns, on any node, an index at or after the log entry of
// every write acknowledged before the call: the read index, confirmed by
// the leader as for a read barrier (see ReadBarrier), within LeaderWait.
func (n *Node) WriteIndex(ctx context.Context) (uint64, error) {
	index, err := n.ownReadIndex(ctx)
	if err != ErrNotLeader {
		return index, err
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.LeaderWait)
	defer cancel()
	return n.followerReads.do(ctx)
}

// ownReadIndex returns a read index found without asking another node to
// confirm it: without asking anyone if this node is the only voter, and
// through this node's own round if it leads. It fails with ErrNotLeader
// when a follower must ask the leader. It sets no timer: the leader's
// round is bounded by LeaderWait and the leader lease.
func (n *Node) ownReadIndex(ctx context.Context) (uint64, error) {
	if i, ok := n.soleVoterReadIndex(); ok {
		return i, nil
	}
	if n.raft.State() == raft.Leader {
		return n.leaderReads.do(ctx)
	}
	return 0, ErrNotLeader
}

// CommitIndex returns this node's raft commit index. On the node that
// committed a write as leader, it is at or after the write's entry once
// the write is answered.
func (n *Node) CommitIndex() uint64 { return n.raft.CommitIndex() }

// leaderReadIndex returns the commit index, once this node has committed
// an entry in its term (so that the index covers every entry committed
// before the term) and a majority of the voters, this node among them,
// has answered after the call that it is in this node's term (see
// confirmTerm), and this node still leads in that term: then no leader of
// a later term can have acknowledged a write before the call, since that
// takes a majority already in the later term, and terms never go back.
//
// It does not use raft's VerifyLeader, which counts the answers to the
// appends and heartbeats of this node that arrive once it is asked,
// including answers to those sent before: after a pause of this node (a
// SIGSTOP, a stalled virtual machine) such answers, waiting in its
// sockets, confirmed a leadership another node had taken meanwhile, and
// a read answered a value older than an acknowledged write.
func (n *Node) leaderReadIndex() (uint64, error) {
	term := n.raft.CurrentTerm()
	if n.raft.State() != raft.Leader {
		return 0, ErrNotLeader
	}
	if n.ready.get() < term {
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.LeaderWait)
		err := n.ready.wait(ctx, term)
		cancel()
		if err != nil {
			return 0, ErrNoLeader
		}
	}
	index := n.raft.CommitIndex()
	if err := n.confirmTerm(term); err != nil {
		return 0, err
	}
	if n.raft.State() != raft.Leader || n.raft.CurrentTerm() != term {
		return 0, ErrNotLeader
	}
	return index, nil
}

// confirmTerm asks the other voters, all at once, for their current term
// (their RAFT INFO), each on a request of its own sent now, and returns
// once a majority of the voters, this node among them, said term; or,
// when too many said another term or did not answer within LeaderWait,
// ErrNotLeader, or a *PasswordError if one refused this node's password.
func (n *Node) confirmTerm(term uint64) error {
	var others []raft.Server
	voters := 0
	for _, s := range n.raft.GetConfiguration().Configuration().Servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		voters++
		if s.ID != raft.ServerID(n.cfg.NodeID) {
			others = append(others, s)
		}
	}
	need := voters / 2 // a majority of the voters, less this node
	if need <= 0 {
		return nil
	}
	peers := n.peers
	if peers == nil {
		return ErrNotLeader
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.LeaderWait)
	defer cancel()
	type answer struct {
		same    bool   // the member is in this term
		refused string // the member's address, if it refused this node's password
	}
	said := make(chan answer, len(others))
	want := strconv.FormatUint(term, 10)
	for _, s := range others {
		go func() {
			info, err := peers.Info(ctx, string(s.Address))
			a := answer{same: err == nil && info["term"] == want}
			if errors.Is(err, errPassword) {
				a.refused = string(s.Address)
			}
			said <- a
		}()
	}
	refused := ""
	for range others {
		a := <-said
		if a.same {
			if need--; need == 0 {
				return nil
			}
		}
		refused = cmp.Or(refused, a.refused)
	}
	if refused != "" {
		return &PasswordError{From: n.RaftAddr(), To: refused}
	}
	return ErrNotLeader
}

// soleVoterReadIndex returns the commit index as a read index, without
// asking anyone, when this node leads a cluster in which it is the only
// voter, as a standalone node does, and reports whether it did. No other
// node can lead then: a leader of a later term needs this node's vote,
// and raft steps down before it grants one, and the configuration can
// only gain a voter through this leader's own log. So a commit index read
// while this node leads, in a term in which it has committed an entry,
// covers every write acknowledged before the read.
func (n *Node) soleVoterReadIndex() (uint64, bool) {
	term := n.raft.CurrentTerm()
	if n.raft.State() != raft.Leader || n.ready.get() < term || !n.SoleVoter() {
		return 0, false
	}
	index := n.raft.CommitIndex()
	if n.raft.State() != raft.Leader || n.raft.CurrentTerm() != term {
		return 0, false
	}
	return index, true
}

// SoleVoter reports whether this node is the only voter of the latest
// configuration raft knows: a standalone node, say, whose commits wait for
// no other node.
func (n *Node) SoleVoter() bool {
	voters := 0
	self := false
	for _, s := range n.raft.GetConfiguration().Configuration().Servers {
		if s.Suffrage == raft.Voter {
			voters++
			self = self || s.ID == raft.ServerID(n.cfg.NodeID)
		}
	}
	return voters == 1 && self
}

func (n *Node) followerReadIndex() (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.LeaderWait)
	defer cancel()
	var index uint64
	err := n.withLeader(ctx, func(addr string, self bool) error {
		var err error
		if self {
			index, err = n.leaderReads.do(ctx)
		} else if n.peers == nil {
			err = ErrNotLeader
		} else {
			index, err = n.peers.ReadIndex(ctx, addr)
			if errors.Is(err, ErrUnknownOutcome) {
				// Asking for a read index changes nothing: ask again.
				err = fmt.Errorf("%w: %v", errNotSent, err)
			}
		}
		return err
	})
	return index, err
}

// ReadBarrier waits until this node's store reflects every write
// acknowledged before the call, by any node: reads after it are
// linearizable. It asks the leader for a read index (this node's own if it
// leads; without asking anyone if it is the only voter) and waits until
// the store has applied it. Concurrent calls share the request to the
// leader. It fails with ErrNoLeader when no leader could be asked, and
// with ErrBehind when the store did not apply the index within
// Config.LeaderWait; with a *LogWriteError for either while this node
// cannot write its raft log.
func (n *Node) ReadBarrier(ctx context.Context) error {
	index, err := n.ownReadIndex(ctx)
	if err == nil && n.fsm.applied.get() >= index {
		return nil // the store has usually applied the index already
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.LeaderWait)
	defer cancel()
	if err == ErrNotLeader {
		index, err = n.followerReads.do(ctx)
	}
	if err != nil {
		// A read changes nothing: whatever went wrong on the way to the
		// leader (a timeout of the shared request, a broken connection),
		// the answer is that no leader could be asked.
		var refused *PasswordError
		switch {
		case errors.As(err, &refused):
		case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrUnknownOutcome):
			return n.logFailure(ErrNoLeader)
		}
		return err
	}
	if err := n.fsm.applied.wait(ctx, index); err != nil {
		return n.logFailure(ErrBehind)
	}
	return nil
}

// PeerListener returns the listener of the RESP connections other nodes
// open to this node's raft address, or nil if Open was given a network.
// The caller serves them: forwarded writes go to ApplyLocal.
func (n *Node) PeerListener() net.Listener {
	if n.mux == nil {
		return nil
	}
	return n.mux.peers
}

// RaftAddr returns the address this node's raft transport listens on.
func (n *Node) RaftAddr() string {
	if n.mux != nil {
		return n.mux.Addr().String()
	}
	return n.cfg.RaftAddr
}

// PeerInfo returns the fields of the RAFT INFO of the member at the raft
// address addr.
func (n *Node) PeerInfo(ctx context.Context, addr string) (map[string]string, error) {
	return n.peers.Info(ctx, addr)
}

// WatchLeader calls f with the raft address and ID of each leader this
// node comes to know of after the one it knows now, in order, until ctx
// ends. A leader it knew, lost and knows again counts again only when
// another one came between.
func (n *Node) WatchLeader(ctx context.Context, f func(addr, id string)) {
	_, last := n.Leader()
	for {
		seen := n.leaders.get()
		if addr, id := n.Leader(); id != "" && id != last {
			last = id
			f(addr, id)
		}
		if err := n.leaders.wait(ctx, seen+1); err != nil {
			return
		}
	}
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

// WaitApplied waits until this node has applied an entry of commands or
// a membership change at index or later. Raft's other entries (a new
// leader's first, barriers) are not applied: waiting for one of their
// indexes returns with the next entry of commands. A new leader commits
// one as soon as it leads (see becomeReady), and presenced proposes no
// barriers: Tick commits an entry of no commands where a barrier would
// be wanted.
func (n *Node) WaitApplied(ctx context.Context, index uint64) error {
	return n.fsm.applied.wait(ctx, index)
}

// Snapshot takes a snapshot of the store now and compacts the log up to
// it (keeping TrailingLogs entries).
func (n *Node) Snapshot() error {
	return n.raftWait(context.Background(), func(time.Duration) raft.Future { return n.raft.Snapshot() })
}

// Checkpoint takes a snapshot of what the store has applied, which
// compacts the log, if the node keeps its log and snapshots on disk and
// applied entries since its last snapshot: started again, the node then
// loads the snapshot and replays no more than the entries that came after
// it (after a start, it counts as applied what was replayed). A server
// takes one as it stops.
func (n *Node) Checkpoint() error {
	if !n.cfg.AppendOnly || !n.fsm.appliedSinceSnapshot() {
		return nil
	}
	return n.Save()
}

// AddVoter adds a voting member to the cluster, through the leader. It
// refuses an ID that cannot name a member (see checkNodeID), an address
// its transport cannot dial (see checkRaftAddr), an ID or an address that
// is already a member's, and a node the leader cannot connect to (see
// checkReachable). joining says that the node asked to be added, as a
// node started with --join on an empty data dir does (RAFT JOIN);
// otherwise the node must answer that it belongs to no cluster (see
// checkNoCluster).
func (n *Node) AddVoter(ctx context.Context, id, addr string, joining bool) error {
	if err := checkNodeID(id); err != nil {
		return err
	}
	if n.mux != nil { // raft's TCP transport, which dials host:port
		if err := checkRaftAddr(addr); err != nil {
			return err
		}
	}
	return n.withLeader(ctx, func(leader string, self bool) error {
		if !self {
			if n.peers == nil {
				return ErrNotLeader
			}
			return n.peers.AddVoter(ctx, leader, id, addr, joining)
		}
		servers, err := n.Members()
		if err != nil {
			return err
		}
		for _, s := range servers {
			switch {
			case s.ID == id:
				return alreadyMember(id, s.Address)
			case s.Address == addr:
				return memberError("address %s is already node %s's", addr, s.ID)
			}
		}
		if err := n.checkReachable(ctx, id, addr); err != nil {
			return err
		}
		if !joining {
			if err := n.checkNoCluster(ctx, id, addr); err != nil {
				return err
			}
		}
		return n.raftWait(ctx, func(timeout time.Duration) raft.Future {
			return n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, timeout)
		})
	})
}

// reachTimeout bounds checkReachable's dial.
const reachTimeout = time.Second

// checkReachable refuses to add a voter that this node, the leader, cannot
// connect to at addr: the voter would count towards every majority from
// the start, and a cluster of one that added it could commit nothing more,
// not even the removal that would undo it, until the voter came up.
func (n *Node) checkReachable(ctx context.Context, id, addr string) error {
	if n.mux == nil {
		return nil // raft's in-memory transport: nothing to dial
	}
	ctx, cancel := context.WithTimeout(ctx, reachTimeout)
	defer cancel()
	nc, err := dialPeer(ctx, addr, n.mux.sec)
	if err != nil {
		return memberError("node %s does not answer at raft address %s (%v): start it first; --join adds it as it starts", id, addr, err)
	}
	nc.Close()
	return nil
}

// checkNoCluster refuses to add, unasked, a node that is not the one id
// names or that belongs to a cluster already: a node started without
// --join bootstraps its own, and raft would set that cluster's log against
// this one's. A node of a later term then takes the leadership with its
// own data, or, if it ignores this cluster, a cluster of one that added
// it has lost its majority. The node must answer RAFT INFO: a node that
// asks to join (RAFT JOIN) does not yet, and holds no state.
func (n *Node) checkNoCluster(ctx context.Context, id, addr string) error {
	if n.peers == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, reachTimeout)
	defer cancel()
	info, err := n.peers.Info(ctx, addr)
	switch {
	case err != nil:
		return memberError("node %s at raft address %s does not answer RAFT INFO (%v): start it first; --join adds it as it starts", id, addr, err)
	case info["node_id"] != id:
		return memberError("the node at raft address %s is %s, not %s", addr, info["node_id"], id)
	}
	for k, v := range info {
		if strings.HasPrefix(k, "member") && strings.HasPrefix(v, "id="+id+",") {
			return memberError("node %s at raft address %s belongs to a cluster already (a node started without --join bootstraps its own): a node joins from an empty --dir, with --join", id, addr)
		}
	}
	return nil
}

// RemoveServer removes a member from the cluster, through the leader. It
// refuses to remove a node that is not a member, and the last voter.
func (n *Node) RemoveServer(ctx context.Context, id string) error {
	return n.withLeader(ctx, func(leader string, self bool) error {
		if !self {
			if n.peers == nil {
				return ErrNotLeader
			}
			return n.peers.RemoveServer(ctx, leader, id)
		}
		servers, err := n.Members()
		if err != nil {
			return err
		}
		voters, found := 0, false
		for _, s := range servers {
			if s.Voter {
				voters++
			}
			found = found || s.ID == id
		}
		switch {
		case !found:
			return memberError("node %s is not a member", id)
		case voters == 1:
			return memberError("node %s is the last voter; a cluster cannot remove it", id)
		case id == n.cfg.NodeID:
			// A leader that removes itself shuts its raft down once the
			// change commits, and may do so before it answers the
			// removal, which would then wait forever: it hands the
			// leadership over, and the new leader removes it.
			if err := n.Handover(ctx, ""); err != nil {
				return err
			}
			return ErrNotLeader // withLeader asks the new leader
		}
		return n.raftWait(ctx, func(timeout time.Duration) raft.Future {
			return n.raft.RemoveServer(raft.ServerID(id), 0, timeout)
		})
	})
}

// Handover hands the leadership to the voter id, or, when id is empty, to
// the other voter furthest ahead in the log, and returns once this node
// has stepped down. raft first brings the target's log up to this
// node's, so no committed write is lost, then has it stand for election
// at once rather than after its election timeout: writes wait for the
// hand-over, a few round trips, not for a failover. Meanwhile this node
// refuses writes with ErrNotLeader, which followers retry. A transfer
// already under way is waited out before this one is asked. Errors:
// ErrNotLeader on a node that does not lead, ErrAlone when no other voter
// exists, a member error when id is not another voter, raft's error when
// the target did not take over within the election timeout (this node
// then leads on), and ctx's error when ctx ended first (raft goes on with
// the transfer until then).
func (n *Node) Handover(ctx context.Context, id string) error {
	if !n.IsLeader() {
		return ErrNotLeader
	}
	servers, err := n.Members()
	if err != nil {
		return err
	}
	var target *Member
	others := 0
	for i, s := range servers {
		if !s.Voter || s.ID == n.cfg.NodeID {
			continue
		}
		others++
		if s.ID == id {
			target = &servers[i]
		}
	}
	switch {
	case others == 0:
		return ErrAlone
	case id != "" && target == nil:
		return memberError("node %s is not another voter", id)
	}
	for {
		err := n.transfer(ctx, target)
		if !errors.Is(err, raft.ErrLeadershipTransferInProgress) {
			return err
		}
		// Another transfer is under way, or raft has not yet cleared its
		// note of one that ended: a moment after answering a transfer, so
		// a node that hands over and soon leads again may still hold it.
		select {
		case <-time.After(transferRetry):
		case <-ctx.Done():
			return ctx.Err()
		}
		if !n.IsLeader() {
			return ErrNotLeader
		}
	}
}

// transferRetry is how long Handover waits before it asks raft again
// when raft refused with a transfer in progress.
const transferRetry = 5 * time.Millisecond

// transfer asks raft to hand the leadership to target, or, when it is
// nil, to the voter furthest ahead, and waits for the answer.
func (n *Node) transfer(ctx context.Context, target *Member) error {
	var f raft.Future
	if target == nil {
		f = n.raft.LeadershipTransfer()
	} else {
		f = n.raft.LeadershipTransferToServer(raft.ServerID(target.ID), raft.ServerAddress(target.Address))
	}
	// A transfer takes no timeout of its own but ends, one way or the
	// other, within the election timeout or as raft shuts down; ctx may
	// end the wait sooner, leaving raft to finish it.
	done := make(chan error, 1)
	go func() { done <- raftError(f.Error()) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Failover has the leader hand its leadership over as Handover(ctx, to)
// does, from any node: a follower asks the leader, which answers once
// another node leads. to names the voter to take over, "" the one
// furthest ahead in the log. Errors: Handover's, or on a follower the
// leader's refusal, and ErrNoLeader when no leader could be asked before
// ctx ended.
func (n *Node) Failover(ctx context.Context, to string) error {
	toAddr := ""
	if to != "" {
		members, err := n.Members()
		if err != nil {
			return err
		}
		for _, m := range members {
			if m.ID == to {
				toAddr = m.Address
			}
		}
		if toAddr == "" {
			return memberError("node %s is not a member", to)
		}
	}
	return n.withLeader(ctx, func(leader string, self bool) error {
		if self {
			return n.Handover(ctx, to)
		}
		if n.peers == nil {
			return ErrNotLeader
		}
		return n.peers.Handover(ctx, leader, toAddr)
	})
}

// alreadyMember is the refusal to add node id, a member at addr.
func alreadyMember(id, addr string) error {
	return memberError("node %s is already a member, at %s", id, addr)
}

// Digest returns the index of the latest entry applied to the store and
// the store's digest after it, taken together. It reads the whole state
// (a copy of it, so writes go on meanwhile): Applied is the cheap way to
// the index alone.
func (n *Node) Digest() (applied, digest uint64) {
	d := n.fsm.digest()
	return d.Applied, d.Digest
}

// StateDigest is Digest with the digest's parts, which tell apart, on
// replicas that disagree, a difference in the data from one in WATCH's
// versions.
func (n *Node) StateDigest() StateDigest { return n.fsm.digest() }

// Applied returns the index of the latest entry applied to the store.
func (n *Node) Applied() uint64 { return n.fsm.applied.get() }

// FollowerStatus is what a leader learns of a follower by asking it.
type FollowerStatus struct {
	Member
	// Applied is the index of the latest entry the follower applied.
	Applied uint64
	// Err says why the follower could not be asked.
	Err error
}

// Followers asks every other member, concurrently, how far it applied the
// log.
func (n *Node) Followers(ctx context.Context) ([]FollowerStatus, error) {
	members, err := n.Members()
	if err != nil {
		return nil, err
	}
	var out []FollowerStatus
	for _, m := range members {
		if m.ID != n.cfg.NodeID {
			out = append(out, FollowerStatus{Member: m, Err: errNotSent})
		}
	}
	if n.peers == nil {
		return out, nil
	}
	var wg sync.WaitGroup
	for i := range out {
		wg.Go(func() { out[i].Applied, out[i].Err = n.peers.Applied(ctx, out[i].Address) })
	}
	wg.Wait()
	return out, nil
}

// Config returns the node's configuration.
func (n *Node) Config() Config { return n.cfg }

// Member is a member of the cluster.
type Member struct {
	ID, Address string
	Voter       bool
}

// Members returns the cluster's membership as this node knows it.
func (n *Node) Members() ([]Member, error) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, fmt.Errorf("cluster: membership: %w", err)
	}
	var out []Member
	for _, s := range f.Configuration().Servers {
		out = append(out, Member{ID: string(s.ID), Address: string(s.Address), Voter: s.Suffrage == raft.Voter})
	}
	return out, nil
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
	return raftError(op(timeout).Error())
}

// raftError is err, raft's answer to an operation, with raft's refusals
// from a node that does not lead or has shut down turned into this
// package's.
func raftError(err error) error {
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
	// AppliedIndex is the index of the last entry applied to the store
	// (raft's own applied index runs ahead of it: raft counts an entry once
	// it has handed it to the state machine).
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
	// Persisting is the number of snapshots of this node's state being
	// written: while one is, the store keeps a copy of what writes change.
	Persisting int64
	// LogWrites counts the writes to this node's raft log (each one or
	// more entries, and with --appendfsync always flushed before raft goes
	// on), and LogWriteTime is the time they took in all.
	LogWrites    uint64
	LogWriteTime time.Duration
	// EntriesCommitted counts the entries this node proposed that it
	// applied, ticks included, and EntryTime is the time they took in all
	// from being handed to raft to being applied: the leader's log write,
	// the followers' (with more than one node) and the hand-offs between.
	EntriesCommitted uint64
	EntryTime        time.Duration
	// Relayed counts the commands Relay sent that a member answered, and
	// RelayDropped those a member missed.
	Relayed, RelayDropped uint64
}

// Stats returns the node's current statistics.
func (n *Node) Stats() Stats {
	addr, id := n.Leader()
	st := Stats{
		State:        n.raft.State().String(),
		LeaderAddr:   addr,
		LeaderID:     id,
		Term:         n.raft.CurrentTerm(),
		LastIndex:    n.raft.LastIndex(),
		CommitIndex:  n.raft.CommitIndex(),
		AppliedIndex: n.fsm.applied.get(),
		Entries:      n.batch.entries.Load(),
		Batches:      n.batch.batches.Load(),
		Commands:     n.batch.commands.Load(),
		Queued:       n.batch.queued(),
		Restores:     n.fsm.restores.Load(),
		Persisting:   n.fsm.persisting.Load(),
	}
	st.LogWrites, st.LogWriteTime = n.logWrites.stats()
	st.EntriesCommitted, st.EntryTime = n.batch.committed()
	if n.relays != nil {
		st.Relayed, st.RelayDropped = n.relays.relayed.Load(), n.relays.dropped.Load()
	}
	return st
}
