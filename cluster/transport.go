package cluster

import (
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// serialTransport is raft's network transport without its fast path for
// heartbeats. On that path the transport's connection goroutine runs
// raft's handling of a heartbeat itself, beside raft's main loop, and a
// heartbeat from a newer leader moves this node's term and state under a
// leader loop that is still at work: a leader that resumes after a pause
// may then write the proposal it was dispatching with the new leader's
// term. Its log then holds an entry of that term the new leader never
// wrote, which no later AppendEntries tells apart from the new leader's
// own (they compare terms), and the node applies it when the index
// commits: its state diverges (hashicorp/raft#695). Without the fast path
// a heartbeat waits in line with the other RPCs, so the main loop alone
// changes the term.
//
// But a heartbeat that waits in line also waits for the main loop's
// work ahead of it: a log write that the disk holds up (another file's
// flush, say) or a hand-off to a state machine that is busy with a
// large entry. Were every follower held up longer than the leader's
// lease, as those of one disk or one workload are together, the leader
// would step down, failing the writes in flight with an unknown outcome,
// though nothing failed. So a heartbeat that only confirms what the node
// knows, from the leader it follows in its current term, is answered at
// once by the connection's goroutine, which changes nothing; raft's main
// loop still takes it (a copy whose answer is dropped), to note the
// leader's contact. Any other heartbeat waits in line.
type serialTransport struct {
	*raft.NetworkTransport
	id    raft.ServerID
	view  atomic.Pointer[raftView] // nil until raft runs: every heartbeat waits in line
	out   chan raft.RPC            // what raft's main loop reads
	beats chan raft.RPC            // heartbeats on their way to out
	quit  <-chan struct{}          // closed once raft is down
}

// raftView is what serialTransport reads of the node's raft state: a
// *raft.Raft.
type raftView interface {
	State() raft.RaftState
	CurrentTerm() uint64
	LeaderWithID() (raft.ServerAddress, raft.ServerID)
	LastIndex() uint64
}

// newSerialTransport wraps t, the transport of node id, whose raft is
// down once quit is closed. Its relay must run for raft to receive RPCs;
// heartbeats are answered at once from follow on.
func newSerialTransport(t *raft.NetworkTransport, id raft.ServerID, quit <-chan struct{}) *serialTransport {
	st := &serialTransport{NetworkTransport: t, id: id, out: make(chan raft.RPC), beats: make(chan raft.RPC, 1), quit: quit}
	t.SetHeartbeatHandler(st.heartbeat)
	return st
}

// follow makes the transport answer the heartbeats that confirm what v
// knows.
func (t *serialTransport) follow(v raftView) { t.view.Store(&v) }

// SetHeartbeatHandler implements raft.Transport: it leaves raft's fast
// path off, so heartbeats reach raft's main loop through Consumer.
func (*serialTransport) SetHeartbeatHandler(func(raft.RPC)) {}

// Consumer implements raft.Transport: the wrapped transport's RPCs and
// the heartbeats.
func (t *serialTransport) Consumer() <-chan raft.RPC { return t.out }

// relay passes the wrapped transport's RPCs and the heartbeats on to
// Consumer until raft is down.
func (t *serialTransport) relay() {
	in := t.NetworkTransport.Consumer()
	for {
		var rpc raft.RPC
		select {
		case rpc = <-in:
		case rpc = <-t.beats:
		case <-t.quit:
			return
		}
		select {
		case t.out <- rpc:
		case <-t.quit:
			return
		}
	}
}

// heartbeat is the wrapped transport's heartbeat handler, run by the
// connection's goroutine, which sends rpc's answer once it is given.
func (t *serialTransport) heartbeat(rpc raft.RPC) {
	resp := t.confirm(rpc.Command.(*raft.AppendEntriesRequest))
	if resp == nil {
		select {
		case t.beats <- rpc: // in line; raft answers
		case <-t.quit:
			rpc.Respond(nil, raft.ErrTransportShutdown)
		}
		return
	}
	rpc.Respond(resp, nil)
	copied := rpc
	copied.RespChan = make(chan raft.RPCResponse, 1)
	select {
	case t.beats <- copied:
	default: // a heartbeat already waits to tell the main loop the same
	}
}

// confirm returns the answer raft's main loop would give req, a
// heartbeat, if the node follows req's sender in req's term; nil if not.
func (t *serialTransport) confirm(req *raft.AppendEntriesRequest) *raft.AppendEntriesResponse {
	vp := t.view.Load()
	if vp == nil {
		return nil
	}
	v := *vp
	term := v.CurrentTerm()
	if _, leader := v.LeaderWithID(); v.State() != raft.Follower || req.Term != term || leader == "" || string(req.ID) != string(leader) {
		return nil
	}
	return &raft.AppendEntriesResponse{RPCHeader: rpcHeader(t, t.id), Term: term, LastLog: v.LastIndex(), Success: true}
}

// rpcHeader is the header of the RPCs and answers node id sends through
// trans.
func rpcHeader(trans raft.Transport, id raft.ServerID) raft.RPCHeader {
	return raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(id), Addr: trans.EncodePeer(id, trans.LocalAddr())}
}
