package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/presenced/presenced/store"
)

// entryVersion is the version of the log entry encoding written by this
// code. A replica refuses entries of a version it does not know.
const entryVersion = 1

// ErrBadEntry is returned when a log entry cannot be decoded: it is
// truncated, corrupted, or of an unknown version.
var ErrBadEntry = errors.New("cluster: malformed log entry")

// castagnoli is the CRC-32C table; the checksum is computed in hardware
// where available.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// entry is one raft log entry: a batch of commands applied atomically at
// the leader's time. Version 1 encodes it as
//
//	byte     version (1)
//	varint   time, unix ms
//	uvarint  number of commands
//	per command:
//	  varint   database
//	  uvarint  number of arguments
//	  per argument: uvarint length, bytes
//	uint32   CRC-32C (Castagnoli) of all the bytes before it, little endian
//
// An entry without commands is a tick: it only advances time.
type entry struct {
	time int64
	cmds []store.Command
}

// commandSize is the number of bytes cmd takes in an encoded entry.
func commandSize(cmd store.Command) int {
	n := varintLen(int64(cmd.DB)) + uvarintLen(uint64(len(cmd.Args)))
	for _, a := range cmd.Args {
		n += uvarintLen(uint64(len(a))) + len(a)
	}
	return n
}

// entryOverhead bounds the bytes of an entry that are not commands.
const entryOverhead = 1 + binary.MaxVarintLen64 + binary.MaxVarintLen64 + 4

// encodeEntry encodes the commands of batches, in order, as one entry at
// time now. size is the sum of commandSize over the commands, used to
// allocate the result exactly once: raft keeps the returned slice.
func encodeEntry(now int64, batches [][]store.Command, size int) []byte {
	n := 0
	for _, b := range batches {
		n += len(b)
	}
	buf := make([]byte, 0, entryOverhead+size)
	buf = append(buf, entryVersion)
	buf = binary.AppendVarint(buf, now)
	buf = binary.AppendUvarint(buf, uint64(n))
	for _, b := range batches {
		for _, cmd := range b {
			buf = binary.AppendVarint(buf, int64(cmd.DB))
			buf = binary.AppendUvarint(buf, uint64(len(cmd.Args)))
			for _, a := range cmd.Args {
				buf = binary.AppendUvarint(buf, uint64(len(a)))
				buf = append(buf, a...)
			}
		}
	}
	return appendChecksum(buf)
}

// appendChecksum appends the checksum of body to it.
func appendChecksum(body []byte) []byte {
	return binary.LittleEndian.AppendUint32(body, crc32.Checksum(body, castagnoli))
}

// decodeEntry decodes an entry. The commands' arguments point into data.
// It rejects anything encodeEntry would not have produced.
func decodeEntry(data []byte) (entry, error) {
	if len(data) < 1+4 {
		return entry{}, fmt.Errorf("%w: %d bytes", ErrBadEntry, len(data))
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return entry{}, fmt.Errorf("%w: checksum mismatch", ErrBadEntry)
	}
	if body[0] != entryVersion {
		return entry{}, fmt.Errorf("%w: unknown version %d", ErrBadEntry, body[0])
	}
	d := decoder{b: body[1:]}
	e := entry{time: d.varint()}
	// Every command takes at least two bytes, which bounds the allocation.
	n := d.count(2)
	if d.err != nil {
		return entry{}, d.err
	}
	e.cmds = make([]store.Command, n)
	var args [][]byte
	starts := make([]int, n)
	for i := range e.cmds {
		db := d.varint()
		if db < math.MinInt32 || db > math.MaxInt32 {
			d.fail("database out of range")
		}
		e.cmds[i].DB = int(db)
		starts[i] = len(args)
		for range d.count(1) {
			args = append(args, d.bytes())
		}
		if d.err != nil {
			return entry{}, d.err
		}
	}
	if len(d.b) != 0 {
		return entry{}, fmt.Errorf("%w: %d trailing bytes", ErrBadEntry, len(d.b))
	}
	for i := range e.cmds {
		end := len(args)
		if i+1 < n {
			end = starts[i+1]
		}
		e.cmds[i].Args = args[starts[i]:end:end]
	}
	return e, nil
}

// decoder reads the fields of an entry; after the first error every read
// returns a zero value and err keeps that error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrBadEntry, what)
	}
	d.b = nil
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 || n != varintLen(v) {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 || n != uvarintLen(v) {
		d.fail("bad uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a number of items that take at least min bytes each, and
// rejects it if the remaining bytes cannot hold them.
func (d *decoder) count(min int) int {
	v := d.uvarint()
	if v > uint64(len(d.b)/min) {
		d.fail("count exceeds entry size")
		return 0
	}
	return int(v)
}

// bytes reads a length-prefixed byte string, capped so that appending to
// it cannot overwrite the rest of the entry.
func (d *decoder) bytes() []byte {
	n := d.count(1)
	b := d.b[:n:n]
	d.b = d.b[n:]
	return b
}

func varintLen(v int64) int {
	var buf [binary.MaxVarintLen64]byte
	return binary.PutVarint(buf[:], v)
}

func uvarintLen(v uint64) int {
	var buf [binary.MaxVarintLen64]byte
	return binary.PutUvarint(buf[:], v)
}
