//go:build unix

package faulttest

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/cespare/xxhash/v2"
)

// opKind is a client command of the workload.
type opKind uint8

const (
	opGet opKind = iota
	opSet
	opIncr
	opSetBit
	opGetBit
	opBitCount
	opCas
	opPFAdd
	opPFCount
	numKinds
)

var kindNames = [numKinds]string{"GET", "SET", "INCR", "SETBIT", "GETBIT", "BITCOUNT", "CAS", "PFADD", "PFCOUNT"}

func (k opKind) String() string { return kindNames[k] }

// write reports whether k changes the key. PFCOUNT, which caches the
// count it computes in the key, changes nothing the model sees.
func (k opKind) write() bool {
	return k == opSet || k == opIncr || k == opSetBit || k == opCas || k == opPFAdd
}

// input is an operation as a client invoked it.
type input struct {
	kind   opKind
	key    string
	offset int64  // SETBIT, GETBIT
	bit    int    // SETBIT
	value  string // SET, CAS
	// elems are PFADD's elements, taken from the HyperLogLog universe
	// (see hllUniverse), and mask has the bit of each one's place in it.
	elems []string
	mask  uint64
}

// output is an operation's result.
type output struct {
	// unknown marks a write whose outcome is unknown: it may or may not
	// have happened, and any result is accepted.
	unknown bool
	n       int64  // INCR's new value, SETBIT's old bit, GETBIT, BITCOUNT, PFADD, PFCOUNT
	s       string // GET, and the GET of CAS
	missing bool   // GET of a missing key
	swapped bool   // CAS's EXEC ran its SET
}

// state is a key's value: a Redis string, as every command of the
// workload but the HyperLogLog ones sees it (bit i of the string is bit
// 7-i%8 of byte i/8), or the set of elements a HyperLogLog was given.
type state struct {
	v      string
	elems  uint64 // bits of the HyperLogLog universe
	exists bool
	// pending counts the INCRs of unknown outcome that were invoked and
	// may still take effect (see step).
	pending int64
}

// model is the sequential specification of one key; histories are
// partitioned by key.
var model = porcupine.Model{
	Partition: partitionByKey,
	Init:      func() any { return state{} },
	Step:      func(st, in, out any) (bool, any) { return step(st.(state), in.(input), out.(output)) },
	Hash: func(st any) uint64 {
		s := st.(state)
		if !s.exists {
			return 0
		}
		return xxhash.Sum64String(s.v) ^ s.elems*0x9e3779b97f4a7c15 ^ uint64(s.pending)<<1 | 1
	},
	DescribeOperation: func(in, out any) string { return describe(in.(input), out.(output)) },
	DescribeState: func(st any) string {
		switch s := st.(state); {
		case s.exists && s.elems != 0:
			return fmt.Sprintf("elements %b", s.elems)
		case s.exists:
			return strconv.Quote(s.v)
		}
		return "(nil)"
	},
}

// step applies in to s and reports whether out is what the command
// replies in state s.
//
// INCRs of unknown outcome are the exception. Left open to the end of the
// history, a few dozen of them make the checker's search explode: each
// can be placed anywhere, and porcupine tells apart placements that
// differ only in which of the identical increments took effect. Since
// increments commute and a counter's reads see only their number, such an
// INCR is instead recorded as an instant at its invocation that adds a
// pending increment, and each later read or INCR reply may realize any
// number of the pending ones (they took effect in between). That accepts
// exactly the histories the open-ended operations would.
func step(s state, in input, out output) (bool, state) {
	switch in.kind {
	case opGet:
		if s.pending > 0 && !out.missing {
			return realize(s, out.s, 0)
		}
		return out.missing == !s.exists && out.s == s.v, s
	case opSet:
		return true, state{v: in.value, exists: true}
	case opIncr:
		if out.unknown {
			s.pending++
			return true, s
		}
		return realize(s, strconv.FormatInt(out.n, 10), 1)
	case opSetBit:
		old := bitAt(s.v, in.offset)
		return out.unknown || out.n == old, state{v: setBit(s.v, in.offset, in.bit), exists: true}
	case opGetBit:
		return out.n == bitAt(s.v, in.offset), s
	case opBitCount:
		return out.n == popCount(s.v), s
	case opPFAdd:
		added := state{elems: s.elems | in.mask, exists: true}
		changed := int64(0)
		if !s.exists || added.elems != s.elems {
			changed = 1
		}
		return out.unknown || out.n == changed, added
	case opPFCount:
		return out.n == int64(bits.OnesCount64(s.elems)), s
	case opCas:
		// WATCH, GET, MULTI, SET, EXEC: the SET runs only if nothing
		// changed the key since the WATCH, so when it runs the key
		// still holds what the GET saw; when EXEC fails the
		// operation was that GET.
		seen := out.missing == !s.exists && out.s == s.v
		switch {
		case out.unknown && seen, out.swapped:
			return seen, state{v: in.value, exists: true}
		default:
			return seen || out.unknown, s
		}
	}
	return false, s
}

// realize reports whether counter state s can reach the value got by
// incrs acknowledged increments and some of its pending ones, and
// returns the state with got as its value.
func realize(s state, got string, incrs int64) (bool, state) {
	var cur int64
	if s.exists {
		var err error
		if cur, err = strconv.ParseInt(s.v, 10, 64); err != nil {
			return false, s
		}
	}
	n, err := strconv.ParseInt(got, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != got {
		return false, s
	}
	used := n - cur - incrs
	if used < 0 || used > s.pending || !s.exists && n == 0 {
		return false, s
	}
	return true, state{v: got, exists: true, pending: s.pending - used}
}

// bitAt returns bit i of v, 0 past its end.
func bitAt(v string, i int64) int64 {
	if i/8 >= int64(len(v)) {
		return 0
	}
	return int64(v[i/8]>>(7-i%8)) & 1
}

// setBit returns v with bit i set to b, grown with zero bytes to hold it.
func setBit(v string, i int64, b int) string {
	buf := []byte(v)
	for int64(len(buf)) <= i/8 {
		buf = append(buf, 0)
	}
	mask := byte(0x80) >> (i % 8)
	if b == 1 {
		buf[i/8] |= mask
	} else {
		buf[i/8] &^= mask
	}
	return string(buf)
}

func popCount(v string) int64 {
	n := 0
	for i := range len(v) {
		n += bits.OnesCount8(v[i])
	}
	return int64(n)
}

func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	var order []string
	byKey := map[string][]porcupine.Operation{}
	for _, op := range history {
		k := op.Input.(input).key
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], op)
	}
	parts := make([][]porcupine.Operation, len(order))
	for i, k := range order {
		parts[i] = byKey[k]
	}
	return parts
}

func describe(in input, out output) string {
	var call string
	switch in.kind {
	case opSet:
		call = fmt.Sprintf("SET %s %s", in.key, in.value)
	case opSetBit:
		call = fmt.Sprintf("SETBIT %s %d %d", in.key, in.offset, in.bit)
	case opGetBit:
		call = fmt.Sprintf("GETBIT %s %d", in.key, in.offset)
	case opPFAdd:
		call = fmt.Sprintf("PFADD %s %s", in.key, strings.Join(in.elems, " "))
	case opCas:
		seen := strconv.Quote(out.s)
		if out.missing {
			seen = "(nil)"
		}
		call = fmt.Sprintf("CAS %s %s -> %s", in.key, in.value, seen)
	default:
		call = in.kind.String() + " " + in.key
	}
	switch {
	case out.unknown:
		return call + " -> ?"
	case in.kind == opSet:
		return call + " -> OK"
	case in.kind == opCas:
		return call + " -> " + strconv.FormatBool(out.swapped)
	case in.kind == opGet && out.missing:
		return call + " -> (nil)"
	case in.kind == opGet:
		return call + " -> " + strconv.Quote(out.s)
	}
	return fmt.Sprintf("%s -> %d", call, out.n)
}
