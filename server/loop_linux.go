//go:build linux

package server

import (
	"errors"
	"net"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/presenced/presenced/cluster"
	"github.com/presenced/presenced/store"
)

// eventLoop serves connections from one goroutine, as redis-server serves
// all of its own: it waits until some of them have input (epoll), reads
// and parses what each has, runs the writes of all of them as one batch
// (one log entry) and the rest connection by connection, and writes the
// replies. Such a pass costs a request a read and a write, and no
// goroutine is parked and woken around it, where a connection's own
// goroutine is parked while it waits for input and again while its write
// commits. That share matters where a commit waits for no other node;
// where it waits for a replica, a loop would hold its other connections
// up meanwhile (see serveFromLoop).
//
// The loop owns the connections it serves: it alone reads them, closes
// them, and hands one to a goroutine of its own when the connection needs
// one (needsGoroutine, or a reply the socket does not take at once). The
// loop keeps each connection's net.Conn, so what works on a connection
// served by a goroutine (CLIENT LIST, Server.Close) works the same.
type eventLoop struct {
	s    *Server
	epfd int
	wake [2]int // a pipe: a byte written to wake[1] ends the loop

	mu    sync.Mutex
	conns map[int32]*client // by descriptor

	events  []syscall.EpollEvent
	pass    []*client // the connections with a batch to end, in this pass
	writes  []store.Command
	owners  []*client     // the connections whose batches writes holds
	out     store.Replies // the replies of writes
	barrier sharedBarrier
}

// maxPassWrite bounds the input whose writes a pass commits as one batch.
const maxPassWrite = maxBatchInput

// startLoops starts the event loops (see loopCount).
func (s *Server) startLoops() error {
	for range s.loopCount() {
		l, err := newEventLoop(s)
		if err != nil {
			for _, l := range s.loops {
				l.closeFiles()
			}
			s.loops = nil
			return err
		}
		s.loops = append(s.loops, l)
	}
	for _, l := range s.loops {
		s.goFunc(l.run)
	}
	return nil
}

// loopCount is how many event loops serve clients: one per processor the
// runtime uses, so that reading, parsing and reads of the store use every
// core; but one where each commit waits for a flush of the log
// (`appendfsync always`). There the passes of two loops would take turns
// at the entries, each with a part of the clients (measured: 20k single
// requests a second against one loop's 26k), where one loop's pass takes
// every client that came back during the flush before, as redis-server's
// loop does around its flush of the AOF.
func (s *Server) loopCount() int {
	if cfg := s.node.Config(); cfg.AppendOnly && cfg.AppendFsync == cluster.FsyncAlways {
		return 1
	}
	return runtime.GOMAXPROCS(0)
}

// stopLoops wakes every loop to close its connections and end.
func (s *Server) stopLoops() {
	for _, l := range s.loops {
		syscall.Write(l.wake[1], []byte{0})
		syscall.Close(l.wake[1])
	}
}

func newEventLoop(s *Server) (*eventLoop, error) {
	l := &eventLoop{s: s, conns: make(map[int32]*client), events: make([]syscall.EpollEvent, 128), barrier: sharedBarrier{node: s.node}}
	var err error
	if l.epfd, err = syscall.EpollCreate1(syscall.EPOLL_CLOEXEC); err != nil {
		return nil, err
	}
	if err = syscall.Pipe2(l.wake[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		syscall.Close(l.epfd)
		return nil, err
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(l.wake[0])}
	if err = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, l.wake[0], &ev); err != nil {
		l.closeFiles()
		syscall.Close(l.wake[1])
		return nil, err
	}
	return l, nil
}

// closeFiles closes the loop's epoll instance and the pipe's read end;
// stopLoops closes the write end.
func (l *eventLoop) closeFiles() {
	syscall.Close(l.epfd)
	syscall.Close(l.wake[0])
}

// serveFromLoop hands c to an event loop, and reports whether one took
// it: on a node that is its cluster's only voter, when the connection
// gives access to its descriptor. A node with replicas serves each
// connection from a goroutine of its own, since there a write waits for a
// follower's log as well, which a loop's other connections would wait
// for too (with `appendfsync always`, three nodes took a quarter fewer
// single requests from loops).
func (s *Server) serveFromLoop(c *client) bool {
	if len(s.loops) == 0 || !s.node.SoleVoter() {
		return false
	}
	rc := rawConn(c.nc)
	if rc == nil {
		return false
	}
	return s.loops[s.nextLoop.Add(1)%uint64(len(s.loops))].add(c, rc)
}

// add registers c with the loop, and reports whether it could. The loop
// serves a duplicate of the connection's descriptor, and the net.Conn is
// closed (its addresses stay readable): Go's poller would otherwise wake
// for every request the loop reads.
func (l *eventLoop) add(c *client, rc syscall.RawConn) bool {
	fd := -1
	var err error
	ctlErr := rc.Control(func(orig uintptr) {
		syscall.ForkLock.RLock()
		defer syscall.ForkLock.RUnlock()
		if fd, err = syscall.Dup(int(orig)); err == nil {
			syscall.CloseOnExec(fd)
		}
	})
	if err = errors.Join(ctlErr, err); err != nil {
		return false
	}
	// Closed before the loop can see the connection, which may hand it
	// over to a goroutine with a net.Conn of its own at once.
	c.nc.Close()
	c.fd, c.loop = fd, l
	l.mu.Lock()
	l.conns[int32(fd)] = c
	l.mu.Unlock()
	if c.killed.Load() { // killed while neither the loop nor c.nc had it
		syscall.Shutdown(fd, syscall.SHUT_RDWR)
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		// The connection is lost: its goroutine finds it closed.
		l.remove(c)
		syscall.Close(fd)
		return false
	}
	return true
}

// shutdownInLoop shuts the socket of c down in both directions if an
// event loop serves it, and reports whether one does. The loop's lock
// keeps the descriptor open meanwhile: a loop closes a descriptor only
// after taking it out of its map.
func (s *Server) shutdownInLoop(c *client) bool {
	for _, l := range s.loops {
		l.mu.Lock()
		for fd, o := range l.conns {
			if o == c {
				syscall.Shutdown(int(fd), syscall.SHUT_RDWR)
				l.mu.Unlock()
				return true
			}
		}
		l.mu.Unlock()
	}
	return false
}

// remove takes c out of the loop: it is no longer waited for or read.
func (l *eventLoop) remove(c *client) {
	syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, c.fd, nil)
	l.mu.Lock()
	delete(l.conns, int32(c.fd))
	l.mu.Unlock()
	c.loop, c.barrier = nil, nil
}

// run serves the loop's connections until the server closes.
func (l *eventLoop) run() {
	defer l.closeFiles()
	for {
		n, err := syscall.EpollWait(l.epfd, l.events, -1)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || l.s.closed.Load() {
			l.closeAll()
			return
		}
		for _, ev := range l.events[:n] {
			l.mu.Lock()
			c := l.conns[ev.Fd]
			l.mu.Unlock()
			if c != nil {
				l.read(c)
			}
		}
		l.endPass()
	}
}

// closeAll ends every connection of the loop.
func (l *eventLoop) closeAll() {
	l.mu.Lock()
	conns := make([]*client, 0, len(l.conns))
	for _, c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	for _, c := range conns {
		l.close(c)
	}
}

// read reads what c has for now and dispatches its requests into its
// batch; a connection whose batch closed joins the pass.
func (l *eventLoop) read(c *client) {
	for {
		room := c.readRoom()
		n, err := c.readRaw(room)
		if err == syscall.EAGAIN {
			if c.batchOpen { // the rest of a pipeline is still to come
				c.batchOpen = false
				l.pass = append(l.pass, c)
			}
			return
		}
		full, err := c.filled(max(n, 0), len(room), err)
		if err != nil {
			if c.batchOpen { // cut short (see client.endCut): run, answer, close
				c.batchOpen, c.closing = false, true
				l.pass = append(l.pass, c)
				return
			}
			l.close(c)
			return
		}
		if !c.gather(full) {
			l.pass = append(l.pass, c)
			return
		}
	}
}

// readRaw reads into b from the loop's descriptor of c without waiting:
// EAGAIN when there is nothing to read.
func (c *client) readRaw(b []byte) (int, error) {
	for {
		n, err := syscall.Read(c.fd, b)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// endPass runs the batches of the pass: first the writes of the batches
// that hold only writes, as one batch, then each connection's rest; then
// it writes each connection's replies. Their reads share one read
// barrier, raised after every batch of the pass was read.
func (l *eventLoop) endPass() {
	l.barrier.raised = false
	for _, c := range l.pass {
		c.barrier = &l.barrier
	}
	l.applyWrites()
	for _, c := range l.pass {
		c.flushPending()
		c.releaseBuffers()
		c.barrier = nil
		l.finish(c)
	}
	clear(l.pass)
	l.pass = l.pass[:0]
}

// applyWrites commits the batches of the pass that hold only writes, as
// few batches as the bound on their input allows, and answers them. A
// batch that changes nothing is answered without, as on a connection's
// own goroutine.
func (l *eventLoop) applyWrites() {
	now := time.Now()
	size := 0
	for _, c := range l.pass {
		if len(c.pending) == 0 || !allWrites(c.pending) || c.used > l.s.maxWriteBytes {
			continue // flushPending runs them, cut as the log's bound needs
		}
		first, mark := len(c.out.Ends), c.out.Len()
		if c.unchanged(c.pending, now) {
			c.settle(c.pending, first, mark, now, nil)
			c.clearPending()
			continue
		}
		if size > 0 && size+c.used > min(maxPassWrite, l.s.maxWriteBytes) {
			l.commitWrites(now)
			size = 0
		}
		l.writes = append(l.writes, c.pending...)
		l.owners = append(l.owners, c)
		size += c.used
	}
	if len(l.owners) > 0 {
		l.commitWrites(now)
	}
}

// allWrites reports whether every command of cmds writes.
func allWrites(cmds []store.Command) bool {
	for _, cmd := range cmds {
		if !isWrite(cmd.Spec, cmd.Args) {
			return false
		}
	}
	return true
}

// commitWrites applies the writes gathered from the owners' batches as
// one batch and gives each owner its replies.
func (l *eventLoop) commitWrites(begin time.Time) {
	err := l.s.node.Apply(l.writes, &l.out)
	k := 0
	for _, c := range l.owners {
		first, mark := len(c.out.Ends), c.out.Len()
		if err == nil {
			c.out.AppendFrom(&l.out, k, len(c.pending))
		}
		k += len(c.pending)
		c.settle(c.pending, first, mark, begin, err)
		c.clearPending()
	}
	clear(l.writes)
	clear(l.owners)
	l.writes, l.owners = l.writes[:0], l.owners[:0]
	l.out.Reset()
	if cap(l.out.B) > maxIdleBuf {
		l.out = store.Replies{}
	}
}

// finish writes c's replies and drops the input they answer; then closes
// the connection if it must end, or hands it to a goroutine if it needs
// one.
func (l *eventLoop) finish(c *client) {
	sent, err := c.writeRaw()
	switch {
	case err != nil || !c.dropInput(c.used) || c.closing:
		l.close(c)
	case !sent || c.handingOff:
		l.handOff(c)
	}
}

// handOff moves c to a goroutine of its own, with a net.Conn again.
func (l *eventLoop) handOff(c *client) {
	l.remove(c)
	c.handingOff = false
	f := os.NewFile(uintptr(c.fd), "client")
	nc, err := net.FileConn(f) // a duplicate of f's descriptor
	f.Close()
	if err != nil {
		l.s.dropClient(c)
		return
	}
	c.info.Lock()
	c.nc = nc
	c.info.Unlock()
	// Close may have closed the old net.Conn only, and CLIENT KILL may
	// have missed c between the loop and the new one.
	if l.s.closed.Load() || c.killed.Load() {
		nc.Close()
	}
	l.s.goFunc(func() {
		c.serve()
		l.s.dropClient(c)
	})
}

// writeRaw writes c's replies without waiting, and reports whether the
// socket took them all; what it did not take stays in out, for the
// goroutine the connection is then handed to.
func (c *client) writeRaw() (bool, error) {
	if c.out.Len() == 0 {
		return true, nil
	}
	n, err := syscall.Write(c.fd, c.out.B)
	for err == syscall.EINTR {
		n, err = syscall.Write(c.fd, c.out.B)
	}
	if err == syscall.EAGAIN {
		n, err = 0, nil
	}
	if err != nil {
		return false, err
	}
	c.s.stats.net.wrote(n)
	if n < c.out.Len() {
		c.out.B = c.out.B[:copy(c.out.B, c.out.B[n:])]
		return false, nil
	}
	c.resetOut()
	return true, nil
}

// close ends c's connection.
func (l *eventLoop) close(c *client) {
	l.remove(c)
	syscall.Close(c.fd)
	l.s.dropClient(c)
}
