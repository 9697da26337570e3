package server

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/presenced/presenced/proto"
	"github.com/presenced/presenced/store"
)

// redisVersion is the Redis version whose behaviour presenced follows;
// clients that check the server's version see it.
const redisVersion = "7.0.0"

// Version is presenced's own version.
const Version = "0.1.0"

// stats are the server's counters for INFO; per-command counts of
// connected clients live in each client and are added here when it
// leaves.
type stats struct {
	connections atomic.Int64
	rejected    atomic.Int64
	// processed counts the commands run since the start, for
	// instantaneous_ops_per_sec; CONFIG RESETSTAT leaves it alone.
	processed atomic.Int64
	// net counts the bytes clients sent and were sent.
	net netStats
	// syncs counts the SYNCs answered (sync_full).
	syncs    atomic.Int64
	counters []counter // by proto.Spec.Stat
	// expiredBase is the store's count of expired keys at the latest
	// CONFIG RESETSTAT: that count is replicated state, which a reset on
	// one node leaves alone.
	expiredBase atomic.Int64
	// lookupsBase is the store's Lookups at the latest CONFIG RESETSTAT,
	// nil before any.
	lookupsBase atomic.Pointer[store.Lookups]

	errs struct {
		sync.Mutex
		byCode  map[string]int64 // error replies by code, for INFO errorstats
		replies int64            // every error reply, counted or not by code
	}
}

// maxErrorCodes bounds the error codes INFO errorstats lists, as Redis
// bounds them: an error of a code past them counts in
// total_error_replies only.
const maxErrorCodes = 128

// countError counts an error reply, text its bytes after the '-', by its
// code: the first word, as Redis counts them ("ERR", "WRONGTYPE").
func (st *stats) countError(text []byte) {
	code := text
	if i := bytes.IndexAny(text, " \r"); i >= 0 {
		code = text[:i]
	}
	st.errs.Lock()
	defer st.errs.Unlock()
	st.errs.replies++
	if st.errs.byCode == nil {
		st.errs.byCode = make(map[string]int64)
	}
	if _, ok := st.errs.byCode[string(code)]; ok || len(st.errs.byCode) < maxErrorCodes {
		st.errs.byCode[string(code)]++
	}
}

// merge adds a departing client's command counts to the totals. The
// caller holds the server's lock, as resetStats does.
func (st *stats) merge(c *client) {
	for i := range c.counters {
		from, to := &c.counters[i], &st.counters[i]
		to.calls.Add(from.calls.Load())
		to.usec.Add(from.usec.Load())
		to.failed.Add(from.failed.Load())
		to.rejected.Add(from.rejected.Load())
	}
}

// resetStats zeroes the counters INFO reports, as Redis's CONFIG
// RESETSTAT does: every command's calls, time, rejected and failed
// calls and their latency histograms, the connections received and
// rejected, the keys expired, the keyspace hits and misses, and the error
// replies.
func (s *Server) resetStats() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.connections.Store(0)
	s.stats.rejected.Store(0)
	s.stats.expiredBase.Store(s.store.Stats().ExpiredKeys)
	lookups := s.store.Lookups()
	s.stats.lookupsBase.Store(&lookups)
	s.stats.errs.Lock()
	s.stats.errs.byCode, s.stats.errs.replies = nil, 0
	s.stats.errs.Unlock()
	for i := range s.stats.counters {
		s.stats.counters[i].reset()
	}
	s.latency.reset()
	for c := range s.mu.clients {
		for i := range c.counters {
			c.counters[i].reset()
		}
	}
}

// commandTotals sums the command counters of past and present clients.
func (s *Server) commandTotals() []struct{ calls, usec, failed, rejected int64 } {
	out := make([]struct{ calls, usec, failed, rejected int64 }, len(proto.Counted))
	add := func(cs []counter) {
		for i := range out {
			out[i].calls += cs[i].calls.Load()
			out[i].usec += cs[i].usec.Load()
			out[i].failed += cs[i].failed.Load()
			out[i].rejected += cs[i].rejected.Load()
		}
	}
	add(s.stats.counters)
	for _, c := range s.clientList() {
		add(c.counters)
	}
	return out
}

func clientCommand(c *client, args [][]byte) {
	sub := c.subcommand(args)
	if sub == nil {
		return
	}
	switch sub.Name {
	case "id":
		c.out.Int(c.id)
	case "getname":
		c.info.Lock()
		name := c.info.name
		c.info.Unlock()
		if name == "" {
			c.out.Null()
		} else {
			c.out.BulkString(name)
		}
	case "setname":
		if c.setName(args[2]) {
			c.out.OK()
		}
	case "setinfo":
		clientSetInfo(c, args)
	case "info":
		c.out.Verbatim([]byte(c.describe(time.Now())))
	case "list":
		clientList(c, args)
	case "kill":
		clientKill(c, args)
	case "unblock":
		clientUnblock(c, args)
	case "pause":
		clientPauseCommand(c, args)
	case "no-evict":
		// presenced evicts no client (it has no maxmemory-clients), so
		// protecting one changes nothing once the mode is checked.
		on := strings.EqualFold(string(args[2]), "on")
		if !on && !strings.EqualFold(string(args[2]), "off") {
			c.out.Error(proto.ErrSyntax)
			return
		}
		c.info.Lock()
		c.info.noEvict = on
		c.info.Unlock()
		c.out.OK()
	case "reply":
		clientReply(c, args[2])
	case "unpause":
		c.s.pause.unpause()
		c.out.OK()
	case "tracking":
		clientTracking(c, args)
	case "caching":
		clientCaching(c, args)
	case "getredir":
		clientGetRedir(c)
	case "trackinginfo":
		clientTrackingInfo(c)
	default:
		c.help("CLIENT",
			"CACHING (YES|NO)", "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
			"GETREDIR", "    Return the client ID we are redirecting to when tracking is enabled.",
			"GETNAME", "    Return the name of the current connection.",
			"ID", "    Return the ID of the current connection.",
			"INFO", "    Return information about the current client connection.",
			"KILL <ip:port>", "    Kill connection made from <ip:port>.",
			"KILL <option> <value> [<option> <value> [...]]", "    Kill connections. Options are:",
			"    * ADDR (<ip:port>|<unixsocket>:0)", "      Kill connections made from the specified address",
			"    * LADDR (<ip:port>|<unixsocket>:0)", "      Kill connections made to specified local address",
			"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)", "      Kill connections by type.",
			"    * USER <username>", "      Kill connections authenticated by <username>.",
			"    * SKIPME (YES|NO)", "      Skip killing current connection (default: yes).",
			"LIST [TYPE <normal|master|replica|pubsub>] [ID <id> [<id> ...]]", "    Return information about client connections.",
			"UNPAUSE", "    Stop the current client pause, resuming traffic.",
			"PAUSE <timeout> [WRITE|ALL]", "    Suspend all, or just write, clients for <timeout> milliseconds.",
			"REPLY (ON|OFF|SKIP)", "    Control the replies sent to the current connection.",
			"SETINFO <option> <value>", "    Set client meta attr. Options are:",
			"SETNAME <name>", "    Assign the name <name> to the current connection.",
			"UNBLOCK <clientid> [TIMEOUT|ERROR]", "    Unblock the specified blocked client.",
			"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]", "         [OPTIN] [OPTOUT] [NOLOOP]", "    Control server assisted client side caching.",
			"TRACKINGINFO", "    Report tracking status for the current connection.",
			"NO-EVICT (ON|OFF)", "    Protect current client connection from eviction.")
	}
}

// setName validates and sets the connection name, replying with Redis's
// error when it is not acceptable.
func (c *client) setName(name []byte) bool {
	for _, b := range name {
		if b < '!' || b > '~' {
			c.out.Error("ERR Client names cannot contain spaces, newlines or special characters.")
			return false
		}
	}
	c.info.Lock()
	c.info.name = string(name)
	c.info.Unlock()
	return true
}

func clientSetInfo(c *client, args [][]byte) {
	attr := strings.ToLower(string(args[2]))
	if attr != "lib-name" && attr != "lib-ver" {
		c.out.Error("ERR Unrecognized option '" + string(args[2]) + "'")
		return
	}
	for _, b := range args[3] {
		if b < '!' || b > '~' {
			c.out.Error("ERR " + attr + " cannot contain spaces, newlines or special characters.")
			return
		}
	}
	c.info.Lock()
	if attr == "lib-name" {
		c.info.libName = string(args[3])
	} else {
		c.info.libVer = string(args[3])
	}
	c.info.Unlock()
	c.out.OK()
}

// killFilter is what CLIENT KILL matches connections by; the zero value
// of a field matches any.
type killFilter struct {
	id          int64
	typ         string // normal or pubsub; any other type matches no connection
	addr, laddr string
	skipMe      bool
}

// matches reports whether CLIENT KILL, sent on connection self, kills o.
func (f *killFilter) matches(o, self *client) bool {
	if (f.id != 0 && o.id != f.id) || (f.skipMe && o == self) || (f.typ != "" && o.clientType() != f.typ) {
		return false
	}
	o.info.Lock()
	nc := o.nc
	o.info.Unlock()
	return (f.addr == "" || o.peerAddr(nc) == f.addr) && (f.laddr == "" || o.localAddr(nc) == f.laddr)
}

// clientKill is CLIENT KILL: CLIENT KILL addr answers OK or that no
// connection came from addr; with filters (and SKIPME yes unless told
// otherwise) it answers how many connections it closed. A connection
// that kills itself is closed once answered.
func clientKill(c *client, args [][]byte) {
	f := killFilter{skipMe: true}
	if len(args) == 3 {
		f.addr, f.skipMe = string(args[2]), false
	}
	for i := 2; len(args) > 3 && i < len(args); i += 2 {
		if i+1 == len(args) {
			c.out.Error(proto.ErrSyntax)
			return
		}
		opt, val := strings.ToLower(string(args[i])), string(args[i+1])
		switch {
		case opt == "id":
			id, ok := proto.ParseInt(args[i+1])
			if !ok || id <= 0 {
				c.out.Error("ERR client-id should be greater than 0")
				return
			}
			f.id = id
		case opt == "type":
			f.typ = strings.ToLower(val)
			if !slices.Contains([]string{"normal", "master", "slave", "replica", "pubsub"}, f.typ) {
				c.out.Error("ERR Unknown client type '" + val + "'")
				return
			}
		case opt == "user":
			if val != "default" { // the only user
				c.out.Error("ERR No such user '" + val + "'")
				return
			}
		case opt == "addr":
			f.addr = val
		case opt == "laddr":
			f.laddr = val
		case opt == "skipme" && strings.EqualFold(val, "yes"):
			f.skipMe = true
		case opt == "skipme" && strings.EqualFold(val, "no"):
			f.skipMe = false
		default:
			c.out.Error(proto.ErrSyntax)
			return
		}
	}
	killed := 0
	for _, o := range c.s.clientList() {
		if !f.matches(o, c) {
			continue
		}
		killed++
		if o == c {
			c.closing = true
		} else {
			o.kill()
		}
	}
	switch {
	case len(args) > 3:
		c.out.Int(int64(killed))
	case killed == 0:
		c.out.Error("ERR No such client")
	default:
		c.out.OK()
	}
}

// clientUnblock is CLIENT UNBLOCK client-id [TIMEOUT | ERROR]: it ends
// the WAIT the client blocks in, which answers as at its timeout, or with
// Redis's UNBLOCKED error, and answers 1; 0 when the client waits for
// nothing.
func clientUnblock(c *client, args [][]byte) {
	withError := false
	if len(args) == 4 {
		switch {
		case strings.EqualFold(string(args[3]), "timeout"):
		case strings.EqualFold(string(args[3]), "error"):
			withError = true
		default:
			c.out.Error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
			return
		}
	}
	id, ok := proto.ParseInt(args[2])
	if !ok {
		c.out.Error(proto.ErrNotInteger)
		return
	}
	if o := c.s.clientByID(id); o != nil && o.blocked.CompareAndSwap(true, false) {
		o.unblock <- withError
		c.out.Int(1)
		return
	}
	c.out.Int(0)
}

func clientList(c *client, args [][]byte) {
	var ids map[int64]bool
	typ := ""
	for i := 2; i < len(args); i++ {
		switch {
		case strings.EqualFold(string(args[i]), "TYPE") && i+1 < len(args):
			t := strings.ToLower(string(args[i+1]))
			if t != "normal" && t != "master" && t != "replica" && t != "pubsub" && t != "slave" {
				c.out.Error("ERR Unknown client type '" + string(args[i+1]) + "'")
				return
			}
			if t != "normal" && t != "pubsub" {
				c.out.Verbatim(nil)
				return
			}
			typ = t
			i++
		case strings.EqualFold(string(args[i]), "ID") && i+1 < len(args):
			ids = map[int64]bool{}
			for i++; i < len(args); i++ {
				id, ok := proto.ParseInt(args[i])
				if !ok || id <= 0 {
					c.out.Error("ERR Invalid client ID")
					return
				}
				ids[id] = true
			}
		default:
			c.out.Error(proto.ErrSyntax)
			return
		}
	}
	clients := c.s.clientList()
	sort.Slice(clients, func(i, j int) bool { return clients[i].id < clients[j].id })
	var b strings.Builder
	now := time.Now()
	for _, o := range clients {
		if (ids == nil || ids[o.id]) && (typ == "" || o.clientType() == typ) {
			b.WriteString(o.describe(now))
		}
	}
	c.out.Verbatim([]byte(b.String()))
}

// listFlags is the flags field of CLIENT LIST, in Redis's order: O for
// a monitor, P for a subscriber, x inside MULTI, b for a client that WAIT
// or a pause holds up, then the flags of its tracking, U for a client of
// the unix socket, e for CLIENT NO-EVICT on; N for none. The caller
// holds c.info.
func (c *client) listFlags(tracking string) string {
	flags := ""
	for _, f := range []struct {
		on   bool
		flag string
	}{
		{c.info.monitoring, "O"}, {c.info.sub+c.info.psub+c.info.ssub > 0, "P"}, {c.info.multi >= 0, "x"},
		{c.isBlocked(), "b"}, {true, tracking}, {c.unix, "U"}, {c.info.noEvict, "e"},
	} {
		if f.on {
			flags += f.flag
		}
	}
	if flags == "" {
		return "N"
	}
	return flags
}

// describe is the client's line in CLIENT LIST, with Redis's fields.
func (c *client) describe(now time.Time) string {
	tracking, redir := c.s.tracking.listFlags(c) // before info: see tracking.go's lock order
	c.info.Lock()
	defer c.info.Unlock()
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=0 name=%s age=%d idle=%d flags=%s db=%d sub=%d psub=%d ssub=%d multi=%d qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=%s user=default redir=%d resp=%d lib-name=%s lib-ver=%s\n",
		c.id, c.peerAddr(c.nc), c.localAddr(c.nc), c.info.name,
		int64(now.Sub(c.created).Seconds()), int64(now.Sub(c.info.lastActive).Seconds()),
		c.listFlags(tracking), c.info.db, c.info.sub, c.info.psub, c.info.ssub, c.info.multi, c.info.lastCmd, redir, c.info.resp, c.info.libName, c.info.libVer)
}

func configCommand(c *client, args [][]byte) {
	sub := c.subcommand(args)
	if sub == nil {
		return
	}
	switch sub.Name {
	case "get":
		cfg := c.s.settings.config()
		var pairs []string
		seen := map[string]bool{}
		for _, pat := range args[2:] {
			for _, p := range parameters {
				if !seen[p.name] && store.Match(pat, []byte(p.name), true) {
					seen[p.name] = true
					pairs = append(pairs, p.name, p.get(&cfg))
				}
			}
			if !seen[bitTTLName] && store.Match(pat, []byte(bitTTLName), true) {
				seen[bitTTLName] = true
				pairs = append(pairs, bitTTLName, c.s.bitTTLValue())
			}
		}
		c.out.Map(len(pairs) / 2)
		for _, s := range pairs {
			c.out.BulkString(s)
		}
	case "set":
		configSet(c, args)
	case "resetstat":
		c.s.resetStats()
		c.out.OK()
	case "rewrite":
		// presenced takes its configuration from flags, never a file.
		c.out.Error("ERR The server is running without a config file")
	default:
		c.help("CONFIG",
			"GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
			"SET <directive> <value>", "    Set the configuration <directive> to <value>.",
			"RESETSTAT", "    Reset statistics reported by the INFO command.",
			"REWRITE", "    Rewrite the configuration file.")
	}
}

func configSet(c *client, args [][]byte) {
	if len(args)%2 != 0 {
		c.out.Error(proto.ErrArity("config|set"))
		return
	}
	// Like Redis, check every name and value before changing anything.
	seen := map[string]bool{}
	var rules []store.BitTTLRule
	for i := 2; i < len(args); i += 2 {
		p := findParameter(string(args[i]))
		switch {
		case strings.EqualFold(string(args[i]), bitTTLName):
			var err error
			if seen[bitTTLName] {
				err = errors.New("duplicate parameter")
			} else {
				rules, err = ParseBitTTL(string(args[i+1]))
			}
			if err != nil {
				c.out.Error(configSetFailed(args[i], err.Error()))
				return
			}
			seen[bitTTLName] = true
			continue
		case p == nil:
			c.out.Error(fmt.Sprintf("ERR Unknown option or number of arguments for CONFIG SET - '%s'", args[i]))
			return
		case p.set == nil:
			c.out.Error(configSetFailed(args[i], "can't set immutable config"))
			return
		case seen[p.name]:
			c.out.Error(configSetFailed(args[i], "duplicate parameter"))
			return
		}
		seen[p.name] = true
	}
	var newTLS *tlsLoaded
	c.s.tls.mu.Lock() // the TLS settings and their files change together
	defer c.s.tls.mu.Unlock()
	err := c.s.settings.update(func(cfg *Config) error {
		for i := 2; i < len(args); i += 2 {
			p := findParameter(string(args[i]))
			if p == nil { // bit-ttl, set below
				continue
			}
			if msg := p.set(cfg, string(args[i+1])); msg != "" {
				return errors.New(configSetFailed(args[i], msg))
			}
		}
		var err error
		newTLS, err = loadTLSFor(cfg, seen)
		return err
	})
	if err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, "ERR ") {
			msg = "ERR CONFIG SET failed - " + strings.TrimPrefix(msg, "server: ")
		}
		c.out.Error(msg)
		return
	}
	if newTLS != nil {
		c.s.tls.cur.Store(newTLS)
	}
	if seen["notify-keyspace-events"] {
		c.s.updateKeyspaceSink()
	}
	if seen[bitTTLName] {
		// The rules go through the log, after the local settings were
		// checked and installed: a write that fails (no leader) leaves
		// them as they were.
		if err := c.s.setBitTTL(rules); err != nil {
			c.out.Error(replyError(err))
			return
		}
	}
	c.out.OK()
}

// configSetFailed is Redis's reply to a CONFIG SET that name made fail.
func configSetFailed(name []byte, why string) string {
	return fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - %s", name, why)
}

func infoCommand(c *client, args [][]byte) {
	want := map[string]bool{}
	for _, a := range args[1:] {
		want[strings.ToLower(string(a))] = true
	}
	all := want["all"] || want["everything"]
	dflt := len(want) == 0 || want["default"]
	sections := []struct {
		name    string
		dflt    bool
		section func(*strings.Builder)
	}{
		{"server", true, c.s.infoServer},
		{"clients", true, c.s.infoClients},
		{"memory", true, c.s.infoMemory},
		{"persistence", true, c.s.infoPersistence},
		{"stats", true, c.s.infoStats},
		{"replication", true, c.s.infoReplication},
		{"cpu", true, c.s.infoCPU},
		{"errorstats", true, c.s.infoErrorStats},
		{"commandstats", false, c.s.infoCommandStats},
		{"latencystats", false, c.s.infoLatencyStats},
		{"cluster", true, c.s.infoCluster},
		{"keyspace", true, c.s.infoKeyspace},
		{"history", true, c.s.infoHistory},
	}
	var b strings.Builder
	for _, sec := range sections {
		if want[sec.name] || all || (dflt && sec.dflt) {
			if b.Len() > 0 {
				b.WriteString("\r\n")
			}
			sec.section(&b)
		}
	}
	c.out.Verbatim([]byte(b.String()))
}

func (s *Server) infoServer(b *strings.Builder) {
	cfg := s.settings.config()
	if _, port, err := net.SplitHostPort(s.Addr()); err == nil {
		cfg.Port, _ = strconv.Atoi(port)
	}
	up := time.Since(s.started)
	exe, _ := os.Executable()
	fmt.Fprintf(b, "# Server\r\nredis_version:%s\r\npresenced_version:%s\r\nredis_mode:%s\r\nos:%s\r\narch_bits:64\r\ngo_version:%s\r\nprocess_id:%d\r\nrun_id:%s\r\ntcp_port:%d\r\nserver_time_usec:%d\r\nuptime_in_seconds:%d\r\nuptime_in_days:%d\r\nhz:%d\r\nconfigured_hz:%d\r\nexecutable:%s\r\nconfig_file:\r\nio_threads_active:0\r\n",
		redisVersion, Version, cfg.redisMode(), runtime.GOOS+" "+runtime.GOARCH, runtime.Version(), os.Getpid(), s.runID, cfg.Port,
		time.Now().UnixMicro(), int64(up.Seconds()), int64(up.Hours()/24), cfg.hz(), cfg.hz(), exe)
}

func (s *Server) infoClients(b *strings.Builder) {
	tracking, _, _, _ := s.tracking.counts()
	clients, blocked := s.clientList(), 0
	for _, c := range clients {
		if c.isBlocked() {
			blocked++
		}
	}
	fmt.Fprintf(b, "# Clients\r\nconnected_clients:%d\r\ncluster_connections:0\r\nmaxclients:%d\r\nblocked_clients:%d\r\ntracking_clients:%d\r\n",
		len(clients), s.settings.config().MaxClients, blocked, tracking)
}

func (s *Server) infoMemory(b *strings.Builder) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	used, rss, peak, total := m.HeapAlloc, m.Sys-m.HeapReleased, m.HeapSys, uint64(totalSystemMemory())
	fmt.Fprintf(b, "# Memory\r\nused_memory:%d\r\nused_memory_human:%s\r\nused_memory_rss:%d\r\nused_memory_rss_human:%s\r\nused_memory_peak:%d\r\nused_memory_peak_human:%s\r\nused_memory_peak_perc:%.2f%%\r\ntotal_system_memory:%d\r\ntotal_system_memory_human:%s\r\nmaxmemory:0\r\nmaxmemory_human:0B\r\nmaxmemory_policy:noeviction\r\nmem_fragmentation_ratio:%.2f\r\nmem_fragmentation_bytes:%d\r\nmem_allocator:go\r\n",
		used, humanBytes(used), rss, humanBytes(rss), peak, humanBytes(peak), float64(used)*100/float64(max(peak, 1)),
		total, humanBytes(total), float64(rss)/float64(max(used, 1)), int64(rss)-int64(used))
}

func (s *Server) infoStats(b *strings.Builder) {
	var processed int64
	for _, t := range s.commandTotals() {
		processed += t.calls
	}
	subs := s.pubsub.counts()
	_, keys, items, prefixes := s.tracking.counts()
	s.stats.errs.Lock()
	errorReplies := s.stats.errs.replies
	s.stats.errs.Unlock()
	lookups := s.store.Lookups()
	if base := s.stats.lookupsBase.Load(); base != nil {
		lookups.Hits -= base.Hits
		lookups.Misses -= base.Misses
	}
	ops, inKbps, outKbps := s.instantaneous()
	fmt.Fprintf(b, "# Stats\r\ntotal_connections_received:%d\r\ntotal_commands_processed:%d\r\ninstantaneous_ops_per_sec:%d\r\ntotal_net_input_bytes:%d\r\ntotal_net_output_bytes:%d\r\ninstantaneous_input_kbps:%.2f\r\ninstantaneous_output_kbps:%.2f\r\nrejected_connections:%d\r\nsync_full:%d\r\nsync_partial_ok:0\r\nsync_partial_err:0\r\nexpired_keys:%d\r\nevicted_keys:0\r\nevicted_clients:0\r\nkeyspace_hits:%d\r\nkeyspace_misses:%d\r\npubsub_channels:%d\r\npubsub_patterns:%d\r\npubsubshard_channels:%d\r\nlatest_fork_usec:0\r\ntotal_forks:0\r\nmigrate_cached_sockets:%d\r\ntracking_total_keys:%d\r\ntracking_total_items:%d\r\ntracking_total_prefixes:%d\r\nunexpected_error_replies:0\r\ntotal_error_replies:%d\r\ntotal_reads_processed:%d\r\ntotal_writes_processed:%d\r\n",
		s.stats.connections.Load(), processed, ops, s.stats.net.in.Load(), s.stats.net.out.Load(), inKbps, outKbps,
		s.stats.rejected.Load(), s.stats.syncs.Load(), s.store.Stats().ExpiredKeys-s.stats.expiredBase.Load(),
		lookups.Hits, lookups.Misses, subs[channelSub], subs[patternSub], subs[shardSub], s.migrateSockets.count(), keys, items, prefixes, errorReplies,
		s.stats.net.reads.Load(), s.stats.net.writes.Load())
}

func (s *Server) infoErrorStats(b *strings.Builder) {
	s.stats.errs.Lock()
	codes := slices.Sorted(maps.Keys(s.stats.errs.byCode))
	counts := make([]int64, len(codes))
	for i, code := range codes {
		counts[i] = s.stats.errs.byCode[code]
	}
	s.stats.errs.Unlock()
	b.WriteString("# Errorstats\r\n")
	for i, code := range codes {
		fmt.Fprintf(b, "errorstat_%s:count=%d\r\n", code, counts[i])
	}
}

func (s *Server) infoCommandStats(b *strings.Builder) {
	b.WriteString("# Commandstats\r\n")
	for i, t := range s.commandTotals() {
		if t.calls == 0 && t.rejected == 0 {
			continue
		}
		per := 0.0
		if t.calls > 0 {
			per = float64(t.usec) / float64(t.calls)
		}
		fmt.Fprintf(b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
			proto.Counted[i].FullName(), t.calls, t.usec, per, t.rejected, t.failed)
	}
}

// infoCluster is INFO's Cluster section: whether the node answers as a
// node of Redis Cluster (see clustermode.go).
func (s *Server) infoCluster(b *strings.Builder) {
	b.WriteString("# Cluster\r\ncluster_enabled:")
	if s.settings.current().ClusterEnabled {
		b.WriteString("1\r\n")
	} else {
		b.WriteString("0\r\n")
	}
}

func (s *Server) infoKeyspace(b *strings.Builder) {
	b.WriteString("# Keyspace\r\n")
	for _, k := range s.store.Keyspace() {
		fmt.Fprintf(b, "db%d:keys=%d,expires=%d,avg_ttl=0\r\n", k.DB, k.Keys, k.Expires)
	}
}

// humanBytes formats n as Redis's INFO does (e.g. 1.50M).
func humanBytes(n uint64) string {
	const unit = 1024.0
	f := float64(n)
	for _, suffix := range []string{"B", "K", "M", "G", "T"} {
		if f < unit || suffix == "T" {
			if suffix == "B" {
				return fmt.Sprintf("%dB", n)
			}
			return fmt.Sprintf("%.2f%s", f, suffix)
		}
		f /= unit
	}
	return ""
}
