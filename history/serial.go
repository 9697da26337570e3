package history

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"runtime"
	"sync"
	"unsafe"

	"github.com/RoaringBitmap/roaring/v2"
)

// Portable roaring serialization constants.
const (
	serialCookieNoRun = 12346
	serialCookie      = 12347
	noOffsetThreshold = 4
	arrayMaxSize      = 4096
	bitmapBytes       = 8192
	containerWords    = 1024
)

// serialized reads a roaring bitmap in the portable format in place.
type serialized struct {
	buf     []byte
	size    int    // number of containers
	desc    []byte // size pairs of (key, cardinality-1), uint16 LE
	runs    []byte // run-container bitset, nil without runs
	offsets []byte // size uint32 LE offsets, nil when absent
	start   int    // offset of the first container
}

func parseSerialized(buf []byte) (serialized, error) {
	s := serialized{buf: buf}
	if len(buf) < 8 {
		return s, errCorrupt
	}
	cookie := binary.LittleEndian.Uint32(buf)
	pos := 0
	switch {
	case cookie&0xFFFF == serialCookie:
		s.size = int(cookie>>16) + 1
		pos = 4 + (s.size+7)/8
		if pos > len(buf) {
			return s, errCorrupt
		}
		s.runs = buf[4:pos]
	case cookie == serialCookieNoRun:
		s.size, pos = int(binary.LittleEndian.Uint32(buf[4:])), 8
	default:
		return s, errCorrupt
	}
	if s.size < 0 || s.size > 1<<16 || len(buf) < pos+4*s.size {
		return s, errCorrupt
	}
	s.desc = buf[pos : pos+4*s.size]
	pos += 4 * s.size
	if s.runs == nil || s.size >= noOffsetThreshold {
		if len(buf) < pos+4*s.size {
			return s, errCorrupt
		}
		s.offsets = buf[pos : pos+4*s.size]
		pos += 4 * s.size
	}
	s.start = pos
	return s, nil
}

func (s *serialized) key(i int) uint16 { return binary.LittleEndian.Uint16(s.desc[4*i:]) }

func (s *serialized) card(i int) int { return int(binary.LittleEndian.Uint16(s.desc[4*i+2:])) + 1 }

func (s *serialized) isRun(i int) bool { return s.runs != nil && s.runs[i/8]&(1<<(i%8)) != 0 }

// containerAt returns container i, which starts at offset start.
func (s *serialized) containerAt(i, start int) ([]byte, error) {
	n := 2 * s.card(i)
	switch {
	case s.isRun(i):
		if start < 0 || start+2 > len(s.buf) {
			return nil, errCorrupt
		}
		n = 2 + 4*int(binary.LittleEndian.Uint16(s.buf[start:]))
	case s.card(i) > arrayMaxSize:
		n = bitmapBytes
	}
	if start < 0 || start+n > len(s.buf) {
		return nil, errCorrupt
	}
	return s.buf[start : start+n], nil
}

// container returns container i.
func (s *serialized) container(i int) ([]byte, error) {
	start, err := s.offset(i)
	if err != nil {
		return nil, err
	}
	return s.containerAt(i, start)
}

// offset returns where container i starts.
func (s *serialized) offset(i int) (int, error) {
	if s.offsets != nil {
		return int(binary.LittleEndian.Uint32(s.offsets[4*i:])), nil
	}
	start := s.start
	for j := 0; j < i; j++ {
		c, err := s.containerAt(j, start)
		if err != nil {
			return 0, err
		}
		start += len(c)
	}
	return start, nil
}

// find returns the index of the container with key hi.
func (s *serialized) find(hi uint16) (int, bool) {
	lo, up := 0, s.size
	for lo < up {
		m := int(uint(lo+up) >> 1)
		if s.key(m) < hi {
			lo = m + 1
		} else {
			up = m
		}
	}
	return lo, lo < s.size && s.key(lo) == hi
}

// containsSerialized reports whether x is in the bitmap serialized (portable
// format) in buf, reading only what the answer needs.
func containsSerialized(buf []byte, x uint32) (bool, error) {
	s, err := parseSerialized(buf)
	if err != nil {
		return false, err
	}
	i, found := s.find(uint16(x >> 16))
	if !found {
		return false, nil
	}
	c, err := s.container(i)
	if err != nil {
		return false, err
	}
	return containerContains(c, s.isRun(i), s.card(i), uint16(x)), nil
}

func containerContains(c []byte, run bool, card int, lo uint16) bool {
	switch {
	case run:
		nruns := int(binary.LittleEndian.Uint16(c))
		iv := c[2:]
		l, u := 0, nruns
		for l < u { // first run starting after lo
			m := int(uint(l+u) >> 1)
			if binary.LittleEndian.Uint16(iv[4*m:]) <= lo {
				l = m + 1
			} else {
				u = m
			}
		}
		if l == 0 {
			return false
		}
		s := int(binary.LittleEndian.Uint16(iv[4*(l-1):]))
		return int(lo) <= s+int(binary.LittleEndian.Uint16(iv[4*(l-1)+2:]))
	case card > arrayMaxSize:
		return binary.LittleEndian.Uint64(c[8*(lo/64):])&(1<<(lo%64)) != 0
	}
	l, u := 0, card
	for l < u {
		m := int(uint(l+u) >> 1)
		if binary.LittleEndian.Uint16(c[2*m:]) < lo {
			l = m + 1
		} else {
			u = m
		}
	}
	return l < card && binary.LittleEndian.Uint16(c[2*l:]) == lo
}

// xorInto XORs container c into the 1024 words w.
func xorInto(w []uint64, c []byte, run bool, card int) {
	block := (*[containerWords]uint64)(w)
	switch {
	case run:
		for r, n := 0, int(binary.LittleEndian.Uint16(c)); r < n; r++ {
			start := int(binary.LittleEndian.Uint16(c[2+4*r:]))
			flipRange(w, start, start+int(binary.LittleEndian.Uint16(c[4+4*r:])))
		}
	case card > arrayMaxSize:
		for i := range block {
			block[i] ^= binary.LittleEndian.Uint64(c[8*i:])
		}
	default:
		// c is card little-endian uint16s (containerAt checked its length);
		// viewing it as pairs of bytes spares a bounds check per value.
		for _, v := range unsafe.Slice((*[2]byte)(c), card) {
			x := uint16(v[0]) | uint16(v[1])<<8
			block[x>>6] ^= 1 << (x & 63)
		}
	}
}

// flipRange flips bits first..last (inclusive) of w.
func flipRange(w []uint64, first, last int) {
	for first <= last {
		word, bit := first/64, uint(first%64)
		n := min(64-int(bit), last-first+1)
		mask := ^uint64(0)
		if n < 64 {
			mask = (1<<uint(n) - 1) << bit
		}
		w[word] ^= mask
		first += n
	}
}

// maxDenseBytes bounds the dense buffer xorChain uses; larger bitmaps are
// rebuilt with roaring's own XOR.
var maxDenseBytes = 256 << 20

// payloadsOf returns the serialized bitmaps of links.
func payloadsOf(links []chainLink) [][]byte {
	payloads := make([][]byte, len(links))
	for i, l := range links {
		payloads[i] = l.s.payload
	}
	return payloads
}

// parseAll parses the serialized bitmaps in payloads and returns them with
// the greatest container key any holds (-1 if all are empty).
func parseAll(payloads [][]byte) ([]serialized, int, error) {
	ser := make([]serialized, len(payloads))
	maxKey := -1
	for i, p := range payloads {
		var err error
		if ser[i], err = parseSerialized(p); err != nil {
			return nil, 0, err
		}
		if n := ser[i].size; n > 0 {
			maxKey = max(maxKey, int(ser[i].key(n-1)))
		}
	}
	return ser, maxKey, nil
}

// xorChain returns base (may be nil) XOR every serialized bitmap in
// payloads, or ok false if the dense buffer it needs would exceed
// maxDenseBytes.
func xorChain(base *roaring.Bitmap, payloads [][]byte) (bm *roaring.Bitmap, ok bool, err error) {
	ser, maxKey, err := parseAll(payloads)
	if err != nil {
		return nil, false, err
	}
	if base != nil && !base.IsEmpty() {
		maxKey = max(maxKey, int(base.Maximum()>>16))
	}
	words := (maxKey + 1) * containerWords
	if words*8 > maxDenseBytes {
		return nil, false, nil
	}
	dense := make([]uint64, words)
	if base != nil {
		copy(dense, base.ToDense())
	}
	block := func(_, key int) []uint64 { return dense[key*containerWords : (key+1)*containerWords] }
	if err := xorByKey(ser, 0, maxKey+1, block, nil); err != nil {
		return nil, false, err
	}
	return roaring.FromDense(dense, false), true, nil
}

// countXor counts the integers in [from, to) of the XOR of the serialized
// bitmaps in payloads, container by container in a block per CPU, without
// rebuilding the XOR.
func countXor(payloads [][]byte, from, to uint64) (uint64, error) {
	ser, maxKey, err := parseAll(payloads)
	if err != nil || from >= to || maxKey < 0 {
		return 0, err
	}
	lo, hi := int(min(from>>16, 1<<16)), int(min((to-1)>>16, uint64(maxKey))+1)
	if lo >= hi {
		return 0, nil
	}
	parts := keyParts(lo, hi)
	blocks := make([]uint64, parts*containerWords)
	counts := make([]uint64, parts)
	block := func(part, _ int) []uint64 {
		b := blocks[part*containerWords : (part+1)*containerWords]
		clear(b)
		return b
	}
	done := func(part, key int) {
		base := uint64(key) << 16
		a, b := max(from, base)-base, min(to, base+1<<16)-base
		counts[part] += countRange(blocks[part*containerWords:(part+1)*containerWords], int(a), int(b))
	}
	if err := xorByKey(ser, lo, hi, block, done); err != nil {
		return 0, err
	}
	var n uint64
	for _, c := range counts {
		n += c
	}
	return n, nil
}

// countRange counts the set bits in [a, b) of w.
func countRange(w []uint64, a, b int) uint64 {
	var n int
	for a < b {
		word, bit := a/64, uint(a%64)
		k := min(64-int(bit), b-a)
		mask := ^uint64(0)
		if k < 64 {
			mask = (1<<uint(k) - 1) << bit
		}
		n += bits.OnesCount64(w[word] & mask)
		a += k
	}
	return uint64(n)
}

// keyParts is how many ranges the container keys [lo, hi) are split in for
// xorByKey: one per CPU, of at least 64 keys.
func keyParts(lo, hi int) int {
	return max(1, min(runtime.GOMAXPROCS(0), (hi-lo+63)/64))
}

// xorByKey XORs the containers of ser with keys in [lo, hi) key by key,
// so that each 8 KB block is touched while it is in cache: the keys are
// split in keyParts ranges, walked in parallel; for each key some bitmap
// holds, the containers with that key are XORed into block(part, key) and
// then done(part, key) is called (done may be nil). part is the index of
// the range, so that the callbacks can keep state per goroutine.
func xorByKey(ser []serialized, lo, hi int, block func(part, key int) []uint64, done func(part, key int)) error {
	parts := keyParts(lo, hi)
	consumed := make([][]int, parts)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range parts {
		plo, phi := lo+p*(hi-lo)/parts, lo+(p+1)*(hi-lo)/parts
		wg.Go(func() {
			consumed[p], errs[p] = xorKeys(ser, plo, phi,
				func(key int) []uint64 { return block(p, key) },
				func(key int) {
					if done != nil {
						done(p, key)
					}
				})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for i := range ser {
		n := 0
		for p := range parts {
			n += consumed[p][i]
		}
		if n != ser[i].inRange(lo, hi) {
			return errCorrupt // keys out of order
		}
	}
	return nil
}

// inRange is how many containers of s have keys in [lo, hi).
func (s *serialized) inRange(lo, hi int) int {
	first, last := s.size, s.size
	if lo <= 0xFFFF {
		first, _ = s.find(uint16(lo))
	}
	if hi <= 0xFFFF {
		last, _ = s.find(uint16(hi))
	}
	return last - first
}

// xorKeys XORs, key by key in [lo, hi), the containers of ser with that key
// into block(key) and calls done(key) after them; keys no bitmap holds are
// skipped. It returns how many containers of each it XORed.
func xorKeys(ser []serialized, lo, hi int, block func(key int) []uint64, done func(key int)) ([]int, error) {
	// next container index and its start offset, per payload
	idx, start, first := make([]int, len(ser)), make([]int, len(ser)), make([]int, len(ser))
	for i := range ser {
		idx[i], _ = ser[i].find(uint16(lo))
		first[i] = idx[i]
		if idx[i] == ser[i].size {
			continue
		}
		var err error
		if start[i], err = ser[i].offset(idx[i]); err != nil {
			return nil, err
		}
	}
	for key := lo; key < hi; key++ {
		var w []uint64
		for i := range ser {
			s := &ser[i]
			if idx[i] >= s.size || int(s.key(idx[i])) != key {
				continue
			}
			c, err := s.containerAt(idx[i], start[i])
			if err != nil {
				return nil, err
			}
			if w == nil {
				w = block(key)
			}
			xorInto(w, c, s.isRun(idx[i]), s.card(idx[i]))
			start[i] += len(c)
			idx[i]++
		}
		if w != nil {
			done(key)
		}
	}
	for i := range idx {
		idx[i] -= first[i]
	}
	return idx, nil
}
