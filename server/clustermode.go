package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/presenced/presenced/cluster"
	"github.com/presenced/presenced/internal/hashslot"
	"github.com/presenced/presenced/proto"
)

// With --cluster-enabled yes, every node answers Redis Cluster's CLUSTER
// command as a node of a cluster of one shard that holds all 16384 hash
// slots: the leader is the shard's master, the other members are its
// replicas, and node IDs are derived from the node names (as SENTINEL
// MYID's are). A client built for Redis Cluster (go-redis's
// ClusterClient, redis-py's RedisCluster, ioredis's Cluster, Jedis,
// Lettuce) given any node's address finds the leader for writes and,
// with READONLY, the followers for reads. It never meets MOVED or ASK,
// and no command is refused with CROSSSLOT, since one shard holds every
// key. Membership stays raft's: CLUSTER MEET, FORGET, REPLICATE and
// RESET, and the commands that assign slots or epochs, are refused.
// Without the setting, CLUSTER and ASKING answer as a Redis server
// without cluster support does.

const (
	errClusterDisabled = "ERR This instance has cluster support disabled"
	errOneShard        = "ERR presenced holds every hash slot in one shard: slots cannot be moved"
	errRaftMembers     = "ERR presenced's members join with RAFT ADD and leave with RAFT REMOVE"
	errRaftEpoch       = "ERR presenced's config epoch is the raft term, which elections advance"
)

// clusterTimeout bounds each call to another node a CLUSTER command
// makes to describe the cluster.
const clusterTimeout = time.Second

// clusterEnabled reports whether the node answers as a node of Redis
// Cluster.
func (s *Server) clusterEnabled() bool { return s.settings.current().ClusterEnabled }

// redisMode is INFO's redis_mode and HELLO's mode.
func (c *Config) redisMode() string {
	if c.ClusterEnabled {
		return "cluster"
	}
	return "standalone"
}

func asking(c *client, _ [][]byte) {
	if !c.s.clusterEnabled() {
		c.out.Error(errClusterDisabled)
		return
	}
	c.out.OK()
}

// clusterCommand answers CLUSTER (see the top of this file).
func clusterCommand(c *client, args [][]byte) {
	sub := c.subcommand(args)
	if sub == nil {
		return
	}
	s := c.s
	if !s.clusterEnabled() {
		c.out.Error(errClusterDisabled)
		return
	}
	switch sub.Name {
	case "help":
		clusterHelp(c)
	case "myid":
		c.out.BulkString(runID(s.node.Config().NodeID))
	case "keyslot":
		c.out.Int(int64(hashslot.Of(args[2])))
	case "countkeysinslot":
		c.countKeysInSlot(args[2])
	case "getkeysinslot":
		c.keysInSlot(args[2], args[3])
	case "info", "nodes", "slots", "shards", "replicas", "slaves", "count-failure-reports":
		ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
		defer cancel()
		v := s.describeCluster(ctx, c.overTLS())
		switch sub.Name {
		case "info":
			c.out.Verbatim([]byte(v.info()))
		case "nodes":
			c.out.Verbatim([]byte(v.nodes()))
		case "slots":
			v.writeSlots(c)
		case "shards":
			v.writeShards(c)
		case "replicas", "slaves":
			v.writeReplicasOf(c, string(args[2]))
		case "count-failure-reports":
			if v.find(string(args[2])) == nil {
				c.out.Error("ERR Unknown node " + string(args[2]))
				return
			}
			c.out.Int(0) // raft has no failure reports
		}
	case "links":
		c.out.Array(0) // raft's links are not Redis Cluster's bus
	case "failover":
		s.clusterFailover(c, args)
	case "saveconfig":
		c.out.OK() // raft keeps the membership on disk as it changes
	case "addslots", "addslotsrange", "delslots", "delslotsrange", "flushslots", "setslot":
		c.out.Error(errOneShard)
	case "meet", "forget", "replicate", "reset":
		c.out.Error(errRaftMembers)
	case "bumpepoch", "set-config-epoch":
		c.out.Error(errRaftEpoch)
	}
}

func clusterHelp(c *client) {
	c.help("CLUSTER",
		"ADDSLOTS <slot> [<slot> ...]", "    Assign slots to current node.",
		"ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]", "    Assign slots which are between <start-slot> and <end-slot> to current node.",
		"BUMPEPOCH", "    Advance the cluster config epoch.",
		"COUNT-FAILURE-REPORTS <node-id>", "    Return number of failure reports for <node-id>.",
		"COUNTKEYSINSLOT <slot>", "    Return the number of keys in <slot>.",
		"DELSLOTS <slot> [<slot> ...]", "    Delete slots information from current node.",
		"DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]", "    Delete slots information which are between <start-slot> and <end-slot> from current node.",
		"FAILOVER [FORCE|TAKEOVER]", "    Promote current replica node to being a master.",
		"FORGET <node-id>", "    Remove a node from the cluster.",
		"GETKEYSINSLOT <slot> <count>", "    Return key names stored by current node in a slot.",
		"FLUSHSLOTS", "    Delete current node own slots information.",
		"INFO", "    Return information about the cluster.",
		"KEYSLOT <key>", "    Return the hash slot for <key>.",
		"MEET <ip> <port> [<bus-port>]", "    Connect nodes into a working cluster.",
		"MYID", "    Return the node id.",
		"NODES", "    Return cluster configuration seen by node. Output format:",
		"    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
		"REPLICATE <node-id>", "    Configure current node as replica to <node-id>.",
		"RESET [HARD|SOFT]", "    Reset current node (default: soft).",
		"SET-CONFIG-EPOCH <epoch>", "    Set config epoch of current node.",
		"SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)", "    Set slot state.",
		"REPLICAS <node-id>", "    Return <node-id> replicas.",
		"SAVECONFIG", "    Force saving cluster configuration on disk.",
		"SLOTS", "    Return information about slots range mappings. Each range is made of:",
		"    start, end, master and replicas IP addresses, ports and ids",
		"SHARDS", "    Return information about slot range mappings and the nodes associated with them.",
		"LINKS", "    Return information about all network links between this node and its peers.",
		"    Output format is an array where each array element is a map containing attributes of a link")
}

// countKeysInSlot answers CLUSTER COUNTKEYSINSLOT slot: the live keys of
// the connection's database in the slot, read as a read is (after the
// read barrier, unless READONLY). It visits every key.
func (c *client) countKeysInSlot(arg []byte) {
	slot, ok := proto.ParseInt(arg)
	switch {
	case !ok:
		c.out.Error(proto.ErrNotInteger)
		return
	case slot < 0 || slot >= hashslot.Count:
		c.out.Error("ERR Invalid slot")
		return
	}
	n := 0
	if !c.eachKeyInSlot(int(slot), func(string) bool { n++; return true }) {
		return
	}
	c.out.Int(int64(n))
}

// keysInSlot answers CLUSTER GETKEYSINSLOT slot count, as countKeysInSlot
// reads.
func (c *client) keysInSlot(slotArg, countArg []byte) {
	slot, ok := proto.ParseInt(slotArg)
	if !ok {
		c.out.Error(proto.ErrNotInteger)
		return
	}
	count, ok := proto.ParseInt(countArg)
	switch {
	case !ok:
		c.out.Error(proto.ErrNotInteger)
		return
	case slot < 0 || slot >= hashslot.Count || count < 0:
		c.out.Error("ERR Invalid slot or number of keys")
		return
	}
	var keys []string
	if count > 0 && !c.eachKeyInSlot(int(slot), func(key string) bool {
		keys = append(keys, key)
		return int64(len(keys)) < count
	}) {
		return
	}
	c.out.Array(len(keys))
	for _, k := range keys {
		c.out.BulkString(k)
	}
}

// eachKeyInSlot calls f with the live keys of the connection's database
// in slot until f returns false, after the read barrier unless the
// connection reads its node's state (READONLY). It reports false, having
// answered the error, when the barrier failed.
func (c *client) eachKeyInSlot(slot int, f func(key string) bool) bool {
	if !c.readonly && !c.peer {
		if err := c.readBarrier(); err != nil {
			c.out.Error(replyError(err))
			return false
		}
	}
	c.s.store.EachKey(c.db, time.Now().UnixMilli(), func(key string) bool {
		return hashslot.Of([]byte(key)) != slot || f(key)
	})
	return true
}

// clusterFailover answers CLUSTER FAILOVER [FORCE|TAKEOVER] on a
// follower: the leader hands its leadership over to it, and the reply
// comes once it leads. FORCE and TAKEOVER change nothing, since raft
// needs a majority for any leader.
func (s *Server) clusterFailover(c *client, args [][]byte) {
	switch {
	case len(args) > 3:
		c.out.Error(proto.ErrSubcommandSyntax(args[1], "CLUSTER"))
		return
	case len(args) == 3 && !strings.EqualFold(string(args[2]), "force") && !strings.EqualFold(string(args[2]), "takeover"):
		c.out.Error(proto.ErrSyntax)
		return
	}
	if s.node.IsLeader() {
		c.out.Error("ERR You should send CLUSTER FAILOVER to a replica")
		return
	}
	s.handOver(c, s.node.Config().NodeID)
}

// handOver has the leader hand its leadership to the member named id,
// from any node, and answers OK once it leads, or the reason it did not.
func (s *Server) handOver(c *client, id string) {
	cfg := s.node.Config()
	ctx, cancel := context.WithTimeout(context.Background(), cfg.LeaderWait+2*cfg.ElectionTimeout)
	defer cancel()
	var remote *cluster.RemoteError
	switch err := s.node.Failover(ctx, id); {
	case err == nil:
		c.out.OK()
	case errors.As(err, &remote):
		c.out.Error(remote.Reply)
	default:
		c.out.Error(replyError(err))
	}
}

// clusterView is the shard as this node sees it: its master, the leader
// it knows or the latest it knew (nil when it never knew one), and the
// other members, the master's replicas.
type clusterView struct {
	master   *memberView
	replicas []memberView
	leading  bool   // a leader is known now
	self     string // this node's raft address
	term     uint64
}

// describeCluster asks every member for its client addresses and state, at
// once. overTLS gives the members' TLS addresses, where they have one, as
// Redis gives a client on its TLS port the nodes' TLS ports.
func (s *Server) describeCluster(ctx context.Context, overTLS bool) clusterView {
	current, _ := s.node.Leader()
	leader := s.sentinel.latestLeader(current)
	v := clusterView{leading: current != "", self: s.node.RaftAddr(), term: s.node.Stats().Term}
	all := s.otherMembers(ctx, "")
	for i := range all {
		in := all[i]
		if overTLS && in.tlsAddr != "" {
			in.addr = in.tlsAddr
		}
		if s.isSelf(in.member.Address) {
			v.self = in.member.Address
		}
		if in.member.Address == leader {
			v.master = &in
			continue
		}
		v.replicas = append(v.replicas, in)
	}
	return v
}

// find returns the member whose node ID is id, or nil.
func (v *clusterView) find(id string) *memberView {
	if v.master != nil && runID(v.master.member.ID) == id {
		return v.master
	}
	for i := range v.replicas {
		if runID(v.replicas[i].member.ID) == id {
			return &v.replicas[i]
		}
	}
	return nil
}

// info is CLUSTER INFO's text. The cluster is in state ok while a leader
// is known; the slots of a leader that is no longer known count as
// possibly failing.
func (v *clusterView) info() string {
	state, ok, pfail, size := "ok", hashslot.Count, 0, 1
	switch {
	case v.master == nil:
		state, ok, size = "fail", 0, 0
	case !v.leading:
		state, ok, pfail = "fail", 0, hashslot.Count
	}
	return fmt.Sprintf("cluster_state:%s\r\ncluster_slots_assigned:%d\r\ncluster_slots_ok:%d\r\ncluster_slots_pfail:%d\r\n"+
		"cluster_slots_fail:0\r\ncluster_known_nodes:%d\r\ncluster_size:%d\r\ncluster_current_epoch:%d\r\ncluster_my_epoch:%d\r\n"+
		"cluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\ntotal_cluster_links_buffer_limit_exceeded:0\r\n",
		state, size*hashslot.Count, ok, pfail, len(v.replicas)+size, size, v.term, v.term)
}

// nodes is CLUSTER NODES's text: a line for each member.
func (v *clusterView) nodes() string {
	var b strings.Builder
	if v.master != nil {
		b.WriteString(v.describe(*v.master))
		b.WriteByte('\n')
	}
	for _, r := range v.replicas {
		b.WriteString(v.describe(r))
		b.WriteByte('\n')
	}
	return b.String()
}

// describe is in's line of CLUSTER NODES: "<id> <ip>:<port>@<raft port>
// <flags> <master id> <ping sent> <pong received> <config epoch> <link
// state> [<slots>]", where the config epoch is the raft term.
func (v *clusterView) describe(in memberView) string {
	var b strings.Builder
	b.WriteString(runID(in.member.ID))
	b.WriteByte(' ')
	_, raftPort := splitAddr(in.member.Address)
	b.WriteString(in.addr + "@" + raftPort + " ")
	isSelf := in.member.Address == v.self
	if isSelf {
		b.WriteString("myself,")
	}
	isMaster := v.master == nil || in.member.Address == v.master.member.Address
	if isMaster {
		b.WriteString("master")
	} else {
		b.WriteString("slave")
	}
	if in.down {
		b.WriteString(",fail?")
	}
	if isMaster {
		b.WriteString(" -")
	} else {
		b.WriteString(" " + runID(v.master.member.ID))
	}
	pong := int64(0)
	if !isSelf && !in.down {
		pong = time.Now().UnixMilli()
	}
	b.WriteString(" 0 " + strconv.FormatInt(pong, 10) + " " + strconv.FormatUint(v.term, 10))
	if in.down {
		b.WriteString(" disconnected")
	} else {
		b.WriteString(" connected")
	}
	if v.master != nil && isMaster {
		b.WriteString(" 0-" + strconv.Itoa(hashslot.Count-1))
	}
	return b.String()
}

// writeSlots answers CLUSTER SLOTS: the one range of every slot, with
// the master and the replicas that answer.
func (v *clusterView) writeSlots(c *client) {
	if v.master == nil {
		c.out.Array(0)
		return
	}
	var up []memberView
	for _, r := range v.replicas {
		if !r.down {
			up = append(up, r)
		}
	}
	c.out.Array(1)
	c.out.Array(3 + len(up))
	c.out.Int(0)
	c.out.Int(hashslot.Count - 1)
	for _, in := range append([]memberView{*v.master}, up...) {
		host, port := splitAddr(in.addr)
		p, _ := strconv.Atoi(port)
		c.out.Array(4)
		c.out.BulkString(host)
		c.out.Int(int64(p))
		c.out.BulkString(runID(in.member.ID))
		c.out.Map(0) // no hostname
	}
}

// writeShards answers CLUSTER SHARDS: the one shard, its master first.
func (v *clusterView) writeShards(c *client) {
	if v.master == nil {
		c.out.Array(0)
		return
	}
	c.out.Array(1)
	c.out.Map(2)
	c.out.BulkString("slots")
	c.out.Array(2)
	c.out.Int(0)
	c.out.Int(hashslot.Count - 1)
	c.out.BulkString("nodes")
	c.out.Array(1 + len(v.replicas))
	for i, in := range append([]memberView{*v.master}, v.replicas...) {
		host, port := splitAddr(in.addr)
		p, _ := strconv.Atoi(port)
		applied, _ := strconv.ParseInt(in.info["applied_index"], 10, 64)
		role, health := "master", "online"
		if i > 0 {
			role = "replica"
		}
		switch {
		case in.down:
			health = "fail"
		case i > 0 && applied == 0:
			health = "loading"
		}
		c.out.Map(7)
		c.out.BulkString("id")
		c.out.BulkString(runID(in.member.ID))
		c.out.BulkString("port")
		c.out.Int(int64(p))
		for _, kv := range [][2]string{{"ip", host}, {"endpoint", host}, {"role", role}} {
			c.out.BulkString(kv[0])
			c.out.BulkString(kv[1])
		}
		c.out.BulkString("replication-offset")
		c.out.Int(applied)
		c.out.BulkString("health")
		c.out.BulkString(health)
	}
}

// writeReplicasOf answers CLUSTER REPLICAS id: the NODES lines of the
// master's replicas.
func (v *clusterView) writeReplicasOf(c *client, id string) {
	switch in := v.find(id); {
	case in == nil:
		c.out.Error("ERR Unknown node " + id)
	case v.master == nil || in != v.master:
		c.out.Error("ERR The specified node is not a master")
	default:
		c.out.Array(len(v.replicas))
		for _, r := range v.replicas {
			c.out.BulkString(v.describe(r))
		}
	}
}
