package store

import (
	"math"
	"slices"

	"github.com/presenced/presenced/proto"
)

// Error replies of LCS, word for word as Redis sends them.
const (
	errLCSLenAndIdx = "ERR If you want both the length and indexes, please just use IDX."
	errLCSMemory    = "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
)

// lcsMaxTable is the most memory Redis lets LCS's table of uint32 lengths
// take: proto-max-bulk-len, at its default.
const lcsMaxTable = proto.DefaultMaxBulkLen

// lcs is Redis 7's LCS: the longest common subsequence of two strings
// (missing keys are empty), its length (LEN), or the ranges of its
// matching runs (IDX, MINMATCHLEN, WITHMATCHLEN). It refuses the strings
// whose table of lengths Redis would refuse, but keeps only about the
// square root of that table's rows, recomputing the others as it walks
// back through them, and with LEN only two rows.
func lcs(c *ctx, args [][]byte) {
	// Redis looks both keys up before it reads the options.
	ea, eb := c.lookup(args[1]), c.lookup(args[2])
	var getLen, getIdx, withMatchLen bool
	minMatchLen := int64(0)
	for j := 3; j < len(args); j++ {
		switch opt := args[j]; {
		case isOption(opt, "idx"):
			getIdx = true
		case isOption(opt, "len"):
			getLen = true
		case isOption(opt, "withmatchlen"):
			withMatchLen = true
		case isOption(opt, "minmatchlen") && j+1 < len(args):
			n, ok := proto.ParseInt(args[j+1])
			if !ok {
				c.w.Error(proto.ErrNotInteger)
				return
			}
			minMatchLen = max(n, 0)
			j++
		default:
			c.w.Error(proto.ErrSyntax)
			return
		}
	}
	if getLen && getIdx {
		c.w.Error(errLCSLenAndIdx)
		return
	}
	alen, blen := valueLen(ea), valueLen(eb)
	if cells := uint64(alen+1) * uint64(blen+1); cells > math.MaxUint64/4 || cells*4 > uint64(lcsMaxTable) {
		c.w.Error(errLCSMemory)
		return
	}
	a, b := valueBytes(ea), valueBytes(eb)
	if getLen {
		c.w.Int(int64(lcsLen(a, b)))
		return
	}
	t := newLCSTable(a, b)
	walk := lcsWalk{minMatchLen: uint32(min(minMatchLen, math.MaxUint32))}
	common, ranges := walk.run(t)
	if !getIdx {
		c.w.Bulk(common)
		return
	}
	c.w.Map(2)
	c.w.Bulk([]byte("matches"))
	c.w.Array(len(ranges))
	for _, r := range ranges {
		if withMatchLen {
			c.w.Array(3)
		} else {
			c.w.Array(2)
		}
		c.w.Array(2)
		c.w.Int(int64(r.aStart))
		c.w.Int(int64(r.aEnd))
		c.w.Array(2)
		c.w.Int(int64(r.bStart))
		c.w.Int(int64(r.bEnd))
		if withMatchLen {
			c.w.Int(int64(r.aEnd - r.aStart + 1))
		}
	}
	c.w.Bulk([]byte("len"))
	c.w.Int(int64(len(common)))
}

// valueLen and valueBytes read an entry's string, "" for none.
func valueLen(e *entry) int64 {
	if e == nil {
		return 0
	}
	return e.v.length()
}

func valueBytes(e *entry) []byte {
	if e == nil {
		return nil
	}
	return e.v.bytes()
}

// lcsNextRow sets cur to row i of the table of LCS lengths given prev,
// row i-1: cur[j] is the length of the LCS of a[:i] and b[:j].
func lcsNextRow(ai byte, b []byte, prev, cur []uint32) {
	cur[0] = 0
	for j, bj := range b {
		if ai == bj {
			cur[j+1] = prev[j] + 1
		} else {
			cur[j+1] = max(prev[j+1], cur[j])
		}
	}
}

// lcsLen is the length of the LCS of a and b, computed with two rows.
func lcsLen(a, b []byte) uint32 {
	prev, cur := make([]uint32, len(b)+1), make([]uint32, len(b)+1)
	for _, ai := range a {
		lcsNextRow(ai, b, prev, cur)
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// lcsTable serves the rows of the table of LCS lengths of a and b, as a
// walk back from the last row asks for them: it keeps every k-th row
// from one pass over the table, and recomputes the k rows of one block
// from its first kept row when the walk enters the block.
type lcsTable struct {
	a, b  []byte
	k     int
	kept  [][]uint32 // row i*k at i
	block [][]uint32 // rows first to first+k
	first int        // -1 before any block
}

// newLCSTable computes the table of a and b row by row, keeping every
// k-th row, k being about the square root of the rows.
func newLCSTable(a, b []byte) *lcsTable {
	k := max(1, int(math.Sqrt(float64(len(a)+1))))
	t := &lcsTable{a: a, b: b, k: k, first: -1}
	prev, cur := make([]uint32, len(b)+1), make([]uint32, len(b)+1)
	t.kept = append(t.kept, slices.Clone(prev))
	for i, ai := range a {
		lcsNextRow(ai, b, prev, cur)
		if (i+1)%k == 0 {
			t.kept = append(t.kept, slices.Clone(cur))
		}
		prev, cur = cur, prev
	}
	return t
}

// rows returns rows i-1 and i (1 <= i <= len(a)), recomputing the block
// of k rows that holds them unless it is the one at hand: a walk that
// moves i down computes each block once.
func (t *lcsTable) rows(i int) (up, cur []uint32) {
	start := (i - 1) / t.k * t.k
	if t.first != start {
		t.fill(start)
	}
	return t.block[i-1-start], t.block[i-start]
}

// fill recomputes the rows start to start+k (at most len(a)) from the
// kept row start.
func (t *lcsTable) fill(start int) {
	n := min(t.k, len(t.a)-start) + 1
	if t.block == nil {
		t.block = make([][]uint32, t.k+1)
		for r := 1; r <= t.k; r++ {
			t.block[r] = make([]uint32, len(t.b)+1)
		}
	}
	t.block[0] = t.kept[start/t.k]
	for r := 1; r < n; r++ {
		lcsNextRow(t.a[start+r-1], t.b, t.block[r-1], t.block[r])
	}
	t.first = start
}

// lcsRange is a run of matching bytes, a[aStart..aEnd] and
// b[bStart..bEnd], both ends included.
type lcsRange struct {
	aStart, aEnd, bStart, bEnd uint32
}

// lcsWalk walks back through the table from its last cell as Redis does,
// collecting the LCS and its runs of at least minMatchLen bytes (any, for
// 0) from the last to the first.
type lcsWalk struct {
	minMatchLen uint32
}

func (w lcsWalk) run(t *lcsTable) ([]byte, []lcsRange) {
	alen, blen := uint32(len(t.a)), uint32(len(t.b))
	if alen == 0 || blen == 0 {
		return []byte{}, nil
	}
	_, last := t.rows(int(alen))
	idx := last[blen]
	common := make([]byte, idx)
	var ranges []lcsRange
	// r.aStart == alen: no run open.
	r := lcsRange{aStart: alen}
	for i, j := alen, blen; i > 0 && j > 0; {
		emit := false
		if t.a[i-1] == t.b[j-1] {
			common[idx-1] = t.a[i-1]
			switch {
			case r.aStart == alen:
				r = lcsRange{aStart: i - 1, aEnd: i - 1, bStart: j - 1, bEnd: j - 1}
			case r.aStart == i && r.bStart == j:
				r.aStart--
				r.bStart--
			default:
				emit = true
			}
			if r.aStart == 0 || r.bStart == 0 {
				emit = true
			}
			idx--
			i--
			j--
		} else {
			up, cur := t.rows(int(i))
			if up[j] > cur[j-1] {
				i--
			} else {
				j--
			}
			emit = r.aStart != alen
		}
		if emit {
			if n := r.aEnd - r.aStart + 1; w.minMatchLen == 0 || n >= w.minMatchLen {
				ranges = append(ranges, r)
			}
			r.aStart = alen
		}
	}
	return common, ranges
}
