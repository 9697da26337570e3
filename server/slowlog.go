package server

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/presenced/presenced/proto"
)

// slowlog keeps the commands that took at least slowlog-log-slower-than,
// the newest slowlog-max-len of them, as Redis's SLOWLOG does. A command's
// time is its share of the batch it ran in: for a write, the time from
// reading its batch to having the replies, the commit of its log entry
// included.
type slowlog struct {
	mu      sync.Mutex
	entries []slowEntry // the oldest first
	nextID  int64
}

// slowEntry is one command of the slow log, its arguments shortened as
// Redis shortens them.
type slowEntry struct {
	id         int64
	unix       int64
	usec       int64
	args       [][]byte
	addr, name string
}

// Redis's bounds on what an entry keeps of a command.
const (
	slowlogMaxArgs     = 32  // arguments, the last one replaced by a count of the rest
	slowlogMaxArgBytes = 128 // bytes of an argument, the rest replaced by a count
)

// slow reports whether a command that took usec enters the slow log. A
// write another node forwarded is logged there, by the connection of the
// client that sent it.
func (c *client) slow(spec *proto.Spec, usec int64) bool {
	cfg := c.s.settings.current()
	return cfg.SlowlogSlowerThan >= 0 && usec >= cfg.SlowlogSlowerThan && cfg.SlowlogMaxLen > 0 &&
		spec != nil && spec.Flags&proto.SkipSlowlog == 0 && !c.peer
}

// logSlow adds c's command args, which took usec, to the slow log.
func (c *client) logSlow(args [][]byte, usec int64) {
	kept := args
	if len(kept) > slowlogMaxArgs {
		kept = kept[:slowlogMaxArgs-1]
	}
	e := slowEntry{unix: time.Now().Unix(), usec: usec, args: make([][]byte, 0, len(kept)+1), addr: c.peerAddr(c.nc)}
	secret := secretArgs(args)
	for i, a := range kept {
		switch {
		case secret[i]:
			a = []byte("(redacted)")
		case len(a) > slowlogMaxArgBytes:
			a = fmt.Appendf(a[:slowlogMaxArgBytes:slowlogMaxArgBytes], "... (%d more bytes)", len(a)-slowlogMaxArgBytes)
		default:
			a = append([]byte(nil), a...)
		}
		e.args = append(e.args, a)
	}
	if len(kept) < len(args) {
		e.args = append(e.args, fmt.Appendf(nil, "... (%d more arguments)", len(args)-len(kept)))
	}
	c.info.Lock()
	e.name = c.info.name
	c.info.Unlock()
	l := &c.s.slowlog
	l.mu.Lock()
	defer l.mu.Unlock()
	e.id = l.nextID
	l.nextID++
	l.entries = append(l.entries, e)
	if n := c.s.settings.current().SlowlogMaxLen; int64(len(l.entries)) > n {
		l.entries = l.entries[int64(len(l.entries))-n:]
	}
}

// slowlogCommand is SLOWLOG GET [count], LEN, RESET and HELP.
func slowlogCommand(c *client, args [][]byte) {
	sub := c.subcommand(args)
	if sub == nil {
		return
	}
	l := &c.s.slowlog
	switch sub.Name {
	case "get":
		count := int64(10)
		if len(args) > 3 {
			c.out.Error(proto.ErrSubcommandSyntax(args[1], "SLOWLOG"))
			return
		}
		if len(args) == 3 {
			n, err := strconv.ParseInt(string(args[2]), 10, 64)
			if err != nil || n < -1 {
				c.out.Error("ERR count should be greater than or equal to -1")
				return
			}
			count = n
		}
		l.mu.Lock()
		entries := l.entries
		if count >= 0 && int64(len(entries)) > count {
			entries = entries[int64(len(entries))-count:]
		}
		c.out.Array(len(entries))
		for i := len(entries) - 1; i >= 0; i-- { // the newest first
			e := entries[i]
			c.out.Array(6)
			c.out.Int(e.id)
			c.out.Int(e.unix)
			c.out.Int(e.usec)
			c.out.Array(len(e.args))
			for _, a := range e.args {
				c.out.Bulk(a)
			}
			c.out.BulkString(e.addr)
			c.out.BulkString(e.name)
		}
		l.mu.Unlock()
	case "len":
		l.mu.Lock()
		c.out.Int(int64(len(l.entries)))
		l.mu.Unlock()
	case "reset":
		l.mu.Lock()
		l.entries = nil
		l.mu.Unlock()
		c.out.OK()
	default:
		c.help("SLOWLOG",
			"GET [<count>]", "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
			"    Entries are made of:",
			"    id, timestamp, time in microseconds, arguments array, client IP and port,",
			"    client name",
			"LEN", "    Return the length of the slowlog.",
			"RESET", "    Reset the slowlog.")
	}
}
