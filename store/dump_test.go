package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// dumpSamples are strings in each of RDB's string encodings as Redis
// writes them: integers of 8, 16 and 32 bits, a longer integer kept as
// text, short text, text Redis compresses with LZF, random bytes it
// cannot compress, and lengths in each length encoding.
func dumpSamples() [][]byte {
	rnd := rand.New(rand.NewPCG(3, 5))
	random := make([]byte, 20000)
	for i := range random {
		random[i] = byte(rnd.Uint32())
	}
	bitmap := make([]byte, 100000)
	for i := 0; i < len(bitmap)*8; i += 1 + rnd.IntN(200) {
		bitmap[i/8] |= 0x80 >> (i % 8)
	}
	return [][]byte{
		[]byte("7"), []byte("-128"), []byte("300"), []byte("-32768"), []byte("70000"), []byte("-2147483648"),
		[]byte("2147483648"), []byte("12345678901"), []byte("007"), []byte(""), []byte("hello"),
		[]byte(strings.Repeat("a", 63)), []byte(strings.Repeat("ab", 40)), []byte(strings.Repeat("presence ", 3000)),
		random[:19], random[:64], random[:16383], random[:16384], random, bitmap,
	}
}

// TestRestoreRedisPayloads restores what redis-server DUMPs of each
// sample, and has redis-server restore what DumpPayload writes.
func TestRestoreRedisPayloads(t *testing.T) {
	r := startRedis(t)
	if r == nil {
		return
	}
	encodings := map[byte]int{}
	for i, s := range dumpSamples() {
		r.do(t, 0, []byte("SET"), []byte("k"), s)
		reply := r.do(t, 0, []byte("DUMP"), []byte("k"))
		payload := []byte(reply[strings.Index(reply, "\r\n")+2 : len(reply)-2])
		encodings[payload[1]>>6]++
		got, err := RestorePayload(payload)
		if err != nil || !bytes.Equal(got, s) {
			t.Errorf("sample %d (%d bytes): Redis's payload %q restores %.40q, %v", i, len(s), payload[:min(len(payload), 16)], got, err)
		}
		r.do(t, 0, []byte("DEL"), []byte("k"))
		if ok := r.do(t, 0, []byte("RESTORE"), []byte("k"), []byte("0"), DumpPayload(s)); ok != "+OK\r\n" {
			t.Fatalf("sample %d: redis-server refuses DumpPayload: %q", i, ok)
		}
		if got := r.do(t, 0, []byte("GET"), []byte("k")); got != string(bulkReply(s)) {
			t.Errorf("sample %d: redis-server restored %.60q", i, got)
		}
		r.do(t, 0, []byte("DEL"), []byte("k"))
	}
	// Lengths of one, two and more bytes, integers and LZF (all three).
	if encodings[0] == 0 || encodings[1] == 0 || encodings[2] == 0 || encodings[3] < 6 {
		t.Errorf("Redis's payloads took too few encodings: %v by the top bits of the length", encodings)
	}
}

// bulkReply is s as a RESP bulk string.
func bulkReply(s []byte) []byte {
	return append(append(append([]byte("$"+strconv.Itoa(len(s))), "\r\n"...), s...), "\r\n"...)
}

// TestRestorePayloadErrors checks which damage is a wrong footer and
// which bad data.
func TestRestorePayloadErrors(t *testing.T) {
	good := DumpPayload([]byte("hello"))
	if s, err := RestorePayload(good); err != nil || string(s) != "hello" {
		t.Fatalf("RestorePayload(DumpPayload(hello)) = %q, %v", s, err)
	}
	later := bytes.Clone(good)
	binary.LittleEndian.PutUint16(later[len(later)-10:], rdbVersion+1)
	binary.LittleEndian.PutUint64(later[len(later)-8:], crc64Jones(0, later[:len(later)-8]))
	for _, tc := range []struct {
		name    string
		payload []byte
		want    error
	}{
		{"too short", good[:9], errPayloadFooter},
		{"a later version", later, errPayloadFooter},
		{"a wrong checksum", append(bytes.Clone(good[:len(good)-1]), good[len(good)-1]^1), errPayloadFooter},
		{"another type", withFooter([]byte{14, 0}), errPayloadData},
		{"nothing", withFooter(nil), errPayloadData},
		{"a string cut short", withFooter([]byte{0, 9, 'a'}), errPayloadData},
		{"an unknown encoding", withFooter([]byte{0, 0xc4}), errPayloadData},
		{"an integer cut short", withFooter([]byte{0, 0xc2, 1, 2}), errPayloadData},
		{"LZF longer than said", withFooter([]byte{0, 0xc3, 2, 1, 1, 'a', 'b'}), errPayloadData},
		{"LZF referring before the start", withFooter([]byte{0, 0xc3, 2, 5, 0x20, 4}), errPayloadData},
	} {
		if _, err := RestorePayload(tc.payload); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// withFooter appends Redis 7.0's version and the checksum to data.
func withFooter(data []byte) []byte {
	b := binary.LittleEndian.AppendUint16(bytes.Clone(data), rdbVersion)
	return binary.LittleEndian.AppendUint64(b, crc64Jones(0, b))
}

// TestCRC64 checks the checksum against the check value of CRC-64/Jones
// as Redis's own test gives it.
func TestCRC64(t *testing.T) {
	if got := crc64Jones(0, []byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Errorf("crc64(123456789) = %#x", got)
	}
}

// FuzzRestorePayload feeds RESTORE payloads with a right footer: they
// restore or are refused, never panic, and what restores dumps and
// restores again to itself.
func FuzzRestorePayload(f *testing.F) {
	for _, s := range dumpSamples() {
		if p := DumpPayload(s); len(p) < 1000 {
			f.Add(p[:len(p)-dumpFooterBytes])
		}
	}
	f.Add([]byte{0, 0xc3, 4, 6, 1, 'a', 'b', 0x20, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := RestorePayload(withFooter(data))
		if err != nil {
			return
		}
		again, err := RestorePayload(DumpPayload(s))
		if err != nil || !bytes.Equal(again, s) {
			t.Fatalf("%q restores to %q, whose dump restores to %q, %v", data, s, again, err)
		}
	})
}
