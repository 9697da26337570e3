package cluster

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// relayTimeout bounds one call that relays commands to a member: a
// member that takes longer, or cannot be reached, misses them.
const relayTimeout = 5 * time.Second

// maxRelayBytes bounds the commands waiting to be relayed to one member
// (the hard output limit of Redis's pub/sub clients): a command that would
// pass it is dropped for that member.
const maxRelayBytes = 32 << 20

// relayer sends commands to other members in the background. Each member
// has a queue and, while the queue holds commands, one goroutine that
// sends everything queued in one call, then what was queued meanwhile:
// the commands reach a member in the order they were queued, batched as
// they come faster than the member answers.
type relayer struct {
	peers Peers
	limit int // bytes of commands a queue may hold (maxRelayBytes)

	ctx    context.Context // cancelled by close, which cuts the calls short
	cancel context.CancelFunc

	mu     sync.Mutex
	queues map[string]*relayQueue // by raft address; only while sending
	closed bool
	wg     sync.WaitGroup // the senders

	relayed atomic.Uint64 // commands a member answered
	dropped atomic.Uint64 // commands a member missed
}

// newRelayer returns a relayer that calls on peers, holding up to limit
// bytes of commands for each member.
func newRelayer(peers Peers, limit int) *relayer {
	r := &relayer{peers: peers, limit: limit, queues: make(map[string]*relayQueue)}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r
}

// close drops what is queued, cuts the calls in flight short and waits
// for the senders to return.
func (r *relayer) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
}

// relayQueue holds the commands waiting for one member.
type relayQueue struct {
	cmds  [][][]byte
	bytes int
}

// relay queues cmd for the members at addrs.
func (r *relayer) relay(addrs []string, cmd [][]byte) {
	size := 0
	for _, a := range cmd {
		size += len(a)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	for _, addr := range addrs {
		q := r.queues[addr]
		if q == nil {
			q = &relayQueue{}
			r.queues[addr] = q
			r.wg.Add(1)
			go r.send(addr, q)
		}
		if q.bytes+size > r.limit {
			r.dropped.Add(1)
			continue
		}
		q.cmds = append(q.cmds, cmd)
		q.bytes += size
	}
}

// send relays q's commands to the member at addr until q is empty, then
// forgets q; the next command for addr starts a new queue and goroutine.
func (r *relayer) send(addr string, q *relayQueue) {
	defer r.wg.Done()
	for {
		r.mu.Lock()
		cmds := q.cmds
		if len(cmds) == 0 || r.closed {
			delete(r.queues, addr)
			r.mu.Unlock()
			return
		}
		q.cmds, q.bytes = nil, 0
		r.mu.Unlock()
		ctx, cancel := context.WithTimeout(r.ctx, relayTimeout)
		err := r.peers.Relay(ctx, addr, cmds)
		cancel()
		if err != nil {
			r.dropped.Add(uint64(len(cmds)))
		} else {
			r.relayed.Add(uint64(len(cmds)))
		}
	}
}

// Relay has every other member of the cluster run a command, given by
// its arguments, as a command of a peer: the server relays PUBLISH this
// way, so that subscribers on every node hear it. It returns at once,
// without the members' replies. The commands a node relays reach each
// member in the order of the calls, at most once: a member that cannot
// be reached within relayTimeout, or that has maxRelayBytes of commands
// waiting for it, misses them (Stats counts them).
func (n *Node) Relay(args ...[]byte) {
	if n.relays == nil {
		return
	}
	members := n.raft.GetConfiguration().Configuration().Servers
	addrs := make([]string, 0, len(members))
	for _, m := range members {
		if string(m.ID) != n.cfg.NodeID {
			addrs = append(addrs, string(m.Address))
		}
	}
	if len(addrs) == 0 {
		return
	}
	size := 0
	for _, a := range args {
		size += len(a)
	}
	// One allocation for the arguments, which the caller may reuse.
	buf := make([]byte, 0, size)
	cmd := make([][]byte, len(args))
	for i, a := range args {
		buf = append(buf, a...)
		cmd[i] = buf[len(buf)-len(a) : len(buf) : len(buf)]
	}
	n.relays.relay(addrs, cmd)
}
