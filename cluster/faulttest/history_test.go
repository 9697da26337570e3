//go:build unix

package faulttest

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"
)

// outcome is what a client knows of an operation after it returned.
type outcome uint8

const (
	ok      outcome = iota
	failed          // definitely did not happen
	unknown         // may or may not have happened
)

var outcomeNames = [...]string{"ok", "fail", "unknown"}

// record is one operation of the history.
type record struct {
	in        input
	out       output
	call, ret int64 // nanoseconds since the history began
	client    int   // porcupine client: a new one after each unknown outcome
	node      string
	outcome   outcome
	reason    string // why it failed or is unknown
	final     bool   // one of the reads after the faults ended
}

// event is a fault the nemesis injected, for the stats and the
// visualization.
type event struct {
	kind       string // kill, stop, partition
	node       string
	start, end int64
}

// history gathers the records of every client and the nemesis's events.
type history struct {
	begin   time.Time
	clients atomic.Int64

	mu      sync.Mutex
	records []record
	events  []event
	// unexpected holds error replies that are neither TRYAGAIN,
	// CLUSTERDOWN, LOADING nor UNCERTAIN, to writes and to reads: the
	// workload should never provoke one.
	unexpected [2][]string
}

func newHistory() *history { return &history{begin: time.Now()} }

// now returns the history's clock: nanoseconds since it began.
func (h *history) now() int64 { return int64(time.Since(h.begin)) }

// newClient returns a fresh porcupine client ID.
func (h *history) newClient() int { return int(h.clients.Add(1) - 1) }

func (h *history) add(recs []record) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, recs...)
	for _, r := range recs {
		if r.outcome == unknown && strings.HasPrefix(r.reason, "reply ") {
			w := 0
			if r.in.kind.write() {
				w = 1
			}
			h.unexpected[w] = append(h.unexpected[w], fmt.Sprintf("%s through %s at %.3fs: %s",
				describe(r.in, output{unknown: true}), r.node, float64(r.call)/1e9, r.reason))
		}
	}
}

func (h *history) addEvent(e event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
}

// classify sorts a client error as Jepsen does: replies that say the
// write was refused, and failures to connect, mean the operation did not
// happen; anything after the request may have been sent (timeouts, resets,
// UNCERTAIN) leaves the outcome unknown. Error replies the workload should
// never get count as unknown, and are reported.
func classify(err error) (outcome, string) {
	if err == nil || err == redis.Nil {
		return ok, ""
	}
	var re redis.Error
	if errors.As(err, &re) {
		code, _, _ := strings.Cut(err.Error(), " ")
		switch code {
		case "TRYAGAIN", "CLUSTERDOWN", "LOADING":
			return failed, code
		case "UNCERTAIN":
			return unknown, code
		}
		return unknown, "reply " + err.Error()
	}
	var op *net.OpError
	switch {
	case errors.As(err, &op) && op.Op == "dial":
		return failed, "dial"
	case errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrClosed):
		return failed, "pool"
	case errors.Is(err, syscall.ECONNRESET):
		return unknown, "reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return unknown, "eof"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return unknown, "timeout"
	}
	return unknown, err.Error()
}

// operations returns the history for porcupine: operations that failed
// definitely, and reads of unknown outcome, are left out; writes of
// unknown outcome may take effect until the end of the history, except
// INCRs, which the model handles as pending increments from their
// invocation on (see step).
func (h *history) operations() []porcupine.Operation {
	var end int64
	for _, r := range h.records {
		end = max(end, r.ret)
	}
	end++
	var ops []porcupine.Operation
	for _, r := range h.records {
		switch {
		case r.outcome == ok:
			ops = append(ops, porcupine.Operation{ClientId: r.client, Input: r.in, Call: r.call, Output: r.out, Return: r.ret})
		case r.outcome == unknown && r.in.kind == opIncr:
			ops = append(ops, porcupine.Operation{ClientId: r.client, Input: r.in, Call: r.call, Output: output{unknown: true}, Return: r.call})
		case r.outcome == unknown && r.in.kind.write():
			// What a CAS's GET saw is known: its EXEC is not.
			out := output{unknown: true, s: r.out.s, missing: r.out.missing}
			ops = append(ops, porcupine.Operation{ClientId: r.client, Input: r.in, Call: r.call, Output: out, Return: end})
		}
	}
	return ops
}

// annotations marks the nemesis's faults in a visualization.
func (h *history) annotations() []porcupine.Annotation {
	var as []porcupine.Annotation
	for _, e := range h.events {
		as = append(as, porcupine.Annotation{
			Tag: "nemesis", Start: e.start, End: e.end,
			Description: e.kind + " " + e.node, BackgroundColor: "#fdd",
		})
	}
	return as
}

// stats summarizes the history: operations per kind and outcome, the
// reasons of failures and unknown outcomes, the faults, and the time from
// each leader kill to the first write acknowledged that was sent after
// it.
func (h *history) stats() string {
	var b strings.Builder
	var counts [numKinds][3]int
	reasons := map[string]int{}
	for _, r := range h.records {
		if r.final {
			continue
		}
		counts[r.in.kind][r.outcome]++
		if r.outcome != ok {
			reasons[outcomeNames[r.outcome]+" "+r.reason]++
		}
	}
	fmt.Fprintf(&b, "operations (ok/fail/unknown):\n")
	for k := range numKinds {
		c := counts[k]
		fmt.Fprintf(&b, "  %-8s %6d / %5d / %5d\n", opKind(k), c[ok], c[failed], c[unknown])
	}
	keys := make([]string, 0, len(reasons))
	for k := range reasons {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return reasons[keys[i]] > reasons[keys[j]] })
	fmt.Fprintf(&b, "failures and unknown outcomes by reason:\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "  %6d %.100s\n", reasons[k], k)
	}
	perKind := map[string]int{}
	for _, e := range h.events {
		perKind[e.kind]++
	}
	fmt.Fprintf(&b, "nemesis: %d kills, %d stops, %d partitions, %d hand-overs\n",
		perKind["kill"], perKind["stop"], perKind["partition"], perKind["handover"])
	fmt.Fprintf(&b, "failover (leader kill to first acknowledged write sent after it):")
	for _, d := range h.failovers() {
		if d < 0 {
			fmt.Fprintf(&b, " none")
		} else {
			fmt.Fprintf(&b, " %v", d.Round(time.Millisecond))
		}
	}
	b.WriteString("\n")
	return b.String()
}

// failovers returns, per leader kill, the time until the first write sent
// after it was acknowledged, or -1 if none was.
func (h *history) failovers() []time.Duration {
	var out []time.Duration
	for _, e := range h.events {
		if e.kind != "kill" {
			continue
		}
		first := int64(-1)
		for _, r := range h.records {
			if r.outcome == ok && r.in.kind.write() && !r.final && r.call >= e.start && (first < 0 || r.ret < first) {
				first = r.ret
			}
		}
		if first < 0 {
			out = append(out, -1)
		} else {
			out = append(out, time.Duration(first-e.start))
		}
	}
	return out
}

// dump writes the records of key in call order, one a line, for reading
// next to a visualization.
func (h *history) dump(key string) string {
	recs := slices.Clone(h.records)
	slices.SortFunc(recs, func(a, b record) int { return cmp.Compare(a.call, b.call) })
	var b strings.Builder
	for _, r := range recs {
		if r.in.key != key {
			continue
		}
		fmt.Fprintf(&b, "%12.6f %12.6f client %4d %s %-7s %s %s\n", float64(r.call)/1e9, float64(r.ret)/1e9,
			r.client, r.node, outcomeNames[r.outcome], describe(r.in, r.out), r.reason)
	}
	for _, e := range h.events {
		fmt.Fprintf(&b, "nemesis %s %s from %.6f to %.6f\n", e.kind, e.node, float64(e.start)/1e9, float64(e.end)/1e9)
	}
	return b.String()
}
