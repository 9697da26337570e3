package server

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/presenced/presenced/cluster"
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
			"ADD <node-id> <raft-address>", "    Add a node to the cluster as a voter.",
			"REMOVE <node-id>", "    Remove a node from the cluster.",
			"INFO", "    Show this node's raft state and the cluster's members.",
			"DIGEST", "    Show the index of the latest entry applied here and a checksum of the state",
			"    after it, equal on nodes at the same index (reads a copy of the whole state).",
			"SNAPSHOT", "    Take a snapshot of this node's state now and compact its raft log.",
			"READINDEX", "    On the leader: confirm leadership, return the commit index.")
	case "add":
		c.okOrError(node.AddVoter(ctx, string(args[2]), string(args[3])))
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
	case "info":
		c.out.BulkString(raftInfo(node))
	case "digest":
		applied, digest := node.Digest()
		c.out.BulkString(fmt.Sprintf("applied_index:%d\r\ndigest:%016x\r\n", applied, digest))
	}
}

func (c *client) okOrError(err error) {
	if err != nil {
		c.out.Error(replyError(err))
		return
	}
	c.out.OK()
}

// raftInfo describes node in INFO's format.
func raftInfo(node *cluster.Node) string {
	var b strings.Builder
	st := node.Stats()
	cfg := node.Config()
	fmt.Fprintf(&b, "node_id:%s\r\nraft_addr:%s\r\nstate:%s\r\nterm:%d\r\nleader_id:%s\r\nleader_addr:%s\r\n",
		cfg.NodeID, node.RaftAddr(), strings.ToLower(st.State), st.Term, st.LeaderID, st.LeaderAddr)
	fmt.Fprintf(&b, "last_index:%d\r\ncommit_index:%d\r\napplied_index:%d\r\n",
		st.LastIndex, st.CommitIndex, node.Applied())
	fmt.Fprintf(&b, "entries_proposed:%d\r\nbatches_committed:%d\r\ncommands_committed:%d\r\nsnapshots_restored:%d\r\nsnapshot_in_progress:%d\r\n",
		st.Entries, st.Batches, st.Commands, st.Restores, st.Persisting)
	fmt.Fprintf(&b, "log_writes:%d\r\nlog_write_usec:%d\r\nentries_committed:%d\r\nentry_commit_usec:%d\r\n",
		st.LogWrites, st.LogWriteTime.Microseconds(), st.EntriesCommitted, st.EntryTime.Microseconds())
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
		fmt.Fprintf(b, "role:master\r\nconnected_slaves:%d\r\n", len(followers))
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
		fmt.Fprintf(b, "role:slave\r\nmaster_host:%s\r\nmaster_port:%s\r\nmaster_link_status:%s\r\nmaster_node_id:%s\r\nslave_repl_offset:%d\r\n",
			host, port, link, st.LeaderID, applied)
	}
	fmt.Fprintf(b, "master_repl_offset:%d\r\nraft_state:%s\r\nraft_term:%d\r\nraft_commit_index:%d\r\nraft_applied_index:%d\r\nraft_last_index:%d\r\n",
		applied, strings.ToLower(st.State), st.Term, st.CommitIndex, applied, st.LastIndex)
}
