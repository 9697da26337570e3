package server

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/presenced/presenced/proto"
	"github.com/presenced/presenced/store"
	"github.com/tidwall/redcon"
)

// Pub/sub follows Redis 7.0: SUBSCRIBE, PSUBSCRIBE, their UNSUBSCRIBEs,
// PUBLISH and PUBSUB, and the shard channels of SSUBSCRIBE, SUNSUBSCRIBE
// and SPUBLISH, a namespace of their own. As in Redis Cluster, a
// client's PUBLISH or SPUBLISH reaches the subscribers of every node: the
// node it is sent to delivers it to its own and relays it to the other
// members (cluster.Node.Relay), which deliver it to theirs. Events are not
// relayed: every node publishes those of its own apply path to its own
// subscribers, so a subscriber on any node sees each event once.
//
// A client's first subscription gives it an outbox (pubsub_outbox.go):
// from then until its last unsubscription all its output, replies and
// messages, goes through the outbox and a writer goroutine, so that a
// publisher never waits for a subscriber's network. Clients that never
// subscribe keep writing their replies themselves.
//
// Lock order: hub.mu, then outbox.mu.

// defaultPubSubLimit is Redis's default hard client-output-buffer-limit
// for pub/sub clients: a subscriber whose unsent output would pass it is
// disconnected. Redis's soft limit (8mb for 60 seconds) is not applied.
const defaultPubSubLimit = 32 << 20

// subKind is what a subscription names.
type subKind int

const (
	channelSub subKind = iota // a channel (SUBSCRIBE)
	patternSub                // a pattern of channels (PSUBSCRIBE)
	shardSub                  // a shard channel (SSUBSCRIBE)
	subKinds
)

// hub holds the subscriptions of the server's clients and delivers
// published messages to their outboxes. Its zero value is ready to use.
type hub struct {
	// active counts subscriptions, of every kind, of all clients.
	active atomic.Int64
	// limit, when positive, replaces defaultPubSubLimit for outboxes
	// created from now on.
	limit atomic.Int64
	// onListen, when set, is called under the hub's lock when the first
	// subscription starts (true) and when the last one ends (false).
	onListen func(listening bool)

	mu struct {
		sync.RWMutex
		subs [subKinds]map[string]*subscribers // by kind, then name
	}
}

// subscribers is the set of outboxes subscribed to one name, kept in a
// slice that a message runs through, with each outbox's place in it.
type subscribers struct {
	boxes []*outbox
	at    map[*outbox]int
}

// add adds box and reports whether it was not in the set.
func (s *subscribers) add(box *outbox) bool {
	if _, ok := s.at[box]; ok {
		return false
	}
	if s.at == nil {
		s.at = make(map[*outbox]int)
	}
	s.at[box] = len(s.boxes)
	s.boxes = append(s.boxes, box)
	return true
}

// remove removes box and reports whether it was in the set.
func (s *subscribers) remove(box *outbox) bool {
	i, ok := s.at[box]
	if !ok {
		return false
	}
	last := len(s.boxes) - 1
	s.boxes[i] = s.boxes[last]
	s.at[s.boxes[i]] = i
	s.boxes[last] = nil
	s.boxes = s.boxes[:last]
	delete(s.at, box)
	return true
}

// listening reports whether any client has a subscription, to a channel
// or a pattern. It is one atomic load: a source of events (the store's
// event sink) can be installed only while it is true, so that events cost
// nothing when nobody subscribes.
func (h *hub) listening() bool { return h.active.Load() > 0 }

// publish delivers message on channel to this node's subscribers of the
// channel and of the patterns that match it, and returns how many
// deliveries it queued (a client subscribed to the channel and to a
// matching pattern counts twice, as in Redis). It never blocks on a
// subscriber: each message is queued in the subscriber's outbox, and a
// subscriber whose queue passes the output limit is disconnected. It may
// be called from any goroutine, with any lock held that is not the hub's;
// message is copied, so the caller may reuse it.
func (h *hub) publish(channel string, message []byte) int {
	if !h.listening() {
		return 0
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	var frame [smallFrame]byte
	n := 0
	if subs := h.mu.subs[channelSub][channel]; subs != nil {
		n += deliver(subs, appendMessageFrame(frame[:0], "message", "", channel, message))
	}
	if len(h.mu.subs[patternSub]) == 0 {
		return n
	}
	for pattern, subs := range h.mu.subs[patternSub] {
		if store.MatchString(pattern, channel) {
			n += deliver(subs, appendMessageFrame(frame[:0], "pmessage", pattern, channel, message))
		}
	}
	return n
}

// publishShard delivers message on the shard channel to this node's
// subscribers of it, as publish does.
func (h *hub) publishShard(channel string, message []byte) int {
	if !h.listening() {
		return 0
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	subs := h.mu.subs[shardSub][channel]
	if subs == nil {
		return 0
	}
	var frame [smallFrame]byte
	return deliver(subs, appendMessageFrame(frame[:0], "smessage", "", channel, message))
}

// deliver queues frame in each outbox and returns how many took it.
func deliver(subs *subscribers, frame []byte) int {
	n := 0
	for _, box := range subs.boxes {
		if box.pushMessage(frame) {
			n++
		}
	}
	return n
}

// smallFrame is the size of the buffer on the publisher's stack that a
// message's frame is encoded into, when it fits: the outboxes copy it.
const smallFrame = 512

// appendMessageFrame appends a published message to b, encoded as Redis
// sends it: of kind "message" for a channel subscription, "smessage" for
// a shard channel's, "pmessage", which names the pattern, for a pattern
// subscription.
func appendMessageFrame(b []byte, kind, pattern, channel string, message []byte) []byte {
	// redcon's functions rather than a proto.Writer, whose methods would
	// move the publisher's buffer to the heap.
	if kind == "pmessage" {
		b = redcon.AppendArray(b, 4)
		b = redcon.AppendBulkString(b, kind)
		b = redcon.AppendBulkString(b, pattern)
	} else {
		b = redcon.AppendArray(b, 3)
		b = redcon.AppendBulkString(b, kind)
	}
	b = redcon.AppendBulkString(b, channel)
	return redcon.AppendBulk(b, message)
}

// outputLimit is the output limit of a new outbox.
func (h *hub) outputLimit() int {
	if n := h.limit.Load(); n > 0 {
		return int(n)
	}
	return defaultPubSubLimit
}

// change subscribes box to names of kind (or unsubscribes it, when add is
// false), and queues out, the replies that confirm the
// change, in one critical section: publishers wait, so no message
// overtakes a subscription's confirmation, none follows an
// unsubscription's, and a client that has read a confirmation receives
// every message published after it.
func (h *hub) change(box *outbox, kind subKind, add bool, names []string, out []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := &h.mu.subs[kind]
	if *m == nil {
		*m = map[string]*subscribers{}
	}
	for _, name := range names {
		subs := (*m)[name]
		if add && subs == nil {
			subs = &subscribers{}
			(*m)[name] = subs
		}
		switch {
		case add && subs.add(box):
			if h.active.Add(1) == 1 && h.onListen != nil {
				h.onListen(true)
			}
		case !add && subs != nil && subs.remove(box):
			if len(subs.boxes) == 0 {
				delete(*m, name)
			}
			if h.active.Add(-1) == 0 && h.onListen != nil {
				h.onListen(false)
			}
		}
	}
	box.send(out)
}

// channels lists, sorted, the channels (or shard channels) with
// subscribers whose names match pattern (all of them when pattern is nil).
func (h *hub) channels(kind subKind, pattern []byte) []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []string
	for ch := range h.mu.subs[kind] {
		if pattern == nil || store.MatchString(string(pattern), ch) {
			out = append(out, ch)
		}
	}
	slices.Sort(out)
	return out
}

// numSub is the number of subscribers of a channel (or shard channel).
func (h *hub) numSub(kind subKind, channel []byte) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if subs := h.mu.subs[kind][string(channel)]; subs != nil {
		return len(subs.boxes)
	}
	return 0
}

// counts are the numbers of names of each kind with subscribers.
func (h *hub) counts() (n [subKinds]int) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for kind, subs := range h.mu.subs {
		n[kind] = len(subs)
	}
	return n
}

// subscriptions is a client's pub/sub state, which it has from its first
// subscription to its last unsubscription. Only the client's goroutine
// touches it.
type subscriptions struct {
	sets [subKinds]map[string]struct{} // by kind
}

// count is the client's number of subscriptions as the replies of the
// (un)subscribe commands of kind report it: its shard channels for
// SSUBSCRIBE and SUNSUBSCRIBE, its channels and patterns for the others,
// as Redis 7.0 counts them.
func (ps *subscriptions) count(kind subKind) int {
	if ps == nil {
		return 0
	}
	if kind == shardSub {
		return len(ps.sets[shardSub])
	}
	return len(ps.sets[channelSub]) + len(ps.sets[patternSub])
}

// total is the client's number of subscriptions of every kind.
func (ps *subscriptions) total() int {
	return ps.count(channelSub) + ps.count(shardSub)
}

func subscribeCommand(c *client, args [][]byte)  { c.subscribe("subscribe", channelSub, args[1:]) }
func psubscribeCommand(c *client, args [][]byte) { c.subscribe("psubscribe", patternSub, args[1:]) }
func ssubscribeCommand(c *client, args [][]byte) {
	if c.inExec {
		// Redis 7.0 refuses it to a client that may not block, one in
		// EXEC among them, where SUBSCRIBE and PSUBSCRIBE are let through.
		c.out.Error("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client")
		return
	}
	c.subscribe("ssubscribe", shardSub, args[1:])
}
func unsubscribeCommand(c *client, args [][]byte) { c.unsubscribe("unsubscribe", channelSub, args[1:]) }
func punsubscribeCommand(c *client, args [][]byte) {
	c.unsubscribe("punsubscribe", patternSub, args[1:])
}
func sunsubscribeCommand(c *client, args [][]byte) { c.unsubscribe("sunsubscribe", shardSub, args[1:]) }

// subscribe adds names of kind to the client's subscriptions and
// confirms each, as SUBSCRIBE, PSUBSCRIBE and SSUBSCRIBE do.
func (c *client) subscribe(command string, kind subKind, names [][]byte) {
	if c.ps == nil {
		c.openBox(c.s.pubsub.outputLimit())
		c.ps = &subscriptions{}
		for k := range c.ps.sets {
			c.ps.sets[k] = map[string]struct{}{}
		}
	}
	set := c.ps.sets[kind]
	var added []string
	for _, n := range names {
		if _, ok := set[string(n)]; !ok {
			set[string(n)] = struct{}{}
			added = append(added, string(n))
		}
		c.confirm(command, n, c.ps.count(kind))
	}
	// Counted before the confirmations go out: a client that read them
	// finds itself subscribed in CLIENT LIST.
	c.noteSubscriptions()
	c.s.pubsub.change(c.box, kind, true, added, c.out.B)
	c.out.Reset()
}

// unsubscribe removes names of kind from the client's subscriptions, all
// of them when names is empty, and confirms each, as UNSUBSCRIBE,
// PUNSUBSCRIBE and SUNSUBSCRIBE do. After its last subscription the
// client writes its replies itself again.
func (c *client) unsubscribe(command string, kind subKind, names [][]byte) {
	if c.ps == nil {
		c.confirmNone(command, names)
		return
	}
	set := c.ps.sets[kind]
	if len(names) == 0 {
		names = sortedNames(set)
		if len(names) == 0 {
			c.confirm(command, nil, c.ps.count(kind))
		}
	}
	var removed []string
	for _, n := range names {
		if _, ok := set[string(n)]; ok {
			delete(set, string(n))
			removed = append(removed, string(n))
		}
		c.confirm(command, n, c.ps.count(kind))
	}
	c.noteSubscriptions() // as in subscribe
	c.s.pubsub.change(c.box, kind, false, removed, c.out.B)
	c.out.Reset()
	if c.ps.total() == 0 {
		c.ps = nil
		c.closeBox()
	}
}

// confirmNone answers an unsubscription of a client without
// subscriptions.
func (c *client) confirmNone(kind string, names [][]byte) {
	if len(names) == 0 {
		c.confirm(kind, nil, 0)
	}
	for _, n := range names {
		c.confirm(kind, n, 0)
	}
}

// sortedNames lists a set's names in order.
func sortedNames(set map[string]struct{}) [][]byte {
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = []byte(k)
	}
	return out
}

// confirm writes one (un)subscription's reply: its kind, the channel or
// pattern (null when there was none to unsubscribe from) and the count of
// subscriptions left.
func (c *client) confirm(kind string, name []byte, count int) {
	c.out.Push(3)
	c.out.BulkString(kind)
	if name == nil {
		c.out.Null()
	} else {
		c.out.Bulk(name)
	}
	c.out.Int(int64(count))
}

// leavePubSub drops all the client's subscriptions without replies (for
// RESET, and when the connection ends) and, unless the client monitors,
// waits until the output queued in its outbox is written.
func (c *client) leavePubSub() {
	if c.ps == nil {
		return
	}
	for kind, set := range c.ps.sets {
		c.s.pubsub.change(c.box, subKind(kind), false, slices.Collect(maps.Keys(set)), nil)
	}
	c.ps = nil
	c.closeBox()
	c.noteSubscriptions()
}

// noteSubscriptions publishes the client's subscription counts for
// CLIENT LIST.
func (c *client) noteSubscriptions() {
	var sub, psub, ssub int
	if c.ps != nil {
		sub, psub, ssub = len(c.ps.sets[channelSub]), len(c.ps.sets[patternSub]), len(c.ps.sets[shardSub])
	}
	c.info.Lock()
	c.info.sub, c.info.psub, c.info.ssub = sub, psub, ssub
	c.info.Unlock()
}

// refuseSubscribed refuses, with Redis's error, a command a RESP2 client
// may not run while it has subscriptions, and reports whether it did.
// As in Redis, an unknown subcommand or a subcommand's wrong arity is
// reported first.
func (c *client) refuseSubscribed(spec *proto.Spec, args [][]byte) bool {
	if c.out.RESP3 {
		return false
	}
	switch spec.Name {
	case "subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe", "ping", "quit", "reset":
		return false
	}
	name := spec.Name
	if len(spec.Subcommands) > 0 {
		sub := spec.Sub(args[1])
		switch {
		case sub == nil:
			c.reject(spec, proto.ErrUnknownSubcommand(args[1], strings.ToUpper(spec.Name)))
			return true
		case !sub.CheckArity(len(args)):
			c.reject(spec, proto.ErrArity(sub.FullName()))
			return true
		}
		name = sub.FullName()
	}
	c.reject(spec, "ERR Can't execute '"+name+"': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
	return true
}

// publishCommand is PUBLISH. It replies with the number of this node's
// subscribers that heard it, as PUBLISH does in Redis Cluster.
func publishCommand(c *client, args [][]byte) {
	c.out.Int(int64(c.relayedInOrder(func() int { return c.s.pubsub.publish(string(args[1]), args[2]) })))
	c.relayPublish(args)
}

// spublishCommand is SPUBLISH, which PUBLISH's to the shard channel.
func spublishCommand(c *client, args [][]byte) {
	c.out.Int(int64(c.relayedInOrder(func() int { return c.s.pubsub.publishShard(string(args[1]), args[2]) })))
	c.relayPublish(args)
}

// relayedInOrder runs deliver and returns what it returns, unless c is a
// connection another member relays on (see relayCommand) whose call a
// later call of that member has followed: then it drops the message and
// returns 0.
func (c *client) relayedInOrder(deliver func() int) int {
	if c.relayFrom == "" {
		return deliver()
	}
	r := &c.s.relayed
	r.mu.Lock()
	defer r.mu.Unlock() // held while delivering: the next call waits to open
	if r.latest[c.relayFrom].conn != c.id {
		return 0
	}
	return deliver()
}

// relayPublish has the other members deliver a client's PUBLISH or
// SPUBLISH to their subscribers; one relayed to this node stays here.
func (c *client) relayPublish(args [][]byte) {
	if !c.peer {
		c.s.node.Relay(args...)
	}
}

// relayCommand answers RAFT RELAY node-id incarnation sequence, which
// opens a call of relayed commands (cluster.Node.Relay): the PUBLISH and
// SPUBLISH commands that follow on the connection deliver their messages
// as long as no later call of that member (a greater sequence number, or
// a later incarnation) has opened, on this connection or another. A
// member relays its messages in order, but a call it gave up on with its
// connection (cut while this node had its commands already, or held up
// past the relay's timeout) may have them run here after the next call
// opened on another connection: they are dropped then, so that every
// member hears each node's messages at most once and in order.
func relayCommand(c *client, args [][]byte) {
	incarnation, okInc := proto.ParseInt(args[3])
	seq, errSeq := strconv.ParseUint(string(args[4]), 10, 64)
	if !okInc || errSeq != nil {
		c.out.Error(proto.ErrSyntax)
		return
	}
	id := string(args[2])
	c.relayFrom = id
	c.s.relayed.open(id, relayMark{incarnation, seq}, c.id)
	c.out.OK()
}

// relayOrder is the latest call opened by each member that relays to
// this node, by the member's ID.
type relayOrder struct {
	mu     sync.Mutex
	latest map[string]relayCall
}

// relayMark places a call: the incarnation of the member that opened it,
// then its sequence number there.
type relayMark struct {
	incarnation int64
	seq         uint64
}

// after reports whether m comes after o.
func (m relayMark) after(o relayMark) bool {
	return m.incarnation > o.incarnation || m.incarnation == o.incarnation && m.seq > o.seq
}

// relayCall is a call a member opened, and the ID of the connection it
// came on.
type relayCall struct {
	relayMark
	conn int64
}

// open makes the call at m, on the connection whose ID is conn, the
// member id's latest, unless a later one opened already: the
// connection's commands are then dropped.
func (r *relayOrder) open(id string, m relayMark, conn int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if last, ok := r.latest[id]; ok && !m.after(last.relayMark) {
		return
	}
	if r.latest == nil {
		r.latest = make(map[string]relayCall)
	}
	r.latest[id] = relayCall{m, conn}
}

func pubsubCommand(c *client, args [][]byte) {
	sub := c.subcommand(args)
	if sub == nil {
		return
	}
	h := &c.s.pubsub
	kind := channelSub
	if strings.HasPrefix(sub.Name, "shard") {
		kind = shardSub
	}
	switch sub.Name {
	case "channels", "shardchannels":
		if len(args) > 3 {
			c.out.Error(proto.ErrSubcommandSyntax(args[1], "PUBSUB"))
			return
		}
		var pattern []byte
		if len(args) == 3 {
			pattern = args[2]
		}
		chans := h.channels(kind, pattern)
		c.out.Array(len(chans))
		for _, ch := range chans {
			c.out.BulkString(ch)
		}
	case "numsub", "shardnumsub":
		c.out.Array(2 * (len(args) - 2))
		for _, ch := range args[2:] {
			c.out.Bulk(ch)
			c.out.Int(int64(h.numSub(kind, ch)))
		}
	case "numpat":
		c.out.Int(int64(h.counts()[patternSub]))
	default:
		c.help("PUBSUB",
			"CHANNELS [<pattern>]", "    Return the currently active channels matching a <pattern> (default: '*').",
			"NUMPAT", "    Return number of subscriptions to patterns.",
			"NUMSUB [<channel> ...]", "    Return the number of subscribers for the specified channels, excluding",
			"    pattern subscriptions(default: no channels).",
			"SHARDCHANNELS [<pattern>]", "    Return the currently active shard level channels matching a <pattern> (default: '*').",
			"SHARDNUMSUB [<shardchannel> ...]", "    Return the number of subscribers for the specified shard level channel(s)")
	}
}

// clientType is the client's type for CLIENT LIST TYPE: "pubsub" while it
// has subscriptions, else "normal".
func (c *client) clientType() string {
	if c.subscribed() {
		return "pubsub"
	}
	return "normal"
}

// subscribed reports whether the client has a subscription, from any
// goroutine.
func (c *client) subscribed() bool {
	c.info.Lock()
	defer c.info.Unlock()
	return c.info.sub+c.info.psub+c.info.ssub > 0
}
