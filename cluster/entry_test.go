package cluster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strconv"
	"testing"

	"github.com/presenced/presenced/store"
)

var entrySeeds = [][]store.Command{
	nil,
	{cmd(0, "SETBIT", "online", "7", "1")},
	{cmd(15, "SET", "k", ""), cmd(3, "INCR", "n"), cmd(0, "SET", "big", string(make([]byte, 300)))},
	{{DB: -1, Args: nil}, {DB: 1 << 30, Args: [][]byte{{}}}},
	// Repeats: whole commands, a shorter and a longer one after, equal
	// bytes at another position, an empty argument repeated.
	{cmd(0, "SETBIT", "online:bitmap:0", "12345678", "1"), cmd(0, "SETBIT", "online:bitmap:0", "87654321", "1"),
		cmd(0, "SETBIT", "online:bitmap:0", "87654321", "1"), cmd(2, "SETBIT", "online:bitmap:0"),
		cmd(2, "SETBIT", "online:bitmap:0", "1", "1", "SETBIT"), cmd(2, "1", "SETBIT", "", ""), cmd(2, "1", "SETBIT", "", "")},
	// Integers and near misses.
	{cmd(0, "0", "18446744073709551615", "18446744073709551616", "-5", "007", "12x", "1e3", " 1")},
}

func TestEntryRoundTrip(t *testing.T) {
	for _, now := range []int64{0, 1, -5, 1767225600000, 1<<62 + 3} {
		for _, cmds := range entrySeeds {
			half := len(cmds) / 2
			data := encode(now, cmds[:half], cmds[half:])
			e, err := decodeEntry(data)
			if err != nil {
				t.Fatalf("decode(encode(%d, %v)): %v", now, cmds, err)
			}
			if e.time != now || !sameCommands(e.cmds, cmds) {
				t.Fatalf("decode(encode(%d, %v)) = %d, %v", now, cmds, e.time, e.cmds)
			}
			// The batches' tails are encoded apart: the entry must be
			// the one of the commands as a single batch all the same,
			// wherever they are split.
			whole := encode(now, cmds)
			for k := range len(cmds) + 1 {
				if split := encode(now, cmds[:k], cmds[k:]); !bytes.Equal(split, whole) {
					t.Fatalf("%d commands split at %d: entry %.80x, whole %.80x", len(cmds), k, split, whole)
				}
			}
			if bound := entryOverhead + batchSize(cmds); cap(data) > bound {
				t.Fatalf("entry of %d bytes allocated %d, beyond the bound %d", len(data), cap(data), bound)
			}
		}
	}
}

// TestDecodeEntryAllocations checks that decoding an entry of heartbeats
// allocates its argument list once, sized for them, rather than growing
// it: the commands, the argument list, their starts, and the decimal
// forms of the offsets in 4 KiB pieces (seven for 3,200 offsets).
func TestDecodeEntryAllocations(t *testing.T) {
	cmds := make([]store.Command, 3200)
	for i := range cmds {
		cmds[i] = cmd(0, "SETBIT", "online:bitmap:0", strconv.Itoa(i*31337%100_000_000), "1")
	}
	data := encode(1767225600000, cmds)
	allocs := testing.AllocsPerRun(5, func() {
		if _, err := decodeEntry(data); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 12 {
		t.Errorf("decoding 3,200 heartbeats took %v allocations, want at most 12", allocs)
	}
}

// TestEntryRepeats checks that a heartbeat repeating its previous one's
// command, key and value takes its offset's varint and six bytes.
func TestEntryRepeats(t *testing.T) {
	var cmds []store.Command
	for id := 10_000_000; id < 10_000_100; id++ {
		cmds = append(cmds, cmd(0, "SETBIT", "online:bitmap:0", strconv.Itoa(id), "1"))
	}
	one := len(encode(1, cmds[:1]))
	all := len(encode(1, cmds[:50], cmds[50:]))
	if per := (all - one) / (len(cmds) - 1); per != 6+4 {
		t.Fatalf("a repeating heartbeat takes %d bytes", per)
	}
}

// TestEntryVersion1 checks that entries written before repeats existed
// still decode, as a log written by older code holds them.
func TestEntryVersion1(t *testing.T) {
	for _, cmds := range entrySeeds {
		e, err := decodeEntry(encodeVersion1(7, cmds))
		if err != nil {
			t.Fatalf("version 1 entry of %v: %v", cmds, err)
		}
		if e.time != 7 || !sameCommands(e.cmds, cmds) {
			t.Fatalf("version 1 entry of %v decoded as %d, %v", cmds, e.time, e.cmds)
		}
	}
}

// TestEntryRejectsOddArguments checks that an argument not written in the
// first form that fits it is refused, as is a repeat of an argument the
// previous command lacks.
func TestEntryRejectsOddArguments(t *testing.T) {
	one := func(args ...byte) []byte { return append([]byte{entryVersion, 0, 1, 0, 1}, args...) }
	two := func(args ...byte) []byte { return append([]byte{entryVersion, 0, 2, 0, 1, 3, 'a', 0}, args...) }
	for name, body := range map[string][]byte{
		"literal repeat":   two(1, 3, 'a'),
		"missing repeat":   two(2, 0, 0),
		"first repeat":     one(0),
		"integer as bytes": one(3, '7'),
		"integer repeat":   {entryVersion, 0, 2, 0, 1, 1, 7, 0, 1, 1, 7},
		"bad integer":      one(1, 0x80),
		"long integer":     one(1, 0x87, 0),
		"long tag":         one(0x83, 0, '7', 'x'),
	} {
		if _, err := decodeEntry(appendChecksum(body)); !errors.Is(err, ErrBadEntry) {
			t.Fatalf("%s decoded: err %v", name, err)
		}
	}
	for body, want := range map[string][]string{
		string(two(2, 0, 2)):     {"a", ""},
		string(one(4, '0', '7')): {"07"},
		string(one(1, 7)):        {"7"},
		string(one(1, 0xac, 2)):  {"300"},
	} {
		e, err := decodeEntry(appendChecksum([]byte(body)))
		if err != nil {
			t.Fatalf("%x: %v", body, err)
		}
		if last := e.cmds[len(e.cmds)-1]; !sameCommands([]store.Command{last}, []store.Command{cmd(0, want...)}) {
			t.Fatalf("%x decoded as %q, want %q", body, last.Args, want)
		}
	}
}

func TestEntryRejectsDamage(t *testing.T) {
	good := encode(42, entrySeeds[2])
	for i := range good {
		for _, bad := range [][]byte{good[:i], flip(good, i)} {
			if _, err := decodeEntry(bad); !errors.Is(err, ErrBadEntry) {
				t.Fatalf("entry damaged at byte %d decoded: err %v", i, err)
			}
		}
	}
	// A well-formed entry of another version is refused too.
	other := append([]byte(nil), good...)
	for _, v := range []byte{0, entryVersion + 1} {
		other[0] = v
		if _, err := decodeEntry(reseal(other)); !errors.Is(err, ErrBadEntry) {
			t.Fatalf("entry of version %d decoded: %v", v, err)
		}
	}
}

func TestDecodedArgsDoNotAlias(t *testing.T) {
	cmds := []store.Command{cmd(0, "SET", "a", "x"), cmd(0, "SET", "b", "y")}
	data := encode(1, cmds)
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
// decodes re-encodes to the same bytes, or for version 1 to an entry of the
// same commands.
func FuzzDecodeEntry(f *testing.F) {
	for _, cmds := range entrySeeds {
		f.Add(encode(1767225600000, cmds))
		f.Add(encodeVersion1(1767225600000, cmds))
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
		again := encode(e.time, e.cmds)
		if data[0] == 1 {
			if e2, err := decodeEntry(again); err != nil || e2.time != e.time || !sameCommands(e2.cmds, e.cmds) {
				t.Fatalf("version 1 entry %x re-encoded as %x: %v", data, again, err)
			}
			return
		}
		if !bytes.Equal(again, data) {
			t.Fatalf("re-encoding %x gives %x", data, again)
		}
	})
}

// encode is encodeEntry of batches with their tails.
func encode(now int64, batches ...[]store.Command) []byte {
	tails := make([][]byte, len(batches))
	for i, b := range batches {
		tails[i] = appendTail(nil, b)
	}
	return encodeEntry(now, batches, tails)
}

// encodeVersion1 encodes cmds as an entry of version 1 at time now.
func encodeVersion1(now int64, cmds []store.Command) []byte {
	buf := []byte{1}
	buf = binary.AppendVarint(buf, now)
	buf = binary.AppendUvarint(buf, uint64(len(cmds)))
	for _, c := range cmds {
		buf = binary.AppendVarint(buf, int64(c.DB))
		buf = binary.AppendUvarint(buf, uint64(len(c.Args)))
		for _, a := range c.Args {
			buf = binary.AppendUvarint(buf, uint64(len(a)))
			buf = append(buf, a...)
		}
	}
	return appendChecksum(buf)
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
