package store

import "math/bits"

// Sizes of Redis's structures on a 64-bit build, which MEMORY USAGE adds
// up.
const (
	robjSize      = 16 // the object header of a value
	dictEntrySize = 24 // the hash table entry of a key
)

// MemoryUsage estimates the bytes the key uses at time now (unix ms) the
// way Redis's MEMORY USAGE counts them: the key's string, its table entry
// and its value, rounded to the allocator's size classes. A bitmap value
// counts its roaring size and the deadlines of its armed bits. It reports false when the key does not exist.
func (s *Store) MemoryUsage(dbIndex int, key []byte, now int64) (int64, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if dbIndex < 0 || dbIndex >= NumDBs {
		return 0, false
	}
	c := ctx{s: s, now: now}
	e := c.getIn(s.mu.dbs[dbIndex], key)
	if e == nil {
		return 0, false
	}
	return sdsSize(int64(len(e.key))) + dictEntrySize + e.v.memoryUsage(), true
}

// memoryUsage is the size of the value as Redis's objectComputeSize
// estimates a string of the same encoding.
func (v *value) memoryUsage() int64 {
	switch v.encoding() {
	case "roaring":
		return robjSize + int64(v.bm.GetSizeInBytes()) + v.t.memoryUsage()
	case "int":
		return robjSize
	case "embstr":
		return mallocSize(robjSize + 3 + int64(len(v.raw)) + 1)
	}
	return robjSize + sdsSize(int64(cap(v.raw)))
}

// sdsSize is the allocation of a Redis dynamic string holding n bytes:
// a header that grows with n, the bytes and a terminating NUL.
func sdsSize(n int64) int64 {
	var hdr int64
	switch {
	case n < 32 && n > 0:
		hdr = 1
	case n < 1<<8:
		hdr = 3
	case n < 1<<16:
		hdr = 5
	case n < 1<<32:
		hdr = 9
	default:
		hdr = 17
	}
	return mallocSize(hdr + n + 1)
}

// mallocSize rounds n up to jemalloc's size class: multiples of 16 up to
// 128 bytes, then four classes per doubling.
func mallocSize(n int64) int64 {
	if n <= 8 {
		return 8
	}
	if n <= 128 {
		return (n + 15) &^ 15
	}
	step := int64(1) << (bits.Len64(uint64(n-1)) - 3)
	return (n + step - 1) &^ (step - 1)
}
