package server

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/presenced/presenced/proto"
	"github.com/presenced/presenced/store"
)

// Client-side caching follows Redis 7.0's CLIENT TRACKING. A client that
// turns tracking on is told when a key it may hold in its cache changes:
// in the default mode, the keys its read commands read; in BCAST mode,
// every key under the prefixes it follows. The messages are RESP3 pushes
// (invalidate, with the keys; a null for FLUSHDB and FLUSHALL), or, for a
// client that redirects them to a subscribed RESP2 connection, messages
// on the __redis__:invalidate channel.
//
// The store reports the keys a tracking client's batches read, and every
// change of a key, under its lock (store.Tracker), so that no change
// falls between a read and its report, and so that the keys of a
// transaction are remembered and invalidated in its order. Every node
// tells its own clients of the changes its store applies, whichever node
// they were written on, as it publishes keyspace events.
//
// A tracking client's output goes through an outbox, as a subscriber's,
// so that invalidations reach it while it waits for its next request.
// The outbox holds them while the client answers a batch (outbox.hold):
// a reply read before a change then reaches the client before the
// change's invalidation, never after it, which would leave the client
// caching the old value.
//
// Lock order: the store's write lock, tracking.mu, client.info, then
// outbox.mu.

// tracker is a client's CLIENT TRACKING state. The client's goroutine
// changes it under tracking.mu, which the store's tracker reads it
// under; caching is the client's goroutine's alone.
type tracker struct {
	on, bcast, optin, optout, noloop bool
	// target is the client the invalidations go to, nil when they go to
	// this one; broken is set once it was found gone.
	target   *client
	broken   bool
	prefixes []string // BCAST's, sorted
	// caching is CLIENT CACHING's answer, for the next command or
	// transaction.
	caching bool
}

// redirect is the ID of the client the invalidations go to, 0 when they
// go to the tracking client itself.
func (tr *tracker) redirect() int64 {
	if tr.target == nil {
		return 0
	}
	return tr.target.id
}

// tracking is the server's CLIENT TRACKING state: which clients may cache
// which keys, and the prefixes clients in BCAST mode follow. While a
// client tracks, it is the store's Tracker.
type tracking struct {
	s *Server
	// installMu orders the changes of the store's tracker (see listen).
	installMu sync.Mutex
	mu        struct {
		sync.Mutex
		on       map[*store.Replies]*client      // clients with tracking on, by their replies
		keys     map[string]map[*client]struct{} // the clients that read each key
		items    int                             // the clients of keys, summed
		prefixes map[string]*bcastPrefix
		// broadcast is set once a change queued a key for a prefix,
		// until Applied tells of it.
		broadcast bool
	}
}

// bcastPrefix is a prefix clients in BCAST mode follow: the clients, and
// the keys under it changed by the running Apply, each with the batch
// that changed it last (nil for expiry).
type bcastPrefix struct {
	clients map[*client]struct{}
	changed map[string]*store.Replies
}

func (t *tracking) init(s *Server) {
	t.s = s
	t.mu.on = map[*store.Replies]*client{}
	t.mu.keys = map[string]map[*client]struct{}{}
	t.mu.prefixes = map[string]*bcastPrefix{}
}

// Error replies of CLIENT TRACKING and CLIENT CACHING, in Redis's words.
const (
	errOneRedirect     = "ERR A client can only redirect to a single other client"
	errNoRedirect      = "ERR The client ID you want redirect to does not exist"
	errPrefixNoBcast   = "ERR PREFIX option requires BCAST mode to be enabled"
	errSwitchBcast     = "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."
	errOptWithBcast    = "ERR OPTIN and OPTOUT are not compatible with BCAST"
	errOptinAndOptout  = "ERR You can't specify both OPTIN mode and OPTOUT mode"
	errSwitchOpt       = "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."
	errCachingNoTrack  = "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"
	errCachingYesOptin = "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."
	errCachingNoOptout = "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."
)

// clientTracking is CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX prefix
// ...] [BCAST] [OPTIN] [OPTOUT] [NOLOOP], checked in Redis's order.
func clientTracking(c *client, args [][]byte) {
	var want tracker
	for i := 3; i < len(args); i++ {
		more := i+1 < len(args)
		switch opt := strings.ToLower(string(args[i])); {
		case opt == "redirect" && more:
			i++
			if want.target != nil {
				c.out.Error(errOneRedirect)
				return
			}
			id, ok := proto.ParseInt(args[i])
			if !ok {
				c.out.Error(proto.ErrNotInteger)
				return
			}
			if want.target = c.s.clientByID(id); want.target == nil {
				c.out.Error(errNoRedirect)
				return
			}
		case opt == "bcast":
			want.bcast = true
		case opt == "optin":
			want.optin = true
		case opt == "optout":
			want.optout = true
		case opt == "noloop":
			want.noloop = true
		case opt == "prefix" && more:
			i++
			want.prefixes = append(want.prefixes, string(args[i]))
		default:
			c.out.Error(proto.ErrSyntax)
			return
		}
	}
	switch {
	case strings.EqualFold(string(args[2]), "off"):
		c.s.tracking.disable(c)
		c.closeBox()
	case !strings.EqualFold(string(args[2]), "on"):
		c.out.Error(proto.ErrSyntax)
		return
	case !want.bcast && len(want.prefixes) > 0:
		c.out.Error(errPrefixNoBcast)
		return
	case c.track.on && c.track.bcast != want.bcast:
		c.out.Error(errSwitchBcast)
		return
	case want.bcast && (want.optin || want.optout):
		c.out.Error(errOptWithBcast)
		return
	case want.optin && want.optout:
		c.out.Error(errOptinAndOptout)
		return
	case c.track.on && (want.optin && c.track.optout || want.optout && c.track.optin):
		c.out.Error(errSwitchOpt)
		return
	default:
		if want.bcast {
			if msg := prefixOverlap(c.track.prefixes, want.prefixes); msg != "" {
				c.out.Error(msg)
				return
			}
		}
		c.openBox(c.s.pubsub.outputLimit())
		c.s.tracking.enable(c, want)
	}
	c.out.OK()
}

// prefixOverlap returns Redis's error for prefixes that overlap one of
// the client's (have) or one another, or "".
func prefixOverlap(have, prefixes []string) string {
	overlap := func(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }
	for i, p := range prefixes {
		for _, h := range have {
			if overlap(h, p) {
				return "ERR Prefix '" + p + "' overlaps with an existing prefix '" + h + "'. Prefixes for a single client must not overlap."
			}
		}
		for _, q := range prefixes[i+1:] {
			if overlap(p, q) {
				return "ERR Prefix '" + p + "' overlaps with another provided prefix '" + q + "'. Prefixes for a single client must not overlap."
			}
		}
	}
	return ""
}

// clientCaching is CLIENT CACHING YES|NO: whether the next command (or
// transaction) of a client tracking in OPTIN or OPTOUT mode has its keys
// remembered.
func clientCaching(c *client, args [][]byte) {
	if !c.track.on {
		c.out.Error(errCachingNoTrack)
		return
	}
	switch {
	case strings.EqualFold(string(args[2]), "yes") && c.track.optin,
		strings.EqualFold(string(args[2]), "no") && c.track.optout:
		c.track.caching = true
		c.out.OK()
	case strings.EqualFold(string(args[2]), "yes"):
		c.out.Error(errCachingYesOptin)
	case strings.EqualFold(string(args[2]), "no"):
		c.out.Error(errCachingNoOptout)
	default:
		c.out.Error(proto.ErrSyntax)
	}
}

// clientGetRedir is CLIENT GETREDIR: the client its invalidations go to,
// 0 for none, -1 while it does not track.
func clientGetRedir(c *client) {
	if !c.track.on {
		c.out.Int(-1)
		return
	}
	c.out.Int(c.track.redirect())
}

// clientTrackingInfo is CLIENT TRACKINGINFO.
func clientTrackingInfo(c *client) {
	tr := &c.track
	flags := []string{"off"}
	if tr.on {
		flags[0] = "on"
	}
	for _, f := range []struct {
		set  bool
		name string
	}{{tr.bcast, "bcast"}, {tr.optin, "optin"}, {tr.optin && tr.caching, "caching-yes"},
		{tr.optout, "optout"}, {tr.optout && tr.caching, "caching-no"}, {tr.noloop, "noloop"},
		{c.s.tracking.broken(c), "broken_redirect"}} {
		if f.set {
			flags = append(flags, f.name)
		}
	}
	c.out.Map(3)
	c.out.BulkString("flags")
	c.flagSet(flags)
	c.out.BulkString("redirect")
	if tr.on {
		c.out.Int(tr.redirect())
	} else {
		c.out.Int(-1)
	}
	c.out.BulkString("prefixes")
	c.out.Array(len(tr.prefixes))
	for _, p := range tr.prefixes {
		c.out.BulkString(p)
	}
}

// enable turns tracking on for c with want's options, as Redis's
// enableTracking: a client tracking already keeps its prefixes and adds
// want's.
func (t *tracking) enable(c *client, want tracker) {
	t.change(func() { t.enableLocked(c, want) })
}

func (t *tracking) enableLocked(c *client, want tracker) {
	tr := &c.track
	t.mu.on[&c.out] = c
	c.out.Tracked = true
	tr.on, tr.broken, tr.target = true, false, want.target
	tr.bcast, tr.optin, tr.optout, tr.noloop = want.bcast, want.optin, want.optout, want.noloop
	if want.bcast {
		if len(want.prefixes) == 0 {
			want.prefixes = []string{""}
		}
		for _, p := range want.prefixes {
			bp := t.mu.prefixes[p]
			if bp == nil {
				bp = &bcastPrefix{clients: map[*client]struct{}{}, changed: map[string]*store.Replies{}}
				t.mu.prefixes[p] = bp
			}
			if _, ok := bp.clients[c]; !ok {
				bp.clients[c] = struct{}{}
				tr.prefixes = append(tr.prefixes, p)
			}
		}
		slices.Sort(tr.prefixes)
	}
}

// disable turns tracking off for c. The keys it read stay remembered, as
// in Redis, until they change (their invalidations then skip it) or no
// client tracks any more.
func (t *tracking) disable(c *client) {
	if c.track.on {
		t.change(func() { t.disableLocked(c) })
	}
}

func (t *tracking) disableLocked(c *client) {
	tr := &c.track
	for _, p := range tr.prefixes {
		if bp := t.mu.prefixes[p]; bp != nil {
			delete(bp.clients, c)
			if len(bp.clients) == 0 {
				delete(t.mu.prefixes, p)
			}
		}
	}
	delete(t.mu.on, &c.out)
	c.out.Tracked = false
	*tr = tracker{}
	if len(t.mu.on) == 0 {
		// Nothing hears of changes from now on: what was read is
		// forgotten, not left to invalidate later.
		t.mu.keys, t.mu.items = map[string]map[*client]struct{}{}, 0
	}
}

// change runs f under mu, then has the store follow reads and changes
// while a client tracks (see listen).
func (t *tracking) change(f func()) {
	t.installMu.Lock()
	defer t.installMu.Unlock()
	t.mu.Lock()
	f()
	t.mu.Unlock()
	t.listen()
}

// listen makes the tracking state the store's tracker while a client
// tracks, and leaves the store without one once none does. It takes the
// store's write lock, so it runs under installMu, which keeps the order of
// the changes, but not mu, which the tracker takes under that lock.
func (t *tracking) listen() {
	t.mu.Lock()
	tracks := len(t.mu.on) > 0
	t.mu.Unlock()
	if tracks {
		t.s.store.SetTracker(t)
	} else {
		t.s.store.SetTracker(nil)
	}
}

// broken reports whether c's invalidations go to a client that is gone.
func (t *tracking) broken(c *client) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return c.track.broken
}

// Read is the store's tracker for the read-only command spec with args,
// which the batch whose replies go to by ran: the tracking client of the
// batch may cache the keys it read.
func (t *tracking) Read(spec *proto.Spec, args [][]byte, by *store.Replies) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.mu.on[by]; c != nil {
		t.remember(c, spec, args)
	}
}

// rememberReads remembers the keys of the read commands of a batch of
// writes c is about to send to the log, where, on a follower, the
// leader's store runs them: its reads then never reach this node's
// store, which must still tell c of the changes it applies after them.
// Remembered before the batch runs, while the client's invalidations
// wait behind its replies (see outbox.hold), a key's invalidation for a
// change made before the read reaches the client after the reply, and
// drops what it cached then: late, never lost.
func (t *tracking) rememberReads(c *client, cmds []store.Command) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, cmd := range cmds {
		if cmd.Spec.Flags&proto.ReadOnly != 0 {
			t.remember(c, cmd.Spec, cmd.Args)
		}
	}
}

// remember notes that c may cache the keys of the read command spec with
// args, unless it follows prefixes (BCAST), or OPTIN or OPTOUT with
// CLIENT CACHING says otherwise. Called under mu.
func (t *tracking) remember(c *client, spec *proto.Spec, args [][]byte) {
	tr := &c.track
	if tr.bcast || (tr.optin && !tr.caching) || (tr.optout && tr.caching) {
		return
	}
	spec.EachKey(args, func(key []byte) {
		readers := t.mu.keys[string(key)]
		if readers == nil {
			readers = map[*client]struct{}{}
			t.mu.keys[string(key)] = readers
		}
		if _, ok := readers[c]; !ok {
			readers[c] = struct{}{}
			t.mu.items++
		}
	})
	t.limit()
}

// limit invalidates keys, in no particular order, while more keys are
// remembered than tracking-table-max-keys allows. Called under mu.
func (t *tracking) limit() {
	most := t.s.settings.current().TrackingTableMaxKeys
	if most == 0 {
		return
	}
	for key := range t.mu.keys {
		if int64(len(t.mu.keys)) <= most {
			return
		}
		t.invalidate(key, nil)
	}
}

// Changed is the store's tracker for a change of key: it queues key for
// the BCAST prefixes it is under and tells the clients that read it.
func (t *tracking) Changed(key []byte, by *store.Replies) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for p, bp := range t.mu.prefixes {
		if len(key) >= len(p) && string(key[:len(p)]) == p {
			bp.changed[string(key)] = by
			t.mu.broadcast = true
		}
	}
	if _, ok := t.mu.keys[string(key)]; ok {
		t.invalidate(string(key), by)
	}
}

// invalidate tells the clients that read key, but the one whose batch
// changed it if it asked for NOLOOP, and forgets them. Called under mu.
func (t *tracking) invalidate(key string, by *store.Replies) {
	readers := t.mu.keys[key]
	delete(t.mu.keys, key)
	t.mu.items -= len(readers)
	for c := range readers {
		tr := &c.track
		if !tr.on || tr.bcast || c.gone.Load() || (tr.noloop && by == &c.out) {
			continue
		}
		t.send(c, keysMessage([]string{key}))
	}
}

// Flushed is the store's tracker for FLUSHDB, FLUSHALL and a snapshot's
// restore: every tracking client is told that all its keys changed.
func (t *tracking) Flushed(*store.Replies) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.mu.on {
		t.send(c, nil)
	}
	t.mu.keys, t.mu.items = map[string]map[*client]struct{}{}, 0
}

// Applied is the store's tracker at the end of an Apply: each client
// in BCAST mode is told, in one message for each of its prefixes, of the
// keys under it that changed (with NOLOOP, those its own batches did
// not).
func (t *tracking) Applied() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.mu.broadcast {
		return
	}
	t.mu.broadcast = false
	for _, p := range slices.Sorted(maps.Keys(t.mu.prefixes)) {
		bp := t.mu.prefixes[p]
		if len(bp.changed) == 0 {
			continue
		}
		keys := slices.Sorted(maps.Keys(bp.changed))
		all := keysMessage(keys)
		for c := range bp.clients {
			if !c.track.noloop {
				t.send(c, all)
				continue
			}
			var others []string
			for _, k := range keys {
				if bp.changed[k] != &c.out {
					others = append(others, k)
				}
			}
			if len(others) > 0 {
				t.send(c, keysMessage(others))
			}
		}
		clear(bp.changed)
	}
}

// keysMessage is the array of keys an invalidation carries.
func keysMessage(keys []string) []byte {
	b := proto.Writer{}
	b.Array(len(keys))
	for _, k := range keys {
		b.BulkString(k)
	}
	return b.B
}

// send tells tracking client c that the keys of message (an array, or nil
// for all keys) changed: on its own connection as a RESP3 push, or on the
// connection it redirects to, as a push or, to a subscribed RESP2
// connection, a message on __redis__:invalidate. A RESP2 connection that
// is neither gets nothing, as in Redis. Called under mu.
func (t *tracking) send(c *client, message []byte) {
	tr := &c.track
	own := c.boxRef.Load()
	if own == nil {
		return
	}
	if message == nil { // Redis's null, in the tracking client's protocol
		message = []byte("$-1\r\n")
		if own.resp3.Load() {
			message = []byte("_\r\n")
		}
	}
	to := own
	if tr.target != nil {
		if tr.target.gone.Load() {
			tr.broken = true
			if own.resp3.Load() {
				own.pushInvalidation([]byte(">2\r\n$21\r\ntracking-redir-broken\r\n:" + strconv.FormatInt(tr.target.id, 10) + "\r\n"))
			}
			return
		}
		if to = tr.target.boxRef.Load(); to == nil {
			return
		}
	}
	var frame []byte
	switch {
	case to.resp3.Load():
		frame = append([]byte(">2\r\n$10\r\ninvalidate\r\n"), message...)
	case tr.target != nil && tr.target.subscribed():
		frame = append([]byte("*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"), message...)
	default:
		return
	}
	to.pushInvalidation(frame)
}

// counts returns INFO's tracking_clients, tracking_total_keys,
// tracking_total_items and tracking_total_prefixes.
func (t *tracking) counts() (clients, keys, items, prefixes int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.mu.on), len(t.mu.keys), t.mu.items, len(t.mu.prefixes)
}

// listFlags returns c's tracking flags for CLIENT LIST (t, R, B, in
// Redis's order) and its redir field.
func (t *tracking) listFlags(c *client) (string, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tr := &c.track
	if !tr.on {
		return "", -1
	}
	flags := "t"
	if tr.broken {
		flags += "R"
	}
	if tr.bcast {
		flags += "B"
	}
	return flags, tr.redirect()
}
