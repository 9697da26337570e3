package store

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// A HyperLogLog is a Redis string, and presenced keeps Redis's layout of
// it byte for byte, so that GET, DUMP and RESTORE carry it between the
// two servers and PFCOUNT answers the same number for the same string:
//
//   - a 16-byte header: "HYLL", the encoding (0 dense, 1 sparse), three
//     unused bytes and the cached cardinality, a little-endian uint64
//     whose top bit says the cache is stale;
//   - dense: 16,384 registers of 6 bits each, packed from the least
//     significant bit of each byte up (12,288 bytes);
//   - sparse: run-length opcodes over the registers, ZERO (00xxxxxx: 1-64
//     zero registers), XZERO (01xxxxxx yyyyyyyy: 1-16,384 zero registers)
//     and VAL (1vvvvvxx: 1-4 registers of value 1-32). A sparse string
//     turns dense once a register needs a value above 32 or the string
//     would grow past HLLSparseMaxBytes.
//
// An element's register is the low 14 bits of its MurmurHash64A (seed
// 0xadc83b19), and the value it offers is one more than the number of
// zero bits above them, counted from the lowest. The count is Ertl's
// estimator ("New cardinality estimation algorithms for HyperLogLog
// sketches", 2017) over the registers' histogram, as Redis computes it.
const (
	hllP            = 14
	hllQ            = 64 - hllP
	hllRegisters    = 1 << hllP
	hllBits         = 6
	hllHeaderLen    = 16
	hllDenseLen     = hllHeaderLen + (hllRegisters*hllBits+7)/8
	hllEncDense     = 0
	hllEncSparse    = 1
	hllCacheStale   = 0x80 // in the cardinality's last byte
	hllHashSeed     = 0xadc83b19
	hllAlphaInf     = 0.721347520444481703680 // 0.5/ln(2)
	sparseValMax    = 32
	sparseValMaxLen = 4
	sparseZeroMax   = 64
)

// HLLSparseMaxBytes is the longest a sparse HyperLogLog string, header
// included, may grow before it turns dense: Redis's default
// hll-sparse-max-bytes, fixed, since every replica must turn a string
// dense at the same change.
const HLLSparseMaxBytes = 3000

// Error replies of the HyperLogLog commands, as Redis sends them.
const (
	errNotHLL     = "WRONGTYPE Key is not a valid HyperLogLog string value."
	errInvalidHLL = "INVALIDOBJ Corrupted HLL object detected"
)

// isHLL reports whether b has the shape of a HyperLogLog string, the
// checks Redis makes before it reads one: the magic, a known encoding,
// and the exact length of a dense one. A sparse string's opcodes are
// checked as they are read.
func isHLL(b []byte) bool {
	if len(b) < hllHeaderLen || string(b[:4]) != "HYLL" {
		return false
	}
	switch b[4] {
	case hllEncDense:
		return len(b) == hllDenseLen
	case hllEncSparse:
		return true
	}
	return false
}

// newHLL returns an empty HyperLogLog as Redis creates one: sparse, one
// XZERO opcode covering every register, a cached cardinality of 0.
func newHLL() []byte {
	b := make([]byte, hllHeaderLen, hllHeaderLen+2)
	copy(b, "HYLL")
	b[4] = hllEncSparse
	return append(b, xzero(hllRegisters)...)
}

// hllCachedCount returns the cached cardinality of HyperLogLog b, and
// false when the cache is stale.
func hllCachedCount(b []byte) (uint64, bool) {
	if b[15]&hllCacheStale != 0 {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b[8:16]), true
}

// hllSetCachedCount stores n as the cached cardinality of b.
func hllSetCachedCount(b []byte, n uint64) { binary.LittleEndian.PutUint64(b[8:16], n) }

// hllInvalidate marks the cached cardinality of b stale.
func hllInvalidate(b []byte) { b[15] |= hllCacheStale }

// murmur64A is MurmurHash64A, the hash Redis gives HyperLogLog elements.
func murmur64A(key []byte, seed uint64) uint64 {
	const m, r = 0xc6a4a7935bd1e995, 47
	h := seed ^ uint64(len(key))*m
	for ; len(key) >= 8; key = key[8:] {
		k := binary.LittleEndian.Uint64(key)
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
	}
	if len(key) > 0 {
		for i := len(key) - 1; i >= 0; i-- {
			h ^= uint64(key[i]) << (8 * i)
		}
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

// hllPattern returns the register element hashes to and the value it
// offers that register: the length of the run 0...01 above the register
// bits of its hash, at most hllQ+1.
func hllPattern(element []byte) (register int, count uint8) {
	h := murmur64A(element, hllHashSeed)
	register = int(h & (hllRegisters - 1))
	h = h>>hllP | 1<<hllQ
	return register, uint8(bits.TrailingZeros64(h) + 1)
}

// denseGet returns dense register i of regs.
func denseGet(regs []byte, i int) uint8 {
	at, shift := i*hllBits/8, uint(i*hllBits)&7
	v := uint(regs[at]) >> shift
	if shift > 8-hllBits {
		v |= uint(regs[at+1]) << (8 - shift)
	}
	return uint8(v & (1<<hllBits - 1))
}

// denseSet sets dense register i of regs to v.
func denseSet(regs []byte, i int, v uint8) {
	const mask = 1<<hllBits - 1
	at, shift := i*hllBits/8, uint(i*hllBits)&7
	regs[at] = regs[at]&^byte(mask<<shift) | byte(uint(v)<<shift)
	if shift > 8-hllBits {
		regs[at+1] = regs[at+1]&^byte(mask>>(8-shift)) | byte(uint(v)>>(8-shift))
	}
}

// Sparse opcodes.
func isZero(op byte) bool       { return op&0xc0 == 0 }
func isXZero(op byte) bool      { return op&0xc0 == 0x40 }
func isVal(op byte) bool        { return op&0x80 != 0 }
func zeroLen(op byte) int       { return int(op&0x3f) + 1 }
func valValue(op byte) uint8    { return (op>>2)&0x1f + 1 }
func valLen(op byte) int        { return int(op&3) + 1 }
func zeroOp(n int) byte         { return byte(n - 1) }
func valOp(v uint8, n int) byte { return 0x80 | (v-1)<<2 | byte(n-1) }
func xzero(n int) []byte        { return []byte{0x40 | byte((n-1)>>8), byte(n - 1)} }

// xzeroLen is the run length of the XZERO opcode at s[p]. As Redis reads
// it from a string whose terminating NUL follows the last byte, a
// truncated opcode's second byte reads as 0.
func xzeroLen(s []byte, p int) int {
	var low byte
	if p+1 < len(s) {
		low = s[p+1]
	}
	return (int(s[p]&0x3f)<<8 | int(low)) + 1
}

// opcode decodes the sparse opcode at s[p]: how many registers it covers,
// its value, and its length in bytes.
func opcode(s []byte, p int) (span int, v uint8, size int) {
	switch op := s[p]; {
	case isZero(op):
		return zeroLen(op), 0, 1
	case isXZero(op):
		return xzeroLen(s, p), 0, 2
	default:
		return valLen(op), valValue(op), 1
	}
}

// sparseRegisters calls f for each run of registers a sparse
// HyperLogLog's opcodes set to a value above zero, and returns how many
// registers the opcodes cover. It stops, covering too many, at a run
// that would pass the last register, so f only sees valid registers.
func sparseRegisters(s []byte, f func(first, n int, v uint8)) int {
	i := 0
	for p := hllHeaderLen; p < len(s); {
		span, v, size := opcode(s, p)
		if v != 0 {
			if i+span > hllRegisters {
				return hllRegisters + 1
			}
			f(i, span, v)
		}
		i += span
		p += size
	}
	return i
}

// hllGet returns register i of HyperLogLog s, or false when s is a
// sparse HyperLogLog whose opcodes end before it.
func hllGet(s []byte, i int) (uint8, bool) {
	if s[4] == hllEncDense {
		return denseGet(s[hllHeaderLen:], i), true
	}
	first := 0
	for p := hllHeaderLen; p < len(s); {
		span, v, size := opcode(s, p)
		if i < first+span {
			return v, true
		}
		first += span
		p += size
	}
	return 0, false
}

// hllToDense returns sparse HyperLogLog s in the dense encoding, keeping
// its header, or false when its opcodes do not cover every register
// exactly.
func hllToDense(s []byte) ([]byte, bool) {
	d := make([]byte, hllDenseLen)
	copy(d, s[:hllHeaderLen])
	d[4] = hllEncDense
	regs := d[hllHeaderLen:]
	n := sparseRegisters(s, func(first, n int, v uint8) {
		for i := first; i < first+n; i++ {
			denseSet(regs, i, v)
		}
	})
	return d, n == hllRegisters
}

// hllSet raises register i of HyperLogLog s to count if it is lower, as
// Redis's hllDenseSet and hllSparseSet do, and returns the string (a new
// one when it grew or turned dense) and 1 if the register changed, 0 if
// not, or -1 if s is a sparse HyperLogLog too corrupted to change.
func hllSet(s []byte, i int, count uint8) ([]byte, int) {
	if s[4] == hllEncDense {
		regs := s[hllHeaderLen:]
		if denseGet(regs, i) >= count {
			return s, 0
		}
		denseSet(regs, i, count)
		return s, 1
	}
	if count > sparseValMax {
		return hllPromote(s, i, count)
	}
	return sparseSet(s, i, count)
}

// hllPromote turns sparse s dense and sets register i to count there.
func hllPromote(s []byte, i int, count uint8) ([]byte, int) {
	d, ok := hllToDense(s)
	if !ok {
		return s, -1
	}
	denseSet(d[hllHeaderLen:], i, count)
	return d, 1
}

// sparseSet is hllSet on a sparse HyperLogLog whose register i is to
// take count, at most sparseValMax. It edits the opcodes as Redis does,
// so that the same additions leave the same bytes: it splits the opcode
// covering register i into at most three, merges equal VAL opcodes next
// to the change, and turns the string dense when it would otherwise grow
// past HLLSparseMaxBytes.
func sparseSet(s []byte, i int, count uint8) ([]byte, int) {
	// Find the opcode at p covering register i, from register first.
	p, prev, first, span := hllHeaderLen, -1, 0, 0
	size := 0
	for p < len(s) {
		span, _, size = opcode(s, p)
		if i <= first+span-1 {
			break
		}
		prev = p
		p += size
		first += span
	}
	if span == 0 || p >= len(s) {
		return s, -1
	}
	op := s[p]
	switch {
	case isVal(op) && valValue(op) >= count:
		return s, 0
	case isVal(op) && span == 1, isZero(op) && span == 1:
		s[p] = valOp(count, 1)
	default:
		// Split the opcode: the registers before i, i itself, and those
		// after it, in opcodes of the old kind.
		last := first + span - 1
		seq := make([]byte, 0, 5)
		run := func(n int) {
			switch {
			case isVal(op):
				seq = append(seq, valOp(valValue(op), n))
			case n > sparseZeroMax:
				seq = append(seq, xzero(n)...)
			default:
				seq = append(seq, zeroOp(n))
			}
		}
		if i != first {
			run(i - first)
		}
		seq = append(seq, valOp(count, 1))
		if i != last {
			run(last - i)
		}
		grow := len(seq) - size
		if grow > 0 && len(s)+grow > HLLSparseMaxBytes {
			return hllPromote(s, i, count)
		}
		n := len(s) + grow
		if p+size <= len(s) {
			s = slices.Replace(s, p, p+size, seq...)
		} else {
			// A truncated XZERO at the end: Redis writes the new opcodes
			// over it and keeps the length its two bytes would give.
			s = append(s[:p], seq...)
		}
		s = s[:n]
	}
	s = mergeVals(s, max(prev, hllHeaderLen))
	hllInvalidate(s)
	return s, 1
}

// mergeVals merges adjacent VAL opcodes of equal value whose runs fit in
// one, looking at up to five opcodes from s[p], as Redis does after it
// changes a sparse HyperLogLog.
func mergeVals(s []byte, p int) []byte {
	for scan := 5; p < len(s) && scan > 0; scan-- {
		switch op := s[p]; {
		case isXZero(op):
			p += 2
		case isZero(op):
			p++
		case p+1 < len(s) && isVal(s[p+1]) && valValue(op) == valValue(s[p+1]) &&
			valLen(op)+valLen(s[p+1]) <= sparseValMaxLen:
			s[p+1] = valOp(valValue(op), valLen(op)+valLen(s[p+1]))
			s = slices.Delete(s, p, p+1)
		default:
			p++
		}
	}
	return s
}

// hllAdd adds element to HyperLogLog s, returning the string and 1 if
// the register changed, 0 if not, -1 if s is corrupted.
func hllAdd(s []byte, element []byte) ([]byte, int) {
	i, count := hllPattern(element)
	return hllSet(s, i, count)
}

// hllMaxInto raises each of regs (one byte per register) to the
// register's value in HyperLogLog s, and reports false when s is a
// sparse HyperLogLog whose opcodes do not cover the registers exactly.
func hllMaxInto(regs *[hllRegisters]uint8, s []byte) bool {
	if s[4] == hllEncDense {
		dense := s[hllHeaderLen:]
		for i := range regs {
			regs[i] = max(regs[i], denseGet(dense, i))
		}
		return true
	}
	return sparseRegisters(s, func(first, n int, v uint8) {
		for i := first; i < first+n; i++ {
			regs[i] = max(regs[i], v)
		}
	}) == hllRegisters
}

// hllCount estimates the cardinality of HyperLogLog s, and reports false
// when s is a sparse HyperLogLog whose opcodes do not cover the registers
// exactly.
func hllCount(s []byte) (uint64, bool) {
	var histo [64]int
	if s[4] == hllEncDense {
		dense := s[hllHeaderLen:]
		for i := range hllRegisters {
			histo[denseGet(dense, i)]++
		}
		return hllEstimate(&histo), true
	}
	n := 0
	for p := hllHeaderLen; p < len(s); {
		span, v, size := opcode(s, p)
		histo[v] += span
		n += span
		p += size
	}
	return hllEstimate(&histo), n == hllRegisters
}

// hllCountRegisters estimates the cardinality of registers held one a
// byte, the union PFCOUNT of several keys counts.
func hllCountRegisters(regs *[hllRegisters]uint8) uint64 {
	var histo [64]int
	for _, v := range regs {
		histo[v&63]++
	}
	return hllEstimate(&histo)
}

// hllEstimate is Ertl's estimator over the histogram of register values,
// in Redis's order of floating-point operations, each rounded to float64
// on its own (the conversions keep the compiler from fusing them).
func hllEstimate(histo *[64]int) uint64 {
	m := float64(hllRegisters)
	z := m * hllTau(float64(m-float64(histo[hllQ+1]))/m)
	for j := hllQ; j >= 1; j-- {
		z += float64(histo[j])
		z *= 0.5
	}
	z += float64(m * hllSigma(float64(histo[0])/m))
	return uint64(math.Round(float64(float64(hllAlphaInf*m)*m) / z))
}

// hllSigma is σ(x) of Ertl's estimator.
func hllSigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		prev := z
		z += float64(x * y)
		y += y
		if z == prev {
			return z
		}
	}
}

// hllTau is τ(x) of Ertl's estimator.
func hllTau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		prev := z
		y *= 0.5
		d := 1 - x
		z -= float64(float64(d*d) * y)
		if z == prev {
			return z / 3
		}
	}
}

// HLLSelfTest is Redis's PFSELFTEST: it checks that dense registers keep
// what is written to them, then adds 10M elements to a dense and a
// sparse HyperLogLog side by side, checking at each power of ten that
// the sparse one is still sparse while it is small, that both count the
// same, and that the count is within six standard errors. It returns ""
// or the failure, in Redis's words.
func HLLSelfTest(r *rand.Rand) string {
	dense := make([]byte, hllDenseLen)
	regs := dense[hllHeaderLen:]
	var want [hllRegisters]uint8
	for range 1000 {
		for i := range want {
			want[i] = uint8(r.IntN(1 << hllBits))
			denseSet(regs, i, want[i])
		}
		for i, w := range want {
			if got := denseGet(regs, i); got != w {
				return fmt.Sprintf("TESTFAILED Register %d should be %d but is %d", i, w, got)
			}
		}
	}
	clear(regs)
	dense[4] = hllEncDense
	sparse := newHLL()
	relErr := 1.04 / math.Sqrt(hllRegisters)
	seed := r.Uint64()
	var element [8]byte
	for j, checkpoint := uint64(1), uint64(1); j <= 10_000_000; j++ {
		binary.LittleEndian.PutUint64(element[:], j^seed)
		dense, _ = hllAdd(dense, element[:])
		sparse, _ = hllAdd(sparse, element[:])
		if j != checkpoint {
			continue
		}
		if j < HLLSparseMaxBytes/2 && sparse[4] != hllEncSparse {
			return "TESTFAILED sparse encoding not used"
		}
		n, _ := hllCount(dense)
		if m, _ := hllCount(sparse); m != n {
			return "TESTFAILED dense/sparse disagree"
		}
		maxErr := uint64(math.Ceil(relErr * 6 * float64(checkpoint)))
		if j == 10 {
			maxErr = 1 // collisions make the error of 10 often larger
		}
		if absErr := max(n, checkpoint) - min(n, checkpoint); absErr > maxErr {
			return fmt.Sprintf("TESTFAILED Too big error. card:%d abserr:%d", checkpoint, absErr)
		}
		checkpoint *= 10
	}
	return ""
}
