package cluster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"strconv"

	"github.com/presenced/presenced/store"
)

// entryVersion is the version of the log entry encoding written by this
// code. A replica refuses entries of a version it does not know; it reads
// those of every version before this one, which a log written by older code
// may still hold.
const entryVersion = 2

// ErrBadEntry is returned when a log entry cannot be decoded: it is
// truncated, corrupted, or of an unknown version.
var ErrBadEntry = errors.New("cluster: malformed log entry")

// castagnoli is the CRC-32C table; the checksum is computed in hardware
// where available.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// entry is one raft log entry: a batch of commands applied atomically at
// the leader's time. Version 2 encodes it as
//
//	byte     version (2)
//	varint   time, unix ms
//	uvarint  number of commands
//	per command:
//	  varint   database
//	  uvarint  number of arguments
//	  per argument: uvarint tag, then
//	    tag 0: nothing; the argument equals the previous command's
//	           argument at the same position
//	    tag 1: uvarint v; the argument is v in decimal
//	    tag n > 1: n-2 bytes, the argument
//	uint32   CRC-32C (Castagnoli) of all the bytes before it, little endian
//
// Each argument takes the first form that fits: a repeat when the previous
// command has one at its position with the same bytes, an integer when it
// is the canonical decimal form of an integer below 2^64 (no sign, no
// leading zero), else its bytes. Heartbeats are mostly repeats and an
// integer (`SETBIT online:bitmap:0 <id> 1` takes 10 bytes rather than 37,
// an offset of `BITSETEX` 5 rather than 9), and the log, its fsyncs,
// replication and the garbage raft's log store makes per entry all shrink
// with the entry. Version 1 had neither: each argument was its length and
// its bytes.
//
// An entry without commands is a tick: it only advances time.
type entry struct {
	time int64
	cmds []store.Command
}

// Argument tags of version 2.
const (
	tagRepeat  = 0
	tagInteger = 1
	tagLiteral = 2 // plus the length
)

// CommandSize bounds the bytes cmd takes in an encoded entry: the size it
// takes when every argument is written as its bytes. Summed over a batch,
// it is what Config.MaxBatchBytes bounds.
func CommandSize(cmd store.Command) int {
	n := varintLen(int64(cmd.DB)) + uvarintLen(uint64(len(cmd.Args)))
	for _, a := range cmd.Args {
		n += uvarintLen(uint64(len(a))+tagLiteral) + len(a)
	}
	return n
}

// batchSize bounds the bytes cmds take in an encoded entry.
func batchSize(cmds []store.Command) int {
	n := 0
	for _, c := range cmds {
		n += CommandSize(c)
	}
	return n
}

// entryOverhead bounds the bytes of an entry that are not commands.
const entryOverhead = 1 + binary.MaxVarintLen64 + binary.MaxVarintLen64 + 4

// appendTail appends to buf the encoding of the commands of a batch after
// its first one. Each command is encoded after the one before it, so a
// batch's tail is the same in every entry that carries it, and its
// caller can encode it before the batch is queued (see encodeEntry).
func appendTail(buf []byte, cmds []store.Command) []byte {
	for i := 1; i < len(cmds); i++ {
		buf = appendCommand(buf, cmds[i-1].Args, cmds[i])
	}
	return buf
}

// encodeEntry encodes the commands of batches, in order, as one entry at
// time now, where tails[i] is appendTail of batches[i]: it encodes only
// the first command of each batch, which follows the previous batch's
// last one. It returns the entry in a buffer of its own (raft keeps it).
func encodeEntry(now int64, batches [][]store.Command, tails [][]byte) []byte {
	n, size := 0, entryOverhead
	for i, b := range batches {
		if len(b) > 0 {
			n += len(b)
			size += CommandSize(b[0]) + len(tails[i])
		}
	}
	buf := append(make([]byte, 0, size), entryVersion)
	buf = binary.AppendVarint(buf, now)
	buf = binary.AppendUvarint(buf, uint64(n))
	var prev [][]byte
	for i, b := range batches {
		if len(b) == 0 {
			continue
		}
		buf = appendCommand(buf, prev, b[0])
		buf = append(buf, tails[i]...)
		prev = b[len(b)-1].Args
	}
	return appendChecksum(buf)
}

// appendCommand appends cmd, encoded after a command whose arguments are
// prev, to buf.
func appendCommand(buf []byte, prev [][]byte, cmd store.Command) []byte {
	buf = binary.AppendVarint(buf, int64(cmd.DB))
	buf = binary.AppendUvarint(buf, uint64(len(cmd.Args)))
	for i, a := range cmd.Args {
		buf = appendArg(buf, prev, i, a)
	}
	return buf
}

// appendArg appends argument i of a command, a, written after a command
// whose arguments are prev, to buf.
func appendArg(buf []byte, prev [][]byte, i int, a []byte) []byte {
	if repeats(prev, i, a) {
		return append(buf, tagRepeat)
	}
	if v, ok := decimal(a); ok {
		return binary.AppendUvarint(append(buf, tagInteger), v)
	}
	buf = binary.AppendUvarint(buf, uint64(len(a))+tagLiteral)
	return append(buf, a...)
}

// repeats reports whether argument i of a command, a, is written as a
// repeat after a command whose arguments are prev.
func repeats(prev [][]byte, i int, a []byte) bool {
	return i < len(prev) && bytes.Equal(prev[i], a)
}

// decimal returns the integer whose canonical decimal form is a, if a is
// one and the integer is below 2^64.
func decimal(a []byte) (uint64, bool) {
	if len(a) == 0 || len(a) > 20 || a[0] == '0' && len(a) > 1 {
		return 0, false
	}
	var v uint64
	for _, c := range a {
		d := uint64(c - '0')
		if d > 9 || v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// appendChecksum appends the checksum of body to it.
func appendChecksum(body []byte) []byte {
	return binary.LittleEndian.AppendUint32(body, crc32.Checksum(body, castagnoli))
}

// checkEntry checks the checksum and the version of the encoded entry
// data, and returns the bytes the checksum covers: what the disk may have
// damaged, at the cost of reading the bytes once.
func checkEntry(data []byte) ([]byte, error) {
	if len(data) < 1+4 {
		return nil, fmt.Errorf("%w: %d bytes", ErrBadEntry, len(data))
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrBadEntry)
	}
	if version := body[0]; version < 1 || version > entryVersion {
		return nil, fmt.Errorf("%w: unknown version %d", ErrBadEntry, version)
	}
	return body, nil
}

// decodeEntry decodes an entry of any version up to entryVersion. The
// commands' arguments point into data (a repeat shares its bytes with the
// argument it repeats). It rejects anything encodeEntry would not have
// produced, but for the version: a version 1 entry re-encodes as version 2.
func decodeEntry(data []byte) (entry, error) {
	body, err := checkEntry(data)
	if err != nil {
		return entry{}, err
	}
	version, d := body[0], decoder{b: body[1:]}
	e := entry{time: d.varint()}
	// Every command takes at least two bytes, which bounds the allocation.
	n := d.count(2)
	if d.err != nil {
		return entry{}, d.err
	}
	e.cmds = make([]store.Command, n)
	// Room for a heartbeat's four arguments (SETBIT key offset value) a
	// command; every argument takes at least a byte.
	args := make([][]byte, 0, min(4*n, len(d.b)))
	starts := make([]int, n)
	var prev [][]byte
	var digits []byte // the decimal forms of integer arguments
	for i := range e.cmds {
		db := d.varint()
		if db < math.MinInt32 || db > math.MaxInt32 {
			d.fail("database out of range")
		}
		e.cmds[i].DB = int(db)
		starts[i] = len(args)
		for j := range d.count(1) {
			if version == 1 {
				args = append(args, d.take(d.uvarint()))
				continue
			}
			var a []byte
			switch tag := d.uvarint(); tag {
			case tagRepeat:
				if j >= len(prev) {
					d.fail("repeat of a missing argument")
				} else {
					a = prev[j]
				}
			case tagInteger:
				if cap(digits)-len(digits) < 20 {
					// The integers left take at least two bytes of
					// the entry each and at most 20 digits.
					digits = make([]byte, 0, min(4096, 10*len(d.b)+20))
				}
				k := len(digits)
				digits = strconv.AppendUint(digits, d.uvarint(), 10)
				a = digits[k:len(digits):len(digits)]
				d.notRepeat(prev, j, a)
			default:
				a = d.take(tag - tagLiteral)
				if _, ok := decimal(a); ok {
					d.fail("integer argument written as bytes")
				}
				d.notRepeat(prev, j, a)
			}
			if d.err != nil {
				break
			}
			args = append(args, a)
		}
		if d.err != nil {
			return entry{}, d.err
		}
		prev = args[starts[i]:]
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

// notRepeat fails the decoding if argument j, a, should have been written
// as a repeat of the previous command's, prev.
func (d *decoder) notRepeat(prev [][]byte, j int, a []byte) {
	if repeats(prev, j, a) {
		d.fail("argument not written as the repeat it is")
	}
}

// take reads the next n bytes, capped so that appending to them cannot
// overwrite the rest of the entry.
func (d *decoder) take(n uint64) []byte {
	if n > uint64(len(d.b)) {
		d.fail("argument exceeds entry size")
		return nil
	}
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
