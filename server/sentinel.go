package server

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/presenced/presenced/cluster"
)

// Every node answers the part of Redis Sentinel's API that clients use to
// find their master, from the cluster's own state: the leader is the
// master, the other members are its replicas, and every node is one of
// the sentinels. A client built for Sentinel (go-redis's FailoverClient,
// redis-py's Sentinel, Jedis's JedisSentinelPool, Lettuce) is given the
// nodes' client addresses as its sentinels and the master name presenced
// answers to (Config.MasterName). It connects to the leader and, when the
// leader changes, hears of it on +switch-master as from Sentinel; a
// connection it keeps to a former leader goes on working, since a
// follower forwards writes. Operators' checks and switches work too:
// SENTINEL CKQUORUM asks whether a majority of the voters answers, and
// SENTINEL FAILOVER moves the leadership as FAILOVER does.

// sentinelTimeout bounds each call to another node a SENTINEL command
// makes.
const sentinelTimeout = time.Second

// sentinelState is what the server remembers for Sentinel's API: the
// client addresses of each member it learnt, by raft address, and the
// latest leader it knew.
type sentinelState struct {
	mu     sync.Mutex
	addrs  map[string]clientAddrs
	leader string // raft address
}

// clientAddrs are the addresses a member serves clients at: its plain
// port's and its TLS port's ("" without one).
type clientAddrs struct{ plain, tls string }

// clientAddr is the address clients reach this node at: its listener's,
// with the host of its raft address when it listens on every interface,
// or the announced host and port.
func (s *Server) clientAddr() string {
	return s.reachable(s.Addr(), s.settings.current().AnnouncePort)
}

// tlsClientAddr is the address TLS clients reach this node at, as
// clientAddr, or "" without a TLS port.
func (s *Server) tlsClientAddr() string {
	if addr := s.TLSAddr(); addr != "" {
		return s.reachable(addr, s.settings.current().AnnounceTLSPort)
	}
	return ""
}

// reachable is addr, a listener's address, with the announced host (else
// the host of the node's raft address when the listener is on every
// interface) and the announced port, unless 0.
func (s *Server) reachable(addr string, announcedPort int) string {
	host, port := splitAddr(addr)
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host, _ = splitAddr(s.advertisedRaftAddr())
	}
	if a := s.settings.current().AnnounceIP; a != "" {
		host = a
	}
	if announcedPort != 0 {
		port = strconv.Itoa(announcedPort)
	}
	return net.JoinHostPort(host, port)
}

// advertisedRaftAddr is the raft address other nodes reach this node at.
func (s *Server) advertisedRaftAddr() string {
	if a := s.node.Config().RaftAdvertise; a != "" {
		return a
	}
	return s.node.RaftAddr()
}

// isSelf reports whether raftAddr is this node's raft address.
func (s *Server) isSelf(raftAddr string) bool {
	return raftAddr == s.node.RaftAddr() || raftAddr == s.advertisedRaftAddr()
}

// memberClientAddr returns the client address of the member at raftAddr:
// this node's own, or what the member's RAFT INFO says (see
// noteClientAddr).
func (s *Server) memberClientAddr(ctx context.Context, raftAddr string) (string, bool) {
	if s.isSelf(raftAddr) {
		return s.clientAddr(), true
	}
	info, err := s.node.PeerInfo(ctx, raftAddr)
	addrs, ok := s.noteClientAddr(raftAddr, info, err)
	return addrs.plain, ok
}

// noteClientAddr remembers the client addresses in info, the RAFT INFO of
// the member at raftAddr, and returns them; when the member could not be
// asked (err), it returns the ones remembered, if any.
func (s *Server) noteClientAddr(raftAddr string, info map[string]string, err error) (clientAddrs, bool) {
	st := &s.sentinel
	st.mu.Lock()
	defer st.mu.Unlock()
	if err == nil && info["client_addr"] != "" {
		if st.addrs == nil {
			st.addrs = make(map[string]clientAddrs)
		}
		addrs := clientAddrs{plain: info["client_addr"], tls: info["tls_client_addr"]}
		st.addrs[raftAddr] = addrs
		return addrs, true
	}
	addrs, ok := st.addrs[raftAddr]
	return addrs, ok
}

// latestLeader remembers current, the raft address of the leader known
// now, unless it is empty, and returns the latest leader known.
func (st *sentinelState) latestLeader(current string) string {
	st.mu.Lock()
	defer st.mu.Unlock()
	if current != "" {
		st.leader = current
	}
	return st.leader
}

// masterAddr returns the leader's raft and client addresses: of the
// leader this node knows, else of the latest it knew, as Sentinel gives
// the latest master it knew while none is elected.
func (s *Server) masterAddr(ctx context.Context) (raftAddr, clientAddr string, ok bool) {
	current, _ := s.node.Leader()
	if raftAddr = s.sentinel.latestLeader(current); raftAddr == "" {
		return "", "", false
	}
	clientAddr, ok = s.memberClientAddr(ctx, raftAddr)
	return raftAddr, clientAddr, ok
}

// announceSwitches publishes +switch-master to this node's subscribers
// each time the leader changes, as Sentinel does after a failover:
// "<master-name> <old-ip> <old-port> <new-ip> <new-port>". It returns
// when the server closes.
func (s *Server) announceSwitches() {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-s.quit
		cancel()
	}()
	first, done := context.WithTimeout(ctx, sentinelTimeout)
	_, old, known := s.masterAddr(first)
	done()
	s.node.WatchLeader(ctx, func(raftAddr, _ string) {
		callCtx, done := context.WithTimeout(ctx, sentinelTimeout)
		defer done()
		s.sentinel.latestLeader(raftAddr)
		addr, ok := s.memberClientAddr(callCtx, raftAddr)
		if !ok {
			return
		}
		if known && addr != old {
			oldHost, oldPort := splitAddr(old)
			newHost, newPort := splitAddr(addr)
			msg := s.settings.config().MasterName + " " + oldHost + " " + oldPort + " " + newHost + " " + newPort
			s.pubsub.publish("+switch-master", []byte(msg))
		}
		old, known = addr, true
	})
}

// runID is the 40-hex-digit run ID Sentinel gives an instance: here, one
// derived from the node's ID, the same on every call.
func runID(nodeID string) string {
	sum := sha1.Sum([]byte("presenced " + nodeID))
	return hex.EncodeToString(sum[:])
}

// memberView is a member as SENTINEL REPLICAS and SENTINELS, and
// CLUSTER, describe it.
type memberView struct {
	member  cluster.Member
	addr    string            // the client address
	tlsAddr string            // the TLS client address, "" without one
	down    bool              // the node could not be asked
	info    map[string]string // its RAFT INFO
}

// otherMembers describes the members other than the one at skip (a raft
// address), asking them all at once for their client address and state.
func (s *Server) otherMembers(ctx context.Context, skip string) []memberView {
	members, _ := s.node.Members()
	out := make([]memberView, 0, len(members))
	for _, m := range members {
		if m.Address != skip {
			out = append(out, memberView{member: m})
		}
	}
	var wg sync.WaitGroup
	for i := range out {
		in := &out[i]
		if s.isSelf(in.member.Address) {
			in.addr, in.tlsAddr = s.clientAddr(), s.tlsClientAddr()
			in.info = map[string]string{"applied_index": strconv.FormatUint(s.node.Applied(), 10)}
			continue
		}
		wg.Go(func() {
			info, err := s.node.PeerInfo(ctx, in.member.Address)
			in.info, in.down = info, err != nil
			addrs, known := s.noteClientAddr(in.member.Address, info, err)
			in.addr, in.tlsAddr = addrs.plain, addrs.tls
			if !known {
				in.addr = in.member.Address // never reached: its raft address
			}
		})
	}
	wg.Wait()
	return out
}

// sentinelCommand answers SENTINEL (see the top of this file).
func sentinelCommand(c *client, args [][]byte) {
	sub := c.subcommand(args)
	if sub == nil {
		return
	}
	s := c.s
	ctx, cancel := context.WithTimeout(context.Background(), sentinelTimeout)
	defer cancel()
	switch sub.Name {
	case "help":
		c.help("SENTINEL",
			"CKQUORUM <master-name>", "    Check if the current Sentinel configuration is able to reach the quorum",
			"    needed to failover a master and the majority needed to authorize the",
			"    failover.",
			"GET-MASTER-ADDR-BY-NAME <master-name>", "    Return the ip and port number of the master with that name.",
			"FAILOVER <master-name>", "    Manually failover a master node without asking for agreement from other",
			"    Sentinels",
			"MASTER <master-name>", "    Show the state and info of the specified master.",
			"MASTERS", "    Show a list of monitored masters and their state.",
			"MYID", "    Return the ID of the Sentinel instance.",
			"REPLICAS <master-name>", "    Show a list of replicas for this master and their state.",
			"SENTINELS <master-name>", "    Show a list of Sentinel instances for this master and their state.")
		return
	case "myid":
		c.out.BulkString(runID(s.node.Config().NodeID))
		return
	case "masters":
		c.out.Array(1)
		s.writeMaster(ctx, c)
		return
	}
	if string(args[2]) != s.settings.config().MasterName {
		if sub.Name == "get-master-addr-by-name" {
			c.out.NullArray()
		} else {
			c.out.Error("ERR No such master with that name")
		}
		return
	}
	switch sub.Name {
	case "get-master-addr-by-name":
		_, addr, ok := s.masterAddr(ctx)
		if !ok {
			c.out.NullArray()
			return
		}
		host, port := splitAddr(addr)
		c.out.Array(2)
		c.out.BulkString(host)
		c.out.BulkString(port)
	case "master":
		s.writeMaster(ctx, c)
	case "replicas", "slaves":
		leader, master, _ := s.masterAddr(ctx)
		replicas := s.otherMembers(ctx, leader)
		c.out.Array(len(replicas))
		for _, r := range replicas {
			s.writeReplica(c, r, master)
		}
	case "sentinels":
		sentinels := s.otherMembers(ctx, s.node.RaftAddr())
		c.out.Array(len(sentinels))
		for _, in := range sentinels {
			s.writeSentinel(c, in)
		}
	case "ckquorum":
		s.checkQuorum(ctx, c)
	case "failover":
		s.sentinelFailover(c)
	}
}

// checkQuorum answers SENTINEL CKQUORUM. The usable sentinels are the
// voters that answer, this node among them if it votes, and Sentinel's
// two bounds, the master's quorum and the majority that authorizes a
// failover, are both the voters' majority: the nodes a leader needs to
// be elected and to commit.
func (s *Server) checkQuorum(ctx context.Context, c *client) {
	voters, usable := 0, 0
	for _, in := range s.otherMembers(ctx, "") {
		if in.member.Voter {
			voters++
			if !in.down {
				usable++
			}
		}
	}
	if usable >= voters/2+1 {
		c.out.Simple(fmt.Sprintf("OK %d usable Sentinels. Quorum and failover authorization can be reached", usable))
		return
	}
	c.out.Error(fmt.Sprintf("NOQUORUM %d usable Sentinels. "+
		"Not enough available Sentinels to reach the specified quorum for this master. "+
		"Not enough available Sentinels to reach the majority and authorize a failover", usable))
}

// sentinelFailover answers SENTINEL FAILOVER: the leader hands its
// leadership to the voter furthest ahead in the log, as FAILOVER does,
// whichever node took the command. Sentinel answers OK and then fails
// over; presenced answers once another node leads, or with the reason it
// did not, waiting first for a leader as a write does.
func (s *Server) sentinelFailover(c *client) {
	cfg := s.node.Config()
	ctx, cancel := context.WithTimeout(context.Background(), cfg.LeaderWait+2*cfg.ElectionTimeout)
	defer cancel()
	var remote *cluster.RemoteError
	switch err := s.node.Failover(ctx, ""); {
	case err == nil:
		c.out.OK()
	case errors.Is(err, cluster.ErrAlone):
		c.out.Error("NOGOODSLAVE No suitable replica to promote")
	case errors.As(err, &remote), errors.Is(err, cluster.ErrNoLeader), errors.Is(err, cluster.ErrUnknownOutcome):
		c.out.Error(replyError(err))
	default:
		c.out.Error(failoverError(err))
	}
}

// writeInstance writes the fields Sentinel gives every instance, then
// more, as one map; flags are Sentinel's ("master", "slave", "sentinel",
// with "s_down,disconnected" for a node that could not be asked).
func (s *Server) writeInstance(c *client, name, id, addr, flags string, down bool, more ...string) {
	if down {
		flags += ",s_down,disconnected"
	}
	host, port := splitAddr(addr)
	ms := strconv.FormatInt(s.node.Config().HeartbeatTimeout.Milliseconds(), 10)
	fields := append([]string{
		"name", name, "ip", host, "port", port, "runid", runID(id), "flags", flags,
		"link-pending-commands", "0", "link-refcount", "1", "last-ping-sent", "0",
		"last-ok-ping-reply", "0", "last-ping-reply", "0", "down-after-milliseconds", ms,
	}, more...)
	c.out.Map(len(fields) / 2)
	for _, f := range fields {
		c.out.BulkString(f)
	}
}

// writeMaster writes SENTINEL MASTER's map for the leader.
func (s *Server) writeMaster(ctx context.Context, c *client) {
	leader, addr, _ := s.masterAddr(ctx)
	members, _ := s.node.Members()
	voters, id := 0, ""
	for _, m := range members {
		if m.Voter {
			voters++
		}
		if m.Address == leader {
			id = m.ID
		}
	}
	st := s.node.Stats()
	s.writeInstance(c, s.settings.config().MasterName, id, addr, "master", leader == "",
		"info-refresh", "0", "role-reported", "master", "role-reported-time", "0",
		"config-epoch", strconv.FormatUint(st.Term, 10),
		"num-slaves", strconv.Itoa(max(len(members)-1, 0)),
		"num-other-sentinels", strconv.Itoa(max(len(members)-1, 0)),
		"quorum", strconv.Itoa(voters/2+1),
		"failover-timeout", strconv.FormatInt(s.node.Config().ElectionTimeout.Milliseconds(), 10),
		"parallel-syncs", "1")
}

// writeReplica writes one entry of SENTINEL REPLICAS: a member other than
// the leader, whose client address is master.
func (s *Server) writeReplica(c *client, r memberView, master string) {
	host, port := splitAddr(master)
	status := "ok"
	if r.down {
		status = "err"
	}
	s.writeInstance(c, r.addr, r.member.ID, r.addr, "slave", r.down,
		"info-refresh", "0", "role-reported", "slave", "role-reported-time", "0",
		"master-link-down-time", "0", "master-link-status", status,
		"master-host", host, "master-port", port, "slave-priority", "100",
		"slave-repl-offset", r.info["applied_index"], "replica-announced", "1")
}

// writeSentinel writes one entry of SENTINEL SENTINELS: another member.
func (s *Server) writeSentinel(c *client, in memberView) {
	s.writeInstance(c, runID(in.member.ID), in.member.ID, in.addr, "sentinel", in.down,
		"last-hello-message", "0", "voted-leader", "?", "voted-leader-epoch", "0")
}
