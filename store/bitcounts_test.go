package store

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestBitCounts checks BitCounts against KEYS and BITCOUNT in every
// database, over random bitmaps and strings, some of whose TTLs have
// passed.
func TestBitCounts(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 11))
	s := New()
	const dbs = 3
	now := int64(testNow)
	run := func(db int, args ...string) string {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		return execAt(s, now, db, b...)
	}
	created := make([]map[string]bool, dbs)
	for db := range dbs {
		created[db] = map[string]bool{}
		for range 40 {
			var key string
			switch rnd.IntN(3) {
			case 0:
				key = "online:bitmap:" + strconv.Itoa(rnd.IntN(8))
				run(db, "SETBIT", key, strconv.Itoa(rnd.IntN(1<<20)), "1")
			case 1:
				key = "session:" + strconv.Itoa(rnd.IntN(8))
				run(db, "SET", key, strconv.Itoa(rnd.IntN(1<<30)))
			default:
				key = "other:" + strconv.Itoa(rnd.IntN(8))
				run(db, "SETBIT", key, strconv.Itoa(rnd.IntN(64)), "1")
			}
			created[db][key] = true
			if rnd.IntN(6) == 0 {
				run(db, "PEXPIRE", key, strconv.Itoa(1+rnd.IntN(20)))
			}
		}
	}
	now += 10
	run(0, "SET", "clock", "advanced") // the store's time moves to now

	patterns := []string{"online:*", "session:1", "session:1", "s?ssion:[23]", "session:7", "nosuch"}
	integer := func(reply string) int64 {
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(reply, ":"), "\r\n"), 10, 64)
		if err != nil {
			t.Fatalf("not an integer reply: %q", reply)
		}
		return n
	}
	var want []KeyBits
	for db := range dbs {
		for _, k := range slices.Sorted(maps.Keys(created[db])) {
			if integer(run(db, "EXISTS", k)) == 1 && slices.ContainsFunc(patterns, func(p string) bool { return Match([]byte(p), []byte(k), false) }) {
				want = append(want, KeyBits{DB: db, Key: k, Bits: integer(run(db, "BITCOUNT", k))})
			}
		}
	}
	got := s.BitCounts(patterns)
	if !slices.Equal(got, want) {
		t.Errorf("BitCounts(%q)\n got %v\nwant %v", patterns, got, want)
	}
	if len(want) < 10 {
		t.Errorf("only %d keys matched: the test checks too little", len(want))
	}
	if got := s.BitCounts(nil); got != nil {
		t.Errorf("BitCounts(nil) = %v", got)
	}
}
