package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strconv"

	"github.com/presenced/presenced/proto"
)

// DUMP and RESTORE move a key between servers in Redis's serialization: a
// value as an RDB file holds it, then the RDB version (2 bytes) and a
// CRC-64 of all that comes before (8 bytes), both little-endian. Keys
// hold strings, so the value is a string object: type 0, then the string
// in one of RDB's encodings. RESTORE reads every encoding Redis writes
// (plain, an integer, LZF-compressed), so what a redis-server DUMPs, or
// MIGRATEs here, restores; DUMP writes the plain one, which any Redis
// since 2.6 restores.
var dumpCommands = map[string]handler{
	"dump":           dump,
	"restore":        restore,
	"restore-asking": restore,
}

// Error replies of RESTORE, word for word as Redis sends them.
const (
	errBusyKey      = "BUSYKEY Target key name already exists."
	errDumpPayload  = "ERR DUMP payload version or checksum are wrong"
	errBadData      = "ERR Bad data format"
	errRestoreTTL   = "ERR Invalid TTL value, must be >= 0"
	errRestoreIdle  = "ERR Invalid IDLETIME value, must be >= 0"
	errRestoreFreq  = "ERR Invalid FREQ value, must be >= 0 and <= 255"
	rdbVersion      = 10 // Redis 7.0's: a payload of a later version is refused
	rdbTypeString   = 0
	rdbEncInt8      = 0
	rdbEncInt16     = 1
	rdbEncInt32     = 2
	rdbEncLZF       = 3
	dumpFooterBytes = 10
)

func dump(c *ctx, args [][]byte) {
	e := c.lookup(args[1])
	if e == nil {
		c.w.Null()
		return
	}
	c.w.Bulk(DumpPayload(e.v.bytes()))
}

// DumpPayload serializes the string s as DUMP does.
func DumpPayload(s []byte) []byte {
	b := make([]byte, 0, len(s)+dumpFooterBytes+10)
	b = append(b, rdbTypeString)
	b = appendRDBLen(b, uint64(len(s)))
	b = append(b, s...)
	b = binary.LittleEndian.AppendUint16(b, rdbVersion)
	return binary.LittleEndian.AppendUint64(b, crc64Jones(0, b))
}

// appendRDBLen appends n in RDB's length encoding.
func appendRDBLen(b []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(b, byte(n))
	case n < 1<<14:
		return append(b, 0x40|byte(n>>8), byte(n))
	case n <= 1<<32-1:
		return binary.BigEndian.AppendUint32(append(b, 0x80), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0x81), n)
}

// restore implements RESTORE key ttl serialized-value [REPLACE] [ABSTTL]
// [IDLETIME seconds] [FREQ frequency], with Redis's checks in Redis's
// order. IDLETIME and FREQ are checked and then ignored: presenced keeps
// no access times. A TTL that has passed (relative to the log's clock)
// restores nothing, and deletes the key REPLACE names.
func restore(c *ctx, args [][]byte) {
	var replace, absTTL, idle, freq bool
	for j := 4; j < len(args); j++ {
		more := j+1 < len(args)
		switch {
		case isOption(args[j], "replace"):
			replace = true
		case isOption(args[j], "absttl"):
			absTTL = true
		case isOption(args[j], "idletime") && more && !freq:
			n, ok := c.intArg(args[j+1])
			if !ok {
				return
			}
			if n < 0 {
				c.w.Error(errRestoreIdle)
				return
			}
			idle = true
			j++
		case isOption(args[j], "freq") && more && !idle:
			n, ok := c.intArg(args[j+1])
			if !ok {
				return
			}
			if n < 0 || n > 255 {
				c.w.Error(errRestoreFreq)
				return
			}
			freq = true
			j++
		default:
			c.w.Error(proto.ErrSyntax)
			return
		}
	}
	if !replace && c.get(args[1]) != nil {
		c.w.Error(errBusyKey)
		return
	}
	ttl, ok := c.intArg(args[2])
	if !ok {
		return
	}
	if ttl < 0 {
		c.w.Error(errRestoreTTL)
		return
	}
	s, err := RestorePayload(args[3])
	switch {
	case errors.Is(err, errPayloadFooter):
		c.w.Error(errDumpPayload)
		return
	case err != nil:
		c.w.Error(errBadData)
		return
	}
	existed := replace && c.get(args[1]) != nil
	if existed {
		c.dropIn(c.dbIndex, args[1])
	}
	if ttl != 0 && !absTTL {
		ttl += c.now // wraps as Redis's does, to a deadline that has passed
	}
	if ttl != 0 && ttl <= c.now {
		if existed {
			c.notify('g', "del", args[1])
		} else {
			c.unchanged()
		}
		c.w.OK()
		return
	}
	c.putIn(c.dbIndex, string(args[1]), rawValue(s), ttl)
	c.notify('g', "restore", args[1])
	c.w.OK()
}

var (
	errPayloadFooter = errors.New("store: DUMP payload version or checksum are wrong")
	errPayloadData   = errors.New("store: DUMP payload is no string")
)

// RestorePayload returns the string that payload, a DUMP of a string,
// serializes: errPayloadFooter when its version is later than Redis
// 7.0's or its checksum is wrong, errPayloadData when it holds no string
// (another type, or damaged data under a right checksum). As in Redis,
// bytes between the string and the footer are ignored.
func RestorePayload(payload []byte) ([]byte, error) {
	if len(payload) < dumpFooterBytes {
		return nil, errPayloadFooter
	}
	body, footer := payload[:len(payload)-8], payload[len(payload)-8:]
	if binary.LittleEndian.Uint16(body[len(body)-2:]) > rdbVersion ||
		binary.LittleEndian.Uint64(footer) != crc64Jones(0, body) {
		return nil, errPayloadFooter
	}
	data := body[:len(body)-2]
	if len(data) == 0 || data[0] != rdbTypeString {
		return nil, errPayloadData
	}
	s, _, err := readRDBString(data[1:])
	if err != nil {
		return nil, errPayloadData
	}
	return s, nil
}

// readRDBLen reads a length in RDB's encoding; special reports that b
// holds a special encoding (an integer or LZF), whose kind is n.
func readRDBLen(b []byte) (n uint64, special bool, rest []byte, err error) {
	if len(b) == 0 {
		return 0, false, nil, errPayloadData
	}
	switch b[0] >> 6 {
	case 0:
		return uint64(b[0] & 0x3f), false, b[1:], nil
	case 1:
		if len(b) < 2 {
			return 0, false, nil, errPayloadData
		}
		return uint64(b[0]&0x3f)<<8 | uint64(b[1]), false, b[2:], nil
	case 3:
		return uint64(b[0] & 0x3f), true, b[1:], nil
	}
	switch {
	case b[0] == 0x80 && len(b) >= 5:
		return uint64(binary.BigEndian.Uint32(b[1:])), false, b[5:], nil
	case b[0] == 0x81 && len(b) >= 9:
		return binary.BigEndian.Uint64(b[1:]), false, b[9:], nil
	}
	return 0, false, nil, errPayloadData
}

// readRDBString reads a string in any of RDB's encodings.
func readRDBString(b []byte) (s, rest []byte, err error) {
	n, special, b, err := readRDBLen(b)
	switch {
	case err != nil:
		return nil, nil, err
	case !special:
		if uint64(len(b)) < n {
			return nil, nil, errPayloadData
		}
		return bytes.Clone(b[:n]), b[n:], nil // payload's buffer is not the store's
	case n == rdbEncInt8 && len(b) >= 1:
		return strconv.AppendInt(nil, int64(int8(b[0])), 10), b[1:], nil
	case n == rdbEncInt16 && len(b) >= 2:
		return strconv.AppendInt(nil, int64(int16(binary.LittleEndian.Uint16(b))), 10), b[2:], nil
	case n == rdbEncInt32 && len(b) >= 4:
		return strconv.AppendInt(nil, int64(int32(binary.LittleEndian.Uint32(b))), 10), b[4:], nil
	case n == rdbEncLZF:
		clen, sp1, b, err1 := readRDBLen(b)
		ulen, sp2, b, err2 := readRDBLen(b)
		if err1 != nil || err2 != nil || sp1 || sp2 || uint64(len(b)) < clen || ulen > MaxStringLen {
			return nil, nil, errPayloadData
		}
		s, ok := lzfDecompress(b[:clen], int(ulen))
		if !ok {
			return nil, nil, errPayloadData
		}
		return s, b[clen:], nil
	}
	return nil, nil, errPayloadData
}

// lzfDecompress expands in, compressed by LZF as Redis compresses RDB
// strings, into exactly n bytes; it reports false for data that is not
// such a stream.
func lzfDecompress(in []byte, n int) ([]byte, bool) {
	// n comes from the payload: the room grows with what is expanded
	// rather than being taken at once.
	out := make([]byte, 0, min(n, 64+4*len(in)))
	for i := 0; i < len(in); {
		ctrl := int(in[i])
		i++
		if ctrl < 1<<5 { // a run of ctrl+1 literal bytes
			run := ctrl + 1
			if i+run > len(in) || len(out)+run > n {
				return nil, false
			}
			out = append(out, in[i:i+run]...)
			i += run
			continue
		}
		length := ctrl >> 5 // a reference back into what is out already
		if length == 7 {
			if i >= len(in) {
				return nil, false
			}
			length += int(in[i])
			i++
		}
		if i >= len(in) {
			return nil, false
		}
		ref := len(out) - (ctrl&0x1f)<<8 - 1 - int(in[i])
		i++
		length += 2
		if ref < 0 || len(out)+length > n {
			return nil, false
		}
		for k := range length { // byte by byte: the copy may overlap
			out = append(out, out[ref+k])
		}
	}
	return out, len(out) == n
}

// crc64Table is the table of Redis's CRC-64: the Jones polynomial,
// reflected, with no initial or final inversion.
var crc64Table = func() (t [256]uint64) {
	const poly = 0x95ac9329ac4bc9b5 // 0xad93d23594c935a9 reflected
	for i := range t {
		crc := uint64(i)
		for range 8 {
			if crc&1 == 1 {
				crc = crc>>1 ^ poly
			} else {
				crc >>= 1
			}
		}
		t[i] = crc
	}
	return t
}()

// crc64Jones continues Redis's crc64(crc, b).
func crc64Jones(crc uint64, b []byte) uint64 {
	for _, x := range b {
		crc = crc64Table[byte(crc)^x] ^ crc>>8
	}
	return crc
}

// Migrated is a key as MIGRATE sends it: its DUMP payload, the time left
// until its TTL in ms (0 for none), and its version, for WATCHCHECK.
type Migrated struct {
	Key     []byte
	Payload []byte
	TTL     int64
	Watched Watched
}

// Migration looks up keys of database db to read them, as MIGRATE does
// at time now (each counts a keyspace hit or miss, and a miss publishes a
// keymiss event), and returns those present, in order, all read at one
// moment. A TTL below 1 ms is given as 1, as Redis sends it.
func (s *Store) Migration(db int, keys [][]byte, now int64) []Migrated {
	var found []Migrated
	var out Replies
	s.read(now, &out, func(c *ctx) bool {
		c.db, c.dbIndex = s.mu.dbs[db], db
		for _, key := range keys {
			e := c.lookup(key)
			if e == nil {
				continue
			}
			var ttl int64
			if e.expireAt != 0 {
				ttl = max(e.expireAt-c.now, 1)
			}
			found = append(found, Migrated{Key: key, Payload: DumpPayload(e.v.bytes()), TTL: ttl,
				Watched: Watched{DB: db, Key: string(key), Version: s.mu.versions.of(db, key)}})
		}
		return true
	})
	return found
}
