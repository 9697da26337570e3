package cluster

import (
	"context"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/presenced/presenced/proto"
)

// relayTimeout bounds one call that relays commands to a member: a
// member that takes longer, or cannot be reached, misses them. It is long
// enough for a member that was paused to answer a call once it goes on,
// on the call's own connection, rather than receive later calls on
// another one first and drop the call's commands then (see Relay).
const relayTimeout = time.Minute

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
	limit int          // bytes of commands a queue may hold (maxRelayBytes)
	log   hclog.Logger // told when calls to a member start and stop failing
	// prefix starts the command that opens every call, RAFT RELAY: this
	// node's ID and its incarnation (see Relay), before the call's
	// sequence number.
	prefix [][]byte

	ctx    context.Context // cancelled by close, which cuts the calls short
	cancel context.CancelFunc

	mu     sync.Mutex
	seq    uint64                 // the sequence number of the latest call
	queues map[string]*relayQueue // by raft address; only while sending
	// failing holds the members whose latest call failed, with the
	// commands they missed since the first failure.
	failing map[string]uint64
	closed  bool
	wg      sync.WaitGroup // the senders

	relayed atomic.Uint64 // commands a member answered
	dropped atomic.Uint64 // commands a member missed
}

// newRelayer returns a relayer that calls on peers for the node id,
// holding up to limit bytes of commands for each member, and logs to log.
// Its incarnation is the time it starts, which a restart of the node
// moves on.
func newRelayer(peers Peers, id string, limit int, log hclog.Logger) *relayer {
	r := &relayer{peers: peers, limit: limit, log: log, queues: make(map[string]*relayQueue), failing: make(map[string]uint64)}
	r.prefix = [][]byte{[]byte("RAFT"), []byte("RELAY"), []byte(id), strconv.AppendInt(nil, time.Now().UnixNano(), 10)}
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

// relayChunk is the size of the blocks a relay queue keeps its commands
// in: a command is encoded once into its block, which a call then writes
// to the member as it is (see Peers.Relay), so that the commands are
// neither moved as the queue grows nor copied into a call.
const relayChunk = 64 << 10

// relayCallBytes bounds the commands of one call (a command longer than
// that has a call of its own): the member's replies to a call, which
// the relayer reads once the call is written, stay within what the
// connection's buffers hold.
const relayCallBytes = 1 << 20

// relayQueue holds the commands waiting for one member, encoded in RESP
// in blocks of relayChunk bytes (a longer command has a block of its own).
type relayQueue struct {
	blocks []relayBlock
	size   int      // bytes in blocks
	spare  [][]byte // emptied blocks, for the queue to reuse
}

// relayBlock is a block of a relay queue: commands encoded in RESP, and
// how many.
type relayBlock struct {
	b []byte
	n int
}

// room returns a block of q with room for size more bytes at its end,
// starting one when the last has not.
func (q *relayQueue) room(size int) *relayBlock {
	if last := len(q.blocks) - 1; last >= 0 && cap(q.blocks[last].b)-len(q.blocks[last].b) >= size {
		return &q.blocks[last]
	}
	var b []byte
	if k := len(q.spare) - 1; k >= 0 && size <= relayChunk {
		b, q.spare = q.spare[k], q.spare[:k]
	} else {
		b = make([]byte, 0, max(size, relayChunk))
	}
	q.blocks = append(q.blocks, relayBlock{b: b})
	return &q.blocks[len(q.blocks)-1]
}

// take removes the blocks of the next call from q, at most
// relayCallBytes of commands unless the first block alone is longer, and
// returns their bytes with their count of commands.
func (q *relayQueue) take() (chunks [][]byte, n int) {
	size := 0
	for k, blk := range q.blocks {
		if k > 0 && size+len(blk.b) > relayCallBytes {
			break
		}
		chunks = append(chunks, blk.b)
		size += len(blk.b)
		n += blk.n
	}
	q.blocks = append(q.blocks[:0], q.blocks[len(chunks):]...)
	q.size -= size
	return chunks, n
}

// recycle keeps the blocks of a call that returned for q to reuse, as
// many as a call takes.
func (q *relayQueue) recycle(chunks [][]byte) {
	for _, c := range chunks {
		if cap(c) == relayChunk && len(q.spare) < relayCallBytes/relayChunk {
			q.spare = append(q.spare, c[:0])
		}
	}
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
		if q.size+size > r.limit {
			r.dropped.Add(1)
			continue
		}
		blk := q.room(size)
		if cmd == nil {
			w := proto.Writer{B: blk.b}
			w.Array(len(args))
			for _, a := range args {
				w.Bulk(a)
			}
			cmd = w.B[len(blk.b):]
			blk.b = w.B
		} else {
			blk.b = append(blk.b, cmd...)
		}
		blk.n++
		q.size += size
	}
}

// send relays q's commands to the member at addr until q is empty, then
// forgets q; the next command for addr starts a new queue and goroutine.
func (r *relayer) send(addr string, q *relayQueue) {
	defer r.wg.Done()
	var header []byte
	for {
		r.mu.Lock()
		if q.size == 0 || r.closed {
			delete(r.queues, addr)
			r.mu.Unlock()
			return
		}
		chunks, n := q.take()
		r.seq++
		w := proto.Writer{B: header[:0]}
		w.Array(len(r.prefix) + 1)
		for _, a := range r.prefix {
			w.Bulk(a)
		}
		w.Bulk(strconv.AppendUint(nil, r.seq, 10))
		header = w.B
		r.mu.Unlock()
		ctx, cancel := context.WithTimeout(r.ctx, relayTimeout)
		err := r.peers.Relay(ctx, addr, append(net.Buffers{header}, chunks...), n+1)
		cancel()
		r.mu.Lock()
		q.recycle(chunks)
		r.noteOutcome(addr, n, err)
		r.mu.Unlock()
	}
}

// noteOutcome counts the n commands of a call to the member at addr as
// relayed or dropped, and logs when calls to it start failing and when
// they work again, rather than each failure: a member that is down fails
// every call. The caller holds r.mu.
func (r *relayer) noteOutcome(addr string, n int, err error) {
	if err != nil {
		r.dropped.Add(uint64(n))
	} else {
		r.relayed.Add(uint64(n))
	}
	missed, failing := r.failing[addr]
	switch {
	case err != nil && !failing:
		r.log.Warn("relaying to a member failed: it misses the commands until a call works", "member", addr, "commands", n, "error", err)
		r.failing[addr] = uint64(n)
	case err != nil:
		r.failing[addr] = missed + uint64(n)
	case failing:
		r.log.Info("relaying to a member works again", "member", addr, "missed", missed)
		delete(r.failing, addr)
	}
}

// encodedLen is the length of the command of arguments args in RESP.
func encodedLen(args [][]byte) int {
	n := headerLen(len(args))
	for _, a := range args {
		n += headerLen(len(a)) + len(a) + 2
	}
	return n
}

// headerLen is the length of an array's or a bulk string's header: its
// type, the decimal count n and CRLF.
func headerLen(n int) int {
	digits := 1
	for ; n >= 10; n /= 10 {
		digits++
	}
	return 1 + digits + 2
}

// Relay has every other member of the cluster run a command, given by
// its arguments, as a command of a peer: the server relays PUBLISH this
// way, so that subscribers on every node hear it. It returns at once,
// without the members' replies. The commands reach each member in the
// order of the calls, at most once: a member that cannot be reached
// within relayTimeout, or that has maxRelayBytes of commands waiting for
// it, misses them (Stats counts them). Each call to a member opens with
// RAFT RELAY, this node's ID, its incarnation (when it started) and the
// call's sequence number; a member runs a call's commands only while no
// later call of this node has opened: the commands of a call given up on
// (its connection cut while the member had them already, or the member
// held up past relayTimeout) would otherwise run after those of the
// next call, on another connection.
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
