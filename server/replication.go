package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/presenced/presenced/cluster"
	"github.com/presenced/presenced/proto"
)

// followerQueryTimeout bounds how long ROLE and INFO replication wait for
// the followers' answers on the leader.
const followerQueryTimeout = 500 * time.Millisecond

func readonly(c *client, _ [][]byte) {
	c.readonly = true
	c.out.OK()
}

func readwrite(c *client, _ [][]byte) {
	c.readonly = false
	c.out.OK()
}

// role answers as Redis does: on the leader "master", the applied index
// as the replication offset, and each follower's raft address (which
// serves RESP too) with its applied index; on a follower "slave" and the
// leader's raft address.
func role(c *client, _ [][]byte) {
	node := c.s.node
	applied := node.Applied()
	if node.IsLeader() {
		followers := c.s.followers()
		c.out.Array(3)
		c.out.BulkString("master")
		c.out.Int(int64(applied))
		c.out.Array(len(followers))
		for _, f := range followers {
			host, port := splitAddr(f.Address)
			c.out.Array(3)
			c.out.BulkString(host)
			c.out.BulkString(port)
			c.out.BulkString(strconv.FormatUint(f.Applied, 10))
		}
		return
	}
	addr, _ := node.Leader()
	host, port := splitAddr(addr)
	p, _ := strconv.Atoi(port)
	state := "connected"
	if addr == "" {
		state = "connect"
	}
	c.out.Array(5)
	c.out.BulkString("slave")
	c.out.BulkString(host)
	c.out.Int(int64(p))
	c.out.BulkString(state)
	c.out.Int(int64(applied))
}

// followers asks the followers how far they applied, within a bound.
func (s *Server) followers() []cluster.FollowerStatus {
	ctx, cancel := context.WithTimeout(context.Background(), followerQueryTimeout)
	defer cancel()
	f, _ := s.node.Followers(ctx)
	return f
}

func splitAddr(addr string) (host, port string) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, "0"
	}
	return host, port
}

func raftCommand(c *client, args [][]byte) {
	sub := c.subcommand(args)
	if sub == nil {
		return
	}
	node := c.s.node
	ctx := context.Background()
	switch sub.Name {
	case "help":
		c.help("RAFT",
			"ADD <node-id> <raft-address>", "    Add a node to the cluster as a voter: a running node that belongs to no cluster.",
			"JOIN <node-id> <raft-address>", "    Add a node that asks to join as a voter (what --join sends).",
			"REMOVE <node-id>", "    Remove a node from the cluster.",
			"INFO", "    Show this node's raft state and the cluster's members.",
			"DIGEST", "    Show the index of the latest entry applied here and a checksum of the state",
			"    after it, equal on nodes at the same index (reads a copy of the whole state).",
			"SNAPSHOT", "    Take a snapshot of this node's state now and compact its raft log.",
			"READINDEX", "    On the leader: confirm leadership, return the commit index.",
			"TICK", "    On the leader: commit an empty entry that carries the leader's clock, return",
			"    an index at or after it.",
			"RELAY <node-id> <incarnation> <sequence>",
			"    Open a call of another member's relayed PUBLISH and SPUBLISH commands, which",
			"    deliver their messages while no later call of that member has opened.")
	case "add", "join":
		c.okOrError(node.AddVoter(ctx, string(args[2]), string(args[3]), sub.Name == "join"))
	case "remove":
		c.okOrError(node.RemoveServer(ctx, string(args[2])))
	case "snapshot":
		c.okOrError(node.Snapshot())
	case "readindex":
		index, err := node.ReadIndex(ctx)
		if err != nil {
			c.out.Error(replyError(err))
			return
		}
		c.out.Int(int64(index))
	case "tick":
		index, err := node.TickLocal()
		if err != nil {
			c.out.Error(replyError(err))
			return
		}
		c.out.Int(int64(index))
	case "relay":
		relayCommand(c, args)
	case "info":
		c.out.Verbatim([]byte(c.s.raftInfo()))
	case "digest":
		d := node.StateDigest()
		c.out.Verbatim(fmt.Appendf(nil, "applied_index:%d\r\ndigest:%016x\r\ndata_digest:%016x\r\napplies:%d\r\n",
			d.Applied, d.Digest, d.Data, d.Applies))
	}
}

func (c *client) okOrError(err error) {
	if err != nil {
		c.out.Error(replyError(err))
		return
	}
	c.out.OK()
}

// raftInfo describes the server's node in INFO's format.
func (s *Server) raftInfo() string {
	var b strings.Builder
	node := s.node
	st := node.Stats()
	cfg := node.Config()
	fmt.Fprintf(&b, "node_id:%s\r\nraft_addr:%s\r\nclient_addr:%s\r\ntls_client_addr:%s\r\ntls_cluster:%d\r\nstate:%s\r\nterm:%d\r\nleader_id:%s\r\nleader_addr:%s\r\n",
		cfg.NodeID, node.RaftAddr(), s.clientAddr(), s.tlsClientAddr(), boolInt(cfg.TLS != nil), strings.ToLower(st.State), st.Term, st.LeaderID, st.LeaderAddr)
	fmt.Fprintf(&b, "last_index:%d\r\ncommit_index:%d\r\napplied_index:%d\r\n",
		st.LastIndex, st.CommitIndex, node.Applied())
	fmt.Fprintf(&b, "entries_proposed:%d\r\nbatches_committed:%d\r\ncommands_committed:%d\r\nsnapshots_restored:%d\r\nsnapshot_in_progress:%d\r\ncatching_up:%d\r\n",
		st.Entries, st.Batches, st.Commands, st.Restores, st.Persisting, boolInt(node.CatchingUp()))
	fmt.Fprintf(&b, "log_writes:%d\r\nlog_write_usec:%d\r\nentries_committed:%d\r\nentry_commit_usec:%d\r\n",
		st.LogWrites, st.LogWriteTime.Microseconds(), st.EntriesCommitted, st.EntryTime.Microseconds())
	fmt.Fprintf(&b, "publish_relayed:%d\r\npublish_relay_dropped:%d\r\n", st.Relayed, st.RelayDropped)
	members, _ := node.Members()
	fmt.Fprintf(&b, "members:%d\r\n", len(members))
	for i, m := range members {
		fmt.Fprintf(&b, "member%d:id=%s,addr=%s,voter=%d\r\n", i, m.ID, m.Address, boolInt(m.Voter))
	}
	return b.String()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// infoReplication writes INFO's replication section: Redis's fields
// (role, the leader as master, the followers as slaves with their lag in
// entries) and raft's indexes.
func (s *Server) infoReplication(b *strings.Builder) {
	node := s.node
	st := node.Stats()
	applied := node.Applied()
	b.WriteString("# Replication\r\n")
	if node.IsLeader() {
		followers := s.followers()
		connected := 0
		for _, f := range followers {
			if f.Err == nil {
				connected++
			}
		}
		// Redis counts the replicas connected; the others are listed too,
		// with state offline.
		fmt.Fprintf(b, "role:master\r\nconnected_slaves:%d\r\n", connected)
		for i, f := range followers {
			host, port := splitAddr(f.Address)
			state, lag := "online", int64(st.CommitIndex)-int64(f.Applied)
			if f.Err != nil {
				state, lag = "offline", -1
			}
			fmt.Fprintf(b, "slave%d:ip=%s,port=%s,state=%s,offset=%d,lag=%d,node_id=%s\r\n",
				i, host, port, state, f.Applied, lag, f.ID)
		}
	} else {
		host, port := splitAddr(st.LeaderAddr)
		link := "up"
		if st.LeaderAddr == "" {
			link = "down"
		}
		fmt.Fprintf(b, "role:slave\r\nmaster_host:%s\r\nmaster_port:%s\r\nmaster_link_status:%s\r\nmaster_node_id:%s\r\nslave_repl_offset:%d\r\nconnected_slaves:0\r\n",
			host, port, link, st.LeaderID, applied)
	}
	fmt.Fprintf(b, "master_failover_state:no-failover\r\nmaster_repl_offset:%d\r\nraft_state:%s\r\nraft_term:%d\r\nraft_commit_index:%d\r\nraft_applied_index:%d\r\nraft_last_index:%d\r\n",
		applied, strings.ToLower(st.State), st.Term, st.CommitIndex, applied, st.LastIndex)
}

// failover answers FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms]
// with Redis's checks and error texts, and hands the leadership over (see
// cluster.Node.Handover): to the voter whose raft address, as ROLE gives
// it, is host:port, or to the voter furthest ahead in the log. Unlike
// Redis, which answers OK and then fails over, it answers once another
// node leads, or with the reason it did not; no failover is in progress
// after it answers, so ABORT finds none. TIMEOUT bounds the wait, which
// raft bounds anyway by its election timeout; raft never hands the
// leadership to a node that lacks a committed write, so FORCE changes
// nothing once checked. With --cluster-enabled yes a client is refused
// it, as in Redis Cluster, where CLUSTER FAILOVER hands over (a follower
// asks the leader for that hand-over with FAILOVER).
func failover(c *client, args [][]byte) {
	if c.s.clusterEnabled() && !c.peer {
		c.out.Error("ERR FAILOVER not allowed in cluster mode. Use CLUSTER FAILOVER command instead.")
		return
	}
	if len(args) == 2 && strings.EqualFold(string(args[1]), "abort") {
		c.out.Error("ERR No failover in progress.")
		return
	}
	var timeout, port int64
	var host string
	hasHost, force := false, false
	for j := 1; j < len(args); j++ {
		switch a := string(args[j]); {
		case strings.EqualFold(a, "timeout") && j+1 < len(args) && timeout == 0:
			t, ok := proto.ParseInt(args[j+1])
			switch {
			case !ok:
				c.out.Error(proto.ErrNotInteger)
				return
			case t <= 0:
				c.out.Error("ERR FAILOVER timeout must be greater than 0")
				return
			}
			timeout = t
			j++
		case strings.EqualFold(a, "to") && j+2 < len(args) && !hasHost:
			p, ok := proto.ParseInt(args[j+2])
			if !ok {
				c.out.Error(proto.ErrNotInteger)
				return
			}
			host, port, hasHost = string(args[j+1]), p, true
			j += 2
		case strings.EqualFold(a, "force") && !force:
			force = true
		default:
			c.out.Error(proto.ErrSyntax)
			return
		}
	}
	node := c.s.node
	if !node.IsLeader() {
		c.out.Error(proto.ErrFailoverReplica)
		return
	}
	members, err := node.Members()
	if err != nil {
		c.out.Error(replyError(err))
		return
	}
	others, target := 0, ""
	addr := net.JoinHostPort(host, strconv.FormatInt(port, 10))
	for _, m := range members {
		if m.Voter && m.ID != node.Config().NodeID {
			others++
			if hasHost && m.Address == addr {
				target = m.ID
			}
		}
	}
	switch {
	case others == 0:
		c.out.Error("ERR FAILOVER requires connected replicas.")
		return
	case force && (timeout == 0 || !hasHost):
		c.out.Error("ERR FAILOVER with force option requires both a timeout and target HOST and IP.")
		return
	case hasHost && target == "":
		c.out.Error("ERR FAILOVER target HOST and PORT is not a replica.")
		return
	}
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, millis(timeout))
	}
	defer cancel()
	if err := node.Handover(ctx, target); err != nil {
		c.out.Error(failoverError(err))
		return
	}
	c.out.OK()
}

// replicaof answers REPLICAOF (and SLAVEOF) with the topology it asks
// for, reached by a hand-over of the leadership rather than by copying
// data: NO ONE makes this node the leader, as a promoted replica is the
// master; host port makes the member that serves clients (or raft) there
// the leader, which this node then follows. With --cluster-enabled yes
// it is refused, as in Redis Cluster.
func replicaof(c *client, args [][]byte) {
	s := c.s
	if s.clusterEnabled() {
		c.out.Error("ERR REPLICAOF not allowed in cluster mode.")
		return
	}
	target := s.node.Config().NodeID
	noOne := strings.EqualFold(string(args[1]), "no") && strings.EqualFold(string(args[2]), "one")
	if !noOne {
		port, ok := proto.ParseInt(args[2])
		if !ok || port < 0 || port > 65535 {
			c.out.Error("ERR Invalid master port")
			return
		}
		addr := net.JoinHostPort(string(args[1]), strconv.FormatInt(port, 10))
		ctx, cancel := context.WithTimeout(context.Background(), followerQueryTimeout)
		defer cancel()
		id, ok := s.memberAt(ctx, addr)
		if !ok {
			c.out.Error("ERR " + addr + " is not a member of this node's cluster: presenced's nodes replicate the leader of their own (RAFT ADD adds a node)")
			return
		}
		target = id
	}
	switch _, leader := s.node.Leader(); {
	case leader == target && noOne:
		c.out.OK()
	case leader == target:
		c.out.Simple("OK Already connected to specified master")
	default:
		s.handOver(c, target)
	}
}

// memberAt returns the ID of the member whose client address, TLS client
// address or raft address is addr.
func (s *Server) memberAt(ctx context.Context, addr string) (string, bool) {
	for _, in := range s.otherMembers(ctx, "") {
		if addr == in.addr || addr == in.tlsAddr || addr == in.member.Address {
			return in.member.ID, true
		}
	}
	return "", false
}

// failoverError is FAILOVER's reply when Handover failed with err.
func failoverError(err error) string {
	switch {
	case errors.Is(err, cluster.ErrNotLeader):
		return proto.ErrFailoverReplica
	case errors.Is(err, cluster.ErrAlone):
		return "ERR FAILOVER requires connected replicas."
	case errors.Is(err, context.DeadlineExceeded):
		return "ERR FAILOVER aborted: no other node took over within the timeout"
	}
	return "ERR FAILOVER aborted: " + err.Error()
}

// millis is ms milliseconds, a positive count, or the longest duration
// when there are more.
func millis(ms int64) time.Duration {
	return time.Duration(min(ms, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond
}

// waitPollMax is the longest WAIT sleeps between two counts of the nodes
// that applied the writes it waits for; the first sleeps are shorter.
const waitPollMax = 50 * time.Millisecond

// wait answers WAIT numreplicas timeout with the number of nodes other
// than the leader (Redis's replicas) that applied every write this
// connection made, waiting up to timeout milliseconds (0: with no bound)
// until numreplicas have, as Redis does. A write is acknowledged once a
// majority of the voters has it in their logs; WAIT counts the nodes that
// have also applied it, which reads on them with READONLY then see.
// Inside MULTI it answers at once, and it stops waiting when the client
// closes its connection, the server stops, or CLIENT UNBLOCK ends it.
func wait(c *client, args [][]byte) {
	want, ok := proto.ParseInt(args[1])
	if !ok {
		c.out.Error(proto.ErrNotInteger)
		return
	}
	ms, ok := proto.ParseInt(args[2])
	switch {
	case !ok:
		c.out.Error("ERR timeout is not an integer or out of range")
		return
	case ms < 0:
		c.out.Error("ERR timeout is negative")
		return
	}
	target := c.wrote
	if target == unknownIndex {
		var err error
		if target, err = c.s.node.WriteIndex(context.Background()); err != nil {
			c.out.Error(replyError(err))
			return
		}
	}
	var deadline <-chan time.Time
	if ms > 0 {
		t := time.NewTimer(millis(ms))
		defer t.Stop()
		deadline = t.C
	}
	pause := time.Millisecond
	c.blocked.Store(true)
	unblocked := false
	defer func() {
		if !unblocked && !c.blocked.CompareAndSwap(true, false) {
			<-c.unblock // CLIENT UNBLOCK came as WAIT ended
		}
	}()
	for {
		n := int64(0)
		for _, a := range c.s.replicasApplied() {
			if a >= target {
				n++
			}
		}
		if n >= want || c.inExec {
			c.out.Int(n)
			return
		}
		select {
		case <-deadline:
			c.out.Int(n)
			return
		case <-c.s.quit:
			c.out.Int(n)
			return
		case withError := <-c.unblock:
			unblocked = true
			if withError {
				c.out.Error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
			} else {
				c.out.Int(n)
			}
			return
		case <-time.After(pause):
		}
		if peerClosed(c.nc) {
			c.out.Int(n) // nobody reads it
			return
		}
		pause = min(2*pause, waitPollMax)
	}
}

// replicasApplied returns how far each node other than the leader that
// could be asked applied the log, as this node learns it now: from
// itself, and by asking the others (see cluster.Node.Followers).
func (s *Server) replicasApplied() []uint64 {
	node := s.node
	if node.SoleVoter() {
		return nil // a standalone node, which has no replicas even before it leads
	}
	var applied []uint64
	leader := node.Config().NodeID
	if !node.IsLeader() {
		_, leader = node.Leader()
		applied = append(applied, node.Applied())
	}
	for _, f := range s.followers() {
		if f.Err == nil && f.ID != leader {
			applied = append(applied, f.Applied)
		}
	}
	return applied
}
