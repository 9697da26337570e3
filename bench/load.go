package main

import (
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// A target is where a run sends its load: one server, or several nodes
// of a cluster.
type target struct {
	addrs []string // connection i goes to addrs[i%len(addrs)]
	pids  []int    // the processes whose CPU time the run counts
}

// targetOf is the target made of srvs.
func targetOf(srvs ...server) target {
	var t target
	for _, s := range srvs {
		t.addrs = append(t.addrs, s.Addr())
		t.pids = append(t.pids, s.Pid())
	}
	return t
}

// cpu returns the CPU time the target's processes have used.
func (t target) cpu() (time.Duration, error) {
	var sum time.Duration
	for _, pid := range t.pids {
		c, err := processCPU(pid)
		if err != nil {
			return 0, err
		}
		sum += c
	}
	return sum, nil
}

// A request is what a load connection sends as one unit: one command (a
// template) or a few sent back to back (a batch).
type request interface {
	// appendTo appends the request's commands, taking their integer
	// arguments from ids (nil when they have none). It does not allocate
	// once buf has room.
	appendTo(buf []byte, ids idSource) []byte
	// ids is the number of integer arguments (ids) the request takes.
	ids() int
	// replies is the number of replies the request gets.
	replies() int
}

// opsOf is what one request of r counts for in a run: an op is an id it
// carries (a heartbeat, a bit read), or the whole request when it
// carries none.
func opsOf(r request) int {
	return max(r.ids(), 1)
}

// loadSpec is one run of the load generator against one target.
type loadSpec struct {
	req request
	// pipeline is the ops per round trip: a connection sends
	// pipeline/opsOf(req) requests (at least one) per round trip, so
	// that 64 SETBITs and one BITSETEX of 64 ids are the same pipeline.
	pipeline int
	conns    int
	// ids returns the id source of connection i; nil when the request
	// has no integer argument.
	ids func(i int) idSource
	// Either duration > 0 (run that long), count > 0 (send exactly
	// count ops, a whole number of requests, split evenly over the
	// connections in whole requests; see connShare) or until is not nil
	// (run until it is closed).
	duration time.Duration
	count    uint64
	until    <-chan struct{}
	// started, when not nil, is closed once every connection is open and
	// the run begins.
	started chan<- struct{}
	// marker, when not nil, marks a window of interest (a snapshot being
	// taken): it is odd while the window is open and grows by one when
	// the window opens or closes. Round trips that overlap the window are
	// recorded in loadResult.marked, not in rtt.
	marker *atomic.Uint64
}

// loadResult is what one run measured.
type loadResult struct {
	ops     uint64        // see opsOf
	elapsed time.Duration // from the start to the last reply
	rtt     histogram     // pipeline round-trip times
	marked  histogram     // those that overlapped loadSpec.marker's window
	genCPU  time.Duration // CPU time of this process during the run
	srvCPU  time.Duration // CPU time of the server during the run
}

// opsPerSec is the run's throughput.
func (r *loadResult) opsPerSec() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.ops) / r.elapsed.Seconds()
}

// worker drives one connection. Its buffers are allocated before the run
// starts; the loop itself does not allocate.
type worker struct {
	conn     net.Conn
	rd       *respReader
	wbuf     []byte
	req      request
	ids      idSource
	pipeline int    // requests per round trip
	limit    uint64 // requests to send; 0 means until the deadline
	sent     uint64 // requests
	rtt      histogram
	marker   *atomic.Uint64 // see loadSpec.marker
	marked   histogram
	until    <-chan struct{} // see loadSpec.until
	end      time.Time       // when the last reply arrived
	err      error
}

// run sends pipelines of commands and reads their replies until the limit
// is reached or the deadline (when not zero) has passed.
func (w *worker) run(start <-chan struct{}, deadline time.Time) {
	<-start
	for w.limit == 0 || w.sent < w.limit {
		n := uint64(w.pipeline)
		if w.limit > 0 {
			n = min(n, w.limit-w.sent)
		}
		buf := w.wbuf[:0]
		for range n {
			buf = w.req.appendTo(buf, w.ids)
		}
		w.wbuf = buf
		var mark uint64
		if w.marker != nil {
			mark = w.marker.Load()
		}
		t0 := time.Now()
		if _, err := w.conn.Write(buf); err != nil {
			w.err = err
			return
		}
		for range n * uint64(w.req.replies()) {
			if err := w.rd.skip(); err != nil {
				w.err = err
				return
			}
		}
		w.end = time.Now()
		h := &w.rtt
		if w.marker != nil && (mark%2 == 1 || w.marker.Load() != mark) {
			h = &w.marked
		}
		h.record(w.end.Sub(t0))
		w.sent += n
		if !deadline.IsZero() && w.end.After(deadline) {
			return
		}
		if w.until != nil {
			select {
			case <-w.until:
				return
			default:
			}
		}
	}
}

// connShare returns the range [from, to) of the ops of a count-limited
// spec that connection i of conns sends, when each request carries per
// ops: the requests are shared out, so a range never splits one.
func connShare(count uint64, per, conns, i int) (from, to uint64) {
	from, to = share(count/uint64(per), conns, i)
	return from * uint64(per), to * uint64(per)
}

// drive runs spec against t and merges the connections' results.
func drive(t target, spec loadSpec) (*loadResult, error) {
	per := opsOf(spec.req)
	if spec.count%uint64(per) != 0 {
		return nil, fmt.Errorf("bench: %d ops are not a whole number of %d-id requests", spec.count, per)
	}
	workers := make([]*worker, spec.conns)
	defer func() {
		for _, w := range workers {
			if w != nil {
				w.conn.Close()
			}
		}
	}()
	// The connection deadline only guards against a hung server.
	guard := time.Now().Add(spec.duration + time.Hour)
	for i := range workers {
		conn, err := net.DialTimeout("tcp", t.addrs[i%len(t.addrs)], 10*time.Second)
		if err != nil {
			return nil, err
		}
		_ = conn.SetDeadline(guard)
		w := &worker{
			conn: conn, rd: newRespReader(conn, 64<<10), req: spec.req,
			pipeline: max(spec.pipeline/per, 1), wbuf: make([]byte, 0, spec.pipeline*64), marker: spec.marker,
			until: spec.until,
		}
		if spec.ids != nil {
			w.ids = spec.ids(i)
		}
		if spec.count > 0 {
			// Connection i sends its share of the count.
			from, to := connShare(spec.count, per, spec.conns, i)
			w.limit = (to - from) / uint64(per)
			if w.limit == 0 {
				w.conn.Close()
				continue
			}
		}
		workers[i] = w
	}
	srvBefore, err := t.cpu()
	if err != nil {
		return nil, err
	}
	genBefore := selfCPU()
	startCh := make(chan struct{})
	done := make(chan struct{})
	running := 0
	begin := time.Now()
	var deadline time.Time
	if spec.duration > 0 {
		deadline = begin.Add(spec.duration)
	}
	for _, w := range workers {
		if w != nil {
			running++
			go func() {
				w.run(startCh, deadline)
				done <- struct{}{}
			}()
		}
	}
	close(startCh)
	if spec.started != nil {
		close(spec.started)
	}
	for range running {
		<-done
	}
	res := &loadResult{genCPU: selfCPU() - genBefore}
	srvAfter, err := t.cpu()
	if err != nil {
		return nil, err
	}
	res.srvCPU = srvAfter - srvBefore
	var last time.Time
	for i, w := range workers {
		if w == nil {
			continue
		}
		if w.err != nil {
			return nil, fmt.Errorf("connection to %s: %w", t.addrs[i%len(t.addrs)], w.err)
		}
		res.ops += w.sent * uint64(per)
		res.rtt.merge(&w.rtt)
		res.marked.merge(&w.marked)
		if w.end.After(last) {
			last = w.end
		}
	}
	res.elapsed = last.Sub(begin)
	return res, nil
}

// selfCPU returns the user and system CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
