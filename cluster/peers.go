package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/presenced/presenced/proto"
	"github.com/presenced/presenced/store"
)

// Peers is how a node calls on another node, addressed by its raft
// address: to forward writes to the leader, to ask it for a read index,
// and to have it change the membership.
type Peers interface {
	// Forward applies cmds as one atomic batch on the node at addr and
	// appends their replies to out.
	Forward(ctx context.Context, addr string, cmds []store.Command, out *store.Replies) error
	// ReadIndex returns the read index of the node at addr, which must lead.
	ReadIndex(ctx context.Context, addr string) (uint64, error)
	// Tick has the node at addr, which must lead, commit an empty entry
	// and returns an index at or after it.
	Tick(ctx context.Context, addr string) (uint64, error)
	// AddVoter has the node at addr, which must lead, add a voter; joining
	// says that the voter asked to be added (see Node.AddVoter).
	AddVoter(ctx context.Context, addr, id, raftAddr string, joining bool) error
	// RemoveServer has the node at addr, which must lead, remove a member.
	RemoveServer(ctx context.Context, addr, id string) error
	// Handover has the node at addr, which must lead, hand its leadership
	// to the voter at the raft address to, or with to "" to the other
	// voter furthest ahead in the log.
	Handover(ctx context.Context, addr, to string) error
	// Applied returns the index of the latest entry the node at addr
	// applied.
	Applied(ctx context.Context, addr string) (uint64, error)
	// Members returns the membership the node at addr knows.
	Members(ctx context.Context, addr string) ([]Member, error)
	// Info returns the fields of the RAFT INFO of the node at addr.
	Info(ctx context.Context, addr string) (map[string]string, error)
	// Relay runs the n commands of cmds, encoded in RESP one after the
	// other across its buffers, in order on the node at addr as a peer's
	// commands, and fails with the first error reply. It may consume cmds
	// (as cmds.WriteTo does), but not change the bytes it holds.
	Relay(ctx context.Context, addr string, cmds net.Buffers, n int) error
}

// peerTimeout bounds a call to a peer whose context has no deadline.
const peerTimeout = 10 * time.Second

// maxIdlePeerConns is how many idle connections are kept per peer; a
// connection beyond this bound is closed after its call, and the next
// burst dials it again. Forwarded writes hold at most maxForwardSenders
// at once; read indexes and membership calls hold one each while they
// wait.
const maxIdlePeerConns = 64

// RESPPeers calls on other nodes with RESP over their raft address, where
// each node also serves RESP to its peers.
type RESPPeers struct {
	password  func() string
	sec       *PeerTLS // nil: plain TCP
	callBytes int      // bound of the batches one forwarding call carries, by batchSize (0: none)

	mu     sync.Mutex
	idle   map[peerKey][]*peerConn
	groups map[peerKey]*forwardGroup // of the batches forwarded to each node
}

// peerKey names the connections to the node at addr that speak one
// protocol: a follower forwards the writes of a client that chose RESP3
// on connections in RESP3, so that the leader answers them in it.
type peerKey struct {
	addr  string
	resp3 bool
}

// NewRESPPeers returns Peers that reach nodes over TCP, with TLS when sec
// is set; password, if not nil, returns the password to authenticate with
// (requirepass).
func NewRESPPeers(password func() string, sec *PeerTLS) *RESPPeers {
	return &RESPPeers{password: password, sec: sec, idle: make(map[peerKey][]*peerConn), groups: make(map[peerKey]*forwardGroup)}
}

// peerConn is a RESP connection to a peer.
type peerConn struct {
	nc  net.Conn
	r   *bufio.Reader
	req proto.Writer // the request being sent, its buffer kept between calls
	buf []byte       // replies read and not yet consumed
	db  int
}

// RemoteError is an error reply from another node, relayed as it is.
type RemoteError struct{ Reply string }

func (e *RemoteError) Error() string { return "cluster: peer replied: " + e.Reply }

// RedisError returns the reply's text.
func (e *RemoteError) RedisError() string { return e.Reply }

// errNotSent marks a call that failed before its request was sent.
var errNotSent = errors.New("cluster: request not sent")

// errPassword marks a call whose connection the member refused to
// authenticate: it did not take this node's password (its requirepass),
// or wants one and this node has none. Members need the same password.
var errPassword = errors.New("cluster: the member refused this node's password")

// isAuthRefusal reports whether a member's error reply refuses a
// connection's authentication.
func isAuthRefusal(reply string) bool {
	return strings.HasPrefix(reply, "WRONGPASS ") || strings.HasPrefix(reply, "NOAUTH ")
}

// Forward implements Peers; out's protocol is the one the leader answers
// in. The batches forwarded to a node at once are
// sent together: at most maxForwardSenders calls to addr are in flight,
// and a batch that arrives meanwhile waits and joins the next call, with
// every other batch waiting by then, as long as their encodings add up to
// the bound on a batch of writes (Config.MaxBatchBytes, which the leader
// applies to each batch of its own clients). A call carries its batches in one
// MULTI/EXEC block (the leader applies them as one, and answers each
// batch with its share of the EXEC reply), so a follower serving many
// writing clients makes a few calls to the leader, not one per write.
// A call gathers the callers the last call answered as the leader's
// group commit does (see batcher): at pipeline 1 they come back spread
// over their round trips, and the first back would otherwise make a call
// alone.
func (p *RESPPeers) Forward(ctx context.Context, addr string, cmds []store.Command, out *store.Replies) error {
	key := peerKey{addr, out.RESP3}
	g := p.forwarding(key)
	f := &forward{cmds: cmds, size: batchSize(cmds), out: out, wake: make(chan bool, 1)}
	if !g.join(f) && !<-f.wake {
		return f.err
	}
	// f sends: itself and the batches waiting, then hands the turn on.
	fs := g.take(append(make([]*forward, 0, 8), f))
	sent := time.Now()
	p.forwardAll(ctx, key, fs)
	// Counted before the callers hear back, so that the call any of
	// them makes next gathers the others.
	g.called(len(fs), time.Since(sent))
	for _, answered := range fs {
		answered.wake <- false
	}
	g.handOff()
	<-f.wake
	return f.err
}

// maxForwardSenders bounds the calls forwarding batches to one node at
// once.
const maxForwardSenders = 2

// maxForwardBatches bounds the batches one call forwards.
const maxForwardBatches = 256

// forwardGroup queues the batches waiting to be forwarded to one node.
type forwardGroup struct {
	mu        sync.Mutex
	queue     []*forward    // waiting for a call
	senders   int           // calls in flight or being made
	answered  int           // batches answered since a call last took the queue
	call      time.Duration // how long the last call took
	gathering bool          // a sender waits for the callers answered
	arrived   chan struct{} // signalled when a batch is queued while gathering
	bounds    gatherBounds  // defaultGather, unless a test sets them
	maxBytes  int           // bound of the sizes of the batches of a call (0: none)
}

// forward is one batch to forward and, once answered, its outcome.
type forward struct {
	cmds []store.Command
	size int // batchSize of cmds
	out  *store.Replies
	err  error
	wake chan bool // false: answered (err is set); true: make the next call
}

// forwarding returns the forward group of key.
func (p *RESPPeers) forwarding(key peerKey) *forwardGroup {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.groups[key]
	if g == nil {
		g = newForwardGroup()
		g.maxBytes = p.callBytes
		p.groups[key] = g
	}
	return g
}

// newForwardGroup returns an empty forward group that gathers within the
// default bounds.
func newForwardGroup() *forwardGroup {
	return &forwardGroup{arrived: make(chan struct{}, 1), bounds: defaultGather}
}

// join reports whether f may make a call now; if not, it queues f, and
// f's wake says when it is answered or has the turn. While a sender
// gathers, f joins its call.
func (g *forwardGroup) join(f *forward) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.senders < maxForwardSenders && !g.gathering {
		g.senders++
		return true
	}
	g.queue = append(g.queue, f)
	if g.gathering {
		select {
		case g.arrived <- struct{}{}:
		default:
		}
	}
	return false
}

// take appends queued batches to fs, in order, up to maxForwardBatches in
// all and as long as their sizes add up to maxBytes at most, and returns
// it. After a slow call (one that took gatherFrom or more) it
// first waits for the callers answered since a call last took the queue,
// with the bounds of the leader's group commit: until none came for a
// quarter of the last call's time, or for as long as it took (at most
// gatherMax).
func (g *forwardGroup) take(fs []*forward) []*forward {
	g.mu.Lock()
	defer g.mu.Unlock()
	expect := min(g.answered, maxForwardBatches)
	g.answered = 0
	if idle, limit, slow := g.bounds.after(g.call); slow && expect > len(fs)+len(g.queue) && !g.gathering {
		g.gather(expect-len(fs), idle, limit)
	}
	size := 0
	for _, f := range fs {
		size += f.size
	}
	n := 0
	for n < len(g.queue) && len(fs)+n < maxForwardBatches && (g.maxBytes == 0 || size+g.queue[n].size <= g.maxBytes) {
		size += g.queue[n].size
		n++
	}
	fs = append(fs, g.queue[:n]...)
	rest := copy(g.queue, g.queue[n:])
	clear(g.queue[rest:])
	g.queue = g.queue[:rest]
	return fs
}

// gather waits, with g.mu held but released while waiting, until want
// batches are queued, or none came for idle, or limit has passed.
func (g *forwardGroup) gather(want int, idle, limit time.Duration) {
	g.gathering = true
	defer func() { g.gathering = false }()
	until := time.Now().Add(limit)
	t := time.NewTimer(idle)
	defer t.Stop()
	for len(g.queue) < want {
		wait := min(idle, time.Until(until))
		if wait <= 0 {
			return
		}
		t.Reset(wait)
		g.mu.Unlock()
		select {
		case <-g.arrived:
			g.mu.Lock()
		case <-t.C:
			g.mu.Lock()
			return
		}
	}
}

// called records a call that forwarded n batches in took.
func (g *forwardGroup) called(n int, took time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.answered += n
	g.call = took
}

// handOff ends a call: it gives the turn to the first batch waiting, if
// any.
func (g *forwardGroup) handOff() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queue) == 0 {
		g.senders--
		return
	}
	next := g.queue[0]
	rest := copy(g.queue, g.queue[1:])
	g.queue[rest] = nil
	g.queue = g.queue[:rest]
	next.wake <- true
}

// forwardAll forwards the batches of fs in one call to addr and sets the
// outcome of each. If the leader refuses the block as a whole (EXECABORT,
// which a command refused when queued causes), each batch is forwarded
// alone, so that one batch's error is not the others'.
func (p *RESPPeers) forwardAll(ctx context.Context, key peerKey, fs []*forward) {
	err := p.forwardBlock(ctx, key, fs)
	var remote *RemoteError
	if len(fs) > 1 && errors.As(err, &remote) && strings.HasPrefix(remote.Reply, "EXECABORT") {
		for _, f := range fs {
			p.forwardAll(ctx, key, []*forward{f})
		}
		return
	}
	for _, f := range fs {
		f.err = err
	}
}

// forwardBlock sends the commands of fs in one MULTI/EXEC block, with a
// SELECT before each command whose database differs from the one before,
// and appends each batch's replies to its out.
func (p *RESPPeers) forwardBlock(ctx context.Context, key peerKey, fs []*forward) error {
	var selects []bool // per queued command: whether it is a SELECT
	return p.call(ctx, key, false, func(c *peerConn, w *proto.Writer) int {
		selects = selects[:0]
		writeCommand(w, "MULTI")
		for _, f := range fs {
			for _, cmd := range f.cmds {
				if cmd.DB != c.db {
					writeCommand(w, "SELECT", strconv.Itoa(cmd.DB))
					c.db = cmd.DB
					selects = append(selects, true)
				}
				w.Array(len(cmd.Args))
				for _, a := range cmd.Args {
					w.Bulk(a)
				}
				selects = append(selects, false)
			}
		}
		writeCommand(w, "EXEC")
		return len(selects) + 2
	}, func(replies [][]byte) error {
		exec := replies[len(replies)-1]
		if exec[0] == '-' {
			return remoteError(exec)
		}
		elems, err := arrayElements(exec)
		if err != nil || len(elems) != len(selects) {
			return fmt.Errorf("%w: unexpected EXEC reply %.64q", ErrUnknownOutcome, exec)
		}
		i := 0
		for _, f := range fs {
			for range f.cmds {
				for selects[i] {
					i++
				}
				f.out.Raw(elems[i])
				f.out.Ends = append(f.out.Ends, f.out.Len())
				i++
			}
		}
		return nil
	})
}

// ReadIndex implements Peers with RAFT READINDEX.
func (p *RESPPeers) ReadIndex(ctx context.Context, addr string) (uint64, error) {
	return p.indexCall(ctx, addr, "READINDEX")
}

// Tick implements Peers with RAFT TICK.
func (p *RESPPeers) Tick(ctx context.Context, addr string) (uint64, error) {
	return p.indexCall(ctx, addr, "TICK")
}

// indexCall sends RAFT sub to the node at addr and returns the index it
// replies.
func (p *RESPPeers) indexCall(ctx context.Context, addr, sub string) (uint64, error) {
	var index uint64
	err := p.call(ctx, peerKey{addr: addr}, false, func(_ *peerConn, w *proto.Writer) int {
		writeCommand(w, "RAFT", sub)
		return 1
	}, func(replies [][]byte) error {
		r := replies[0]
		if r[0] == '-' {
			return remoteError(r)
		}
		v, ok := proto.ParseInt(r[1 : len(r)-2])
		if r[0] != ':' || !ok || v < 0 {
			return fmt.Errorf("cluster: RAFT %s replied %.64q", sub, r)
		}
		index = uint64(v)
		return nil
	})
	return index, err
}

// Applied implements Peers with RAFT INFO.
func (p *RESPPeers) Applied(ctx context.Context, addr string) (uint64, error) {
	info, err := p.Info(ctx, addr)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(info["applied_index"], 10, 64)
}

// Members implements Peers with RAFT INFO.
func (p *RESPPeers) Members(ctx context.Context, addr string) ([]Member, error) {
	info, err := p.Info(ctx, addr)
	if err != nil {
		return nil, err
	}
	count, err := strconv.Atoi(info["members"])
	if err != nil {
		return nil, fmt.Errorf("cluster: RAFT INFO of %s: members: %v", addr, err)
	}
	members := make([]Member, count)
	for i := range members {
		for _, field := range strings.Split(info["member"+strconv.Itoa(i)], ",") {
			k, v, _ := strings.Cut(field, "=")
			switch k {
			case "id":
				members[i].ID = v
			case "addr":
				members[i].Address = v
			case "voter":
				members[i].Voter = v == "1"
			}
		}
	}
	return members, nil
}

// Info implements Peers with RAFT INFO.
func (p *RESPPeers) Info(ctx context.Context, addr string) (map[string]string, error) {
	fields := make(map[string]string)
	err := p.call(ctx, peerKey{addr: addr}, false, func(_ *peerConn, w *proto.Writer) int {
		writeCommand(w, "RAFT", "INFO")
		return 1
	}, func(replies [][]byte) error {
		r := replies[0]
		if r[0] == '-' {
			return remoteError(r)
		}
		if r[0] != '$' {
			return fmt.Errorf("cluster: RAFT INFO replied %.64q", r)
		}
		for _, line := range strings.Split(string(r), "\r\n")[1:] {
			if k, v, ok := strings.Cut(line, ":"); ok {
				fields[k] = v
			}
		}
		return nil
	})
	return fields, err
}

// AddVoter implements Peers with RAFT ADD, or RAFT JOIN when joining.
func (p *RESPPeers) AddVoter(ctx context.Context, addr, id, raftAddr string, joining bool) error {
	sub := "ADD"
	if joining {
		sub = "JOIN"
	}
	return p.simple(ctx, addr, "RAFT", sub, id, raftAddr)
}

// RemoveServer implements Peers with RAFT REMOVE.
func (p *RESPPeers) RemoveServer(ctx context.Context, addr, id string) error {
	return p.simple(ctx, addr, "RAFT", "REMOVE", id)
}

// Handover implements Peers with FAILOVER (TO host port), which answers
// once another node leads; its refusal on a node that does not lead is
// ErrNotLeader.
func (p *RESPPeers) Handover(ctx context.Context, addr, to string) error {
	args := []string{"FAILOVER"}
	if to != "" {
		host, port, err := net.SplitHostPort(to)
		if err != nil {
			return err
		}
		args = append(args, "TO", host, port)
	}
	err := p.simple(ctx, addr, args...)
	if re := (*RemoteError)(nil); errors.As(err, &re) && re.Reply == proto.ErrFailoverReplica {
		return ErrNotLeader
	}
	return err
}

// Relay implements Peers. It writes cmds as they are, in one system
// call, and reads the replies as they come, keeping none but the first
// error.
func (p *RESPPeers) Relay(ctx context.Context, addr string, cmds net.Buffers, n int) error {
	key := peerKey{addr: addr}
	c, done, err := p.open(ctx, key, true)
	if err != nil {
		return err
	}
	defer done()
	if _, err := cmds.WriteTo(c.nc); err != nil {
		return c.fail(key, err)
	}
	first, err := c.firstError(n)
	if err != nil {
		return c.fail(key, err)
	}
	p.keep(key, c)
	if first != nil {
		return remoteError(first)
	}
	return nil
}

// simple sends one command whose success reply is +OK.
func (p *RESPPeers) simple(ctx context.Context, addr string, args ...string) error {
	return p.call(ctx, peerKey{addr: addr}, false, func(_ *peerConn, w *proto.Writer) int {
		writeCommand(w, args...)
		return 1
	}, func(replies [][]byte) error {
		if r := replies[0]; r[0] == '-' {
			return remoteError(r)
		}
		return nil
	})
}

// call sends a request that encode writes (returning how many replies it
// expects) on a connection of key, and hands the replies to decode. A
// request that could not be sent fails with an error wrapping errNotSent;
// one whose replies did not all arrive, with ErrUnknownOutcome. With cut,
// ctx's cancellation cuts the call short, its dial included, and closes
// the connection, for callers that stop waiting when cancelled. Without
// it, a cancelled call runs to ctx's deadline and keeps its connection,
// as the term queries do that a read index no longer waits for.
func (p *RESPPeers) call(ctx context.Context, key peerKey, cut bool, encode func(*peerConn, *proto.Writer) int, decode func([][]byte) error) error {
	c, done, err := p.open(ctx, key, cut)
	if err != nil {
		return err
	}
	defer done()
	c.req.Reset()
	n := encode(c, &c.req)
	replies, err := c.write(c.req.B, n)
	if err != nil {
		return c.fail(key, err)
	}
	err = decode(replies)
	p.keep(key, c)
	return err
}

// open returns a connection of key for a call, with ctx's deadline (or
// peerTimeout) set on it, and what the caller must call once the call is
// over; with cut, as for call, ctx's cancellation closes the connection.
// An error wraps errNotSent.
func (p *RESPPeers) open(ctx context.Context, key peerKey, cut bool) (c *peerConn, done func(), err error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(peerTimeout)
	}
	dialCtx := context.Background()
	if cut {
		dialCtx = ctx
	}
	c, err = p.get(dialCtx, key, deadline)
	switch {
	case errors.Is(err, errPassword):
		return nil, nil, fmt.Errorf("%w: %w", errNotSent, err)
	case err != nil:
		return nil, nil, fmt.Errorf("%w: %v", errNotSent, err)
	}
	c.nc.SetDeadline(deadline)
	if !cut {
		return c, func() {}, nil
	}
	stop := context.AfterFunc(ctx, func() { c.nc.Close() })
	return c, func() {
		if !stop() {
			c.nc.Close() // pooled already, or about to be: get finds it dead
		}
	}, nil
}

// fail closes c after a request to key whose replies did not all arrive
// and returns the error to report for it.
func (c *peerConn) fail(key peerKey, err error) error {
	c.nc.Close()
	return fmt.Errorf("%w: forwarding to %s: %v", ErrUnknownOutcome, key.addr, err)
}

// keep empties c's buffers, letting big ones go, and keeps c for the next
// call on a connection of key.
func (p *RESPPeers) keep(key peerKey, c *peerConn) {
	c.buf = c.buf[:0]
	if cap(c.buf) > maxKeptPeerBuf {
		c.buf = nil
	}
	if cap(c.req.B) > maxKeptPeerBuf {
		c.req.B = nil
	}
	p.put(key, c)
}

// maxKeptPeerBuf bounds the request and reply buffers an idle peer
// connection keeps: a big forwarded block's are let go.
const maxKeptPeerBuf = 64 << 10

// get returns an idle connection of key or dials one within ctx and
// deadline: in RESP3, it begins with HELLO 3, which authenticates too; in
// RESP2, with AUTH when a password is set.
func (p *RESPPeers) get(ctx context.Context, key peerKey, deadline time.Time) (*peerConn, error) {
	for {
		p.mu.Lock()
		idle := p.idle[key]
		if len(idle) == 0 {
			p.mu.Unlock()
			break
		}
		c := idle[len(idle)-1]
		p.idle[key] = idle[:len(idle)-1]
		p.mu.Unlock()
		if connAlive(c.nc) {
			return c, nil
		}
		c.nc.Close()
	}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	nc, err := dialPeer(dctx, key.addr, p.sec)
	if err != nil {
		return nil, err
	}
	c := &peerConn{nc: nc, r: bufio.NewReader(nc)}
	pass := ""
	if p.password != nil {
		pass = p.password()
	}
	var w proto.Writer
	switch {
	case key.resp3 && pass != "":
		writeCommand(&w, "HELLO", "3", "AUTH", "default", pass)
	case key.resp3:
		writeCommand(&w, "HELLO", "3")
	case pass != "":
		writeCommand(&w, "AUTH", pass)
	default:
		return c, nil
	}
	nc.SetDeadline(deadline)
	replies, err := c.write(w.B, 1)
	if err == nil && replies[0][0] == '-' {
		err = remoteError(replies[0])
		if re, ok := err.(*RemoteError); ok && isAuthRefusal(re.Reply) {
			err = fmt.Errorf("%w: %s", errPassword, re.Reply)
		}
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	c.buf = c.buf[:0]
	return c, nil
}

// put keeps c for the next call on a connection of key.
func (p *RESPPeers) put(key peerKey, c *peerConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle[key]) >= maxIdlePeerConns {
		c.nc.Close()
		return
	}
	p.idle[key] = append(p.idle[key], c)
}

// Close closes the idle connections.
func (p *RESPPeers) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, idle := range p.idle {
		for _, c := range idle {
			c.nc.Close()
		}
		delete(p.idle, key)
	}
}

// write sends req and reads n replies.
func (c *peerConn) write(req []byte, n int) ([][]byte, error) {
	if _, err := c.nc.Write(req); err != nil {
		return nil, err
	}
	return c.read(n)
}

// peerReadChunk is the least room a read of replies is given.
const peerReadChunk = 16 << 10

// read reads n complete replies; they stay valid until c.buf is reset.
func (c *peerConn) read(n int) ([][]byte, error) {
	replies := make([][]byte, 0, n)
	end := 0
	for len(replies) < n {
		start, next, err := c.next(end, false)
		if err != nil {
			return nil, err
		}
		replies = append(replies, c.buf[start:next])
		end = next
	}
	return replies, nil
}

// firstError reads n complete replies and returns a copy of the first
// that is an error, or nil. It keeps none of them: the replies to a long
// relay call take no more room than a read.
func (c *peerConn) firstError(n int) ([]byte, error) {
	var first []byte
	end := 0
	for range n {
		start, next, err := c.next(end, true)
		if err != nil {
			return nil, err
		}
		if c.buf[start] == '-' && first == nil {
			first = bytes.Clone(c.buf[start:next])
		}
		end = next
	}
	return first, nil
}

// next returns where the complete reply that begins at offset from of
// c.buf starts and ends, reading more into c.buf as needed. With drop,
// the bytes before from may be dropped to make room, which moves the
// reply to the start of c.buf.
func (c *peerConn) next(from int, drop bool) (start, end int, err error) {
	for {
		m, err := proto.ReplyLen(c.buf[from:])
		if err != nil {
			return 0, 0, err
		}
		if m > 0 {
			return from, from + m, nil
		}
		if drop && from > 0 {
			c.buf = c.buf[:copy(c.buf, c.buf[from:])]
			from = 0
		}
		if cap(c.buf)-len(c.buf) < peerReadChunk {
			grown := make([]byte, len(c.buf), 2*cap(c.buf)+peerReadChunk)
			copy(grown, c.buf)
			c.buf = grown
		}
		k, err := c.r.Read(c.buf[len(c.buf):cap(c.buf)])
		if k == 0 && err != nil {
			return 0, 0, err
		}
		c.buf = c.buf[:len(c.buf)+k]
	}
}

// arrayElements splits an array reply into its elements.
func arrayElements(r []byte) ([][]byte, error) {
	nl := strings.IndexByte(string(r), '\n')
	count, ok := proto.ParseInt(r[1 : nl-1])
	if r[0] != '*' || !ok {
		return nil, proto.ErrBadReply
	}
	var elems [][]byte
	for rest := r[nl+1:]; int64(len(elems)) < count; {
		m, err := proto.ReplyLen(rest)
		if m == 0 || err != nil {
			return nil, proto.ErrBadReply
		}
		elems = append(elems, rest[:m])
		rest = rest[m:]
	}
	return elems, nil
}

// remoteError turns an error reply into the error it stands for: the
// cluster's own errors keep their meaning across the hop.
func remoteError(r []byte) error {
	text := string(r[1 : len(r)-2])
	if strings.HasPrefix(text, passwordReply) {
		return &RemoteError{Reply: text} // not ErrNoLeader, whose code it shares: it says why
	}
	for _, e := range []error{ErrNotLeader, ErrNoLeader, ErrClosed, ErrUnknownOutcome} {
		if code, _, _ := strings.Cut(e.(*replyError).reply, " "); strings.HasPrefix(text, code+" ") {
			return e
		}
	}
	return &RemoteError{Reply: text}
}

// writeCommand encodes a command of string arguments.
func writeCommand(w *proto.Writer, args ...string) {
	w.Array(len(args))
	for _, a := range args {
		w.BulkString(a)
	}
}
