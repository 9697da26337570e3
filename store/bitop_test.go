package store

import (
	"fmt"
	"math/bits"
	"math/rand"
	"strings"
	"sync"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/presenced/presenced/internal/bitstr"
	"github.com/presenced/presenced/proto"
)

// randomBits returns a string for the bitmap tests: empty, short, or long
// enough to span several 65536-bit containers, each part random (a
// roaring bitmap container), sparse (an array container), a run of ones
// (a run container) or zeros.
func randomBits(rnd *rand.Rand) []byte {
	var b []byte
	for range rnd.Intn(4) {
		n := rnd.Intn(40)
		if rnd.Intn(3) == 0 {
			n = rnd.Intn(20000)
		}
		part := make([]byte, n)
		switch rnd.Intn(4) {
		case 0:
			rnd.Read(part)
		case 1:
			for range rnd.Intn(n/8 + 2) {
				if n > 0 {
					part[rnd.Intn(n)] |= 0x80 >> rnd.Intn(8)
				}
			}
		case 2:
			for i := range part {
				part[i] = 0xff
			}
		}
		b = append(b, part...)
	}
	return b
}

// putString stores b under key in database 0 in either form: raw bytes as
// SET leaves them, or a bitmap (run-optimized or not) as bit commands do.
func putString(s *Store, rnd *rand.Rand, key string, b []byte) {
	if rnd.Intn(3) == 0 {
		putRaw(s, key, b)
		return
	}
	v := value{bm: bitstr.Bitmap(b), n: int64(len(b))}
	if rnd.Intn(2) == 0 {
		v.bm.RunOptimize()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := ctx{s: s, db: s.mu.dbs[0], w: &proto.Writer{}, write: true}
	c.put([]byte(key), v)
}

// modelCount counts the set bits of b.
func modelCount(b []byte) int64 {
	n := 0
	for _, x := range b {
		n += bits.OnesCount8(x)
	}
	return int64(n)
}

// TestBitopOpsKeepSources checks every operation, built and counted,
// against the byte model on bitmaps of every container kind, and that
// neither changes its sources: roaring has in-place operations that
// write into their arguments, and the sources are live values.
func TestBitopOpsKeepSources(t *testing.T) {
	rnd := rand.New(rand.NewSource(7))
	for iter := range 300 {
		strs := make([][]byte, 1+rnd.Intn(5))
		srcs := make([]*roaring.Bitmap, len(strs))
		clones := make([]*roaring.Bitmap, len(strs))
		n := 0
		for i := range strs {
			strs[i] = randomBits(rnd)
			n = max(n, len(strs[i]))
			srcs[i] = bitstr.Bitmap(strs[i])
			if rnd.Intn(2) == 0 {
				srcs[i].RunOptimize()
			}
			clones[i] = srcs[i].Clone()
		}
		for _, op := range bitops {
			if len(strs) < op.minKeys || (op.name == "not" && len(strs) != 1) {
				continue
			}
			name := strings.ToUpper(op.name)
			want := modelBitop(name, strs)
			got := value{bm: op.f(srcs, uint64(n)*8), n: int64(n)}
			if string(got.bytes()) != string(want) {
				t.Fatalf("iteration %d: BITOP %s of %d sources differs from the model", iter, name, len(strs))
			}
			if c := op.cardinality(srcs, uint64(n)*8); int64(c) != modelCount(want) {
				t.Fatalf("iteration %d: %s count %d, model %d", iter, name, c, modelCount(want))
			}
			for i := range srcs {
				if !srcs[i].Equals(clones[i]) {
					t.Fatalf("iteration %d: %s changed source %d", iter, name, i)
				}
			}
		}
	}
}

// TestBitopcountModel drives BITOP and BITOPCOUNT with random operations
// over random keys, raw and bitmap, missing ones included, and compares
// them with the byte model: BITOPCOUNT must count what BITOP stores.
func TestBitopcountModel(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rnd := rand.New(rand.NewSource(seed))
			s, m := New(), model{}
			keys := []string{"a", "b", "c", "d", "missing"}
			for range 400 {
				if k := keys[rnd.Intn(len(keys)-1)]; rnd.Intn(3) == 0 {
					m[k] = randomBits(rnd)
					putString(s, rnd, k, m[k])
				}
				op := modelBitops[rnd.Intn(len(modelBitops))]
				args := []string{"BITOPCOUNT", []string{op, strings.ToLower(op)}[rnd.Intn(2)]}
				var srcs [][]byte
				for range 1 + rnd.Intn(4) {
					k := keys[rnd.Intn(len(keys))]
					args = append(args, k)
					srcs = append(srcs, m[k])
				}
				want := bitopcountWant(op, srcs)
				if got := presRun(s, args...); got != want {
					t.Fatalf("%q: got %q, want %q", args, got, want)
				}
				bitopArgs := append([]string{"BITOP", args[1], "dest"}, args[2:]...)
				if got := presRun(s, bitopArgs...); !strings.HasPrefix(want, "-") {
					if got := presRun(s, "BITCOUNT", "dest"); got != want {
						t.Fatalf("%q then BITCOUNT: got %q, want %q", bitopArgs, got, want)
					}
					var w proto.Writer
					if res := modelBitop(op, srcs); len(res) > 0 {
						w.Bulk(res)
					} else {
						w.Null()
					}
					if got := presRun(s, "GET", "dest"); got != string(w.B) {
						t.Fatalf("%q stored %q, model %q", bitopArgs, clipText(got), clipText(string(w.B)))
					}
				} else if got != want {
					t.Fatalf("%q: got %q, want %q", bitopArgs, got, want)
				}
			}
			for _, k := range keys {
				var w proto.Writer
				if b, ok := m[k]; ok {
					w.Bulk(b)
				} else {
					w.Null()
				}
				if got := presRun(s, "GET", k); got != string(w.B) {
					t.Fatalf("source %s changed: %q, model %q", k, clipText(got), clipText(string(w.B)))
				}
			}
		})
	}
}

// bitopcountWant is BITOPCOUNT's reply by the model: Redis's error for a
// bad number of keys, or the count of the model's BITOP result.
func bitopcountWant(op string, srcs [][]byte) string {
	switch {
	case op == "NOT" && len(srcs) != 1:
		return rErr("ERR BITOP NOT must be called with a single source key.")
	case (op == "DIFF" || op == "DIFF1" || op == "ANDOR") && len(srcs) < 2:
		return rErr("ERR BITOP " + op + " must be called with at least two source keys.")
	}
	return rInt(modelCount(modelBitop(op, srcs)))
}

// presRun runs one command through execAt, on the read path unless it
// writes, and returns its reply.
func presRun(s *Store, args ...string) string {
	return execAt(s, 1000, 0, bmCommand(args...).Args...)
}

// TestBitopcountCases pins down the replies that are not counts.
func TestBitopcountCases(t *testing.T) {
	s := bitmapFixture(t)
	for _, st := range []bmStep{
		{[]string{"BITOPCOUNT", "AND", "bm", "ones"}, rInt(modelCount([]byte("fo")))},
		{[]string{"BITOPCOUNT", "NOT", "s"}, rInt(12)},
		{[]string{"BITOPCOUNT", "NOT", "nokey"}, rInt(0)},
		{[]string{"BITOPCOUNT", "NOT", "empty"}, rInt(0)},
		{[]string{"BITOPCOUNT", "or", "nokey", "empty"}, rInt(0)},
		{[]string{"BITOPCOUNT", "ONE", "raw"}, rInt(modelCount([]byte("foobar")))},
		{[]string{"BITOPCOUNT", "NOT", "a", "b"}, rErr("ERR BITOP NOT must be called with a single source key.")},
		{[]string{"BITOPCOUNT", "Diff", "bm"}, rErr("ERR BITOP DIFF must be called with at least two source keys.")},
		{[]string{"BITOPCOUNT", "foo", "bm"}, rErr(proto.ErrSyntax)},
		{[]string{"BITOPCOUNT", "", "bm"}, rErr(proto.ErrSyntax)},
		{[]string{"BITOPCOUNT", "AND"}, rErr("ERR wrong number of arguments for 'bitopcount' command")},
	} {
		if got := presRun(s, st.args...); got != st.want {
			t.Errorf("%q: got %q, want %q", st.args, got, st.want)
		}
	}
}

// TestPresenceReadsConcurrent runs the read-only presence commands on the
// same keys from several goroutines at once: under the race detector it
// fails if any of them writes to a shared value.
func TestPresenceReadsConcurrent(t *testing.T) {
	rnd := rand.New(rand.NewSource(3))
	s := New()
	for _, k := range []string{"a", "b", "c"} {
		putString(s, rnd, k, randomBits(rnd))
	}
	var cmds []Command
	for _, op := range modelBitops {
		cmds = append(cmds, bmCommand("BITOPCOUNT", op, "a", "b", "c"))
	}
	cmds = append(cmds, bmCommand("BITOPCOUNT", "NOT", "a"), bmCommand("GETBITS", "b", "0", "7", "100000", "3"),
		bmCommand("BITSCAN", "c", "0", "COUNT", "50"))
	var first Replies
	s.Read(cmds, 1000, &first)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				var r Replies
				s.Read(cmds, 1000, &r)
				if string(r.B) != string(first.B) {
					t.Errorf("concurrent reads disagree")
					return
				}
			}
		}()
	}
	wg.Wait()
}
