package server

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/presenced/presenced/proto"
)

// monitorHub holds the outboxes of the connections in MONITOR mode: every
// command this node's clients run is copied to each, as a status line.
type monitorHub struct {
	active atomic.Int32 // the number of boxes: commands check it alone
	mu     sync.Mutex
	boxes  map[*outbox]*client // each with the client it belongs to
}

// monitorOutputLimit is the most output a monitoring connection may have
// waiting: Redis's hard limit for its replica class, which monitors are
// in.
const monitorOutputLimit = 256 << 20

// errMonitorKeyspace refuses a monitoring connection's reads and writes.
const errMonitorKeyspace = "ERR Replica can't interact with the keyspace"

// monitor is MONITOR: from now on the connection receives a line for each
// command that a client of this node runs (not other nodes' forwarded
// writes), until RESET or QUIT. As in Redis, it answers nothing when the
// connection monitors already, and a transaction may not run it.
func monitor(c *client, _ [][]byte) {
	switch {
	case c.inExec:
		c.out.Error("ERR MONITOR isn't allowed for DENY BLOCKING client")
		return
	case c.monitoring:
		return
	}
	c.openBox(monitorOutputLimit)
	c.setMonitoring(true)
	h := &c.s.monitors
	h.mu.Lock()
	if h.boxes == nil {
		h.boxes = map[*outbox]*client{}
	}
	h.boxes[c.box] = c
	h.active.Store(int32(len(h.boxes)))
	// Confirmed before any command is copied to the connection.
	if !c.quiet() {
		c.out.OK()
	}
	c.box.push(c.out.B)
	c.out.Reset()
	h.mu.Unlock()
}

// leaveModes ends MONITOR and the subscriptions (for RESET, and when the
// connection ends).
func (c *client) leaveModes() {
	if c.monitoring {
		h := &c.s.monitors
		h.mu.Lock()
		delete(h.boxes, c.box)
		h.active.Store(int32(len(h.boxes)))
		h.mu.Unlock()
		c.setMonitoring(false)
	}
	c.leavePubSub()
	c.s.tracking.disable(c)
	c.closeBox()
}

// setMonitoring sets monitoring, and what CLIENT LIST shows of it.
func (c *client) setMonitoring(on bool) {
	c.monitoring = on
	c.info.Lock()
	c.info.monitoring = on
	c.info.Unlock()
}

// openBox gives the client an outbox that holds at most limit bytes, if
// it has none.
func (c *client) openBox(limit int) {
	if c.box == nil {
		c.box = newOutbox(c.nc, limit, &c.s.stats.net)
		c.box.resp3.Store(c.out.RESP3)
		c.boxRef.Store(c.box)
		c.s.goFunc(c.box.run)
	}
}

// closeBox waits until the client's outbox has written what it holds and
// drops it, once neither subscriptions, MONITOR nor CLIENT TRACKING need
// it.
func (c *client) closeBox() {
	if c.box != nil && c.ps == nil && !c.monitoring && !c.track.on {
		c.boxRef.Store(nil)
		c.box.finish()
		c.box = nil
	}
}

// feedMonitors copies a command the client ran in database db to the
// monitoring connections, as Redis does: not another node's forwarded
// writes, nor administrative commands, whose arguments may be secrets.
// Without a monitoring connection it costs a command one load.
func (c *client) feedMonitors(db int, spec *proto.Spec, args [][]byte) {
	if c.s.monitors.active.Load() != 0 && !c.peer {
		c.feed(db, spec, args)
	}
}

// feed is feedMonitors once a connection monitors.
func (c *client) feed(db int, spec *proto.Spec, args [][]byte) {
	h := &c.s.monitors
	if spec = statOf(spec, args); spec == nil || spec.Flags&proto.Admin != 0 {
		return // an unknown subcommand, which Redis refuses before running
	}
	addr := c.peerAddr(c.nc)
	if c.unix {
		addr = "unix:" + c.socketPath()
	}
	line := monitorLine(time.Now(), db, addr, args)
	if c.monitoring {
		// Redis copies a command after its reply: a monitoring connection
		// reads its own reply first. It runs no keyspace command, so its
		// replies so far are all there are.
		c.writeOut()
	}
	h.mu.Lock()
	for box, owner := range h.boxes {
		if !owner.muted.Load() { // after CLIENT REPLY OFF, as in Redis
			box.push(line)
		}
	}
	h.mu.Unlock()
}

// monitorLine is MONITOR's line for a command: the time, the database and
// the client's address, then each argument quoted, passwords redacted.
func monitorLine(now time.Time, db int, addr string, args [][]byte) []byte {
	b := append([]byte{'+'}, strconv.FormatInt(now.Unix(), 10)...)
	b = append(b, '.')
	usec := strconv.Itoa(now.Nanosecond() / 1000)
	b = append(append(b, "000000"[len(usec):]...), usec...)
	b = append(append(append(append(b, " ["...), strconv.Itoa(db)...), ' '), addr...)
	b = append(b, ']')
	secret := secretArgs(args)
	for i, a := range args {
		b = append(b, ' ')
		if secret[i] {
			b = append(b, `"(redacted)"`...)
			continue
		}
		b = appendRepr(b, a)
	}
	return append(b, "\r\n"...)
}

// secretArgs marks the arguments that MONITOR and SLOWLOG show as
// "(redacted)", as Redis redacts them: AUTH's, HELLO's after AUTH, and
// MIGRATE's after AUTH and AUTH2.
func secretArgs(args [][]byte) []bool {
	secret := make([]bool, len(args))
	hide := func(from, n int) {
		for i := from; i < min(from+n, len(args)); i++ {
			secret[i] = true
		}
	}
	is := func(a []byte, name string) bool { return strings.EqualFold(string(a), name) }
	switch {
	case is(args[0], "auth"):
		hide(1, len(args))
	case is(args[0], "hello"):
		for i := 2; i < len(args); i++ {
			switch {
			case is(args[i], "auth"):
				hide(i+1, 2)
				return secret
			case is(args[i], "setname"):
				i++
			}
		}
	case is(args[0], "migrate"):
		for i := 6; i < len(args) && !is(args[i], "keys"); i++ {
			switch {
			case is(args[i], "auth"):
				hide(i+1, 1)
				i++
			case is(args[i], "auth2"):
				hide(i+1, 2)
				i += 2
			}
		}
	}
	return secret
}

// appendRepr appends s quoted as Redis's sdscatrepr quotes it.
func appendRepr(b, s []byte) []byte {
	b = append(b, '"')
	for _, x := range s {
		switch x {
		case '\\', '"':
			b = append(b, '\\', x)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		case '\a':
			b = append(b, `\a`...)
		case '\b':
			b = append(b, `\b`...)
		default:
			if x >= ' ' && x <= '~' {
				b = append(b, x)
			} else {
				b = append(b, '\\', 'x', "0123456789abcdef"[x>>4], "0123456789abcdef"[x&15])
			}
		}
	}
	return append(b, '"')
}
