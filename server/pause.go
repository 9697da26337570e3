package server

import (
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/presenced/presenced/proto"
)

// CLIENT PAUSE timeout [WRITE | ALL] holds up the commands of this node's
// clients until the pause ends, after timeout milliseconds or at CLIENT
// UNPAUSE, as Redis's does: every command with ALL (the default), or with
// WRITE those that may write (Redis's write and may-replicate commands,
// EXEC of a transaction that holds one). Other nodes' forwarded writes go
// on, as Redis's replicas do; and the cluster's log keeps its clock, so
// keys and bits still expire where Redis would hold expiry back.

// clientPause is the node's pause. changed is closed, and replaced, when
// a pause begins or ends early, waking the clients that wait.
type clientPause struct {
	// active is set while a pause may be under way, so that a command
	// looks no further when none is.
	active  atomic.Bool
	mu      sync.Mutex
	end     time.Time
	all     bool
	changed chan struct{}
}

// set pauses until end, every command if all, or the writes; a pause
// under way ends at the later of the two ends, as in Redis.
func (p *clientPause) set(end time.Time, all bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if end.After(p.end) {
		p.end = end
	}
	p.all = all
	p.active.Store(true)
	p.wakeLocked()
}

// unpause ends the pause.
func (p *clientPause) unpause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.end = time.Time{}
	p.wakeLocked()
}

// nudge wakes the clients that wait, to look again: one was killed.
func (p *clientPause) nudge() {
	if !p.active.Load() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wakeLocked()
}

func (p *clientPause) wakeLocked() {
	if p.changed != nil {
		close(p.changed)
	}
	p.changed = make(chan struct{})
}

// holds reports whether the pause holds up a command that writes or not,
// and if so until when, and the channel closed when the pause changes.
func (p *clientPause) holds(writes bool) (bool, time.Time, <-chan struct{}) {
	if !p.active.Load() {
		return false, time.Time{}, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !time.Now().Before(p.end) {
		p.active.Store(false)
		return false, time.Time{}, nil
	}
	if !p.all && !writes {
		return false, time.Time{}, nil
	}
	return true, p.end, p.changed
}

// pausedFor reports whether the pause holds up spec on c.
func (c *client) pausedFor(spec *proto.Spec) bool {
	if c.peer || spec == nil || !c.s.pause.active.Load() {
		return false
	}
	held, _, _ := c.s.pause.holds(c.mayWrite(spec))
	return held
}

// mayWrite reports whether spec is a write for CLIENT PAUSE
// WRITE: a write command, PUBLISH or PFCOUNT, which Redis flags as may
// replicate, or EXEC of a transaction that queued one.
func (c *client) mayWrite(spec *proto.Spec) bool {
	switch {
	case spec.Flags&proto.Write != 0, spec.Name == "publish", spec.Name == "pfcount":
		return true
	case spec.Name == "exec" && c.multi:
		for _, q := range c.queued {
			if c.mayWrite(q.spec) {
				return true
			}
		}
	}
	return false
}

// waitPause holds c up while the pause holds spec, after
// answering what c sent before it; it returns when the pause ends, the
// client is killed, or the server closes.
func (c *client) waitPause(spec *proto.Spec) {
	if c.peer || spec == nil {
		return
	}
	writes := c.mayWrite(spec)
	defer c.paused.Store(false)
	for {
		held, end, changed := c.s.pause.holds(writes)
		if !held || c.killed.Load() {
			return
		}
		c.flushPending()
		if c.writeOut() != nil {
			return
		}
		c.paused.Store(true)
		t := time.NewTimer(time.Until(end))
		select {
		case <-t.C:
		case <-changed:
		case <-c.s.quit:
			t.Stop()
			return
		}
		t.Stop()
	}
}

// isBlocked reports whether c waits in WAIT or for a pause to end, for
// CLIENT LIST's b flag and INFO's blocked_clients.
func (c *client) isBlocked() bool { return c.blocked.Load() || c.paused.Load() }

// clientPauseCommand answers CLIENT PAUSE timeout [WRITE | ALL], with
// Redis's checks in Redis's order. A timeout whose end is past the
// clock's range pauses nothing, as Redis's end time then wraps into the
// past.
func clientPauseCommand(c *client, args [][]byte) {
	if len(args) > 4 {
		c.out.Error(proto.ErrSubcommandSyntax(args[1], "CLIENT"))
		return
	}
	all := true
	if len(args) == 4 {
		switch strings.ToLower(string(args[3])) {
		case "write":
			all = false
		case "all":
		default:
			c.out.Error("ERR CLIENT PAUSE mode must be WRITE or ALL")
			return
		}
	}
	ms, ok := proto.ParseInt(args[2])
	switch {
	case !ok:
		c.out.Error(proto.ErrTimeout)
		return
	case ms < 0:
		c.out.Error("ERR timeout is negative")
		return
	}
	if now := time.Now(); ms <= math.MaxInt64-now.UnixMilli() {
		c.s.pause.set(now.Add(millis(ms)), all)
	}
	c.out.OK()
}
