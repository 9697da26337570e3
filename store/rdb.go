package store

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
)

// RDB opcodes of Redis 7.0's file format (rdb.h).
const (
	rdbOpAux      = 0xfa
	rdbOpResizeDB = 0xfb
	rdbOpExpireMS = 0xfc
	rdbOpSelectDB = 0xfe
	rdbOpEOF      = 0xff
)

// RDBInfo is what an RDB file says of the server that wrote it, in its
// auxiliary fields.
type RDBInfo struct {
	// RedisVersion is the Redis version the server answers as.
	RedisVersion string
	// Created is the file's creation time, in Unix seconds.
	Created int64
	// UsedMemory is the server's memory use, in bytes.
	UsedMemory int64
}

// WriteRDB writes the snapshot to w as an RDB file of Redis 7.0 (version
// 10), which redis-server loads: the auxiliary fields, then each database
// that holds keys, each key a string with its expiry time, then the end
// mark and a CRC-64 of the whole file. Keys are as of the log's clock,
// by which each is removed once its time has passed; a redis-server
// drops, as it loads the file, those whose time its own clock says has
// passed. Per-bit deadlines, bit-TTL rules and history,
// which Redis has no place for, are not in it: the bits are, as they are
// set. It returns the number of bytes written to w.
func (sn *Snapshot) WriteRDB(w io.Writer, info RDBInfo) (int64, error) {
	cw := &countingWriter{w: w}
	rw := &rdbWriter{w: bufio.NewWriterSize(cw, ioChunk)}
	rw.write(fmt.Appendf(nil, "REDIS%04d", rdbVersion))
	rw.aux("redis-ver", info.RedisVersion)
	rw.aux("redis-bits", "64")
	rw.aux("ctime", strconv.FormatInt(info.Created, 10))
	rw.aux("used-mem", strconv.FormatInt(info.UsedMemory, 10))
	rw.aux("aof-base", "0")
	for db, entries := range sn.dbs {
		if len(entries) == 0 {
			continue
		}
		expiring := 0
		for i := range entries {
			if entries[i].expireAt != 0 {
				expiring++
			}
		}
		rw.write(appendRDBLen([]byte{rdbOpSelectDB}, uint64(db)))
		rw.write(appendRDBLen(appendRDBLen([]byte{rdbOpResizeDB}, uint64(len(entries))), uint64(expiring)))
		for i := 0; i < len(entries) && rw.err == nil; i++ {
			e := &entries[i]
			if e.expireAt != 0 {
				rw.write(binary.LittleEndian.AppendUint64([]byte{rdbOpExpireMS}, uint64(e.expireAt)))
			}
			rw.write([]byte{rdbTypeString})
			rw.string([]byte(e.key))
			rw.string(e.v.bytes())
		}
	}
	rw.write([]byte{rdbOpEOF})
	rw.write(binary.LittleEndian.AppendUint64(nil, rw.crc))
	if rw.err == nil {
		rw.err = rw.w.Flush()
	}
	if rw.err != nil {
		return cw.n, fmt.Errorf("store: rdb: write: %w", rw.err)
	}
	return cw.n, nil
}

// rdbWriter writes an RDB file through a buffer, keeping the CRC-64 of
// what it wrote and the first error, after which it writes nothing more.
type rdbWriter struct {
	w   *bufio.Writer
	crc uint64
	err error
}

func (rw *rdbWriter) write(b []byte) {
	if rw.err != nil {
		return
	}
	rw.crc = crc64Jones(rw.crc, b)
	_, rw.err = rw.w.Write(b)
}

// string writes s as an RDB string: its length, then its bytes.
func (rw *rdbWriter) string(s []byte) {
	rw.write(appendRDBLen(nil, uint64(len(s))))
	rw.write(s)
}

// aux writes an auxiliary field.
func (rw *rdbWriter) aux(key, value string) {
	rw.write([]byte{rdbOpAux})
	rw.string([]byte(key))
	rw.string([]byte(value))
}
