//go:build unix

package faulttest

import (
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// op builds a history entry for the model tests.
func op(client int, call, ret int64, in input, out output) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
}

// TestModel checks that the model accepts linearizable histories and
// rejects the anomalies the fault test looks for: a stale read, a lost
// acknowledged write, a write that failed definitely but took effect, a
// compare-and-set (WATCH ... EXEC) that swapped from a value overwritten
// before, a HyperLogLog's stale count or a PFADD that changed it twice.
func TestModel(t *testing.T) {
	incr := input{kind: opIncr, key: "c"}
	get := input{kind: opGet, key: "c"}
	setbit := func(off int64, b int) input { return input{kind: opSetBit, key: "b", offset: off, bit: b} }
	getbit := func(off int64) input { return input{kind: opGetBit, key: "b", offset: off} }
	count := input{kind: opBitCount, key: "b"}
	reg := input{kind: opGet, key: "r"}
	set := func(v string) input { return input{kind: opSet, key: "r", value: v} }
	cas := func(v string) input { return input{kind: opCas, key: "r", value: v} }
	pfadd := func(mask uint64) input { return input{kind: opPFAdd, key: "h", mask: mask} }
	pfcount := input{kind: opPFCount, key: "h"}
	cases := []struct {
		name string
		ok   bool
		ops  []porcupine.Operation
	}{
		{"sequential", true, []porcupine.Operation{
			op(0, 0, 1, incr, output{n: 1}),
			op(0, 2, 3, get, output{s: "1"}),
			op(1, 4, 5, setbit(9, 1), output{n: 0}),
			op(1, 6, 7, getbit(9), output{n: 1}),
			op(1, 8, 9, input{kind: opGet, key: "b"}, output{s: "\x00\x40"}),
			op(1, 10, 11, count, output{n: 1}),
		}},
		{"concurrent reads either side", true, []porcupine.Operation{
			op(0, 0, 10, incr, output{n: 1}),
			op(1, 1, 2, get, output{missing: true}),
			op(2, 3, 4, get, output{s: "1"}),
		}},
		{"stale read", false, []porcupine.Operation{
			op(0, 0, 1, incr, output{n: 1}),
			op(1, 2, 3, get, output{missing: true}),
		}},
		{"lost write", false, []porcupine.Operation{
			op(0, 0, 1, incr, output{n: 1}),
			op(0, 2, 3, incr, output{n: 2}),
			op(1, 4, 5, incr, output{n: 2}),
		}},
		{"unknown write may have happened", true, []porcupine.Operation{
			op(0, 0, 0, incr, output{unknown: true}),
			op(1, 1, 2, incr, output{n: 2}),
			op(1, 3, 4, get, output{s: "2"}),
		}},
		{"unknown increments realized later", true, []porcupine.Operation{
			op(0, 0, 0, incr, output{unknown: true}),
			op(1, 1, 1, incr, output{unknown: true}),
			op(2, 2, 3, get, output{missing: true}),
			op(2, 4, 5, incr, output{n: 2}),
			op(2, 6, 7, get, output{s: "3"}),
		}},
		{"more increments than invoked", false, []porcupine.Operation{
			op(0, 0, 0, incr, output{unknown: true}),
			op(2, 2, 3, get, output{s: "2"}),
		}},
		{"increment seen before invoked", false, []porcupine.Operation{
			op(2, 2, 3, get, output{s: "1"}),
			op(0, 5, 5, incr, output{unknown: true}),
		}},
		{"realized increment cannot be undone", false, []porcupine.Operation{
			op(0, 0, 0, incr, output{unknown: true}),
			op(2, 2, 3, get, output{s: "1"}),
			op(2, 4, 5, get, output{missing: true}),
		}},
		{"unknown write may not have happened", true, []porcupine.Operation{
			op(0, 0, 100, setbit(3, 1), output{unknown: true}),
			op(1, 1, 2, getbit(3), output{n: 0}),
		}},
		{"dropped failed write took effect", false, []porcupine.Operation{
			op(1, 1, 2, getbit(3), output{n: 1}),
		}},
		{"compare and set", true, []porcupine.Operation{
			op(0, 0, 1, set("a"), output{}),
			op(0, 2, 3, cas("b"), output{s: "a", swapped: true}),
			op(1, 4, 5, cas("c"), output{s: "b"}), // failed: another change raced it
			op(1, 6, 7, reg, output{s: "b"}),
		}},
		{"two swaps from one value", false, []porcupine.Operation{
			op(0, 0, 1, set("a"), output{}),
			op(0, 2, 3, cas("b"), output{s: "a", swapped: true}),
			op(1, 4, 5, cas("c"), output{s: "a", swapped: true}),
		}},
		{"a swap from a value the key did not hold", false, []porcupine.Operation{
			op(0, 0, 1, cas("b"), output{s: "a", swapped: true}),
		}},
		{"a failed swap saw a value the key did not hold", false, []porcupine.Operation{
			op(0, 0, 1, set("a"), output{}),
			op(1, 2, 3, cas("b"), output{s: "x"}),
		}},
		{"a swap of unknown outcome, seen or not", true, []porcupine.Operation{
			op(0, 0, 100, cas("b"), output{missing: true, unknown: true}),
			op(1, 1, 2, reg, output{missing: true}),
			op(1, 3, 4, reg, output{s: "b"}),
		}},
		{"a swap of unknown outcome from another value", false, []porcupine.Operation{
			op(0, 0, 1, set("a"), output{}),
			op(0, 2, 100, cas("b"), output{s: "x", unknown: true}),
			op(1, 3, 4, reg, output{s: "b"}),
		}},
		{"HyperLogLog", true, []porcupine.Operation{
			op(0, 0, 1, pfcount, output{n: 0}),
			op(0, 2, 3, pfadd(0b01), output{n: 1}),
			op(0, 4, 5, pfadd(0b01), output{n: 0}),
			op(0, 6, 7, pfcount, output{n: 1}),
			op(1, 8, 9, pfadd(0b11), output{n: 1}),
			op(1, 10, 11, pfcount, output{n: 2}),
		}},
		{"PFADD of an element added before changed the key", false, []porcupine.Operation{
			op(0, 0, 1, pfadd(0b01), output{n: 1}),
			op(1, 2, 3, pfadd(0b01), output{n: 1}),
		}},
		{"stale PFCOUNT", false, []porcupine.Operation{
			op(0, 0, 1, pfadd(0b10), output{n: 1}),
			op(1, 2, 3, pfcount, output{n: 0}),
		}},
		{"PFADD of unknown outcome, counted or not", true, []porcupine.Operation{
			op(0, 0, 100, pfadd(0b100), output{unknown: true}),
			op(1, 1, 2, pfcount, output{n: 0}),
			op(1, 3, 4, pfcount, output{n: 1}),
		}},
		{"bit cleared", false, []porcupine.Operation{
			op(0, 0, 1, setbit(3, 1), output{n: 0}),
			op(0, 2, 3, setbit(3, 0), output{n: 1}),
			op(1, 4, 5, count, output{n: 1}),
		}},
	}
	for _, c := range cases {
		if got := porcupine.CheckOperations(model, c.ops); got != c.ok {
			t.Errorf("%s: linearizable = %v, want %v", c.name, got, c.ok)
		}
	}
}

// TestPubSubCheck checks that the pub/sub check finds a message heard
// twice and one heard after a later one of its publisher's run, and says
// when each was published and heard, beside the faults around them.
func TestPubSubCheck(t *testing.T) {
	h := &history{begin: time.Now().Add(-5 * time.Second)} // messages are heard 5s in
	p := newPubSubCheck(2, h)
	p.acked[1] = []int64{1e9, 2e9, 3e9}
	h.addEvent(event{kind: "stop", node: "n1", start: 1.5e9, end: 2.5e9})
	h.addEvent(event{kind: "kill", node: "n2", start: 60e9, end: 61e9})
	for _, m := range []string{"1:0:0", "1:0:2", "1:1:3", "1:0:1", "1:0:2"} {
		p.record(0, m)
	}
	if len(p.wrong) != 2 {
		t.Fatalf("found %d wrong messages, want 2: %v", len(p.wrong), p.wrong)
	}
	late := p.describe(p.wrong[0])
	for _, want := range []string{`n1 heard "1:0:1" out of order`, "published on n2 (answered at 2.000s)", "after seq 2 (answered at 3.000s", "faults around: stop n1 1.500s-2.500s"} {
		if !strings.Contains(late, want) {
			t.Errorf("%q does not say %q", late, want)
		}
	}
	if strings.Contains(late, "kill") {
		t.Errorf("%q names a fault long after the messages", late)
	}
	if twice := p.describe(p.wrong[1]); !strings.Contains(twice, `"1:0:2" twice`) {
		t.Errorf("%q does not say the message was heard twice", twice)
	}
}
