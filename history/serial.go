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

// littleEndian is true on machines that store a uint64 as the portable
// format does.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// xorInto XORs container c into the 1024 words w.
func xorInto(w []uint64, c []byte, run bool, card int) {
	block := (*[containerWords]uint64)(w)
	switch {
	case run:
		for r, n := 0, int(binary.LittleEndian.Uint16(c)); r < n; r++ {
			start := int(binary.LittleEndian.Uint16(c[2+4*r:]))
			flipRange(w, start, start+int(binary.LittleEndian.Uint16(c[4+4*r:])))
		}
	case card > arrayMaxSize && littleEndian:
		// The container's words, read in place: the portable format stores
		// them as this machine does (loads of plain data need no alignment).
		src := (*[containerWords]uint64)(unsafe.Pointer(unsafe.SliceData(c)))
		for i := range block {
			block[i] ^= src[i]
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

// countRange counts the set bits in [a, b) of w, a < b.
func countRange(w []uint64, a, b int) uint64 {
	first, last := a/64, (b-1)/64
	head, tail := ^uint64(0)<<(a%64), ^uint64(0)>>(63-(b-1)%64)
	if first == last {
		return uint64(bits.OnesCount64(w[first] & head & tail))
	}
	n := bits.OnesCount64(w[first]&head) + bits.OnesCount64(w[last]&tail)
	for _, x := range w[first+1 : last] {
		n += bits.OnesCount64(x)
	}
	return uint64(n)
}

// xorChain returns base (may be nil) XOR every serialized bitmap in
// payloads, or ok false if the dense buffer it needs would exceed
// maxDenseBytes. The container keys are split in one range per CPU, XORed
// in parallel; each range is walked container key by container key, so
// each 8 KB block is touched while it is in cache.
func xorChain(base *roaring.Bitmap, payloads [][]byte) (bm *roaring.Bitmap, ok bool, err error) {
	ser := make([]serialized, len(payloads))
	maxKey := -1
	if base != nil && !base.IsEmpty() {
		maxKey = int(base.Maximum() >> 16)
	}
	for i, p := range payloads {
		if ser[i], err = parseSerialized(p); err != nil {
			return nil, false, err
		}
		if n := ser[i].size; n > 0 {
			maxKey = max(maxKey, int(ser[i].key(n-1)))
		}
	}
	words := (maxKey + 1) * containerWords
	if words*8 > maxDenseBytes {
		return nil, false, nil
	}
	dense := make([]uint64, words)
	if base != nil {
		copy(dense, base.ToDense())
	}
	parts := max(1, min(runtime.GOMAXPROCS(0), (maxKey+1+63)/64))
	consumed := make([][]int, parts)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*(maxKey+1)/parts, (p+1)*(maxKey+1)/parts
		wg.Go(func() { consumed[p], errs[p] = xorKeys(dense, ser, lo, hi) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, false, err
	}
	for i := range ser {
		n := 0
		for p := range parts {
			n += consumed[p][i]
		}
		if n != ser[i].size {
			return nil, false, errCorrupt // keys out of order
		}
	}
	return roaring.FromDense(dense, false), true, nil
}

// xorKeys XORs into dense the containers of ser with keys in [lo, hi), and
// returns how many containers of each it XORed.
func xorKeys(dense []uint64, ser []serialized, lo, hi int) ([]int, error) {
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
		w := dense[key*containerWords : (key+1)*containerWords]
		for i := range ser {
			s := &ser[i]
			if idx[i] >= s.size || int(s.key(idx[i])) != key {
				continue
			}
			c, err := s.containerAt(idx[i], start[i])
			if err != nil {
				return nil, err
			}
			xorInto(w, c, s.isRun(idx[i]), s.card(idx[i]))
			start[i] += len(c)
			idx[i]++
		}
	}
	for i := range idx {
		idx[i] -= first[i]
	}
	return idx, nil
}
