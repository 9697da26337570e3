package server

import (
	"strings"

	"github.com/presenced/presenced/proto"
)

// replyMode is what CLIENT REPLY asks for.
type replyMode uint8

const (
	replyOn   replyMode = iota + 1 // answer every command
	replyOff                       // answer none
	replySkip                      // leave out the next command's reply
)

// clientReply is CLIENT REPLY ON|OFF|SKIP. Only ON answers, as in Redis.
// Inside a transaction the mode changes once EXEC has answered, and
// EXEC's reply holds OK in its place (Redis changes it as the
// transaction runs, leaving elements out of the array EXEC announced).
func clientReply(c *client, arg []byte) {
	var mode replyMode
	switch {
	case strings.EqualFold(string(arg), "on"):
		mode = replyOn
	case strings.EqualFold(string(arg), "off"):
		mode = replyOff
	case strings.EqualFold(string(arg), "skip"):
		mode = replySkip
	default:
		c.out.Error(proto.ErrSyntax)
		return
	}
	if c.inExec {
		c.execReplies = append(c.execReplies, mode)
		c.out.OK()
		return
	}
	c.setReply(mode)
	if mode == replyOn {
		c.out.OK()
	}
}

// setReply puts CLIENT REPLY's mode into effect: SKIP, unless replies
// are off, for the command after the one running.
func (c *client) setReply(mode replyMode) {
	switch mode {
	case replyOn:
		c.replyOff, c.skipNext, c.skipThis = false, false, false
	case replyOff:
		c.replyOff = true
	case replySkip:
		c.skipNext = !c.replyOff
	}
	c.muted.Store(c.replyOff || c.skipNext || c.skipThis)
}

// afterExec puts into effect the CLIENT REPLY modes a transaction asked
// for, in their order, once EXEC has answered.
func (c *client) afterExec() {
	for _, mode := range c.execReplies {
		c.setReply(mode)
	}
	c.execReplies = c.execReplies[:0]
}

// nextReply starts a request: after CLIENT REPLY SKIP, its reply is the
// one left out. The skipped command's replies are settled first, since a
// keyspace command waits in pending for the end of its batch.
func (c *client) nextReply() {
	if !c.skipThis && !c.skipNext {
		return // nothing changes: the path of every request but SKIP's next
	}
	if c.skipThis {
		c.flushPending()
	}
	c.skipThis, c.skipNext = c.skipNext, false
	c.muted.Store(c.replyOff || c.skipThis)
}

// quiet reports whether the replies appended now are to be dropped.
func (c *client) quiet() bool { return c.replyOff || c.skipThis }

// silence drops the replies appended from offset mark on, when the
// client asked for none. Inside EXEC it leaves them: EXEC's reply is
// dropped or kept as a whole.
func (c *client) silence(mark int) {
	if c.quiet() && !c.inExec && c.out.Len() > mark {
		c.out.Truncate(mark)
	}
}
