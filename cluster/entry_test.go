package cluster

import (
	"bytes"
	"errors"
	"testing"

	"github.com/presenced/presenced/store"
)

var entrySeeds = [][]store.Command{
	nil,
	{cmd(0, "SETBIT", "online", "7", "1")},
	{cmd(15, "SET", "k", ""), cmd(3, "INCR", "n"), cmd(0, "SET", "big", string(make([]byte, 300)))},
	{{DB: -1, Args: nil}, {DB: 1 << 30, Args: [][]byte{{}}}},
}

func TestEntryRoundTrip(t *testing.T) {
	for _, now := range []int64{0, 1, -5, 1767225600000, 1<<62 + 3} {
		for _, cmds := range entrySeeds {
			half := len(cmds) / 2
			data := encodeEntry(now, [][]store.Command{cmds[:half], cmds[half:]}, sizeOf(cmds))
			e, err := decodeEntry(data)
			if err != nil {
				t.Fatalf("decode(encode(%d, %v)): %v", now, cmds, err)
			}
			if e.time != now || !sameCommands(e.cmds, cmds) {
				t.Fatalf("decode(encode(%d, %v)) = %d, %v", now, cmds, e.time, e.cmds)
			}
			if want := entryOverhead + sizeOf(cmds); cap(data) != want {
				t.Fatalf("encoding reallocated: capacity %d, want %d", cap(data), want)
			}
		}
	}
}

func TestEntryRejectsDamage(t *testing.T) {
	good := encodeEntry(42, [][]store.Command{entrySeeds[2]}, sizeOf(entrySeeds[2]))
	for i := range good {
		for _, bad := range [][]byte{good[:i], flip(good, i)} {
			if _, err := decodeEntry(bad); !errors.Is(err, ErrBadEntry) {
				t.Fatalf("entry damaged at byte %d decoded: err %v", i, err)
			}
		}
	}
	// A well-formed entry of another version is refused too.
	other := append([]byte(nil), good...)
	other[0] = entryVersion + 1
	if _, err := decodeEntry(reseal(other)); !errors.Is(err, ErrBadEntry) {
		t.Fatalf("entry of version %d decoded: %v", other[0], err)
	}
}

func TestDecodedArgsDoNotAlias(t *testing.T) {
	cmds := []store.Command{cmd(0, "SET", "a", "x"), cmd(0, "SET", "b", "y")}
	data := encodeEntry(1, [][]store.Command{cmds}, sizeOf(cmds))
	e, err := decodeEntry(data)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(e.cmds[0].Args[2], "ZZZZ"...)
	_ = append(e.cmds[0].Args, []byte("extra"))
	if !sameCommands(e.cmds, cmds) {
		t.Fatalf("appending to decoded arguments changed others: %v", e.cmds)
	}
}

// FuzzDecodeEntry checks that decoding never panics and that whatever
// decodes re-encodes to the same bytes.
func FuzzDecodeEntry(f *testing.F) {
	for _, cmds := range entrySeeds {
		f.Add(encodeEntry(1767225600000, [][]store.Command{cmds}, sizeOf(cmds)))
	}
	f.Add([]byte{})
	f.Add([]byte{entryVersion})
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := decodeEntry(data)
		if err != nil {
			if !errors.Is(err, ErrBadEntry) {
				t.Fatalf("error %v does not wrap ErrBadEntry", err)
			}
			// Most random inputs fail the checksum; seal them so the
			// fuzzer reaches the field decoding too.
			data = reseal(append([]byte(nil), data...))
			if e, err = decodeEntry(data); err != nil {
				return
			}
		}
		again := encodeEntry(e.time, [][]store.Command{e.cmds}, sizeOf(e.cmds))
		if !bytes.Equal(again, data) {
			t.Fatalf("re-encoding %x gives %x", data, again)
		}
	})
}

func sizeOf(cmds []store.Command) int {
	n := 0
	for _, c := range cmds {
		n += commandSize(c)
	}
	return n
}

func sameCommands(a, b []store.Command) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].DB != b[i].DB || len(a[i].Args) != len(b[i].Args) {
			return false
		}
		for j := range a[i].Args {
			if !bytes.Equal(a[i].Args[j], b[i].Args[j]) {
				return false
			}
		}
	}
	return true
}

// flip returns a copy of b with byte i changed.
func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 0x41
	return c
}

// reseal replaces the checksum at the end of b with a correct one.
func reseal(b []byte) []byte {
	if len(b) < 4 {
		return b
	}
	return appendChecksum(b[:len(b)-4])
}
