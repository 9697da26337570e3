package store

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/presenced/presenced/proto"
)

// bitscanPage runs one BITSCAN and parses its reply into the next cursor
// and the offsets. Cursor and offsets are decimal bulk strings, so the
// reply's lines are, in order: *2, $len, cursor, *n, then $len and an
// offset n times.
func bitscanPage(t *testing.T, s *Store, args ...string) (string, []int64) {
	t.Helper()
	raw := presRun(s, args...)
	lines := strings.Split(strings.TrimSuffix(raw, "\r\n"), "\r\n")
	bad := func() { t.Fatalf("%q: not a scan page: %q", args, clipText(raw)) }
	if len(lines) < 4 || lines[0] != "*2" || lines[1] != "$"+strconv.Itoa(len(lines[2])) {
		bad()
	}
	n, err := strconv.Atoi(strings.TrimPrefix(lines[3], "*"))
	if err != nil || len(lines) != 4+2*n {
		bad()
	}
	offs := make([]int64, n)
	for i := range offs {
		size, item := lines[4+2*i], lines[5+2*i]
		if offs[i], err = strconv.ParseInt(item, 10, 64); err != nil || size != "$"+strconv.Itoa(len(item)) {
			bad()
		}
	}
	return lines[2], offs
}

// TestBitscanModel scans random strings, raw and bitmap, with random
// COUNTs and requires the pages to list the set bits of the byte model,
// ascending, each once, no page longer than its COUNT.
func TestBitscanModel(t *testing.T) {
	rnd := rand.New(rand.NewSource(5))
	s := New()
	for range 200 {
		b := randomBits(rnd)
		putString(s, rnd, "k", b)
		var want []int64
		for i := range int64(len(b)) * 8 {
			if modelBit(b, i) == 1 {
				want = append(want, i)
			}
		}
		var got []int64
		cursor := "0"
		for pages := 0; ; pages++ {
			count := 1 + rnd.Intn(3000)
			args := []string{"BITSCAN", "k", cursor, "COUNT", strconv.Itoa(count)}
			if rnd.Intn(4) == 0 {
				args, count = args[:3], scanDefaultCount
			}
			next, offs := bitscanPage(t, s, args...)
			if len(offs) > count {
				t.Fatalf("%q returned %d offsets", args, len(offs))
			}
			got = append(got, offs...)
			if cursor = next; cursor == "0" || pages > len(want) {
				break
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("scan of %d bytes: got %d offsets, want %d", len(b), len(got), len(want))
		}
	}
}

// TestBitscanWhileChanging changes bits between the pages of a scan: the
// bits set throughout must come back exactly once, and nothing else but
// bits that were set at some point.
func TestBitscanWhileChanging(t *testing.T) {
	rnd := rand.New(rand.NewSource(9))
	for range 50 {
		s := New()
		stable, volatile := map[int64]bool{}, map[int64]bool{}
		for range 300 {
			off := rnd.Int63n(300_000)
			if rnd.Intn(2) == 0 {
				stable[off] = true
				delete(volatile, off)
			} else if !stable[off] {
				volatile[off] = true
			}
		}
		for off := range stable {
			presRun(s, "SETBIT", "k", strconv.FormatInt(off, 10), "1")
		}
		var flipping []int64
		for off := range volatile {
			flipping = append(flipping, off)
		}
		seen := map[int64]int{}
		cursor, last := "0", int64(-1)
		for {
			next, offs := bitscanPage(t, s, "BITSCAN", "k", cursor, "COUNT", strconv.Itoa(1+rnd.Intn(20)))
			for _, off := range offs {
				if off <= last {
					t.Fatalf("offset %d after %d", off, last)
				}
				last = off
				seen[off]++
				if !stable[off] && !volatile[off] {
					t.Fatalf("offset %d was never set", off)
				}
			}
			if cursor = next; cursor == "0" {
				break
			}
			for range 5 {
				off := flipping[rnd.Intn(len(flipping))]
				presRun(s, "SETBIT", "k", strconv.FormatInt(off, 10), strconv.Itoa(rnd.Intn(2)))
			}
		}
		for off := range stable {
			if seen[off] != 1 {
				t.Fatalf("stable offset %d seen %d times", off, seen[off])
			}
		}
	}
}

// TestBitscanCases checks the replies' form and SSCAN's checks, in
// SSCAN's order: the cursor, then the key, then the options.
func TestBitscanCases(t *testing.T) {
	s := bitmapFixture(t)
	empty := rArr(rBulk("0"), rArr())
	for _, st := range []bmStep{
		{[]string{"BITSCAN", "s", "0"}, rArr(rBulk("10"), rBulks("0", "1", "2", "3", "4", "5", "6", "7", "8", "9"))},
		{[]string{"BITSCAN", "s", "0", "COUNT", "3"}, rArr(rBulk("3"), rBulks("0", "1", "2"))},
		{[]string{"BITSCAN", "s", "10", "count", "1", "COUNT", "5"}, rArr(rBulk("0"), rBulks("10", "11"))},
		{[]string{"BITSCAN", "s", "+9", "COUNT", "1"}, rArr(rBulk("10"), rBulks("9"))},
		{[]string{"BITSCAN", "raw", "40", "COUNT", "100"}, rArr(rBulk("0"), rBulks("41", "42", "43", "46"))},
		{[]string{"BITSCAN", "bm", "", "COUNT", "2"}, rArr(rBulk("5"), rBulks("1", "2"))},
		{[]string{"BITSCAN", "bm", "47"}, empty},
		{[]string{"BITSCAN", "bm", "4294967296"}, empty},
		{[]string{"BITSCAN", "bm", "-1"}, empty},
		{[]string{"BITSCAN", "z", "0"}, empty},
		{[]string{"BITSCAN", "empty", "0"}, empty},
		{[]string{"BITSCAN", "nokey", "0", "COUNT", "0"}, empty},
		{[]string{"BITSCAN", "nokey", "0", "MATCH", "*"}, empty},
		{[]string{"BITSCAN", "nokey", "abc"}, rErr(proto.ErrCursor)},
		{[]string{"BITSCAN", "bm", " 1"}, rErr(proto.ErrCursor)},
		{[]string{"BITSCAN", "bm", "18446744073709551616"}, rErr(proto.ErrCursor)},
		{[]string{"BITSCAN", "bm", "0", "COUNT", "0"}, rErr(proto.ErrSyntax)},
		{[]string{"BITSCAN", "bm", "0", "COUNT", "-3"}, rErr(proto.ErrSyntax)},
		{[]string{"BITSCAN", "bm", "0", "COUNT", "1.5"}, rErr(proto.ErrNotInteger)},
		{[]string{"BITSCAN", "bm", "0", "COUNT"}, rErr(proto.ErrSyntax)},
		{[]string{"BITSCAN", "bm", "0", "MATCH", "*"}, rErr(proto.ErrSyntax)},
		{[]string{"BITSCAN", "bm", "0", "TYPE", "string"}, rErr(proto.ErrSyntax)},
		{[]string{"BITSCAN", "bm", "0", "COUNT", "2", "FOO", "1"}, rErr(proto.ErrSyntax)},
		{[]string{"BITSCAN", "bm"}, rErr("ERR wrong number of arguments for 'bitscan' command")},
	} {
		if got := presRun(s, st.args...); got != st.want {
			t.Errorf("%q: got %q, want %q", st.args, got, st.want)
		}
	}
}

// TestBitscanLarge scans near the 2^32 limit and across a dense run.
func TestBitscanLarge(t *testing.T) {
	s := New()
	putBitmap(s, "tail", 1<<29, 1<<32-3, 1<<32-1)
	putBitmap(s, "dense", 1<<20, 0, 1<<23)
	if got, want := presRun(s, "BITSCAN", "tail", "0"), rArr(rBulk("0"), rBulks("4294967293", "4294967294")); got != want {
		t.Errorf("tail: got %q, want %q", got, want)
	}
	if got, want := presRun(s, "BITSCAN", "tail", "4294967294", "COUNT", "1"), rArr(rBulk("0"), rBulks("4294967294")); got != want {
		t.Errorf("tail from 4294967294: got %q, want %q", got, want)
	}
	next, offs := bitscanPage(t, s, "BITSCAN", "dense", "1000", "COUNT", "100000")
	if next != "101000" || len(offs) != 100000 || offs[0] != 1000 || offs[99999] != 100999 {
		t.Errorf("dense: next %s, %d offsets", next, len(offs))
	}
}
