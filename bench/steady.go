package main

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/presenced/presenced/store"
)

// The steady state of presence, as the per-bit expiry issue states it:
// ExpiryIDs users online in Space, each heartbeating every steadyEvery
// with a heartbeatTTL deadline, while steadyChurn percent of them leave
// (stop heartbeating, so that they expire) and as many others join every
// steadyEvery. That is 1.7M heartbeats a second for 50M users, beyond
// what this machine's load generator sends over the network, so the
// state machine runs in process: a store.Store fed, as the server feeds
// it, with a tick at every 100 ms of log time (the expiry work) and
// between ticks the BITPSETEX commands of the heartbeats due then.

const (
	steadyEvery  = 30 * time.Second
	steadyChurn  = 1 // percent of the users, every steadyEvery
	steadyTick   = store.HistoryTick * time.Millisecond
	steadyBatch  = 1000 // ids per BITPSETEX command
	steadyKey    = "online:steady"
	steadyCycles = 5 // steadyEvery cycles simulated; the last two are measured
)

// steadyPlan says who heartbeats when: the user with index j (id
// perm.at(j)) is online in cycle c when c*leave <= j < c*leave+online,
// and heartbeats in the tick j % ticks of each cycle it is online in.
type steadyPlan struct {
	perm          permutation
	online, leave uint64
	ticks         uint64 // ticks in a cycle
}

// due appends to ids the users that heartbeat at tick k (from the start).
func (p steadyPlan) due(k uint64, ids []uint32) []uint32 {
	c, phase := k/p.ticks, k%p.ticks
	lo, hi := c*p.leave, c*p.leave+p.online
	for j := lo + (phase+p.ticks-lo%p.ticks)%p.ticks; j < hi; j += p.ticks {
		ids = append(ids, uint32(p.perm.at(j)))
	}
	return ids
}

// alive counts the users whose last heartbeat before tick end was less
// than ttl ticks earlier, which a key must hold at tick end.
func (p steadyPlan) alive(end, ttl uint64) uint64 {
	var n uint64
	for j := range (end/p.ticks)*p.leave + p.online {
		// The last cycle j is online in, c, and its heartbeat's tick.
		c := end / p.ticks
		if p.leave > 0 {
			c = min(c, j/p.leave)
		}
		last := c*p.ticks + j%p.ticks
		if last >= end { // not sent yet in cycle c: the cycle before's
			if c == 0 || j >= (c-1)*p.leave+p.online {
				continue
			}
			last -= p.ticks
		}
		if last+ttl >= end {
			n++
		}
	}
	return n
}

// steadyFigures is what the measured cycles of the steady state took.
type steadyFigures struct {
	sweep  time.Duration // the ticks (the expiry work)
	arm    time.Duration // applying the heartbeats
	window time.Duration // of log time
	ticks  histogram     // the length of each tick
	worst  time.Duration // the longest tick
	// worstCPU is the most processor time a tick took: a tick longer
	// than that waited for the processor, which other processes had.
	worstCPU time.Duration
}

// steadyExpiry simulates steadyCycles cycles of the steady state and
// returns what the last two took. The first cycle arms everyone; from
// heartbeatTTL on, deadlines come due. It checks the key's count at the
// end against the plan.
func (s *suite) steadyExpiry() (*steadyFigures, error) {
	ticks := uint64(steadyEvery / steadyTick)
	p := steadyPlan{perm: newPermutation(s.cfg.Space, s.cfg.Seed), online: s.cfg.ExpiryIDs,
		leave: s.cfg.ExpiryIDs * steadyChurn / 100, ticks: ticks}
	// On one thread throughout, so that its CPU clock times the ticks.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	st := store.New()
	f := new(steadyFigures)
	var out store.Replies
	start := time.Now().UnixMilli()
	end, from := steadyCycles*ticks, (steadyCycles-2)*ticks
	ttl := strconv.Itoa(heartbeatTTL * 1000)
	var ids []uint32
	var cmds []store.Command
	var digits []byte // of the ids of a tick's commands; a grown copy leaves the earlier ones intact
	for k := range end + 1 {
		now := start + int64(k)*steadyTick.Milliseconds()
		// A tick, and more at once while one leaves expiry work behind,
		// as the cluster proposes them.
		for more := true; more; more = st.BitsBehind() {
			out.Reset()
			// The processor time is read inside the wall time, so
			// that it can never exceed it.
			t := time.Now()
			cpu := threadCPU()
			st.Apply(nil, now, &out)
			cpu = threadCPU() - cpu
			took := time.Since(t)
			if k >= from && k < end {
				f.sweep += took
				f.ticks.record(took)
				f.worst = max(f.worst, took)
				f.worstCPU = max(f.worstCPU, cpu)
			}
		}
		if k == end {
			break
		}
		ids = p.due(k, ids[:0])
		slices.Sort(ids) // a tick's heartbeats share one deadline: their order is free
		cmds, digits = cmds[:0], digits[:0]
		for i := 0; i < len(ids); i += steadyBatch {
			args := [][]byte{[]byte("BITPSETEX"), []byte(steadyKey), []byte(ttl)}
			for _, id := range ids[i:min(i+steadyBatch, len(ids))] {
				from := len(digits)
				digits = strconv.AppendUint(digits, uint64(id), 10)
				args = append(args, digits[from:])
			}
			cmds = append(cmds, store.Command{Args: args})
		}
		t := time.Now()
		out.Reset()
		st.Apply(cmds, now, &out)
		if k >= from {
			f.arm += time.Since(t)
		}
	}
	out.Reset()
	st.Read([]store.Command{{Args: [][]byte{[]byte("BITCOUNT"), []byte(steadyKey)}}}, start+int64(end)*steadyTick.Milliseconds(), &out)
	want := p.alive(end, uint64(heartbeatTTL*time.Second/steadyTick))
	if got := string(out.Reply(0)); got != fmt.Sprintf(":%d\r\n", want) {
		return nil, fmt.Errorf("steady expiry: BITCOUNT %s gave %q, want %d", steadyKey, got, want)
	}
	f.window = time.Duration(end-from) * steadyTick
	return f, nil
}

// threadCPU returns the processor time the calling thread has used.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// steadyRows measures the steady state (see steadyExpiry): the CPU the
// ticks take, and how long each holds up the writes queued behind it.
func (s *suite) steadyRows() (CPURow, LatencyRow, error) {
	f, err := s.steadyExpiry()
	if err != nil {
		return CPURow{}, LatencyRow{}, err
	}
	s.logf("steady expiry: ticks took %v (longest %v, at most %v of CPU), heartbeats %v, over %v of log time", f.sweep, f.worst, f.worstCPU, f.arm, f.window)
	what := fmt.Sprintf("steady state: %s online in %s, heartbeats every %v, %ds TTL, %d%% churn (in process)",
		count(s.cfg.ExpiryIDs), count(s.cfg.Space), steadyEvery, heartbeatTTL, steadyChurn)
	cpu := CPURow{Workload: what, Took: f.window, CPU: f.sweep.Seconds() / f.window.Seconds(),
		RefName: "applying the heartbeats", Ref: f.arm.Seconds() / f.window.Seconds(), Limit: targetExpiryCPU}
	ticks := LatencyRow{Workload: "a tick of the " + what, Limit: targetTickPause,
		Presenced: Measurement{P50: f.ticks.quantile(0.5), P99: f.ticks.quantile(0.99)}, Longest: f.worst, LongestCPU: f.worstCPU}
	return cpu, ticks, nil
}
