package server

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
)

// errOutboxClosed is returned when a subscribed client's output cannot be
// queued because its connection was closed: a write failed, or the output
// waiting to be written passed the output buffer limit.
var errOutboxClosed = errors.New("server: subscriber connection closed")

// outbox is the output queue of a subscribed client. Publishers and the
// client's own goroutine append to it without waiting on the network; a
// writer goroutine (run) sends what it holds. A client whose queued and
// in-flight output would pass limit is disconnected, as Redis disconnects
// a client past its client-output-buffer-limit.
type outbox struct {
	nc    net.Conn
	net   *netStats // where the bytes written are counted
	limit int
	wake  chan struct{} // a token when there is something to do
	done  chan struct{} // closed when run returns
	// resp3 is set while the client speaks RESP3: messages go out as
	// pushes.
	resp3 atomic.Bool

	mu struct {
		sync.Mutex
		buf      []byte // queued, not yet taken by the writer
		inflight int    // bytes the writer is writing
		closing  bool   // no more output: write what is queued and stop
		failed   bool   // the connection is closed; output is dropped
		// holding is set while the client's goroutine answers a batch
		// (see hold): the invalidations pushed meanwhile wait in held,
		// behind the batch's replies.
		holding bool
		held    []byte
	}
}

func newOutbox(nc net.Conn, limit int, counts *netStats) *outbox {
	return &outbox{nc: nc, net: counts, limit: limit, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// push queues b (copying it) and reports whether it was queued. It never
// waits for the network: past the limit it closes the connection instead.
func (o *outbox) push(b []byte) bool { return o.queue(b, false) }

// pushMessage is push for a pub/sub message encoded as a RESP2 array,
// which a RESP3 client gets as a push (the same bytes, but for the type).
func (o *outbox) pushMessage(frame []byte) bool { return o.queue(frame, o.resp3.Load()) }

// queue is push; asPush makes the first byte of b, an array's, a push's.
func (o *outbox) queue(b []byte, asPush bool) bool {
	o.mu.Lock()
	if o.mu.failed || o.mu.closing {
		o.mu.Unlock()
		return false
	}
	if len(o.mu.buf)+o.mu.inflight+len(b) > o.limit {
		o.failLocked()
		o.mu.Unlock()
		return false
	}
	o.mu.buf = append(o.mu.buf, b...)
	if asPush {
		o.mu.buf[len(o.mu.buf)-len(b)] = '>'
	}
	o.mu.Unlock()
	o.signal()
	return true
}

// pushInvalidation queues frame, an invalidation of cached keys, behind
// the replies of the batch the client is answering, if it is answering
// one (see hold), so that a reply read before a change never reaches the
// client after the change's invalidation. Like push, it never waits.
func (o *outbox) pushInvalidation(frame []byte) {
	o.mu.Lock()
	if o.mu.holding {
		o.mu.held = append(o.mu.held, frame...)
		o.mu.Unlock()
		return
	}
	o.mu.Unlock()
	o.push(frame)
}

// hold makes invalidations wait until release, while the client's
// goroutine reads keys and answers.
func (o *outbox) hold() {
	o.mu.Lock()
	o.mu.holding = true
	o.mu.Unlock()
}

// release queues the invalidations held since hold, once the batch's
// replies are queued.
func (o *outbox) release() {
	o.mu.Lock()
	held := o.mu.held
	o.mu.holding, o.mu.held = false, nil
	o.mu.Unlock()
	if len(held) > 0 {
		o.push(held)
	}
}

// send queues the client's own replies for push, reporting a closed
// connection as an error.
func (o *outbox) send(b []byte) error {
	if len(b) > 0 && !o.push(b) {
		return errOutboxClosed
	}
	return nil
}

// failLocked drops the queue and closes the connection, which also ends a
// write the writer is blocked in and the client's read. The close runs in
// a goroutine of its own: it returns only once the client's goroutine,
// which may be the caller, is out of the command it runs (see serveRaw).
func (o *outbox) failLocked() {
	o.mu.failed = true
	o.mu.buf = nil
	go o.nc.Close()
}

// signal wakes the writer without waiting.
func (o *outbox) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// finish makes the writer send what is queued and stop, and waits for it.
func (o *outbox) finish() {
	o.mu.Lock()
	o.mu.closing = true
	o.mu.Unlock()
	o.signal()
	<-o.done
}

// run writes the queue to the connection until finish or a failure.
func (o *outbox) run() {
	defer close(o.done)
	var spare []byte
	for {
		b, ok := o.take(spare)
		if !ok {
			return
		}
		n, err := o.nc.Write(b)
		o.net.wrote(n)
		o.mu.Lock()
		o.mu.inflight = 0
		if err != nil {
			o.failLocked()
		}
		o.mu.Unlock()
		if err != nil {
			return
		}
		spare = nil
		if cap(b) <= maxIdleBuf {
			spare = b[:0]
		}
	}
}

// take waits for queued output and takes it, leaving spare as the new
// queue; ok is false when the writer is to stop.
func (o *outbox) take(spare []byte) (b []byte, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for len(o.mu.buf) == 0 && !o.mu.closing && !o.mu.failed {
		o.mu.Unlock()
		<-o.wake
		o.mu.Lock()
	}
	if o.mu.failed || len(o.mu.buf) == 0 {
		return nil, false
	}
	b, o.mu.buf = o.mu.buf, spare
	o.mu.inflight = len(b)
	return b, true
}
