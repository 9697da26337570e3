package store

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestCompactKeepsValues checks that Compact changes no value: the bytes,
// counts and TTLs read the same before and after.
func TestCompactKeepsValues(t *testing.T) {
	s := New()
	r := rand.New(rand.NewPCG(1, 2))
	var out Replies
	var cmds []Command
	for i := 0; i < 5000; i++ {
		off := strconv.FormatUint(r.Uint64N(1<<20), 10)
		cmds = append(cmds, Command{Args: [][]byte{[]byte("SETBIT"), []byte("k" + strconv.Itoa(i%7)), []byte(off), []byte("1")}})
	}
	cmds = append(cmds, Command{Args: [][]byte{[]byte("PEXPIREAT"), []byte("k1"), []byte("999999999999")}})
	s.Apply(cmds, 1000, &out)

	read := func() []byte {
		var rs Replies
		var q []Command
		for i := 0; i < 7; i++ {
			k := []byte("k" + strconv.Itoa(i))
			q = append(q, Command{Args: [][]byte{[]byte("GET"), k}},
				Command{Args: [][]byte{[]byte("BITCOUNT"), k}},
				Command{Args: [][]byte{[]byte("PEXPIRETIME"), k}})
		}
		s.Read(q, 2000, &rs)
		return bytes.Clone(rs.B)
	}
	before := read()
	s.Compact()
	if after := read(); !bytes.Equal(before, after) {
		t.Fatal("values changed by Compact")
	}
	// The compacted bitmaps still take writes.
	out.Reset()
	s.Apply([]Command{{Args: [][]byte{[]byte("SETBIT"), []byte("k0"), []byte("3"), []byte("1")}}}, 3000, &out)
	if got := string(out.Reply(0)); got != ":0\r\n" && got != ":1\r\n" {
		t.Fatalf("SETBIT after Compact: %q", got)
	}
}
