package store

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
)

// The snapshot encoding, version 4. Fixed-size integers are
// little-endian; uvarints and varints are encoding/binary's.
//
//	magic      "PRESENCED-SNAPSHOT"
//	version    uint32, snapshotVersion
//	now        int64, the log time in unix ms, >= 0
//	expired    int64, Stats.ExpiredKeys, >= 0
//	count      uint64, the number of records that follow
//	records    count times:
//	  db         uint8, below NumDBs
//	  kind       uint8, one of the record kinds below
//	  key        uvarint length, then the key's bytes
//	  expireAt   uvarint, the deadline in unix ms, 0 for no TTL
//	  string kinds: uvarint length, then the bytes
//	  kindBitmap:   uvarint n (the string's byte length), uvarint size,
//	                then size bytes of roaring's portable serialization,
//	                then the deadlines of its armed bits:
//	    armed        uvarint, the number of armed bits (0: no more fields)
//	    ttl          uvarint, the key's latest TTL in ms, for BITRECENT
//	    armed times, in increasing offset order:
//	      gap        uvarint, the offset minus (the previous offset + 1),
//	                 the first offset itself
//	      deadline   varint, the deadline in units of 100 ms minus now's
//	                 (now / 100)
//	rules      uvarint, the number of bit-TTL rules, then each in order:
//	  pattern    uvarint length, then the bytes
//	  ttl        uvarint, in ms
//	history    the state of history recording (see history.go):
//	  last       uvarint, the newest boundary handled in ms, a multiple of
//	             HistoryTick at or before now; 0 before recording starts
//	  dirty      the keys changed since last, then
//	  snap       the keys changed since their last bitmap snapshot, each:
//	    count      uvarint
//	    count times, in increasing (db, key) order:
//	      db         uint8, below NumDBs
//	      key        uvarint length, then the key's bytes
//	versions   the keys' versions, for WATCH (see watch.go):
//	  last       uvarint, the latest version handed out
//	  dbs        NumDBs uvarints, each database's stamp
//	  count      uvarint, the number of buckets stamped, then each in
//	             increasing order:
//	    gap        uvarint, the bucket minus (the previous one + 1)
//	    stamp      uvarint, at most last
//	checksum   uint32, CRC-32C (Castagnoli) of every byte before it
//
// Records come database by database, each in its index's (hash, key)
// order, so equal states encode to identical bytes. Version 3 is the same
// without the versions, version 2 also without the history state, version 1 also without the deadlines of
// bitmap records and without the rules; Restore reads them too.

// snapshotMagic opens every snapshot.
const snapshotMagic = "PRESENCED-SNAPSHOT"

// snapshotVersion is the version of the encoding WriteTo writes. Restore
// reads it and the versions before.
const snapshotVersion = 4

// snapshotVersionNoTimers is the version before per-bit deadlines.
const snapshotVersionNoTimers = 1

// snapshotVersionNoHistory is the version before history.
const snapshotVersionNoHistory = 2

// snapshotVersionNoWatch is the version before the keys' versions.
const snapshotVersionNoWatch = 3

// snapshotHeaderLen is the length of the fixed fields before the records.
const snapshotHeaderLen = len(snapshotMagic) + 4 + 8 + 8 + 8

// Kinds of records: a string in raw form, with how Redis would encode it
// (rawEncoding), or a bitmap.
const (
	kindString      byte = iota // raw form, encAuto
	kindEdited                  // raw form, encRaw
	kindUnsharedInt             // raw form, encUnsharedInt
	kindBitmap                  // bitmap form
	kindNotInt                  // raw form, encNotInt
)

// ioChunk is the buffer size of WriteTo and Restore, and the step in
// which Restore grows a long string as its bytes arrive.
const ioChunk = 64 << 10

// castagnoli is the CRC-32C table of the snapshot checksum.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrBadSnapshot is the error, wrapped with the details, that Restore
// returns for input that is not an intact snapshot it can read: a wrong
// magic or version, truncation, a checksum mismatch, or any invalid
// field.
var ErrBadSnapshot = errors.New("store: snapshot: invalid")

// Snapshot is a point-in-time copy of the whole store: every key of every
// database with its value and deadline, the log time, the counters, the
// bit-TTL rules and the state of history recording. It shares no memory the store may change, so it can be written out
// while the store goes on applying commands.
type Snapshot struct {
	now   int64
	stats Stats
	dbs   [NumDBs][]snapEntry
	rules []BitTTLRule
	rec   recorder
	vers  versions
}

// snapEntry is one key of a snapshot.
type snapEntry struct {
	key      string
	v        value
	expireAt int64
}

// Snapshot copies the whole state under the read lock, so it is
// consistent and never sees half a batch. It is quick: it only copies
// memory (a bitmap's containers, a raw string's bytes into shared
// chunks), and does no I/O; WriteTo and Digest read the copy afterwards
// without holding any lock. Keys are immutable strings and are shared.
// Snapshots may be taken concurrently.
func (s *Store) Snapshot() *Snapshot {
	// Copies share the live values' containers and blocks by marking
	// them, which two snapshots at once must not do together.
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	s.mu.RLock()
	defer s.mu.RUnlock()
	sn := &Snapshot{now: s.mu.now, stats: s.mu.stats, rules: slices.Clone(s.mu.bitRules), rec: s.mu.rec.clone(), vers: s.mu.versions}
	var a arena
	for i, d := range s.mu.dbs {
		entries := make([]snapEntry, 0, len(d.keys))
		d.index.Scan(func(e *entry) bool {
			entries = append(entries, snapEntry{key: e.key, v: a.value(&e.v), expireAt: e.expireAt})
			return true
		})
		sn.dbs[i] = entries
	}
	return sn
}

// arena copies raw strings into large shared chunks, so that a snapshot
// of millions of small strings makes few allocations.
type arena struct {
	buf []byte
}

// value returns a copy of v that later changes to v do not reach:
// commands such as SETRANGE change a raw string's bytes in place, so
// those are copied; a bitmap is shared copy-on-write (see share).
func (a *arena) value(v *value) value {
	if v.bm != nil {
		return value{bm: share(v.bm), n: v.n, t: v.t.clone()}
	}
	return value{raw: a.copy(v.raw), enc: v.enc}
}

// copy returns a copy of b, in the current chunk when it fits. Chunks
// start small and double up to 16 ioChunks; longer strings get their own
// allocation.
func (a *arena) copy(b []byte) []byte {
	if len(b) > ioChunk {
		return bytes.Clone(b)
	}
	if len(b) > cap(a.buf)-len(a.buf) {
		a.buf = make([]byte, 0, min(max(2*cap(a.buf), 4<<10, len(b)), 16*ioChunk))
	}
	start := len(a.buf)
	a.buf = append(a.buf, b...)
	return a.buf[start:len(a.buf):len(a.buf)]
}

// WriteTo encodes the snapshot to w in the format described at the top
// of this file, streaming: it holds one small buffer, never the whole
// encoding. It returns the number of bytes written to w.
func (sn *Snapshot) WriteTo(w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	e := &encoder{w: bufio.NewWriterSize(cw, ioChunk), nowu: sn.now / timerTick}
	e.header(sn)
	for db, entries := range sn.dbs {
		for i := range entries {
			if err := e.record(db, &entries[i]); err != nil {
				return cw.n, fmt.Errorf("store: snapshot: write: %w", err)
			}
		}
	}
	e.rules(sn.rules)
	e.recorder(&sn.rec)
	e.buf = appendVersions(e.buf[:0], &sn.vers)
	e.Write(e.buf)
	e.trailer()
	if err := e.w.Flush(); err != nil {
		return cw.n, fmt.Errorf("store: snapshot: write: %w", err)
	}
	return cw.n, nil
}

// countingWriter counts the bytes w accepted.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// encoder writes a snapshot through a buffer, keeping its checksum.
type encoder struct {
	w    *bufio.Writer
	crc  uint32
	buf  []byte // a record's fields before its payload
	nowu int64  // the snapshot's time in deadline units
}

// Write writes p and adds it to the checksum; after an error it writes
// nothing more (bufio.Writer's errors stick).
func (e *encoder) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	e.crc = crc32.Update(e.crc, castagnoli, p[:n])
	return n, err
}

func (e *encoder) header(sn *Snapshot) {
	count := 0
	for _, entries := range sn.dbs {
		count += len(entries)
	}
	b := append(e.buf[:0], snapshotMagic...)
	b = binary.LittleEndian.AppendUint32(b, snapshotVersion)
	b = binary.LittleEndian.AppendUint64(b, uint64(sn.now))
	b = binary.LittleEndian.AppendUint64(b, uint64(sn.stats.ExpiredKeys))
	b = binary.LittleEndian.AppendUint64(b, uint64(count))
	e.buf = b
	e.Write(b)
}

// record writes one key; it returns the writer's error, if any.
func (e *encoder) record(db int, en *snapEntry) error {
	v := &en.v
	b := append(e.buf[:0], byte(db), recordKind(v))
	b = binary.AppendUvarint(b, uint64(len(en.key)))
	b = append(b, en.key...)
	b = binary.AppendUvarint(b, uint64(en.expireAt))
	if v.bm == nil {
		b = binary.AppendUvarint(b, uint64(len(v.raw)))
	} else {
		b = binary.AppendUvarint(b, uint64(v.n))
		b = binary.AppendUvarint(b, v.bm.GetSerializedSizeInBytes())
	}
	e.buf = b
	if _, err := e.Write(b); err != nil {
		return err
	}
	if v.bm == nil {
		_, err := e.Write(v.raw)
		return err
	}
	if _, err := v.bm.WriteTo(e); err != nil {
		return err
	}
	return e.timers(v.t)
}

// timers writes the deadlines of a bitmap's armed bits (t may be nil),
// in chunks of about ioChunk bytes.
func (e *encoder) timers(t *bitTimers) error {
	if t == nil {
		_, err := e.Write([]byte{0})
		return err
	}
	b := binary.AppendUvarint(e.buf[:0], uint64(t.n))
	b = binary.AppendUvarint(b, uint64(t.ttl))
	next := uint32(0)
	t.eachSorted(func(off uint32, du int64) {
		b = binary.AppendUvarint(b, uint64(off-next))
		b = binary.AppendVarint(b, du-e.nowu)
		next = off + 1
		if len(b) >= ioChunk {
			e.Write(b)
			b = b[:0]
		}
	})
	e.buf = b
	_, err := e.Write(b)
	return err
}

// rules writes the bit-TTL rules.
func (e *encoder) rules(rules []BitTTLRule) {
	b := binary.AppendUvarint(e.buf[:0], uint64(len(rules)))
	for _, r := range rules {
		b = binary.AppendUvarint(b, uint64(len(r.Pattern)))
		b = append(b, r.Pattern...)
		b = binary.AppendUvarint(b, uint64(r.TTL))
	}
	e.buf = b
	e.Write(b)
}

// recorder writes the state of history recording.
func (e *encoder) recorder(r *recorder) {
	b := binary.AppendUvarint(e.buf[:0], uint64(r.last))
	for _, sets := range []*[NumDBs]map[string]struct{}{&r.dirty, &r.snap} {
		n := 0
		for _, m := range sets {
			n += len(m)
		}
		b = binary.AppendUvarint(b, uint64(n))
		for db, m := range sets {
			for _, key := range sortedKeys(m) {
				b = append(b, byte(db))
				b = binary.AppendUvarint(b, uint64(len(key)))
				b = append(b, key...)
				if len(b) >= ioChunk {
					e.Write(b)
					b = b[:0]
				}
			}
		}
	}
	e.buf = b
	e.Write(b)
}

// trailer writes the checksum, which does not cover itself.
func (e *encoder) trailer() {
	e.w.Write(binary.LittleEndian.AppendUint32(e.buf[:0], e.crc))
}

// recordKind is the record kind of v.
func recordKind(v *value) byte {
	switch {
	case v.bm != nil:
		return kindBitmap
	case v.enc == encRaw:
		return kindEdited
	case v.enc == encUnsharedInt:
		return kindUnsharedInt
	case v.enc == encNotInt:
		return kindNotInt
	}
	return kindString
}

// Restore replaces the whole state (keys, values, deadlines, log time,
// counters, the state of history recording) with the snapshot read from r, which must be exactly one
// snapshot that WriteTo wrote. It decodes and checks everything (format
// version, checksum, every field) into a new keyspace, built as Apply
// builds one, and only then swaps it in under the write lock. On any
// error the store is unchanged: malformed input gives an error wrapping
// ErrBadSnapshot, a failing reader its own error.
func (s *Store) Restore(r io.Reader) error {
	d := &decoder{r: bufio.NewReaderSize(r, ioChunk)}
	fresh, err := d.snapshot()
	if err != nil {
		return d.explain(err)
	}
	s.lock()
	defer s.mu.Unlock()
	s.mu.dbs = fresh.mu.dbs
	s.mu.expiries = fresh.mu.expiries
	s.mu.now = fresh.mu.now
	s.mu.stats = fresh.mu.stats
	s.mu.bitHeap = fresh.mu.bitHeap
	s.setRulesLocked(fresh.mu.bitRules)
	s.mu.rec = fresh.mu.rec
	s.mu.versions = fresh.mu.versions
	s.flushedLocked(nil)
	return nil
}

// decoder reads a snapshot, keeping the checksum of what it read.
type decoder struct {
	r       *bufio.Reader
	crc     uint32
	ioErr   error // the first error of r other than io.EOF
	b       [len(snapshotMagic)]byte
	key     []byte // the key being read
	version uint32
	nowu    int64 // the snapshot's time in deadline units
}

// Read reads from r and adds what it read to the checksum.
func (d *decoder) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	d.crc = crc32.Update(d.crc, castagnoli, p[:n])
	d.noteErr(err)
	return n, err
}

// ReadByte makes the decoder an io.ByteReader, for uvarints.
func (d *decoder) ReadByte() (byte, error) {
	c, err := d.r.ReadByte()
	if err != nil {
		d.noteErr(err)
		return 0, err
	}
	d.b[0] = c
	d.crc = crc32.Update(d.crc, castagnoli, d.b[:1])
	return c, nil
}

func (d *decoder) noteErr(err error) {
	if err != nil && err != io.EOF && d.ioErr == nil {
		d.ioErr = err
	}
}

// explain turns an error met while decoding into Restore's error: the
// reader's own failure, or ErrBadSnapshot with details.
func (d *decoder) explain(err error) error {
	switch {
	case d.ioErr != nil:
		return fmt.Errorf("store: snapshot: read: %w", d.ioErr)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: truncated", ErrBadSnapshot)
	}
	return fmt.Errorf("%w: %v", ErrBadSnapshot, err)
}

// snapshot decodes a whole snapshot into a new store.
func (d *decoder) snapshot() (*Store, error) {
	fresh := New()
	count, err := d.header(fresh)
	if err != nil {
		return nil, err
	}
	c := ctx{s: fresh, now: fresh.mu.now, write: true}
	for i := uint64(0); i < count; i++ {
		if err := d.record(&c); err != nil {
			return nil, err
		}
	}
	if d.version != snapshotVersionNoTimers {
		if fresh.mu.bitRules, err = d.rules(); err != nil {
			return nil, err
		}
	}
	if d.version > snapshotVersionNoHistory {
		if err := d.recorder(&fresh.mu.rec, fresh.mu.now); err != nil {
			return nil, err
		}
	}
	if d.version > snapshotVersionNoWatch {
		if err := d.versions(&fresh.mu.versions); err != nil {
			return nil, err
		}
	}
	sum := d.crc
	b, err := d.fixed(4)
	if err != nil {
		return nil, err
	}
	if got := binary.LittleEndian.Uint32(b); got != sum {
		return nil, fmt.Errorf("checksum %08x, want %08x", got, sum)
	}
	if _, err := d.r.ReadByte(); err != io.EOF {
		d.noteErr(err)
		return nil, errors.New("data after the checksum")
	}
	return fresh, nil
}

// header reads the fixed fields into fresh and returns the record count.
func (d *decoder) header(fresh *Store) (uint64, error) {
	magic, err := d.fixed(len(snapshotMagic))
	if err != nil {
		return 0, err
	}
	if string(magic) != snapshotMagic {
		return 0, fmt.Errorf("not a snapshot (magic %q)", magic)
	}
	b, err := d.fixed(4)
	if err != nil {
		return 0, err
	}
	d.version = binary.LittleEndian.Uint32(b)
	if d.version < snapshotVersionNoTimers || d.version > snapshotVersion {
		return 0, fmt.Errorf("version %d, this store reads versions %d to %d", d.version, snapshotVersionNoTimers, snapshotVersion)
	}
	var fields [3]uint64 // now, expired keys, count
	for i := range fields {
		if b, err = d.fixed(8); err != nil {
			return 0, err
		}
		fields[i] = binary.LittleEndian.Uint64(b)
	}
	if fields[0] > math.MaxInt64 || fields[1] > math.MaxInt64 {
		return 0, fmt.Errorf("negative log time %d or counter %d", int64(fields[0]), int64(fields[1]))
	}
	fresh.mu.now = int64(fields[0])
	fresh.mu.stats.ExpiredKeys = int64(fields[1])
	d.nowu = fresh.mu.now / timerTick
	return fields[2], nil
}

// record reads one key and stores it through c, which writes to the new
// store.
func (d *decoder) record(c *ctx) error {
	b, err := d.fixed(2)
	if err != nil {
		return err
	}
	db, kind := int(b[0]), b[1]
	if db >= NumDBs {
		return fmt.Errorf("database %d out of range", db)
	}
	n, err := d.length("key")
	if err != nil {
		return err
	}
	if d.key, err = d.readN(d.key, n); err != nil {
		return err
	}
	if c.s.mu.dbs[db].keys[string(d.key)] != nil {
		return fmt.Errorf("database %d: key %q twice", db, d.key)
	}
	key := string(d.key)
	expireAt, err := binary.ReadUvarint(d)
	if err != nil {
		return err
	}
	if expireAt > math.MaxInt64 {
		return fmt.Errorf("database %d: key %q: deadline out of range", db, key)
	}
	v, err := d.value(kind)
	if err != nil {
		return fmt.Errorf("database %d: key %q: %w", db, key, err)
	}
	c.putIn(db, key, v, int64(expireAt))
	return nil
}

// value reads a value of the given record kind.
func (d *decoder) value(kind byte) (value, error) {
	var enc rawEncoding
	switch kind {
	case kindBitmap:
		return d.bitmap()
	case kindString:
		enc = encAuto
	case kindEdited:
		enc = encRaw
	case kindUnsharedInt:
		enc = encUnsharedInt
	case kindNotInt:
		enc = encNotInt
	default:
		return value{}, fmt.Errorf("unknown record kind %d", kind)
	}
	n, err := d.length("string")
	if err != nil {
		return value{}, err
	}
	raw, err := d.readN(nil, n)
	if err != nil {
		return value{}, err
	}
	v := value{raw: raw, enc: enc}
	if _, isInt := v.int(); enc == encUnsharedInt && !isInt {
		return value{}, fmt.Errorf("integer encoding of %q", raw)
	}
	return v, nil
}

// bitmap reads a value in bitmap form and checks that the bitmap is
// well formed and lies within the string's length.
func (d *decoder) bitmap() (value, error) {
	n, err := d.length("string")
	if err != nil {
		return value{}, err
	}
	size, err := binary.ReadUvarint(d)
	if err != nil {
		return value{}, err
	}
	if size > math.MaxInt64 {
		return value{}, fmt.Errorf("bitmap size %d", size)
	}
	bm := roaring.New()
	read, err := bm.ReadFrom(io.LimitReader(d, int64(size)))
	switch {
	case err != nil:
		return value{}, fmt.Errorf("bitmap: %v", err)
	case uint64(read) != size:
		return value{}, fmt.Errorf("bitmap of %d bytes in %d", read, size)
	}
	if err := bm.Validate(); err != nil {
		return value{}, fmt.Errorf("bitmap: %v", err)
	}
	if !bm.IsEmpty() && uint64(bm.Maximum()) >= 8*n {
		return value{}, fmt.Errorf("bit %d beyond the string's %d bytes", bm.Maximum(), n)
	}
	v := value{bm: bm, n: int64(n)}
	if d.version != snapshotVersionNoTimers {
		if v.t, err = d.timers(bm); err != nil {
			return value{}, err
		}
	}
	return v, nil
}

// timers reads the deadlines of the armed bits of bm, each of which must
// be a set bit of bm, in increasing order, with a deadline that fits.
func (d *decoder) timers(bm *roaring.Bitmap) (*bitTimers, error) {
	n, err := binary.ReadUvarint(d)
	if err != nil || n == 0 {
		return nil, err
	}
	if n > bm.GetCardinality() {
		return nil, fmt.Errorf("%d armed bits of %d set", n, bm.GetCardinality())
	}
	ttl, err := binary.ReadUvarint(d)
	if err != nil {
		return nil, err
	}
	if ttl == 0 || ttl > maxDeadline {
		return nil, fmt.Errorf("TTL %d out of range", ttl)
	}
	t := newBitTimers()
	t.ttl = int64(ttl)
	next := uint64(0)
	for range n {
		gap, err := binary.ReadUvarint(d)
		if err != nil {
			return nil, err
		}
		rel, err := binary.ReadVarint(d)
		if err != nil {
			return nil, err
		}
		off := next + gap
		if gap > math.MaxUint32 || off > math.MaxUint32 || !bm.Contains(uint32(off)) {
			return nil, fmt.Errorf("armed bit %d is not set", off)
		}
		du := d.nowu + rel
		if rel < -d.nowu || du < 1 || rel > maxDeadline/timerTick-d.nowu {
			return nil, fmt.Errorf("bit %d: deadline out of range", off)
		}
		t.arm(uint32(off), du, d.nowu)
		next = off + 1
	}
	return t, nil
}

// rules reads the bit-TTL rules.
func (d *decoder) rules() ([]BitTTLRule, error) {
	n, err := binary.ReadUvarint(d)
	if err != nil {
		return nil, err
	}
	var rules []BitTTLRule
	for range n {
		size, err := d.length("rule pattern")
		if err != nil {
			return nil, err
		}
		if d.key, err = d.readN(d.key, size); err != nil {
			return nil, err
		}
		ttl, err := binary.ReadUvarint(d)
		if err != nil {
			return nil, err
		}
		if ttl < 1 || ttl > maxRuleSeconds*1000 {
			return nil, fmt.Errorf("rule TTL %d out of range", ttl)
		}
		rules = append(rules, BitTTLRule{Pattern: string(d.key), TTL: int64(ttl)})
	}
	return rules, nil
}

// recorder reads the state of history recording of a snapshot taken at
// now. The keys of each set must come in increasing (db, key) order; the
// dirty ones are changed since their last bitmap snapshot too.
func (d *decoder) recorder(r *recorder, now int64) error {
	last, err := binary.ReadUvarint(d)
	if err != nil {
		return err
	}
	if last%HistoryTick != 0 || last > uint64(now) {
		return fmt.Errorf("history boundary %d", last)
	}
	r.last = int64(last)
	for _, sets := range []*[NumDBs]map[string]struct{}{&r.dirty, &r.snap} {
		if err := d.keySet(sets); err != nil {
			return err
		}
	}
	for db, m := range r.dirty {
		for key := range m {
			r.add(db, key)
		}
	}
	return nil
}

// keySet reads a set of keys of any database in increasing (db, key)
// order.
func (d *decoder) keySet(sets *[NumDBs]map[string]struct{}) error {
	n, err := binary.ReadUvarint(d)
	if err != nil {
		return err
	}
	prevDB, prev := -1, ""
	for range n {
		b, err := d.fixed(1)
		if err != nil {
			return err
		}
		db := int(b[0])
		size, err := d.length("key")
		if err != nil {
			return err
		}
		if d.key, err = d.readN(d.key, size); err != nil {
			return err
		}
		key := string(d.key)
		switch {
		case db >= NumDBs:
			return fmt.Errorf("history: database %d out of range", db)
		case db < prevDB || (db == prevDB && key <= prev):
			return fmt.Errorf("history: database %d: key %q out of order", db, key)
		}
		if sets[db] == nil {
			sets[db] = make(map[string]struct{})
		}
		sets[db][key] = struct{}{}
		prevDB, prev = db, key
	}
	return nil
}

// length reads the length of a key or string, at most MaxStringLen.
func (d *decoder) length(what string) (uint64, error) {
	n, err := binary.ReadUvarint(d)
	if err == nil && n > MaxStringLen {
		err = fmt.Errorf("%s of %d bytes", what, n)
	}
	return n, err
}

// fixed reads n <= len(d.b) bytes into d.b.
func (d *decoder) fixed(n int) ([]byte, error) {
	_, err := io.ReadFull(d, d.b[:n])
	return d.b[:n], err
}

// readN reads n bytes into buf, reusing its memory. It grows buf as the
// bytes arrive, so that a corrupt length costs no more memory than the
// input holds; a new buffer ends with a capacity of exactly n.
func (d *decoder) readN(buf []byte, n uint64) ([]byte, error) {
	buf = buf[:0]
	for uint64(len(buf)) < n {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(n, max(2*uint64(cap(buf)), ioChunk)))
			copy(grown, buf)
			buf = grown
		}
		end := min(n, uint64(cap(buf)))
		if _, err := io.ReadFull(d, buf[len(buf):end]); err != nil {
			return nil, err
		}
		buf = buf[:end]
	}
	return buf, nil
}
