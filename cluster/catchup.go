package cluster

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// errCatchingUp fails the vote requests of a node that has not caught up
// since it started without its log (see catchUpTransport).
var errCatchingUp = errors.New("cluster: this node started without its log and has not caught up with the leader: it does not stand for election yet")

// catchUpTransport is the raft transport of a node that starts without
// its log (--appendonly no, or an emptied --dir) and joins a cluster that
// may count it as a voter: as one restarted after it acknowledged entries
// in an earlier run. Raft's safety rests on every voter keeping what it acknowledged,
// and such a node does not: its empty log would vote for a candidate that
// lacks entries committed with its acknowledgement, which would then be
// lost although only this node restarted. So it neither grants votes nor
// asks for them (pre-votes included) until it has caught up.
//
// It has caught up once, for the term of the latest leader that sent it
// entries, it has applied both an entry of that term (by Leader
// Completeness the leader then holds, and so has given it, every entry
// committed in earlier terms) and the leader's commit index as of the
// leader's first message to it in that term (every entry the leader had
// committed in that term before, this node's earlier run included). The
// node's persisted term (see openVoteStore) keeps it from following a
// leader of a term older than it knew, whose entries would prove nothing.
type catchUpTransport struct {
	raft.Transport
	id      raft.ServerID
	applied *progress // the node's applied index
	in      <-chan raft.RPC
	out     chan raft.RPC

	mu     sync.Mutex
	term   uint64 // the term of the latest leader that sent entries
	commit uint64 // that leader's commit index in its first message of term
	own    uint64 // the index of an entry of term that leader sent; 0: none yet

	caughtUp atomic.Bool
	refused  progress // counts the vote requests refused
}

// newCatchUpTransport wraps trans, the transport of node id whose applied
// index is applied. Its relay must run for raft to receive RPCs.
func newCatchUpTransport(trans raft.Transport, id raft.ServerID, applied *progress) *catchUpTransport {
	return &catchUpTransport{Transport: trans, id: id, applied: applied, in: trans.Consumer(), out: make(chan raft.RPC)}
}

// Consumer implements raft.Transport: the RPCs of the wrapped transport
// but for the vote requests refused.
func (t *catchUpTransport) Consumer() <-chan raft.RPC { return t.out }

// relay passes the wrapped transport's RPCs on, noting what leaders send
// and answering vote requests itself until the node has caught up, until
// quit is closed.
func (t *catchUpTransport) relay(quit <-chan struct{}) {
	for {
		var rpc raft.RPC
		select {
		case rpc = <-t.in:
		case <-quit:
			return
		}
		if !t.caughtUp.Load() && t.refuse(rpc) {
			continue
		}
		select {
		case t.out <- rpc:
		case <-quit:
			return
		}
	}
}

// refuse notes what an AppendEntries request says of its leader's log,
// and answers a vote request (refused) while the node has not caught up;
// it reports whether it answered.
func (t *catchUpTransport) refuse(rpc raft.RPC) bool {
	var resp any
	switch req := rpc.Command.(type) {
	case *raft.AppendEntriesRequest:
		t.noteLeader(req)
		return false
	case *raft.RequestVoteRequest:
		resp = &raft.RequestVoteResponse{RPCHeader: rpcHeader(t, t.id), Term: req.Term}
	case *raft.RequestPreVoteRequest:
		resp = &raft.RequestPreVoteResponse{RPCHeader: rpcHeader(t, t.id), Term: req.Term}
	default:
		return false
	}
	if t.check() {
		return false
	}
	t.refused.advance(t.refused.get() + 1)
	rpc.Respond(resp, nil)
	return true
}

// noteLeader records the term, commit index and an entry of its own term
// that req's leader sent. A heartbeat carries neither entries nor the
// commit index.
func (t *catchUpTransport) noteLeader(req *raft.AppendEntriesRequest) {
	if req.PrevLogEntry == 0 && len(req.Entries) == 0 && req.LeaderCommitIndex == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if req.Term > t.term {
		t.term, t.commit, t.own = req.Term, req.LeaderCommitIndex, 0
	}
	if req.Term != t.term || t.own != 0 {
		return
	}
	if req.PrevLogEntry > 0 && req.PrevLogTerm == req.Term {
		t.own = req.PrevLogEntry
		return
	}
	for _, e := range req.Entries {
		if e.Term == req.Term {
			t.own = e.Index
			return
		}
	}
}

// check reports whether the node has caught up, and remembers it once it
// has.
func (t *catchUpTransport) check() bool {
	if t.caughtUp.Load() {
		return true
	}
	t.mu.Lock()
	goal, known := max(t.commit, t.own), t.own != 0
	t.mu.Unlock()
	if known && t.applied.get() >= goal {
		t.caughtUp.Store(true)
	}
	return t.caughtUp.Load()
}

// RequestVote implements raft.Transport: it fails until the node has
// caught up.
func (t *catchUpTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if !t.check() {
		return errCatchingUp
	}
	return t.Transport.RequestVote(id, target, args, resp)
}

// RequestPreVote implements raft.WithPreVote: it fails until the node has
// caught up.
func (t *catchUpTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if !t.check() {
		return errCatchingUp
	}
	pre, ok := t.Transport.(raft.WithPreVote)
	if !ok {
		return errors.New("cluster: the transport has no pre-votes")
	}
	return pre.RequestPreVote(id, target, args, resp)
}

// CatchingUp reports whether this node started without its log and has
// not caught up with its leader yet (see catchUpTransport): meanwhile it
// neither votes nor stands for election.
func (n *Node) CatchingUp() bool { return n.catchUp != nil && !n.catchUp.check() }
