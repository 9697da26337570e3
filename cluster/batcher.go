package cluster

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/presenced/presenced/store"
)

// batcher implements group commit: callers queue batches of commands, and
// one goroutine packs every batch waiting (up to a size bound) into a
// single log entry. While up to maxInflight entries are being committed,
// new batches wait in the queue, so the busier the node the more batches
// share an entry.
//
// Gathering: a caller that writes one command at a time (pipeline 1)
// sends its next batch only once its entry is applied, so the callers one
// entry answers come back together, spread over the time their
// connections take to send the reply and read the next command. Taking
// the queue as soon as the first of them is back would leave the others
// for the entry after, and cost them a whole commit more: at pipeline 1
// entries would alternate between two halves of the callers. So when a
// commit is slow enough to matter (gatherFrom, an fsync), take waits for
// as many batches as were answered since the last entry was taken, as a
// database's group commit waits for its siblings, until no batch came for
// a quarter of the last commit's time, or for the whole of it (at most
// gatherMax): a caller left out would wait that long anyway.
//
// Lifecycle: stop fails the queued batches and refuses new ones; closing
// quit ends the proposer and the ticker; closing raftDown (after raft has
// shut down, which resolves the futures of entries in flight) lets the
// completer finish every entry still in flight.
type batcher struct {
	r        *raft.Raft
	fsm      *fsm
	maxBytes int                  // bound of an entry's encoded commands
	maxCmds  int                  // bound of an entry's commands
	bound    func(size int) error // refuses a caller's batch of size bytes, or returns nil
	// logFailure returns the error of the latest write to the log if it
	// failed: raft answers the writes of an entry it could not store with
	// that error (wrapped out of reach by its LogCache).
	logFailure func() error

	mu struct {
		sync.Mutex
		queue    []*request
		closed   bool
		enqueued uint64
	}
	wake      chan struct{}  // signalled when the queue gets a batch
	slots     chan struct{}  // one token per entry in flight
	proposals chan *proposal // entries in flight, in log order
	quit      <-chan struct{}
	raftDown  <-chan struct{}

	tickQueued atomic.Bool // a tick is queued or in flight
	enqueued   progress    // batches ever queued, for tests to wait on

	answered atomic.Int64 // callers answered since take last took
	commit   atomic.Int64 // ns from proposing the last applied entry to applying it
	bounds   gatherBounds // defaultGather, unless a test sets them
	gather   *time.Timer  // ends take's wait for answered callers

	entries  atomic.Uint64 // entries proposed
	applied  atomic.Uint64 // entries proposed and applied
	took     atomic.Int64  // ns from proposing to applying them, in all
	batches  atomic.Uint64 // caller batches committed
	commands atomic.Uint64 // commands committed
}

// request is one caller's batch. A tick has no commands, no out and no
// done channel: nobody waits for it.
type request struct {
	cmds []store.Command
	size int    // bound of the encoded size of cmds (CommandSize)
	tail []byte // appendTail of cmds, encoded by the caller
	out  *store.Replies
	done chan error
}

var requests = sync.Pool{New: func() any { return &request{done: make(chan error, 1)} }}

// proposal is an entry handed to raft and the batches it carries. The
// future is waited for by a goroutine of its own, which sets err and resp
// and closes resolved.
//
// The callers are answered once, by whoever takes the proposal out of the
// FSM's pending entries: the FSM when it applies the entry (it applies the
// callers' own commands, writing replies straight into their buffers, and
// saves decoding the entry and copying replies), or the completer when
// raft failed the entry before the FSM saw it.
type proposal struct {
	b        *batcher
	key      *byte     // the entry's first byte, its key in the FSM's pending entries
	proposed time.Time // the entry's stamp, in ms, is its UnixMilli
	reqs     []*request
	batches  [][]store.Command
	resolved chan struct{}
	err      error
	resp     any
}

// apply applies the proposal's batches to sm, as the FSM applying its
// entry, and answers each caller as soon as its batch is applied: its
// connection writes the replies, and its client sends the next commands,
// while the rest of the entry is applied. (A caller's later reads still
// see the whole entry: a read waits for the entry to be applied.)
func (p *proposal) apply(sm StateMachine) {
	took := int64(time.Since(p.proposed))
	p.b.commit.Store(took)
	p.b.took.Add(took)
	p.b.applied.Add(1)
	outs := make([]*store.Replies, len(p.reqs))
	for i, r := range p.reqs {
		outs[i] = r.out
		if outs[i] == nil {
			outs[i] = new(store.Replies) // a tick's; nobody reads it
		}
	}
	sm.ApplyEach(p.proposed.UnixMilli(), p.batches, outs, func(i int) {
		if r := p.reqs[i]; r.done != nil {
			p.b.batches.Add(1)
			p.b.commands.Add(uint64(len(r.cmds)))
			p.b.respond(r, nil)
		}
	})
	for _, r := range p.reqs {
		if r.done == nil {
			p.b.respond(r, nil) // the tick, once the entry is applied
		}
	}
	<-p.b.slots
}

// Bounds of gathering (see batcher).
const (
	// gatherFrom is the least commit time for which take waits for
	// answered callers: a faster commit (a log kept in memory or left to
	// the OS) costs a caller left out less than the timer would.
	gatherFrom = 500 * time.Microsecond
	// gatherMax bounds take's wait however slow the last commit was.
	gatherMax = 10 * time.Millisecond
	// gatherIdleShare: take stops waiting when no batch came for this
	// share of the last commit's time.
	gatherIdleShare = 4
)

// gatherBounds are the bounds of waiting for answered callers: from and
// max are gatherFrom and gatherMax, but for tests.
type gatherBounds struct{ from, max time.Duration }

// defaultGather are the bounds outside tests.
var defaultGather = gatherBounds{from: gatherFrom, max: gatherMax}

// after returns the bounds of a wait for the callers a commit (or a
// forwarding call) that took last answered: the longest gap between
// their arrivals and the longest wait in all; ok is false when it took
// too little for a wait to pay.
func (g gatherBounds) after(last time.Duration) (idle, limit time.Duration, ok bool) {
	return last / gatherIdleShare, min(last, g.max), last >= g.from
}

func newBatcher(r *raft.Raft, f *fsm, cfg *Config, quit, raftDown <-chan struct{}) *batcher {
	gather := time.NewTimer(time.Hour)
	gather.Stop()
	return &batcher{
		r:         r,
		fsm:       f,
		maxBytes:  cfg.MaxEntryBytes,
		maxCmds:   cfg.MaxEntryCommands,
		wake:      make(chan struct{}, 1),
		slots:     make(chan struct{}, cfg.MaxInflight),
		proposals: make(chan *proposal, cfg.MaxInflight),
		quit:      quit,
		raftDown:  raftDown,
		bounds:    defaultGather,
		gather:    gather,
	}
}

// apply queues cmds and waits until the entry carrying them is committed
// and applied, then appends their replies to out. If bounded, it first
// has b.bound check the size of their encoding.
func (b *batcher) apply(cmds []store.Command, out *store.Replies, bounded bool) error {
	size := batchSize(cmds)
	if bounded {
		if err := b.bound(size); err != nil {
			return err
		}
	}
	r := requests.Get().(*request)
	r.cmds, r.out, r.size = cmds, out, size
	// Encoded here, on the callers' goroutines, rather than by the
	// proposer, which the next entry waits for.
	r.tail = appendTail(r.tail[:0], cmds)
	err := ErrClosed
	if b.enqueue(r) {
		err = <-r.done
	}
	r.cmds, r.out = nil, nil
	if cap(r.tail) > maxKeptTail {
		r.tail = nil // a big SET's; not kept for the usual batches
	}
	requests.Put(r)
	return err
}

// maxKeptTail bounds the encoding buffer a pooled request keeps.
const maxKeptTail = 64 << 10

// enqueue adds r to the queue, or reports false if the batcher stopped.
func (b *batcher) enqueue(r *request) bool {
	b.mu.Lock()
	if b.mu.closed {
		b.mu.Unlock()
		return false
	}
	b.mu.queue = append(b.mu.queue, r)
	b.mu.enqueued++
	count := b.mu.enqueued
	b.mu.Unlock()
	b.enqueued.advance(count)
	select {
	case b.wake <- struct{}{}:
	default:
	}
	return true
}

// stop refuses new batches and fails the queued ones with ErrClosed.
func (b *batcher) stop() {
	b.mu.Lock()
	b.mu.closed = true
	queued := b.mu.queue
	b.mu.queue = nil
	b.mu.Unlock()
	for _, r := range queued {
		b.respond(r, ErrClosed)
	}
}

// committed returns the number of entries proposed and applied, and the
// time from proposing to applying them in all.
func (b *batcher) committed() (entries uint64, took time.Duration) {
	return b.applied.Load(), time.Duration(b.took.Load())
}

// queued returns the number of batches waiting for an entry.
func (b *batcher) queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.mu.queue)
}

// proposeLoop packs queued batches into entries, at most maxInflight at a
// time, and hands each to the completer.
func (b *batcher) proposeLoop() {
	defer close(b.proposals)
	for {
		select {
		case b.slots <- struct{}{}:
		case <-b.quit:
			return
		}
		reqs := b.take()
		if reqs == nil {
			return
		}
		b.proposals <- b.propose(reqs)
	}
}

// take waits for queued batches and removes from the queue's front as
// many as fit in one entry (at least one). It waits for more while fewer
// are queued than callers were answered since it last took, if the last
// commit was slow (see batcher).
func (b *batcher) take() []*request {
	expect := int(b.answered.Swap(0))
	idle, limit, slow := b.bounds.after(time.Duration(b.commit.Load()))
	gathering := expect > 1 && slow
	var until time.Time // when gathering ends, from the first batch queued
	defer b.gather.Stop()
	for {
		b.mu.Lock()
		q := b.mu.queue
		n, size, cmds := 0, 0, 0
		for ; n < len(q); n++ {
			size, cmds = size+q[n].size, cmds+len(q[n].cmds)
			if n > 0 && (size > b.maxBytes || cmds > b.maxCmds) {
				break
			}
		}
		// Take when not gathering, when the callers are back, or when
		// the queue fills an entry already.
		if n > 0 && (!gathering || n >= expect || n < len(q)) {
			reqs := append([]*request(nil), q[:n]...)
			rest := copy(q, q[n:])
			clear(q[rest:])
			b.mu.queue = q[:rest]
			b.mu.Unlock()
			return reqs
		}
		b.mu.Unlock()
		if n > 0 {
			now := time.Now()
			if until.IsZero() {
				until = now.Add(limit)
			}
			b.gather.Reset(min(idle, until.Sub(now)))
		}
		select {
		case <-b.wake:
		case <-b.gather.C:
			gathering = false
		case <-b.quit:
			return nil
		}
	}
}

// propose encodes reqs as one entry stamped with this node's clock and
// hands it to raft.
func (b *batcher) propose(reqs []*request) *proposal {
	batches := make([][]store.Command, len(reqs))
	tails := make([][]byte, len(reqs))
	for i, r := range reqs {
		batches[i], tails[i] = r.cmds, r.tail
	}
	proposed := time.Now()
	data := encodeEntry(proposed.UnixMilli(), batches, tails)
	p := &proposal{b: b, key: &data[0], proposed: proposed, reqs: reqs, batches: batches, resolved: make(chan struct{})}
	b.fsm.pending.Store(p.key, p)
	// Counted before raft has it: the FSM may answer the entry's callers
	// before this goroutine runs again.
	b.entries.Add(1)
	f := b.r.Apply(data, 0)
	// Not a tracked goroutine: raft resolves every future it accepted,
	// except an entry committed but not yet handed to the FSM when raft
	// shuts down. The completer stops waiting once raft is down, and then
	// this goroutine is left blocked; it holds only this proposal.
	go func() {
		p.err = f.Error()
		if p.err == nil {
			p.resp = f.Response()
		}
		close(p.resolved)
	}()
	return p
}

// completeLoop answers the batches of each entry in log order once raft
// resolved it.
func (b *batcher) completeLoop() {
	for p := range b.proposals {
		var resp any
		var err error
		select {
		case <-p.resolved:
			resp, err = p.resp, p.err
		case <-b.raftDown:
			select {
			case <-p.resolved:
				resp, err = p.resp, p.err
			default:
				err = raft.ErrRaftShutdown
			}
		}
		if _, mine := b.fsm.pending.LoadAndDelete(p.key); mine {
			// The FSM did not apply the entry (or not from this
			// proposal's bytes): answer from raft's outcome.
			b.finish(p.reqs, resp, outcomeError(err, b.logFailure))
			<-b.slots
		}
	}
}

// finish answers reqs, the batches of one entry, from the entry's outcome:
// on success each gets its slice of the entry's replies.
func (b *batcher) finish(reqs []*request, resp any, err error) {
	rep, _ := resp.(*store.Replies)
	total := 0
	for _, r := range reqs {
		total += len(r.cmds)
	}
	if err == nil && (rep == nil || len(rep.Ends) != total) {
		if e, ok := resp.(error); ok {
			err = e
		} else {
			err = fmt.Errorf("cluster: unexpected state machine response %T", resp)
		}
	}
	k := 0
	for _, r := range reqs {
		if err == nil {
			r.out.AppendFrom(rep, k, len(r.cmds))
			b.batches.Add(1)
			b.commands.Add(uint64(len(r.cmds)))
		}
		k += len(r.cmds)
		b.respond(r, err)
	}
	if rep != nil {
		b.fsm.putReplies(rep)
	}
}

// respond delivers err to r's caller.
func (b *batcher) respond(r *request, err error) {
	if r.done == nil {
		b.tickQueued.Store(false)
		// A signal the tick's own apply sent found the tick still
		// queued and was dropped: send it again now that it is not.
		b.fsm.signalBehind()
		return
	}
	b.answered.Add(1)
	r.done <- err
}

// tickLoop queues an empty batch every interval while this node leads and
// the state machine has something due, so that time advances, and keys
// expire, at the same log position on every replica even when no client
// writes; and at once when an entry left due expiry work (a mass expiry,
// which the store spreads over entries). While nothing is due it queues
// none: a quiet node's log stays still, and writes nothing to disk.
func (b *batcher) tickLoop(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-b.quit:
			return
		case <-t.C:
			// A follower need not ask its store.
			if b.r.State() != raft.Leader || !b.fsm.sm.Due(time.Now().UnixMilli()) {
				continue
			}
		case <-b.fsm.behind:
		}
		if b.r.State() != raft.Leader || !b.tickQueued.CompareAndSwap(false, true) {
			continue
		}
		if !b.enqueue(&request{}) {
			return
		}
	}
}
