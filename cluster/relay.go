package cluster

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/presenced/presenced/proto"
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
	// origin names the batches' sender: the node's ID and an incarnation
	// drawn when the relayer is made, which a restarted node draws anew.
	origin RelayOrigin
	seq    atomic.Uint64 // the latest batch's sequence number

	ctx    context.Context // cancelled by close, which cuts the calls short
	cancel context.CancelFunc

	mu     sync.Mutex
	queues map[string]*relayQueue // by raft address; only while sending
	closed bool
	wg     sync.WaitGroup // the senders

	relayed atomic.Uint64 // commands a member answered
	dropped atomic.Uint64 // commands a member missed
}

// newRelayer returns a relayer of the node nodeID that calls on peers,
// holding up to limit bytes of commands for each member.
func newRelayer(nodeID string, peers Peers, limit int) *relayer {
	r := &relayer{peers: peers, limit: limit, queues: make(map[string]*relayQueue),
		origin: RelayOrigin{NodeID: nodeID, Incarnation: strconv.FormatUint(rand.Uint64(), 16)}}
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

// maxBatchBytes bounds the commands one call relays, unless a single
// command is larger: a member runs a batch once it has read it whole, so
// the batches of a burst go one after the other rather than as one.
const maxBatchBytes = 256 << 10

// relayQueue holds the commands waiting for one member, in batches of up
// to maxBatchBytes; the last batch takes the commands that come.
type relayQueue struct {
	batches []*RelayBatch
	bytes   int         // of the commands of batches
	spare   *RelayBatch // the batch of the call before, for the next to reuse
}

// open returns the batch that takes a command of size bytes.
func (q *relayQueue) open(size int) *RelayBatch {
	if k := len(q.batches); k > 0 {
		if b := q.batches[k-1]; len(b.Commands)+size <= maxBatchBytes {
			return b
		}
	}
	b := q.spare
	if b == nil {
		b = new(RelayBatch)
	}
	q.spare = nil
	q.batches = append(q.batches, b)
	return b
}

// RelayOrigin names the node that relays a batch, in this run of it.
type RelayOrigin struct {
	NodeID, Incarnation string
}

// RelayBatch is the commands one call relays to a member. A member runs
// a batch only if its Seq is above that of every batch it ran from the
// same Origin: a batch that reaches it after a later one, as one that
// was abandoned when its call timed out may, is dropped, so that the
// commands a member runs are in the order they were relayed.
type RelayBatch struct {
	Origin RelayOrigin
	Seq    uint64
	// Commands holds each command as a bulk string of its number of
	// arguments followed by a bulk string of each; Bulks is the number of
	// bulk strings, N the number of commands.
	Commands []byte
	Bulks, N int
}

// relay queues the command of arguments args for the members at addrs.
func (r *relayer) relay(addrs []string, args [][]byte) {
	size := encodedLen(args)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	var cmd []byte // encoded in the first queue that takes it
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
		b := q.open(size)
		if cmd == nil {
			w := proto.Writer{B: b.Commands}
			w.BulkInt(int64(len(args)))
			for _, a := range args {
				w.Bulk(a)
			}
			cmd = w.B[len(b.Commands):]
			b.Commands = w.B
		} else {
			b.Commands = append(b.Commands, cmd...)
		}
		b.N++
		b.Bulks += 1 + len(args)
		q.bytes += size
	}
}

// send relays q's batches to the member at addr, one call each, until q
// is empty, then forgets q; the next command for addr starts a new queue
// and goroutine.
func (r *relayer) send(addr string, q *relayQueue) {
	defer r.wg.Done()
	for {
		r.mu.Lock()
		if len(q.batches) == 0 || r.closed {
			delete(r.queues, addr)
			r.mu.Unlock()
			return
		}
		b := q.batches[0]
		q.batches = q.batches[1:]
		q.bytes -= len(b.Commands)
		r.mu.Unlock()
		b.Origin, b.Seq = r.origin, r.seq.Add(1)
		ctx, cancel := context.WithTimeout(r.ctx, relayTimeout)
		err := r.peers.Relay(ctx, addr, *b)
		cancel()
		if err != nil {
			r.dropped.Add(uint64(b.N))
		} else {
			r.relayed.Add(uint64(b.N))
		}
		*b = RelayBatch{Commands: b.Commands[:0]}
		r.mu.Lock()
		q.spare = b
		r.mu.Unlock()
	}
}

// encodedLen is the length of the command of arguments args as
// RelayBatch.Commands holds it.
func encodedLen(args [][]byte) int {
	n := bulkLen(digits(len(args)))
	for _, a := range args {
		n += bulkLen(len(a))
	}
	return n
}

// bulkLen is the length of a bulk string of n bytes in RESP.
func bulkLen(n int) int { return 1 + digits(n) + 2 + n + 2 }

// digits is the number of decimal digits of n >= 0.
func digits(n int) int {
	d := 1
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
}

// Relay has every other member of the cluster run a command, given by
// its arguments, as a command of a peer: the server relays PUBLISH this
// way, so that subscribers on every node hear it. It returns at once,
// without the members' replies. The commands a node relays reach each
// member in the order of the calls, at most once: a member that cannot
// be reached within relayTimeout, or that has maxRelayBytes of commands
// waiting for it, misses them (Stats counts them). A call that timed out
// is abandoned with its connection, and the next goes on another; a
// member that was paused, and had received the abandoned call, drops it
// if it runs the next call first (see RelayBatch).
func (n *Node) Relay(args ...[]byte) {
	if n.relays == nil {
		return
	}
	if addrs := n.otherMembers(); len(addrs) > 0 {
		n.relays.relay(addrs, args)
	}
}

// relayMembers is the membership Relay sends to, as it was once the
// node had applied gen membership changes and snapshots.
type relayMembers struct {
	gen   uint64
	addrs []string // the raft addresses of the members other than this node
}

// otherMembers returns the raft addresses of the other members. It looks
// at raft's configuration again only after a membership change or a
// snapshot was applied: raft copies its whole configuration for each
// look, which a PUBLISH should not pay for. A member is thus known once
// this node has applied the change that adds it.
func (n *Node) otherMembers() []string {
	gen := n.fsm.memberships.Load()
	if m := n.relayTo.Load(); m != nil && m.gen == gen {
		return m.addrs
	}
	var addrs []string
	for _, m := range n.raft.GetConfiguration().Configuration().Servers {
		if string(m.ID) != n.cfg.NodeID {
			addrs = append(addrs, string(m.Address))
		}
	}
	n.relayTo.Store(&relayMembers{gen: gen, addrs: addrs})
	return addrs
}
