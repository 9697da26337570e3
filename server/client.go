package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/presenced/presenced/cluster"
	"github.com/presenced/presenced/proto"
	"github.com/presenced/presenced/store"
)

// client is one connection and its state. Only the connection's own
// goroutine touches the fields outside info; info is read by CLIENT LIST
// and INFO from other goroutines.
type client struct {
	s       *Server
	nc      net.Conn
	id      int64
	created time.Time

	parser proto.Parser
	in     []byte        // input not yet dropped (see endBatch)
	out    store.Replies // replies not yet written
	// keptIn and keptOut are the capacities of in and of out's buffer
	// that the server's budget of kept buffers counts (see buffers.go).
	keptIn, keptOut int
	// batchOpen is set while a batch is read: the requests in in[:used]
	// are dispatched, and the rest of a pipeline is still to come.
	batchOpen bool
	used      int
	// argv and pending, the arguments parsed from in and the keyspace
	// commands not yet run, come from bufs for the time of a batch.
	argv    [][]byte
	pending []store.Command
	bufs    *batchBuffers
	// lastName and lastSpec are the latest command name dispatch looked
	// up (as sent) and its entry: a pipeline mostly repeats one command.
	lastName []byte
	lastSpec *proto.Spec
	// changing is the connection's run of write batches that changed
	// something (see unchanged).
	changing changeRun
	db       int
	authed   bool
	closing  bool // close after writing out
	// killed is set by CLIENT KILL from another connection: handleInput
	// runs nothing more.
	killed atomic.Bool
	// blocked is set while WAIT waits; CLIENT UNBLOCK, from another
	// connection, clears it and sends unblock whether to answer an error.
	blocked atomic.Bool
	// paused is set while a CLIENT PAUSE holds the client up; such a
	// client counts as blocked, as in Redis.
	paused  atomic.Bool
	unblock chan bool

	// replyOff and skipNext are CLIENT REPLY OFF and SKIP; skipThis
	// drops the replies of the command running, the one after SKIP, and
	// execReplies holds the modes a transaction asked for until EXEC has
	// answered (see reply.go). muted is set while either drops replies,
	// for the monitors, which other connections feed.
	replyOff, skipNext, skipThis bool
	execReplies                  []replyMode
	muted                        atomic.Bool

	// unix marks a connection to the unix socket.
	unix bool

	// peer marks another node's connection: its writes are applied here
	// or refused, never forwarded again.
	peer bool
	// relayFrom is the ID of the member whose relayed commands this
	// connection carries, since its RAFT RELAY (see relayCommand).
	relayFrom string
	// readonly, set by READONLY, serves reads from this node's state
	// without confirming it is current.
	readonly bool

	// loop is the event loop serving the connection, nil when it has a
	// goroutine of its own. handingOff is set when the loop must hand it
	// to a goroutine before the next request (see needsGoroutine), and
	// barrier while the loop runs the commands of a pass: their reads
	// share one read barrier.
	loop       *eventLoop
	handingOff bool
	barrier    *sharedBarrier
	fd         int // the loop's descriptor of the connection

	multi    bool
	multiErr bool
	inExec   bool            // while EXEC runs the queued commands: none may block
	watched  []store.Watched // the keys WATCH follows until EXEC, DISCARD, UNWATCH or RESET
	queued   []queuedCommand
	// wrote is at or after the log index of the connection's latest
	// write, for WAIT: 0 before any, unknownIndex when only the leader
	// can tell (it was forwarded, or its outcome is unknown).
	wrote uint64
	// queuedBytes and queuedArgs are the chunks queued commands' copied
	// arguments are carved from: a follower forwards writes as MULTI
	// blocks of hundreds of commands, which would otherwise cost the
	// leader an allocation per argument. A chunk is never reused, only
	// replaced when full, so a command keeps its arguments as long as it
	// is referenced.
	queuedBytes []byte
	queuedArgs  [][]byte

	// ps is the pub/sub state, nil unless the client has subscriptions.
	ps *subscriptions
	// monitoring is set by MONITOR, until RESET.
	monitoring bool
	// box is the queue the client's output goes through while it is
	// subscribed, monitors or tracks keys, which other connections write
	// to too; nil otherwise. boxRef is box, for those other connections.
	box    *outbox
	boxRef atomic.Pointer[outbox]
	// track is the client's CLIENT TRACKING state (see tracking.go), and
	// gone is set once the connection has ended, for the clients that
	// redirect their invalidations to it.
	track tracker
	gone  atomic.Bool

	counters []counter // per command ID, for INFO commandstats

	info struct {
		sync.Mutex
		name, libName, libVer string
		lastCmd               string
		lastActive            time.Time
		db                    int
		multi                 int
		sub, psub, ssub       int // subscriptions to channels, patterns, shard channels
		monitoring            bool
		noEvict               bool // CLIENT NO-EVICT on, CLIENT LIST's e flag
		resp                  int  // the protocol's version, 2 or 3
	}
}

type queuedCommand struct {
	spec *proto.Spec
	args [][]byte
}

// counter counts one command's calls for INFO commandstats.
type counter struct {
	calls, usec, failed, rejected atomic.Int64
}

// reset zeroes the counts.
func (ct *counter) reset() {
	ct.calls.Store(0)
	ct.usec.Store(0)
	ct.failed.Store(0)
	ct.rejected.Store(0)
}

func newClient(s *Server, nc net.Conn, peer bool) *client {
	c := &client{
		s:        s,
		nc:       nc,
		peer:     peer,
		id:       s.nextID.Add(1),
		created:  time.Now(),
		in:       make([]byte, 0, readChunk),
		counters: make([]counter, len(proto.Counted)),
		unblock:  make(chan bool, 1),
	}
	_, c.unix = nc.LocalAddr().(*net.UnixAddr)
	c.authed = s.settings.config().RequirePass == ""
	c.info.lastActive = c.created
	c.info.lastCmd = "NULL" // as Redis names a client's last command before its first
	c.info.resp = 2
	return c
}

// maxBatchInput bounds the input that one batch of a pipeline spans.
const maxBatchInput = 1 << 20

// serve reads requests until the client leaves or breaks the protocol.
// The complete requests of each read are handled as one batch, and their
// replies go out in one write. A read that filled the buffer and ended in
// the middle of a request is the middle of a pipeline: the batch goes on
// with the next read, so that a long pipeline commits in few log entries.
// Where the connection gives access to its descriptor, serveRaw runs the
// same loop with one read a request fewer.
func (c *client) serve() {
	defer c.nc.Close()
	defer c.leaveModes()
	// A connection an event loop handed over may come with replies not
	// yet written and input not yet handled.
	if c.writeOut() != nil || (len(c.in) > 0 && !c.consume(false)) {
		return
	}
	if rc := rawConn(c.nc); rc != nil {
		c.serveRaw(rc)
		return
	}
	for {
		full, err := c.fill()
		if err != nil {
			c.endCut()
			return
		}
		if !c.consume(full) {
			return
		}
	}
}

// endCut ends the batch that the end of the connection's input (or a
// failed read) cut short, if one was open: the requests it holds came
// whole, and Redis runs and answers what it has read before it finds the
// end. Only the request cut in the middle is dropped.
func (c *client) endCut() {
	if c.batchOpen {
		c.batchOpen = false
		c.endBatch(c.used)
	}
}

// consume handles the input a read added, full reporting whether the read
// filled all its room: it dispatches the complete requests into the open
// batch, and ends the batch unless it goes on with the next read, in the
// middle of a long pipeline. It reports false when the connection must
// end.
func (c *client) consume(full bool) bool {
	if c.gather(full) {
		return true
	}
	return c.endBatch(c.used) && !c.closing
}

// gather dispatches the complete requests of the input into the open
// batch (opening one if none is), and reports whether the batch goes on
// with the next read: the read filled all its room and ended in the middle
// of a long pipeline. When it reports false, the batch is closed and must
// be ended.
func (c *client) gather(full bool) bool {
	if !c.batchOpen {
		c.takeBuffers()
		c.batchOpen, c.used = true, 0
		if c.track.on {
			c.box.hold()
		}
	}
	c.used = c.handleInput(c.used)
	if full && c.used < len(c.in) && len(c.pending) > 0 && c.used < maxBatchInput && !c.closing && !c.handingOff {
		return true
	}
	c.batchOpen = false
	return false
}

// closeConn closes the client's connection from another goroutine than
// the one serving it.
func (c *client) closeConn() {
	c.info.Lock()
	nc := c.nc
	c.info.Unlock()
	nc.Close()
}

// kill ends the connection for CLIENT KILL, sent on another one, and
// forgets the client at once, as Redis frees it. Closing the connection
// would wait for the command it runs (see serveRaw), which may block
// (WAIT): its socket is shut down instead, so that whatever serves it, its
// goroutine or an event loop, reads its end, and a blocked WAIT finds the
// peer gone.
func (c *client) kill() {
	c.killed.Store(true)
	c.s.forget(c)
	c.s.pause.nudge() // a paused client stops waiting
	if c.s.shutdownInLoop(c) {
		return
	}
	c.info.Lock()
	nc := c.nc
	c.info.Unlock()
	shutdown(nc)
}

// shutdown ends nc's traffic in both directions without closing it.
func shutdown(nc net.Conn) {
	if hc, ok := nc.(interface {
		CloseRead() error
		CloseWrite() error
	}); ok {
		hc.CloseRead()
		hc.CloseWrite()
		return
	}
	go nc.Close()
}

// endBatch runs what the batch left pending, writes its replies out, and
// drops the input up to used. It reports false when the connection must
// end: the write failed, or the unparsed input is over the limit.
func (c *client) endBatch(used int) bool {
	c.flushPending()
	c.releaseBuffers()
	err := c.writeOut()
	if c.box != nil {
		c.box.release()
	}
	if err != nil {
		return false
	}
	return c.dropInput(used)
}

// dropInput drops the input up to used, whose replies went out, and
// reports false when the unparsed rest is over the limit: Redis drops such
// a client without a reply.
func (c *client) dropInput(used int) bool {
	rest := copy(c.in, c.in[used:])
	c.in = c.in[:rest]
	if rest == 0 && cap(c.in) > maxIdleBuf && !c.s.buffers.keep(&c.keptIn, cap(c.in), used) {
		c.in = make([]byte, 0, readChunk)
	}
	return int64(len(c.in)) <= c.s.settings.current().QueryBufferLimit
}

// batchBuffers hold the parsed arguments and the keyspace commands of a
// batch. They are pooled rather than kept by each connection: a batch
// gets the buffers a batch before it used on the same processor, still
// in its cache, where a connection's own would have gone cold while the
// other connections ran (at pipeline 64, a store that missed the cache
// for every command queued).
type batchBuffers struct {
	argv    [][]byte
	pending []store.Command
}

var batchPool = sync.Pool{New: func() any { return new(batchBuffers) }}

// maxPooledArgs bounds the arguments (and commands) of the buffers
// returned to the pool: a batch of a huge pipeline keeps its own.
const maxPooledArgs = 8192

// takeBuffers gives the client a batch's buffers.
func (c *client) takeBuffers() {
	c.bufs = batchPool.Get().(*batchBuffers)
	c.argv, c.pending = c.bufs.argv[:0], c.bufs.pending[:0]
}

// releaseBuffers returns the batch's buffers, cleared, to the pool, once
// its commands have run.
func (c *client) releaseBuffers() {
	b := c.bufs
	clear(c.argv) // flushPending cleared pending
	b.argv, b.pending = nil, nil
	if cap(c.argv) <= maxPooledArgs && cap(c.pending) <= maxPooledArgs {
		b.argv, b.pending = c.argv[:0], c.pending[:0]
	}
	batchPool.Put(b)
	c.argv, c.pending, c.bufs = nil, nil, nil
}

// handleInput parses the complete requests of the input from offset used
// on and dispatches them, and returns the offset after them. A protocol
// error is answered after the replies before it, and ends the connection.
// On a connection an event loop serves, it stops before a request that
// needs a goroutine (see needsGoroutine) and sets handingOff.
func (c *client) handleInput(used int) int {
	lim := c.limits()
	for !c.closing {
		if c.killed.Load() { // by CLIENT KILL, maybe while a request blocked
			c.closing = true
			break
		}
		mark := len(c.argv)
		argv, n, err := c.parser.ParseAppend(c.argv, c.in[used:], lim)
		c.argv = argv
		if err != nil {
			c.flushPending()
			mark := c.out.Len()
			c.out.Error("ERR " + err.Error())
			c.s.stats.countError([]byte("ERR"))
			c.silence(mark)
			c.closing = true
			break
		}
		if n == 0 {
			break
		}
		args := c.argv[mark:]
		var spec *proto.Spec
		if len(args) > 0 {
			spec = c.lookup(args[0])
		}
		paused := c.pausedFor(spec)
		if c.loop != nil && (paused || needsGoroutine(spec, args)) {
			c.argv = c.argv[:mark]
			c.handingOff = true
			break
		}
		if paused {
			c.waitPause(spec)
		}
		used += n
		c.nextReply()
		if len(args) > 0 {
			c.dispatch(spec, args)
			if len(c.execReplies) > 0 {
				c.afterExec()
			}
			lim = c.limits()
			if c.track.caching && !c.multi && (spec == nil || spec.Name != "client") {
				c.track.caching = false // it was for this command, as Redis's CLIENT CACHING
			}
		}
	}
	return used
}

// fill reads more input and reports whether the read filled all the
// room it had (see readRoom).
func (c *client) fill() (bool, error) {
	room := c.readRoom()
	n, err := c.nc.Read(room)
	return c.filled(n, len(room), err)
}

// readRoom returns the room after the input for the next read, growing
// the buffer when it is full or when the request being parsed announced a
// larger argument.
func (c *client) readRoom() []byte {
	need := len(c.in) + readChunk
	if n := c.parser.Need(); n > need {
		need = n
	}
	if need > cap(c.in) {
		if need < 2*cap(c.in) {
			need = 2 * cap(c.in)
		}
		grown := make([]byte, len(c.in), need)
		copy(grown, c.in)
		c.in = grown
	}
	return c.in[len(c.in):cap(c.in)]
}

// filled takes in the n bytes a read of room bytes returned, with its
// error, and reports whether they filled the room; a read of nothing is
// an error (io.ErrUnexpectedEOF at the end of the stream).
func (c *client) filled(n, room int, err error) (bool, error) {
	c.in = c.in[:len(c.in)+n]
	if n > 0 {
		c.s.stats.net.read(n)
		return n == room, nil
	}
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return false, err
}

func (c *client) limits() proto.Limits {
	return proto.Limits{MaxBulkLen: c.s.settings.current().MaxBulkLen, AuthRequired: !c.authed}
}

// writeOut sends the replies gathered so far, or queues them in the
// client's outbox while it has one.
func (c *client) writeOut() error {
	if c.out.Len() == 0 {
		return nil
	}
	var err error
	if c.box != nil {
		err = c.box.send(c.out.B)
	} else {
		var n int
		n, err = c.nc.Write(c.out.B)
		c.s.stats.net.wrote(n)
	}
	c.resetOut()
	return err
}

// resetOut empties out once its replies went out, keeping its buffer for
// the next batch's unless it is large and not kept (see buffers.go).
func (c *client) resetOut() {
	used := c.out.Len()
	c.out.Reset()
	if cap(c.out.B) > maxIdleBuf && !c.s.buffers.keep(&c.keptOut, cap(c.out.B), used) {
		c.out.B = nil
	}
}

// dispatch handles one request, spec being its command's entry (nil for
// an unknown command): checks it as Redis does (existence,
// arity, authentication), then queues it in MULTI, batches it for the
// store, or runs it as a server command.
func (c *client) dispatch(spec *proto.Spec, args [][]byte) {
	if spec == nil {
		c.reject(nil, proto.ErrUnknownCommand(args))
		return
	}
	args, at := cutPastTime(spec, args)
	if !spec.CheckArity(len(args)) {
		c.reject(spec, proto.ErrArity(spec.Name))
		return
	}
	if !c.authed && spec.Flags&proto.NoAuth == 0 {
		c.reject(spec, proto.ErrNoAuth)
		return
	}
	if c.ps != nil && c.refuseSubscribed(spec, args) {
		return
	}
	if c.monitoring && spec.Flags&(proto.ReadOnly|proto.Write) != 0 {
		c.reject(spec, errMonitorKeyspace)
		return
	}
	if at != nil || readsHistory(spec, args) {
		c.historyCommand(spec, args, at)
		c.feedMonitors(c.db, spec, args)
		return
	}
	if c.multi && spec.Flags&proto.NoMulti != 0 {
		c.reject(spec, proto.ErrNotInMulti)
		return
	}
	if c.multi && !controlsTransaction(spec) {
		c.queue(spec, args)
		return
	}
	if store.Handles(spec) {
		c.pending = append(c.pending, store.Command{DB: c.db, Args: args, Spec: spec})
		c.feedMonitors(c.db, spec, args)
		if c.track.caching {
			c.flushPending() // CLIENT CACHING's answer is for this command alone
		}
		return
	}
	c.flushPending()
	c.runServerCommand(spec, args)
	c.feedMonitors(c.db, spec, args)
}

// lookup is proto.Lookup with a cache of one name, spelled as sent.
func (c *client) lookup(name []byte) *proto.Spec {
	if c.lastSpec != nil && bytes.Equal(name, c.lastName) {
		return c.lastSpec
	}
	spec := proto.Lookup(name)
	if spec != nil && len(name) <= maxCachedName {
		c.lastName, c.lastSpec = append(c.lastName[:0], name...), spec
	}
	return spec
}

// maxCachedName bounds the names lookup keeps a copy of; every
// command's name is shorter.
const maxCachedName = 32

// reject answers a request that was refused before running. Inside MULTI
// it also dooms the transaction, as in Redis.
func (c *client) reject(spec *proto.Spec, msg string) {
	c.flushPending()
	defer c.silence(c.out.Len())
	if spec != nil {
		c.counters[spec.Stat].rejected.Add(1)
	}
	if spec != nil && spec.Name == "exec" {
		// A refused EXEC ends the transaction, with or without one open.
		c.multi, c.multiErr, c.queued, c.watched = false, false, nil, nil
		c.out.Error("EXECABORT Transaction discarded because of: " + strings.TrimPrefix(msg, "ERR "))
		c.s.stats.countError([]byte("EXECABORT"))
		return
	}
	if c.multi {
		c.multiErr = true
	}
	c.out.Error(msg)
	c.s.stats.countError([]byte(msg))
}

// flushPending executes the batched keyspace commands in order: each run
// of reads on the read path, each run of writes through the Applier, cut
// into batches the log takes (--max-write-bytes) when it may be larger.
func (c *client) flushPending() {
	mark := c.out.Len()
	// Commands encode to fewer bytes than their requests take, so a batch
	// read from less input than the bound needs no cutting.
	limit := c.s.maxWriteBytes
	split := c.used > limit
	for i := 0; i < len(c.pending); {
		write := isWrite(c.pending[i].Spec, c.pending[i].Args)
		j := i + 1
		size := 0
		if split && write {
			size = cluster.CommandSize(c.pending[i])
		}
		for j < len(c.pending) && isWrite(c.pending[j].Spec, c.pending[j].Args) == write {
			if split && write {
				if size += cluster.CommandSize(c.pending[j]); size > limit {
					break // the writes from j on go in a batch of their own
				}
			}
			j++
		}
		c.execStore(c.pending[i:j], write)
		i = j
	}
	c.clearPending()
	c.silence(mark)
}

// clearPending empties the batched keyspace commands, which point into
// in.
func (c *client) clearPending() {
	clear(c.pending)
	c.pending = c.pending[:0]
}

// pfcountSpec is PFCOUNT's entry in the command table.
var pfcountSpec = proto.Lookup([]byte("pfcount"))

// isWrite reports whether a command writes: for a container command
// (HISTORY), whether its subcommand does. PFCOUNT of one key writes too,
// though Redis flags it read-only: it caches the count it computes in
// the key's value, which goes through the log so that every replica
// holds the same bytes.
func isWrite(spec *proto.Spec, args [][]byte) bool {
	if spec == pfcountSpec {
		return len(args) == 2
	}
	if len(spec.Subcommands) > 0 && len(args) > 1 {
		if sub := spec.Sub(args[1]); sub != nil {
			return sub.Flags&proto.Write != 0
		}
	}
	return spec.Flags&proto.Write != 0
}

// execStore runs cmds on the store and appends their replies to out. If
// the batch cannot run (no leader, say), each command's reply is the
// error.
func (c *client) execStore(cmds []store.Command, write bool) {
	begin := time.Now()
	first := len(c.out.Ends)
	mark := c.out.Len()
	c.settle(cmds, first, mark, begin, c.runStore(cmds, write, begin))
}

// settle ends a batch of cmds begun at begin, whose replies start at
// offset mark of out, Ends[first] being the first one's end: if it could
// not run (err), each command's reply is the error; then the batch is
// counted for INFO and CLIENT LIST.
func (c *client) settle(cmds []store.Command, first, mark int, begin time.Time, err error) {
	if err != nil {
		for range cmds {
			c.out.Error(replyError(err))
			c.out.Ends = append(c.out.Ends, c.out.Len())
		}
	}
	took := time.Since(begin)
	c.account(cmds, first, mark, took)
	last := cmds[len(cmds)-1]
	c.touch(last.Spec, last.Args, begin.Add(took))
}

// unknownIndex is client.wrote after a write whose log index this node
// cannot tell.
const unknownIndex = math.MaxUint64

// runStore runs cmds as one batch: writes through the cluster (forwarded
// to the leader from a follower), reads on this node's store once it is
// known to be current (unless the client asked for READONLY). On error
// nothing was appended to out.
func (c *client) runStore(cmds []store.Command, write bool, now time.Time) error {
	node := c.s.node
	switch {
	case write && c.peer:
		return node.ApplyLocal(cmds, &c.out)
	case write && c.unchanged(cmds, now):
		return nil
	case write:
		if c.track.on {
			c.s.tracking.rememberReads(c, cmds)
		}
		// A leader that commits the write itself knows a commit index
		// at or after its entry; one elected since it forwarded the
		// write may not yet.
		leading := node.IsLeader()
		err := node.Apply(cmds, &c.out)
		c.wrote = unknownIndex
		if err == nil && leading && node.IsLeader() {
			c.wrote = node.CommitIndex()
		}
		return err
	case !c.readonly && !c.peer:
		if err := c.readBarrier(); err != nil {
			return err
		}
	}
	c.s.store.Read(cmds, now.UnixMilli(), &c.out)
	return nil
}

// unchanged answers a batch of writes that would change nothing — the
// heartbeat that sets a bit already set — without a log entry, after
// making sure, as for a read, that this node's store is current; it
// reports whether it did. When it did not, the write path answers, and
// reports why if the store could not be made current.
//
// A connection whose writes keep changing something (one loading new
// bits, rather than heartbeats of users online) mostly skips that check,
// a lookup of each batch's first bit that the write then repeats; see
// changeRun.
func (c *client) unchanged(cmds []store.Command, now time.Time) bool {
	if len(cmds) == 0 || !c.changing.check(cmds[0].Spec) {
		return false
	}
	ok, err := c.s.store.ReadUnchanged(cmds, now.UnixMilli(), &c.out, c.readBarrier)
	if ok && err == nil {
		c.changing.ended()
		return true
	}
	return false
}

// changeRun follows a connection's run of write batches, each led by the
// same command, that were not found to change nothing: checked and found
// changing, or not checked. Past changingBeforeSkip of them, only one
// batch in checkEvery is checked, until one is found to change nothing;
// a batch led by another command starts a new run.
type changeRun struct {
	spec *proto.Spec
	n    int
}

const (
	// changingBeforeSkip is how long a run of batches that change
	// something gets before the check is skipped.
	changingBeforeSkip = 8
	// checkEvery is how often the check is made within a longer run.
	checkEvery = 16
)

// check counts one more batch, led by a command of spec, in the run, and
// reports whether it is worth checking.
func (r *changeRun) check(spec *proto.Spec) bool {
	if spec != r.spec {
		r.spec, r.n = spec, 0
	}
	r.n++
	return r.n <= changingBeforeSkip || r.n%checkEvery == 0
}

// ended ends the run: the batch checked changed nothing.
func (r *changeRun) ended() { r.n = 0 }

// readBarrier makes sure this node's store holds every write
// acknowledged before the batch was read (see cluster.Node.ReadBarrier).
func (c *client) readBarrier() error {
	if c.barrier != nil {
		return c.barrier.wait()
	}
	return c.s.node.ReadBarrier(context.Background())
}

// sharedBarrier is one read barrier for the batches of many connections,
// raised when the first of them needs it. It may serve a batch only if
// the batch was read before it was raised: then every write acknowledged
// before a request of the batch was sent is covered.
type sharedBarrier struct {
	node   *cluster.Node
	raised bool
	err    error
}

// wait raises the barrier, the first time, and returns its outcome.
func (b *sharedBarrier) wait() error {
	if !b.raised {
		b.err = b.node.ReadBarrier(context.Background())
		b.raised = true
	}
	return b.err
}

// needsGoroutine reports whether a connection served by an event loop
// must have a goroutine of its own to run spec with args: a subscription
// or CLIENT TRACKING, whose messages come from other connections'
// goroutines at any time, and the commands that wait for other nodes
// (RAFT, FAILOVER, SENTINEL, and INFO, ROLE and WAIT, which ask the
// followers how far they applied) or another server (MIGRATE), or run
// long (PFSELFTEST, and SYNC, which writes the whole dataset to its
// connection), which would hold up every connection of the loop
// meanwhile. A nil spec, an unknown command, is answered by the loop.
func needsGoroutine(spec *proto.Spec, args [][]byte) bool {
	if spec == nil {
		return false
	}
	switch spec.Name {
	case "client":
		return len(args) > 1 && (strings.EqualFold(string(args[1]), "tracking") || strings.EqualFold(string(args[1]), "reply"))
	case "subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe", "monitor", "raft", "failover", "info", "role", "wait", "sentinel", "migrate", "pfselftest", "sync":
		return true
	}
	return false
}

// account records calls, time and failures of a batch for INFO; the
// batch's replies start at offset mark, Ends[first] being the first one's
// end. A run of the same command (a pipeline of heartbeats) is counted
// with one addition per counter; a container command's calls one by one.
func (c *client) account(cmds []store.Command, first, mark int, took time.Duration) {
	per := took.Microseconds() / int64(len(cmds))
	start := mark
	for i := 0; i < len(cmds); {
		cmd := cmds[i]
		var calls, failed int64
		for ; i < len(cmds) && cmds[i].Spec == cmd.Spec && (calls == 0 || len(cmd.Spec.Subcommands) == 0); i++ {
			if c.out.B[start] == '-' {
				failed++
				c.s.stats.countError(c.out.B[start+1:])
			}
			start = c.out.Ends[first+i]
			calls++
		}
		c.record(cmd.Spec, cmd.Args, calls, failed, per*calls)
		if c.slow(cmd.Spec, per) {
			for _, slow := range cmds[i-int(calls) : i] {
				c.logSlow(slow.Args, per)
			}
		}
	}
}

// record counts calls of a command, spec with args, for INFO
// commandstats, under what statOf says: failed of them answered an error,
// and they took usec in all. A subcommand with the wrong number of
// arguments counts as rejected, as in Redis, which checks it before
// running it. The calls it runs also go into the command's latency
// histogram, and into the latency monitor's events when they took
// latency-monitor-threshold or longer.
func (c *client) record(spec *proto.Spec, args [][]byte, calls, failed, usec int64) {
	stat := statOf(spec, args)
	switch {
	case stat == nil:
	case stat.Parent != nil && !stat.CheckArity(len(args)):
		c.counters[stat.Stat].rejected.Add(calls)
	default:
		ct := &c.counters[stat.Stat]
		ct.calls.Add(calls)
		ct.usec.Add(usec)
		if failed > 0 {
			ct.failed.Add(failed)
		}
		c.s.stats.processed.Add(calls)
		cfg, per := c.s.settings.current(), usec/calls
		if cfg.LatencyTracking {
			c.s.latency.record(stat.Stat, per, calls)
		}
		c.s.events.addIfSlow(commandEvent(stat), time.Duration(per)*time.Microsecond, cfg)
	}
}

// touch notes the client's latest command for CLIENT LIST, which ended
// at end.
func (c *client) touch(spec *proto.Spec, args [][]byte, end time.Time) {
	name := cmdName(spec, args)
	c.info.Lock()
	c.info.lastActive = end
	if !c.inExec { // inside EXEC, as in Redis, the command is EXEC
		c.info.lastCmd = name
	}
	c.info.db = c.db
	c.info.multi = -1
	if c.multi {
		c.info.multi = len(c.queued)
	}
	c.info.Unlock()
}

// replyError turns a cluster error into its RESP error text.
func replyError(err error) string {
	var re interface{ RedisError() string }
	if errors.As(err, &re) {
		return re.RedisError()
	}
	return "ERR " + err.Error()
}
