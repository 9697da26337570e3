package server

import (
	"crypto/subtle"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"strings"
	"time"

	"github.com/presenced/presenced/proto"
	"github.com/presenced/presenced/store"
)

// serverCommand runs a command the server handles itself.
type serverCommand func(c *client, args [][]byte)

// serverCommands holds the handler of each command the server runs
// itself, at the command's ID (proto.Spec.ID); nil for the others.
var serverCommands []serverCommand

func init() {
	byName := map[string]serverCommand{
		"ping":      ping,
		"echo":      func(c *client, args [][]byte) { c.out.Bulk(args[1]) },
		"quit":      quit,
		"reset":     reset,
		"auth":      auth,
		"hello":     hello,
		"select":    selectDB,
		"acl":       aclCommand,
		"client":    clientCommand,
		"command":   commandCommand,
		"config":    configCommand,
		"info":      infoCommand,
		"time":      timeCommand,
		"multi":     multi,
		"exec":      exec,
		"discard":   discard,
		"watch":     watch,
		"unwatch":   unwatch,
		"function":  function,
		"module":    module,
		"debug":     debugCommand,
		"shutdown":  shutdownCommand,
		"memory":    memory,
		"readonly":  readonly,
		"readwrite": readwrite,
		"asking":    asking,
		"cluster":   clusterCommand,
		"role":      role,
		"wait":      wait,
		"failover":  failover,
		"replicaof": replicaof,
		"slaveof":   replicaof,
		"sentinel":  sentinelCommand,
		"raft":      raftCommand,
		"monitor":   monitor,
		"migrate":   migrate,

		"save":         save,
		"bgsave":       bgsave,
		"bgrewriteaof": bgrewriteaof,
		"lastsave":     lastsave,
		"sync":         syncCommand,
		"replconf":     replconf,
		"slowlog":      slowlogCommand,
		"latency":      latencyCommand,
		"pfselftest":   pfselftest,

		"subscribe":    subscribeCommand,
		"unsubscribe":  unsubscribeCommand,
		"psubscribe":   psubscribeCommand,
		"punsubscribe": punsubscribeCommand,
		"ssubscribe":   ssubscribeCommand,
		"sunsubscribe": sunsubscribeCommand,
		"publish":      publishCommand,
		"spublish":     spublishCommand,
		"pubsub":       pubsubCommand,
	}
	serverCommands = make([]serverCommand, len(proto.Commands))
	for name, run := range byName {
		serverCommands[proto.Lookup([]byte(name)).ID] = run
	}
}

// runServerCommand runs a server command and counts it.
func (c *client) runServerCommand(spec *proto.Spec, args [][]byte) {
	c.counted(spec, args, func() { serverCommands[spec.ID](c, args) })
}

// counted runs the handler of a command, spec with args, and counts the
// call for INFO (see record).
func (c *client) counted(spec *proto.Spec, args [][]byte, run func()) {
	// As in Redis, the command's own CLIENT LIST line names it; inside
	// EXEC the command is EXEC. Only this goroutine writes lastCmd, so
	// it reads it without the lock.
	if !c.inExec {
		if name := cmdName(spec, args); c.info.lastCmd != name {
			c.info.Lock()
			c.info.lastCmd = name
			c.info.Unlock()
		}
	}
	begin := sinceStart()
	mark := c.out.Len()
	run()
	var failed int64
	if c.out.Len() > mark && c.out.B[mark] == '-' {
		failed = 1
		c.s.stats.countError(c.out.B[mark+1:])
	}
	c.silence(mark)
	end := sinceStart()
	usec := (end - begin).Microseconds()
	c.record(spec, args, 1, failed, usec)
	if c.slow(spec, usec) {
		c.logSlow(args, usec)
	}
	c.touch(spec, args, clockStart.Add(end))
}

// clockStart is the reading of the clocks that sinceStart counts from.
var clockStart = time.Now()

// sinceStart reads the monotonic clock: the time since clockStart. It
// costs half what time.Now does, which reads the wall clock as well, and
// a server command reads the clock twice.
func sinceStart() time.Duration { return time.Since(clockStart) }

// cmdName is CLIENT LIST's name of a call of spec with args: its
// subcommand's full name ("client|list") for a container command, NULL
// for a subcommand that does not exist, as in Redis.
func cmdName(spec *proto.Spec, args [][]byte) string {
	if s := statOf(spec, args); s != nil {
		return s.FullName()
	}
	return "NULL"
}

// statOf returns what INFO commandstats counts a call of spec with args
// under: the subcommand it names, for a container command, as Redis 7
// counts config|get apart from config|set; else spec. It returns nil for
// a subcommand that does not exist, which Redis counts nowhere.
func statOf(spec *proto.Spec, args [][]byte) *proto.Spec {
	if len(spec.Subcommands) == 0 || len(args) < 2 {
		return spec
	}
	return spec.Sub(args[1])
}

// controlsTransaction reports whether spec runs at once inside MULTI
// rather than being queued.
func controlsTransaction(spec *proto.Spec) bool {
	switch spec.Name {
	case "multi", "exec", "discard", "watch", "quit", "reset":
		return true
	}
	return false
}

// ping answers PING; a subscribed RESP2 client gets Redis's pub/sub form,
// ["pong", message or ""].
func ping(c *client, args [][]byte) {
	switch {
	case len(args) > 2:
		c.out.Error(proto.ErrArity("ping"))
	case c.ps != nil && !c.out.RESP3:
		c.out.Array(2)
		c.out.BulkString("pong")
		if len(args) == 2 {
			c.out.Bulk(args[1])
		} else {
			c.out.BulkString("")
		}
	case len(args) == 1:
		c.out.Simple("PONG")
	default:
		c.out.Bulk(args[1])
	}
}

func quit(c *client, _ [][]byte) {
	c.out.OK()
	c.closing = true
}

func reset(c *client, _ [][]byte) {
	c.leaveModes()
	c.multi, c.multiErr, c.queued, c.watched = false, false, nil, nil
	c.db = 0
	c.authed = c.s.settings.config().RequirePass == ""
	c.info.Lock()
	c.info.name = ""
	c.info.Unlock()
	c.setProtocol(false)
	// Replies are on again, but, as in Redis, after CLIENT REPLY SKIP
	// RESET's own reply is left out.
	c.replyOff, c.skipNext = false, false
	c.muted.Store(c.skipThis)
	c.out.Simple("RESET")
}

// checkPassword reports whether user and pass are the default user's
// credentials, and records a failure of cmd for ACL LOG. Without requirepass
// the default user has no password, and Redis accepts any.
func (c *client) checkPassword(cmd, user, pass []byte) bool {
	want := c.s.settings.config().RequirePass
	if string(user) == "default" && (want == "" || subtle.ConstantTimeCompare(pass, []byte(want)) == 1) {
		return true
	}
	c.s.aclLog.authFailed(c, cmd, string(user))
	return false
}

func auth(c *client, args [][]byte) {
	user, pass := []byte("default"), args[1]
	switch len(args) {
	case 2:
		if c.s.settings.config().RequirePass == "" {
			c.out.Error(proto.ErrNoPassword)
			return
		}
	case 3:
		user, pass = args[1], args[2]
	default:
		c.out.Error(proto.ErrSyntax)
		return
	}
	if !c.checkPassword(args[0], user, pass) {
		c.out.Error(proto.ErrWrongPass)
		return
	}
	c.authed = true
	c.out.OK()
}

// hello answers HELLO: it authenticates, names the connection and
// switches it to the protocol asked for (RESP2 or RESP3), as one command.
func hello(c *client, args [][]byte) {
	var ver int64 // 0: the protocol stays as it is
	if len(args) >= 2 {
		var ok bool
		ver, ok = proto.ParseInt(args[1])
		if !ok {
			c.out.Error("ERR Protocol version is not an integer or out of range")
			return
		}
		if ver != 2 && ver != 3 {
			c.out.Error(proto.ErrNoProto)
			return
		}
	}
	var name []byte
	for i := 2; i < len(args); i++ {
		more := len(args) - i - 1
		switch {
		case strings.EqualFold(string(args[i]), "AUTH") && more >= 2:
			if !c.checkPassword(args[0], args[i+1], args[i+2]) {
				c.out.Error(proto.ErrWrongPass)
				return
			}
			c.authed = true
			i += 2
		case strings.EqualFold(string(args[i]), "SETNAME") && more >= 1:
			name = args[i+1]
			i++
		default:
			c.out.Error("ERR Syntax error in HELLO option '" + string(args[i]) + "'")
			return
		}
	}
	if !c.authed {
		c.out.Error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if name != nil {
		if !c.setName(name) {
			return
		}
	}
	if ver != 0 {
		c.setProtocol(ver == 3)
	}
	c.out.Map(7)
	c.out.BulkString("server")
	c.out.BulkString("redis")
	c.out.BulkString("version")
	c.out.BulkString(redisVersion)
	c.out.BulkString("proto")
	c.out.Int(c.protocol())
	c.out.BulkString("id")
	c.out.Int(c.id)
	c.out.BulkString("mode")
	c.out.BulkString(c.s.settings.current().redisMode())
	c.out.BulkString("role")
	c.out.BulkString("master")
	c.out.BulkString("modules")
	c.out.Array(0)
}

// setProtocol switches the connection to RESP3, or back to RESP2: its
// replies, the messages of its subscriptions, and what CLIENT LIST shows.
func (c *client) setProtocol(resp3 bool) {
	c.out.RESP3 = resp3
	if c.box != nil {
		c.box.resp3.Store(resp3)
	}
	c.info.Lock()
	c.info.resp = int(c.protocol())
	c.info.Unlock()
}

// newReplies returns empty replies in the connection's protocol, for the
// parts of a command that run apart from its other replies.
func (c *client) newReplies() store.Replies {
	return store.Replies{Writer: proto.Writer{RESP3: c.out.RESP3}, Tracked: c.out.Tracked}
}

// protocol is the version of the connection's protocol, 2 or 3.
func (c *client) protocol() int64 {
	if c.out.RESP3 {
		return 3
	}
	return 2
}

func selectDB(c *client, args [][]byte) {
	n, ok := proto.ParseInt(args[1])
	if !ok {
		c.out.Error(proto.ErrNotInteger)
		return
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		c.out.Error("ERR value is out of range, value must between -2147483648 and 2147483647")
		return
	}
	if n < 0 || n >= store.NumDBs {
		c.out.Error(proto.ErrDBIndex)
		return
	}
	c.db = int(n)
	c.out.OK()
}

// pfselftest is Redis's PFSELFTEST (see store.HLLSelfTest). It runs for
// a fraction of a second, on the connection's goroutine.
func pfselftest(c *client, _ [][]byte) {
	if msg := store.HLLSelfTest(rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))); msg != "" {
		c.out.Error(msg)
		return
	}
	c.out.OK()
}

func timeCommand(c *client, _ [][]byte) {
	now := time.Now()
	c.out.Array(2)
	c.out.BulkInt(now.Unix())
	c.out.BulkInt(int64(now.Nanosecond() / 1000))
}

func multi(c *client, _ [][]byte) {
	if c.multi {
		c.out.Error(proto.ErrNestedMulti)
		return
	}
	c.multi, c.multiErr, c.queued = true, false, nil
	c.out.OK()
}

func discard(c *client, _ [][]byte) {
	if !c.multi {
		c.out.Error(proto.ErrDiscardNoMulti)
		return
	}
	c.multi, c.multiErr, c.queued, c.watched = false, false, nil, nil
	c.out.OK()
}

// queue adds a command to the open transaction. Its arguments are copied,
// into the client's argument chunks: the input buffer they point into is
// reused.
func (c *client) queue(spec *proto.Spec, args [][]byte) {
	size := 0
	for _, a := range args {
		size += len(a)
	}
	// A new chunk doubles the last, up to the bound: a client that
	// queues a short block keeps no more than that block took.
	if cap(c.queuedBytes)-len(c.queuedBytes) < size {
		c.queuedBytes = make([]byte, 0, max(size, min(queueChunkBytes, 2*cap(c.queuedBytes))))
	}
	if cap(c.queuedArgs)-len(c.queuedArgs) < len(args) {
		c.queuedArgs = make([][]byte, 0, max(len(args), min(queueChunkArgs, 2*cap(c.queuedArgs))))
	}
	first := len(c.queuedArgs)
	for _, a := range args {
		from := len(c.queuedBytes)
		c.queuedBytes = append(c.queuedBytes, a...)
		c.queuedArgs = append(c.queuedArgs, c.queuedBytes[from:len(c.queuedBytes):len(c.queuedBytes)])
	}
	cp := c.queuedArgs[first:len(c.queuedArgs):len(c.queuedArgs)]
	c.queued = append(c.queued, queuedCommand{spec: spec, args: cp})
	if !c.quiet() {
		c.out.Simple("QUEUED")
	}
}

// The bounds of the chunks queued arguments are copied into (see
// client.queuedBytes): a forwarded block of heartbeats fills a few.
const (
	queueChunkBytes = 8 << 10
	queueChunkArgs  = 512
)

// exec runs the queued commands. The keyspace commands among them go to
// the store as one batch, applied atomically; the server commands run
// in their place in the order they were queued. After WATCH, the batch
// starts with the check of the watched keys, and when one changed
// nothing runs and EXEC answers a null array.
func exec(c *client, _ [][]byte) {
	if !c.multi {
		c.out.Error(proto.ErrExecNoMulti)
		return
	}
	queued, doomed, watched := c.queued, c.multiErr, c.watched
	c.multi, c.multiErr, c.queued, c.watched = false, false, nil, nil
	if doomed {
		c.out.Error(proto.ErrExecAbort)
		return
	}
	// The database each keyspace command runs in follows the SELECTs
	// queued before it.
	batch := make([]store.Command, 0, len(queued))
	db := c.db
	write := false
	for _, q := range queued {
		if store.Handles(q.spec) {
			batch = append(batch, store.Command{DB: db, Args: q.args, Spec: q.spec})
			write = write || isWrite(q.spec, q.args)
		} else if q.spec.Name == "select" {
			if n, ok := proto.ParseInt(q.args[1]); ok && n >= 0 && n < store.NumDBs {
				db = int(n)
			}
		}
	}
	next := 0
	if len(watched) > 0 {
		batch = append([]store.Command{store.WatchCheck(len(batch), watched)}, batch...)
		next = 1
	}
	replies := c.newReplies()
	if len(batch) > 0 {
		saved := c.out
		c.out = replies
		begin := time.Now()
		err := c.runStore(batch, write, begin)
		passed := err == nil && (next == 0 || store.WatchPassed(c.out.Reply(0)))
		if passed && len(batch) > next {
			mark := 0
			if next > 0 {
				mark = c.out.Ends[next-1]
			}
			c.account(batch[next:], next, mark, time.Since(begin))
		}
		replies, c.out = c.out, saved
		if err != nil {
			// The batch did not run: the transaction as a whole failed.
			c.out.Error(replyError(err))
			return
		}
		if !passed {
			c.out.NullArray()
			return
		}
	}
	c.out.Array(len(queued))
	c.inExec = true
	for _, q := range queued {
		if store.Handles(q.spec) {
			c.out.Raw(replies.Reply(next))
			c.feedMonitors(batch[next].DB, q.spec, q.args)
			next++
			continue
		}
		c.runServerCommand(q.spec, q.args)
		c.feedMonitors(c.db, q.spec, q.args)
	}
	c.inExec = false
}

// errModuleCommand is Redis's reply to MODULE LOAD, LOADEX and UNLOAD
// with enable-module-command no, its default: presenced loads no modules.
const errModuleCommand = `ERR MODULE command not allowed. If the enable-module-command option is set to "local", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.`

// module is MODULE, answered as a redis-server with enable-module-command
// no answers it: no module is loaded, none may be.
func module(c *client, args [][]byte) {
	switch sub := c.subcommand(args); {
	case sub == nil:
	case sub.Name == "list":
		c.out.Array(0)
	case sub.Name == "help":
		c.help("MODULE",
			"LIST", "    Return a list of loaded modules.",
			"LOAD <path> [<arg> ...]", "    Load a module library from <path>, passing to it any optional arguments.",
			"LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]", "    Load a module library from <path>, while passing it module configurations and optional arguments.",
			"UNLOAD <name>", "    Unload a module.")
	default:
		c.out.Error(errModuleCommand)
	}
}

func function(c *client, args [][]byte) {
	sub := c.subcommand(args)
	switch {
	case sub == nil:
	case sub.Name == "help":
		c.help("FUNCTION", "FLUSH [ASYNC|SYNC]", "    Delete all functions (presenced has none).")
	case len(args) == 3 && !isFlushMode(args[2]):
		c.out.Error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
	default:
		c.out.OK()
	}
}

func isFlushMode(b []byte) bool {
	return strings.EqualFold(string(b), "SYNC") || strings.EqualFold(string(b), "ASYNC")
}

func debugCommand(c *client, args [][]byte) {
	sub := strings.ToLower(string(args[1]))
	switch {
	case sub == "log" && len(args) == 3:
		c.s.log.Printf("DEBUG LOG: %s", args[2])
		c.out.OK()
	case sub == "digest" && len(args) == 2:
		_, digest := c.s.node.Digest()
		c.out.Simple(fmt.Sprintf("%016x", digest))
	case sub == "help" && len(args) == 2:
		c.help("DEBUG", "DIGEST", "    Output a hex signature of the whole dataset.",
			"LOG <message>", "    Write <message> to the server log.")
	default:
		c.out.Error(proto.ErrSubcommandSyntax(args[1], "DEBUG"))
	}
}

// shutdownCommand answers SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE] [ABORT] as
// Redis checks it. The node stops as on SIGTERM, taking a snapshot of its
// state on the way unless NOSAVE says not to (see Server.Close); NOW and
// FORCE change nothing, and the client gets no reply, its connection
// closing with the server. ABORT finds no shutdown in progress: one is
// never left pending.
func shutdownCommand(c *client, args [][]byte) {
	var save, nosave, abort, other bool
	for _, a := range args[1:] {
		switch strings.ToLower(string(a)) {
		case "nosave":
			nosave = true
		case "save":
			save = true
		case "now", "force":
			other = true
		case "abort":
			abort = true
		default:
			c.out.Error(proto.ErrSyntax)
			return
		}
	}
	switch {
	case abort && (save || nosave || other), save && nosave:
		c.out.Error(proto.ErrSyntax)
	case abort:
		c.out.Error("ERR No shutdown in progress.")
	default:
		c.closing = true
		c.s.requestShutdown(nosave)
	}
}

func memory(c *client, args [][]byte) {
	sub := c.subcommand(args)
	switch {
	case sub == nil:
	case sub.Name == "purge":
		c.s.store.Compact()
		debug.FreeOSMemory()
		c.out.OK()
	case sub.Name == "usage":
		// SAMPLES only bounds Redis's estimate of aggregates; presenced's
		// figure is exact, but the option is checked as Redis checks it.
		for j := 3; j < len(args); j += 2 {
			if !strings.EqualFold(string(args[j]), "SAMPLES") || j+1 == len(args) {
				c.out.Error(proto.ErrSyntax)
				return
			}
			n, ok := proto.ParseInt(args[j+1])
			if !ok {
				c.out.Error(proto.ErrNotInteger)
				return
			}
			if n < 0 {
				c.out.Error(proto.ErrSyntax)
				return
			}
		}
		if n, ok := c.s.store.MemoryUsage(c.db, args[2], time.Now().UnixMilli()); ok {
			c.out.Int(n)
		} else {
			c.out.Null()
		}
	case sub.Name == "stats":
		c.s.memoryReport().writeStats(c)
	case sub.Name == "doctor":
		c.out.Verbatim([]byte(c.s.memoryReport().doctor()))
	case sub.Name == "malloc-stats":
		c.out.Verbatim([]byte(mallocStats()))
	default:
		c.help("MEMORY",
			"DOCTOR", "    Return memory problems reports.",
			"MALLOC-STATS", "    Return internal statistics report from the memory allocator.",
			"PURGE", "    Attempt to purge dirty pages for reclamation by the allocator.",
			"STATS", "    Return information about the memory usage of the server.",
			"USAGE <key> [SAMPLES <count>]", "    Return memory in bytes used by <key> and its value. Nested values are",
			"    sampled up to <count> times (default: 5, 0 means sample all).")
	}
}

// subcommand resolves the subcommand of a container command (CLIENT,
// CONFIG, ...) and checks its arity. When it is unknown or misused it
// replies with Redis's error and returns nil.
func (c *client) subcommand(args [][]byte) *proto.Spec {
	parent := proto.Lookup(args[0])
	sub := parent.Sub(args[1])
	switch {
	case sub == nil:
		c.out.Error(proto.ErrUnknownSubcommand(args[1], strings.ToUpper(parent.Name)))
	case !sub.CheckArity(len(args)):
		c.out.Error(proto.ErrArity(sub.FullName()))
	default:
		return sub
	}
	return nil
}

// help writes a HELP reply in Redis's layout, HELP itself last.
func (c *client) help(cmd string, lines ...string) {
	c.out.Array(len(lines) + 3)
	c.out.Simple(cmd + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
	for _, l := range lines {
		c.out.Simple(l)
	}
	c.out.Simple("HELP")
	c.out.Simple("    Prints this help.")
}
