package store

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// lcsModel is Redis's LCS as Redis computes it: the whole table of
// lengths, then the walk back from its last cell.
func lcsModel(a, b []byte, minMatchLen uint32) ([]byte, []lcsRange) {
	alen, blen := uint32(len(a)), uint32(len(b))
	at := func(i, j uint32) int { return int(i*(blen+1) + j) }
	table := make([]uint32, (alen+1)*(blen+1))
	for i := uint32(1); i <= alen; i++ {
		for j := uint32(1); j <= blen; j++ {
			if a[i-1] == b[j-1] {
				table[at(i, j)] = table[at(i-1, j-1)] + 1
			} else {
				table[at(i, j)] = max(table[at(i-1, j)], table[at(i, j-1)])
			}
		}
	}
	idx := table[at(alen, blen)]
	common := make([]byte, idx)
	var ranges []lcsRange
	r := lcsRange{aStart: alen}
	for i, j := alen, blen; i > 0 && j > 0; {
		emit := false
		if a[i-1] == b[j-1] {
			common[idx-1] = a[i-1]
			if r.aStart == alen {
				r = lcsRange{i - 1, i - 1, j - 1, j - 1}
			} else if r.aStart == i && r.bStart == j {
				r.aStart--
				r.bStart--
			} else {
				emit = true
			}
			if r.aStart == 0 || r.bStart == 0 {
				emit = true
			}
			idx, i, j = idx-1, i-1, j-1
		} else {
			if table[at(i-1, j)] > table[at(i, j-1)] {
				i--
			} else {
				j--
			}
			emit = r.aStart != alen
		}
		if emit {
			if minMatchLen == 0 || r.aEnd-r.aStart+1 >= minMatchLen {
				ranges = append(ranges, r)
			}
			r.aStart = alen
		}
	}
	return common, ranges
}

// TestLCSAgainstModel checks the walk over rows recomputed block by block
// against the whole table, and the two-row length, on random strings of
// small alphabets (long runs and many ties) and of every length around
// the block sizes.
func TestLCSAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	str := func(n, alphabet int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + rng.IntN(alphabet))
		}
		return b
	}
	for range 3000 {
		a, b := str(rng.IntN(90), 1+rng.IntN(4)), str(rng.IntN(90), 1+rng.IntN(4))
		minMatch := uint32(rng.IntN(4))
		wantCommon, wantRanges := lcsModel(a, b, minMatch)
		common, ranges := lcsWalk{minMatchLen: minMatch}.run(newLCSTable(a, b))
		if string(common) != string(wantCommon) || !slices.Equal(ranges, wantRanges) {
			t.Fatalf("LCS(%q, %q) MINMATCHLEN %d = %q %v, want %q %v", a, b, minMatch, common, ranges, wantCommon, wantRanges)
		}
		if n := lcsLen(a, b); n != uint32(len(wantCommon)) {
			t.Fatalf("LCS(%q, %q) LEN = %d, want %d", a, b, n, len(wantCommon))
		}
	}
}
