package store

import (
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"testing"

	"github.com/presenced/presenced/proto"
)

// TestGetbitsModel compares GETBITS with the byte model on random
// strings, raw and bitmap, and random offsets in random order, repeats
// and offsets far beyond the string included.
func TestGetbitsModel(t *testing.T) {
	rnd := rand.New(rand.NewSource(11))
	s := New()
	for range 300 {
		b := randomBits(rnd)
		exists := rnd.Intn(10) > 0
		if exists {
			putString(s, rnd, "k", b)
		} else {
			b = nil
			presRun(s, "DEL", "k")
		}
		args := []string{"GETBITS", "k"}
		var w proto.Writer
		n := 1 + rnd.Intn(40)
		if rnd.Intn(10) == 0 {
			n = offsetsStack - 4 + rnd.Intn(8) // around the stack buffer's end
		}
		w.Array(n)
		for range n {
			off := rnd.Int63n(int64(len(b))*8 + 64)
			if rnd.Intn(20) == 0 {
				off = rnd.Int63n(1 << 32)
			}
			args = append(args, strconv.FormatInt(off, 10))
			w.Int(int64(modelBit(b, off)))
		}
		if got := presRun(s, args...); got != string(w.B) {
			t.Fatalf("%s: got %q, want %q", clipText(fmt.Sprint(args)), clipText(got), clipText(string(w.B)))
		}
	}
}

// TestGetbitRunsModel reads random batches of GETBITs, in runs on one key
// as pipelines send them, and checks each batch's replies against the
// same commands read one at a time. The batches mix raw and bitmap
// strings (array, bitmap and run containers), missing keys, databases,
// expired keys, bad offsets inside runs, other commands and runs past
// the length read together.
func TestGetbitRunsModel(t *testing.T) {
	rnd := rand.New(rand.NewSource(12))
	s := New()
	keys := []string{"a", "b", "c", "none"}
	for round := range 200 {
		if round%20 == 0 {
			for _, k := range keys[:3] {
				putString(s, rnd, k, randomBits(rnd))
			}
			presRun(s, "SET", "c", "x", "PX", "1") // expired when read at 1000 + 2
		}
		var batch []Command
		for len(batch) < 300 {
			cmd := bmCommand("GETBIT", keys[rnd.Intn(len(keys))], "")
			switch rnd.Intn(12) {
			case 0:
				cmd.Args[2] = []byte([]string{"-1", "x", "4294967296", ""}[rnd.Intn(4)])
			case 1:
				cmd = bmCommand("GET", keys[rnd.Intn(len(keys))])
				if rnd.Intn(2) == 0 {
					cmd = bmCommand("DBSIZE")
				}
			case 2:
				cmd.DB = 1 + rnd.Intn(NumDBs)
			}
			n := 1 + rnd.Intn(3)
			if rnd.Intn(3) == 0 {
				n = 1 + rnd.Intn(2*probeChunk+2)
			}
			for range n {
				c := cmd
				c.Args = slices.Clone(cmd.Args)
				if len(c.Args) == 3 && len(c.Args[2]) == 0 {
					c.Args[2] = strconv.AppendInt(nil, rnd.Int63n(20000*8+64), 10)
				}
				batch = append(batch, c)
			}
		}
		want := readEach(s, batch, 1002)
		var got Replies
		s.Read(batch, 1002, &got)
		if string(got.B) != string(want.B) || !slices.Equal(got.Ends, want.Ends) {
			for i := range batch {
				if i >= len(got.Ends) || string(got.Reply(i)) != string(want.Reply(i)) {
					t.Fatalf("round %d, command %d %q: got %q, want %q", round, i, batch[i].Args, clipText(string(got.B)), want.Reply(i))
				}
			}
			t.Fatalf("round %d: ends %v, want %v", round, got.Ends, want.Ends)
		}
	}
}

// readEach reads cmds one at a time, each in a batch of its own, and
// returns their replies together.
func readEach(s *Store, cmds []Command, now int64) Replies {
	var all Replies
	for _, cmd := range cmds {
		var one Replies
		s.Read([]Command{cmd}, now, &one)
		all.B = append(all.B, one.B...)
		all.Ends = append(all.Ends, len(all.B))
	}
	return all
}

// TestGetbitsCases checks the edges: GETBIT's offset checks, applied to
// every offset before anything is read, and the arity.
func TestGetbitsCases(t *testing.T) {
	s := bitmapFixture(t)
	for _, st := range []bmStep{
		{[]string{"GETBITS", "bm", "1", "0", "2", "1"}, rArr(rInt(1), rInt(0), rInt(1), rInt(1))},
		{[]string{"GETBITS", "raw", "1", "0", "47", "48", "4294967295"}, rArr(rInt(1), rInt(0), rInt(0), rInt(0), rInt(0))},
		{[]string{"GETBITS", "s", "11", "12"}, rArr(rInt(1), rInt(0))},
		{[]string{"GETBITS", "nokey", "5", "4294967295"}, rArr(rInt(0), rInt(0))},
		{[]string{"GETBITS", "bm", "1", "-1"}, rErr(proto.ErrBitOffset)},
		{[]string{"GETBITS", "nokey", "4294967296"}, rErr(proto.ErrBitOffset)},
		{[]string{"GETBITS", "bm", "abc", "1"}, rErr(proto.ErrBitOffset)},
		{[]string{"GETBITS", "bm", "1", ""}, rErr(proto.ErrBitOffset)},
		{[]string{"GETBITS", "bm"}, rErr("ERR wrong number of arguments for 'getbits' command")},
	} {
		if got := presRun(s, st.args...); got != st.want {
			t.Errorf("%q: got %q, want %q", st.args, got, st.want)
		}
	}
}

// getbitsBench returns a store with a sparse bitmap of 10M possible
// users, every third one online, and 500 random friends' offsets.
func getbitsBench(b *testing.B) (*Store, []string) {
	s := benchStore(b, 10_000_000, 3)
	rnd := rand.New(rand.NewSource(1))
	offs := make([]string, 500)
	for i := range offs {
		offs[i] = strconv.Itoa(rnd.Intn(10_000_000))
	}
	return s, offs
}

// BenchmarkGETBITS500 reads 500 bits with one GETBITS.
func BenchmarkGETBITS500(b *testing.B) {
	s, offs := getbitsBench(b)
	cmds := []Command{bmCommand(append([]string{"GETBITS", "k"}, offs...)...)}
	var r Replies
	b.ReportAllocs()
	for b.Loop() {
		r.Reset()
		s.Read(cmds, 1000, &r)
	}
}

// BenchmarkGETBIT500 reads the same 500 bits with 500 GETBITs in one
// batch, as a pipelining client would.
func BenchmarkGETBIT500(b *testing.B) {
	s, offs := getbitsBench(b)
	cmds := make([]Command, len(offs))
	for i, off := range offs {
		cmds[i] = bmCommand("GETBIT", "k", off)
	}
	var r Replies
	b.ReportAllocs()
	for b.Loop() {
		r.Reset()
		s.Read(cmds, 1000, &r)
	}
}
