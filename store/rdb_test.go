package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
)

// rdbKey is a key as an RDB file holds it.
type rdbKey struct {
	value    string
	expireAt int64
}

// readRDB reads an RDB file of the kind WriteRDB writes, checking its
// structure and its checksum, and returns its auxiliary fields and its
// keys by database.
func readRDB(b []byte) (aux map[string]string, dbs map[int]map[string]rdbKey, err error) {
	const magic = "REDIS0010"
	if !bytes.HasPrefix(b, []byte(magic)) || len(b) < len(magic)+9 {
		return nil, nil, errors.New("no header")
	}
	body, sum := b[:len(b)-8], binary.LittleEndian.Uint64(b[len(b)-8:])
	if got := crc64Jones(0, body); got != sum {
		return nil, nil, fmt.Errorf("checksum %x, file says %x", got, sum)
	}
	r := &rdbReader{b: body[len(magic):]}
	aux, dbs = map[string]string{}, map[int]map[string]rdbKey{}
	db, sizes := -1, map[int][2]uint64{}
	var expireAt int64
	for r.err == nil {
		switch op := r.byte(); op {
		case rdbOpAux:
			k := r.string()
			aux[k] = r.string()
		case rdbOpSelectDB:
			db = int(r.length())
			dbs[db] = map[string]rdbKey{}
		case rdbOpResizeDB:
			sizes[db] = [2]uint64{r.length(), r.length()}
		case rdbOpExpireMS:
			expireAt = int64(binary.LittleEndian.Uint64(r.next(8)))
		case rdbTypeString:
			if db < 0 {
				return nil, nil, errors.New("a key before SELECTDB")
			}
			k := r.string()
			dbs[db][k] = rdbKey{value: r.string(), expireAt: expireAt}
			expireAt = 0
		case rdbOpEOF:
			if len(r.b) != 0 {
				return nil, nil, fmt.Errorf("%d bytes after EOF", len(r.b))
			}
			for n, keys := range dbs {
				expiring := 0
				for _, k := range keys {
					if k.expireAt != 0 {
						expiring++
					}
				}
				if sizes[n] != [2]uint64{uint64(len(keys)), uint64(expiring)} {
					return nil, nil, fmt.Errorf("db %d: RESIZEDB %v, holds %d keys, %d expiring", n, sizes[n], len(keys), expiring)
				}
			}
			return aux, dbs, nil
		default:
			return nil, nil, fmt.Errorf("opcode %#x", op)
		}
	}
	return nil, nil, r.err
}

// rdbReader reads the parts of an RDB file; past the end, it sets err.
type rdbReader struct {
	b   []byte
	err error
}

func (r *rdbReader) next(n int) []byte {
	if n > len(r.b) {
		r.err = errors.New("truncated")
		r.b = nil
		return make([]byte, n)
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *rdbReader) byte() byte { return r.next(1)[0] }

func (r *rdbReader) length() uint64 {
	first := r.byte()
	switch first >> 6 {
	case 0:
		return uint64(first)
	case 1:
		return uint64(first&0x3f)<<8 | uint64(r.byte())
	}
	switch first {
	case 0x80:
		return uint64(binary.BigEndian.Uint32(r.next(4)))
	case 0x81:
		return binary.BigEndian.Uint64(r.next(8))
	}
	r.err = fmt.Errorf("length encoding %#x", first)
	return 0
}

func (r *rdbReader) string() string { return string(r.next(int(r.length()))) }

// TestWriteRDB writes a store of strings, integers, bitmaps (dense,
// sparse and far out), a HyperLogLog and keys with TTLs, in several
// databases, as an RDB file, and reads it back: every key is there with
// GET's bytes and its expiry time, in its database, under a valid
// checksum and RESIZEDB counts; a database whose only key expired is
// not.
func TestWriteRDB(t *testing.T) {
	s := New()
	const later = testNow + 60_000
	lines := []struct {
		db   int
		line string
	}{
		{0, "SET s hello"},
		{0, "SET n 12345"},
		{0, "SET raw x"},
		{0, "SETRANGE raw 0 y"},
		{0, "SETBIT b 7 1"},
		{0, "SETBIT b 100 1"},
		{0, "SETBIT far 40000000 1"},
		{0, "PFADD h a b c"},
		{0, "SET ttl v PX 120000"},
		{3, "SET other v"},
		{3, "SETBIT online:bitmap:3 300 1"},
		{15, "SET last v EX 3600"},
	}
	for _, l := range lines {
		args := bytes.Fields([]byte(l.line))
		execAt(s, testNow, l.db, args...)
	}
	execAt(s, testNow, 0, []byte("SET"), []byte("empty"), nil)
	for i := range 300 {
		execAt(s, testNow, 1, []byte("SET"), fmt.Appendf(nil, "k%d", i), bytes.Repeat([]byte("v"), i))
	}
	execAt(s, testNow, 2, []byte("SET"), []byte("gone"), []byte("v"), []byte("PX"), []byte("1000"))
	do(s, later, "SET z 1") // the log's clock moves on: gone expires
	var buf bytes.Buffer
	if _, err := s.Snapshot().WriteRDB(&buf, RDBInfo{RedisVersion: "7.0.0", Created: 1, UsedMemory: 2}); err != nil {
		t.Fatal(err)
	}
	aux, dbs, err := readRDB(buf.Bytes())
	if err != nil {
		t.Fatalf("reading the file: %v", err)
	}
	if want := map[string]string{"redis-ver": "7.0.0", "redis-bits": "64", "ctime": "1", "used-mem": "2", "aof-base": "0"}; !maps.Equal(aux, want) {
		t.Errorf("aux fields %v, want %v", aux, want)
	}
	want := map[int]map[string]rdbKey{0: {}, 1: {}, 3: {}, 15: {}}
	for db, keys := range want {
		for _, k := range s.Snapshot().dbs[db] {
			keys[k.key] = rdbKey{value: execAt(s, later, db, []byte("GET"), []byte(k.key)), expireAt: k.expireAt}
		}
	}
	for db, keys := range want {
		for k, v := range keys {
			got := dbs[db][k]
			if body := strings.TrimSuffix(v.value[strings.Index(v.value, "\r\n")+2:], "\r\n"); got.value != body || got.expireAt != v.expireAt {
				t.Errorf("db %d key %s: %q expiring at %d, want %q at %d", db, k, got.value, got.expireAt, body, v.expireAt)
			}
		}
		if len(dbs[db]) != len(keys) {
			t.Errorf("db %d holds %d keys, want %d", db, len(dbs[db]), len(keys))
		}
	}
	if len(dbs) != len(want) {
		t.Errorf("the file selects databases %v, want those of %v", dbNumbers(dbs), dbNumbers(want))
	}
}

// dbNumbers returns the databases of dbs, for messages.
func dbNumbers(dbs map[int]map[string]rdbKey) []int {
	var out []int
	for db := range dbs {
		out = append(out, db)
	}
	return out
}
