package store

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/cespare/xxhash/v2"
	"github.com/presenced/presenced/proto"
)

// Versions let WATCH find out whether a key changed between the WATCH and
// the EXEC, on whichever node each runs: each Apply (a log entry) takes
// the next number of a counter, and every change of a key in it (a write
// command's, expiry's) stamps that number on the key's bucket, one of
// versionBuckets that keys hash to. FLUSHDB, FLUSHALL and SWAPDB change
// the keys they find, as Redis signals them: they stamp those keys'
// buckets, or, for a database of more keys than there are buckets, whose
// keys would stamp most buckets anyway, the database as a whole. A key's
// version is the later of its bucket's stamp and its database's. The
// stamps depend only on which keys each entry changed, not on how many
// times or by which path a change was made (one SETBIT after another or
// a run of them at once, one batch or the concatenation of an entry's
// batches), so replicas agree on them.
//
// WATCH reads a key's version, and EXEC sends it back in a WATCHCHECK
// command ahead of the transaction's commands: the check runs where the
// transaction runs, in log order, so every replica decides alike. The
// versions are part of the replicated state: they are in snapshots and
// in ReplicaDigest, not in the logical Digest. A key sharing its bucket
// with a key that changed counts as changed (one chance in
// versionBuckets for a key that is not itself written), which a client
// retries as any failed EXEC.
type versions struct {
	last    uint64 // the number of the latest Apply
	buckets [versionBuckets]uint64
	dbs     [NumDBs]uint64
}

// versionBuckets is the number of buckets keys hash to.
const (
	versionBits    = 14
	versionBuckets = 1 << versionBits
)

// bucketOf is the bucket of key in database db: xxhash, the same on every
// node.
func bucketOf(db int, key []byte) int {
	return bucketOfHash(db, xxhash.Sum64(key))
}

// bucketOfString is bucketOf for a key held as a string.
func bucketOfString(db int, key string) int {
	return bucketOfHash(db, xxhash.Sum64String(key))
}

// bucketOfHash is the bucket of a key of database db whose xxhash is h.
func bucketOfHash(db int, h uint64) int {
	return int((h + uint64(db)*0x9e3779b97f4a7c15) >> (64 - versionBits))
}

// next starts the stamps of a new Apply.
func (v *versions) next() { v.last++ }

// touch records a change of key in database db by the running Apply.
func (v *versions) touch(db int, key []byte) {
	v.buckets[bucketOf(db, key)] = v.last
}

// touchKeys records a change of each key of d, whose keys a flush or a
// swap of databases changes, in database db by the running Apply: a
// database of more keys than buckets is stamped as a whole.
func (v *versions) touchKeys(db int, d *db) {
	if len(d.keys) > versionBuckets {
		v.dbs[db] = v.last
		return
	}
	for key := range d.keys {
		v.buckets[bucketOfString(db, key)] = v.last
	}
}

// of returns the version of key in database db.
func (v *versions) of(db int, key []byte) uint64 {
	return max(v.buckets[bucketOf(db, key)], v.dbs[db])
}

// Watched is a key that WATCH follows, with the version it had then.
type Watched struct {
	DB      int
	Key     string
	Version uint64
}

// Watch returns key of database db with its version now, for WATCH.
func (s *Store) Watch(db int, key []byte) Watched {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return Watched{DB: db, Key: string(key), Version: s.mu.versions.of(db, key)}
}

// WatchCheck returns the command that checks, ahead of a transaction of n
// commands, that none of the watched keys changed since it had its
// version.
func WatchCheck(n int, watched []Watched) Command {
	args := make([][]byte, 0, 2+3*len(watched))
	args = append(args, []byte("WATCHCHECK"), strconv.AppendInt(nil, int64(n), 10))
	for _, w := range watched {
		args = append(args, strconv.AppendInt(nil, int64(w.DB), 10), []byte(w.Key), strconv.AppendUint(nil, w.Version, 10))
	}
	return Command{DB: 0, Args: args, Spec: watchCheckSpec}
}

// watchCheckSpec is WATCHCHECK's entry of the command table.
var watchCheckSpec = proto.Lookup([]byte("watchcheck"))

// WatchPassed reports whether reply, a WATCHCHECK's, lets its
// transaction run.
func WatchPassed(reply []byte) bool { return string(reply) == "+OK\r\n" }

// watchcheck answers WATCHCHECK n db key version [db key version ...]:
// OK when no key changed since its version and none has expired since,
// a null array otherwise, and then the next n commands of the batch are
// skipped (see watchRun). A key that exists but whose TTL has passed
// counts as changed: expiry removes it at the next tick.
func watchcheck(c *ctx, args [][]byte) {
	n, ok := proto.ParseInt(args[1])
	if !ok || n < 0 || len(args)%3 != 2 {
		c.w.Error(proto.ErrSyntax)
		return
	}
	changed := false
	for i := 2; i < len(args); i += 3 {
		db, okDB := proto.ParseInt(args[i])
		ver, okVer := strconv.ParseUint(string(args[i+2]), 10, 64)
		if !okDB || okVer != nil || db < 0 || db >= NumDBs {
			c.w.Error(proto.ErrSyntax)
			return
		}
		key := args[i+1]
		if c.s.mu.versions.of(int(db), key) != ver {
			changed = true
		} else if e := c.s.mu.dbs[db].keys[string(key)]; e != nil && !c.alive(e) {
			changed = true
		}
	}
	if changed {
		c.w.NullArray()
		c.skip = int(n)
		return
	}
	c.w.OK()
}

// watchRun runs the WATCHCHECK that starts cmds, if one does, and
// returns how many commands it took: itself, and the commands of its
// transaction when it failed, each answered with a null reply. It
// returns 0 when cmds does not start with a WATCHCHECK.
func (c *ctx) watchRun(cmds []Command, out *Replies) int {
	if !cmds[0].is("watchcheck") {
		return 0
	}
	c.skip = 0
	c.exec(cmds[0])
	out.Ends = append(out.Ends, out.Len())
	n := 1 + min(c.skip, len(cmds)-1)
	for range n - 1 {
		c.w.Null()
		out.Ends = append(out.Ends, out.Len())
	}
	c.skip = 0
	return n
}

// appendVersions encodes v for a snapshot: the counter, the stamps of
// the databases, then the buckets' as runs: the count of stamped buckets,
// and for each the gap from the one before and its stamp.
func appendVersions(b []byte, v *versions) []byte {
	b = binary.AppendUvarint(b, v.last)
	for _, d := range v.dbs {
		b = binary.AppendUvarint(b, d)
	}
	n := 0
	for _, s := range v.buckets {
		if s != 0 {
			n++
		}
	}
	b = binary.AppendUvarint(b, uint64(n))
	prev := -1
	for i, s := range v.buckets {
		if s != 0 {
			b = binary.AppendUvarint(b, uint64(i-prev-1))
			b = binary.AppendUvarint(b, s)
			prev = i
		}
	}
	return b
}

// versions reads the keys' versions of a snapshot into v (see
// appendVersions): no stamp after the counter, buckets in range.
func (d *decoder) versions(v *versions) error {
	var err error
	read := func() uint64 {
		var x uint64
		if err == nil {
			x, err = binary.ReadUvarint(d)
		}
		return x
	}
	v.last = read()
	for i := range v.dbs {
		v.dbs[i] = read()
	}
	n := read()
	if err == nil && n > versionBuckets {
		return fmt.Errorf("%d version buckets", n)
	}
	at := -1
	for range n {
		at += int(min(read(), versionBuckets)) + 1
		stamp := read()
		if err != nil {
			return err
		}
		if at >= versionBuckets {
			return fmt.Errorf("version bucket %d", at)
		}
		v.buckets[at] = stamp
	}
	if err != nil {
		return err
	}
	for _, s := range append(v.buckets[:], v.dbs[:]...) {
		if s > v.last {
			return fmt.Errorf("version %d after the latest, %d", s, v.last)
		}
	}
	return nil
}
