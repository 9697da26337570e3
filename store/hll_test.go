package store

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// registersOf decodes HyperLogLog s into one byte per register, failing
// the test when s does not cover the registers exactly.
func registersOf(t *testing.T, s []byte) *[hllRegisters]uint8 {
	t.Helper()
	var regs [hllRegisters]uint8
	if !hllMaxInto(&regs, s) {
		t.Fatalf("the opcodes of %x do not cover the registers", s)
	}
	return &regs
}

// TestHLLSetMatchesModel raises random registers of a sparse HyperLogLog,
// which splits and merges its opcodes and in the end turns it dense, and
// checks after each change that it holds the registers of a plain array
// that took the same changes, that its count is the array's, and that it
// reports a change exactly when a register rose.
func TestHLLSetMatchesModel(t *testing.T) {
	for seed := range uint64(8) {
		r := rand.New(rand.NewPCG(seed, 1))
		s := newHLL()
		var model [hllRegisters]uint8
		// Registers near each other, so that VAL opcodes meet; and now
		// and then a value only the dense encoding holds.
		base := r.IntN(hllRegisters - 4096)
		for step := 0; step < 6000; step++ {
			i := base + r.IntN(4096)
			v := uint8(1 + r.IntN(8))
			if r.IntN(500) == 0 {
				v = uint8(sparseValMax + 1 + r.IntN(hllQ+1-sparseValMax))
			}
			var changed int
			s, changed = hllSet(s, i, v)
			if want := v > model[i]; changed != map[bool]int{true: 1, false: 0}[want] {
				t.Fatalf("seed %d step %d: set register %d (%d) to %d: %d", seed, step, i, model[i], v, changed)
			}
			model[i] = max(model[i], v)
			if s[4] == hllEncSparse && len(s) > HLLSparseMaxBytes {
				t.Fatalf("seed %d step %d: sparse string of %d bytes", seed, step, len(s))
			}
			if step%97 != 0 && step != 5999 {
				continue
			}
			if got := registersOf(t, s); *got != model {
				t.Fatalf("seed %d step %d: registers differ from the model", seed, step)
			}
			n, ok := hllCount(s)
			if want := hllCountRegisters(&model); !ok || n != want {
				t.Fatalf("seed %d step %d: count %d, %v; the model's %d", seed, step, n, ok, want)
			}
		}
		if s[4] != hllEncDense || len(s) != hllDenseLen {
			t.Fatalf("seed %d: still sparse after 6000 changes (%d bytes)", seed, len(s))
		}
	}
}

// TestHLLToDenseKeepsCount turns sparse HyperLogLogs of growing
// cardinality dense and checks both count the same.
func TestHLLToDenseKeepsCount(t *testing.T) {
	s := newHLL()
	for i := range 3000 {
		s, _ = hllAdd(s, []byte(strconv.Itoa(i)))
		if s[4] != hllEncSparse || i%250 != 0 {
			continue
		}
		d, ok := hllToDense(s)
		a, okA := hllCount(s)
		b, okB := hllCount(d)
		if !ok || !okA || !okB || a != b || len(d) != hllDenseLen {
			t.Fatalf("%d elements: sparse count %d (%v), dense %d (%v), converted %v", i+1, a, okA, b, okB, ok)
		}
	}
}

// TestHLLEstimateError adds distinct elements and checks the count stays
// within four standard errors (1.04/sqrt(16384), 0.81%) of the truth, and
// that an empty HyperLogLog counts 0 and repeated elements change nothing.
func TestHLLEstimateError(t *testing.T) {
	s := newHLL()
	if n, ok := hllCount(s); !ok || n != 0 {
		t.Fatalf("empty: %d, %v", n, ok)
	}
	checkpoint := 10
	for i := 1; i <= 1_000_000; i++ {
		s, _ = hllAdd(s, []byte("user:"+strconv.Itoa(i)))
		if i != checkpoint {
			continue
		}
		checkpoint *= 10
		n, _ := hllCount(s)
		if err := math.Abs(float64(n)-float64(i)) / float64(i); err > 4*1.04/math.Sqrt(hllRegisters) {
			t.Fatalf("%d elements counted %d (error %.2f%%)", i, n, 100*err)
		}
		before := string(s)
		if _, changed := hllAdd(s, []byte("user:1")); changed != 0 || string(s) != before {
			t.Fatalf("%d elements: adding one again changed the string", i)
		}
	}
}

// endsInHalfAnOpcode reports whether sparse HyperLogLog s ends in the
// first byte of an XZERO opcode. Redis reads the missing byte as 0, the
// string's terminating NUL, but a change there writes over the end, and
// presenced, as Redis, keeps only what fits the length.
func endsInHalfAnOpcode(s []byte) bool {
	p := hllHeaderLen
	for p < len(s) {
		_, _, size := opcode(s, p)
		p += size
	}
	return p > len(s)
}

// FuzzHLL feeds arbitrary bytes behind a HyperLogLog header to every
// operation on HyperLogLog strings: none may panic, a dense string keeps
// its length, a sparse one that reads as valid counts the same as its
// dense form, and adding an element to a valid string raises its register
// alone.
func FuzzHLL(f *testing.F) {
	f.Add(byte(hllEncSparse), []byte{0x7f, 0xff}, []byte("a"))
	f.Add(byte(hllEncSparse), []byte{0x40, 0x63}, []byte("b"))
	f.Add(byte(hllEncSparse), []byte{0x83, 0x87, 0x7f, 0xf8}, []byte("c"))
	f.Add(byte(hllEncSparse), []byte{0x7f}, []byte("d"))
	f.Add(byte(hllEncDense), make([]byte, hllDenseLen-hllHeaderLen), []byte("e"))
	f.Fuzz(func(t *testing.T, enc byte, body, element []byte) {
		s := append([]byte("HYLL\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80"), body...)
		s[4] = enc
		if !isHLL(s) {
			return
		}
		dense := enc == hllEncDense
		var regs [hllRegisters]uint8
		valid := hllMaxInto(&regs, s)
		n, countable := hllCount(s)
		if dense && (!valid || !countable) {
			t.Fatal("a dense string read as corrupted")
		}
		if !dense && valid {
			d, ok := hllToDense(s)
			m, _ := hllCount(d)
			if !ok || !countable || m != n {
				t.Fatalf("valid sparse string: count %d, dense form %d (%v)", n, m, ok)
			}
		}
		out, r := hllAdd(append([]byte(nil), s...), element)
		if dense && (r < 0 || len(out) != hllDenseLen) {
			t.Fatalf("dense string: add gave %d, %d bytes", r, len(out))
		}
		if valid && r >= 0 && !endsInHalfAnOpcode(s) {
			after := registersOf(t, out)
			i, count := hllPattern(element)
			regs[i] = max(regs[i], count)
			if *after != regs {
				t.Fatal("the add changed registers other than the element's")
			}
		}
	})
}

// TestHLLSelfTest runs PFSELFTEST's checks, which must pass.
func TestHLLSelfTest(t *testing.T) {
	if testing.Short() {
		t.Skip("adds 10M elements twice")
	}
	if msg := HLLSelfTest(rand.New(rand.NewPCG(1, 2))); msg != "" {
		t.Fatal(msg)
	}
}
