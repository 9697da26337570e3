package main

import (
	"math/bits"
	"math/rand/v2"
)

// An idSource yields the bit offsets (user ids) of successive commands.
type idSource interface {
	next() uint64
}

// randomIDs yields ids drawn uniformly from [0, space), with repeats, as
// heartbeats of random users arrive.
type randomIDs struct {
	rng   *rand.PCG
	space uint64
}

func newRandomIDs(seed, stream, space uint64) *randomIDs {
	return &randomIDs{rng: rand.NewPCG(seed, stream), space: space}
}

// next returns a uniform id below space (multiply-shift; the bias is
// below space/2^64).
func (r *randomIDs) next() uint64 {
	hi, _ := bits.Mul64(r.rng.Uint64(), r.space)
	return hi
}

// permutation is a seeded bijection of [0, space): the first n values of
// at(0), at(1), ... are n distinct ids in random order, which loads a
// key with exactly n ids set without remembering which are taken.
type permutation struct {
	space uint64
	width uint   // bits of the smallest power of two >= space
	mask  uint64 // 2^width - 1
	seed  uint64
}

func newPermutation(space, seed uint64) permutation {
	w := uint(bits.Len64(space - 1))
	return permutation{space: space, width: w, mask: 1<<w - 1, seed: seed}
}

// mix is a bijection of [0, 2^width): each step (xor with a constant,
// multiplication by an odd number, xor with a right shift of itself) is
// invertible modulo 2^width.
func (p permutation) mix(x uint64) uint64 {
	s := p.width/2 + 1
	x = (x ^ p.seed) & p.mask
	x = (x * 0x9e3779b97f4a7c15) & p.mask
	x ^= x >> s
	x = (x * 0xbf58476d1ce4e5b9) & p.mask
	x ^= x >> s
	x = (x * 0x94d049bb133111eb) & p.mask
	return x ^ x>>s
}

// at returns the i-th id, for i < space. Applying mix until the value
// falls below space (cycle walking) keeps it a bijection of [0, space);
// space > 2^(width-1), so this takes under two steps on average.
func (p permutation) at(i uint64) uint64 {
	x := p.mix(i)
	for x >= p.space {
		x = p.mix(x)
	}
	return x
}

// permIDs yields at(from), at(from+1), ... of a permutation.
type permIDs struct {
	perm permutation
	i    uint64
}

func (s *permIDs) next() uint64 {
	v := s.perm.at(s.i)
	s.i++
	return v
}
