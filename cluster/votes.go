package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// voteFile names, in the data dir of a node with its log in memory
// (--appendonly no), the file of its raft term and vote.
const voteFile = "raft-vote.db"

// memberKey is the stable store's key for whether the node, when it
// joined or at the latest membership it applied (see noteMembership), was
// a voter of a cluster with other voters: 1 if so. Only a node with its
// log in memory keeps it, since its membership goes with its log.
var memberKey = []byte("presenced_member")

// openVoteStore opens the stable store of a node with its log in memory:
// raft's term and vote in Dir (a voter that forgot them could vote twice
// in a term, and follow a leader deposed before it restarted), or in mem
// for a node without a Dir. The node's log is gone either way, so a node
// that was a member of a larger cluster must join it again (cfg.Join),
// where it keeps its term and vote; a node that was alone forms a new
// cluster, with a new term (cfg.Bootstrap).
func (n *Node) openVoteStore(mem *raft.InmemStore) (raft.StableStore, error) {
	if n.cfg.Dir == "" {
		return mem, nil
	}
	if err := n.claimDataDir(); err != nil {
		return nil, err
	}
	path := filepath.Join(n.cfg.Dir, voteFile)
	votes, err := openVotes(path)
	if err != nil {
		return nil, err
	}
	if n.cfg.Bootstrap {
		member, err := votes.GetUint64(memberKey)
		votes.Close()
		switch {
		case err != nil && err.Error() != "not found":
			return nil, fmt.Errorf("cluster: reading %s: %w", path, err)
		case member == 1:
			return nil, fmt.Errorf("cluster: node %s was a member of a cluster, and with --appendonly no its log went with its last run: start it with --join <a member's client port> to catch up from the others (or remove %s to start a new cluster of its own)", n.cfg.NodeID, path)
		}
		// Alone: its cluster starts anew, from term 0.
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		if votes, err = openVotes(path); err != nil {
			return nil, err
		}
	}
	return votes, nil
}

// openVotes opens the vote file at path.
func openVotes(path string) (*raftboltdb.BoltStore, error) {
	votes, err := openBolt(raftboltdb.Options{Path: path, BoltOptions: &bbolt.Options{Timeout: lockTimeout}})
	if errors.Is(err, bbolt.ErrTimeout) {
		return nil, fmt.Errorf("cluster: %s is locked by another process", path)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: opening %s: %w", path, err)
	}
	return votes, nil
}

// noteMembership records, on a node with its log in memory, whether conf,
// a membership it applied, makes it a voter of a cluster with others.
// Until it applies one that lists it, the memberships it applies are
// older than its joining (a node that joins replays the log from the
// start): they do not say it left, and leave the record as it is.
// It runs on the state machine's goroutine.
func (n *Node) noteMembership(conf raft.Configuration) {
	voters, self := 0, false
	for _, s := range conf.Servers {
		if s.Suffrage == raft.Voter {
			voters++
			self = self || s.ID == raft.ServerID(n.cfg.NodeID)
		}
	}
	if !self && !n.listed {
		return
	}
	n.listed = true
	n.markMember(self && voters > 1)
}

// markMember records whether the node is a voter of a cluster with
// others. A failure is logged: the node serves either way, only a restart
// without --join would then not be refused.
func (n *Node) markMember(member bool) {
	var v uint64
	if member {
		v = 1
	}
	if err := n.stable.SetUint64(memberKey, v); err != nil {
		n.log.Error("could not record the membership in the stable store", "error", err)
	}
}
