package store

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
)

// watchRuns applies, at now, a WATCHCHECK of w ahead of the commands of lines (in database 0), and one
// more SET after them that is not part of the transaction; it returns
// the replies.
func watchRuns(s *Store, now int64, w Watched, lines ...string) []string {
	cmds := []Command{WatchCheck(len(lines), []Watched{w})}
	for _, l := range append(lines, "SET after 1") {
		cmds = append(cmds, Command{Args: bytesArgs(l)})
	}
	var out Replies
	s.Apply(cmds, now, &out)
	replies := make([]string, len(cmds))
	for i := range cmds {
		replies[i] = string(out.Reply(i))
	}
	return replies
}

// msetMany is an MSET of n keys.
func msetMany(n int) string {
	var b strings.Builder
	b.WriteString("MSET")
	for i := range n {
		fmt.Fprintf(&b, " many:%d 1", i)
	}
	return b.String()
}

// TestWatchCheck checks which changes between a key's version and the
// check make it fail, and that a failed check skips exactly the commands
// of its transaction.
func TestWatchCheck(t *testing.T) {
	for _, c := range []struct {
		name    string
		setup   []string // run before the version is read (database 0)
		db      int
		key     string
		between []string // run after (database 0)
		at      int64    // time of the check, after testNow
		changed bool
	}{
		{name: "nothing", setup: []string{"SET k 1"}, key: "k"},
		{name: "SET", key: "k", between: []string{"SET k 2"}, changed: true},
		{name: "SET of the same value", setup: []string{"SET k 1"}, key: "k", between: []string{"SET k 1"}, changed: true},
		{name: "another key", key: "k", between: []string{"SET other 1"}},
		{name: "another database", db: 1, key: "k", between: []string{"SET k 1"}},
		{name: "a failed write", setup: []string{"SET k x"}, key: "k", between: []string{"INCR k"}},
		{name: "SETBIT", key: "k", between: []string{"SETBIT k 7 1"}, changed: true},
		{name: "BITSETEX", key: "k", between: []string{"BITSETEX k 10 7"}, changed: true},
		{name: "BITOP destination", setup: []string{"SET k 1"}, key: "d", between: []string{"BITOP OR d k"}, changed: true},
		{name: "BITOP source", setup: []string{"SET k 1"}, key: "k", between: []string{"BITOP OR d k"}},
		{name: "COPY source", setup: []string{"SET k 1"}, key: "k", between: []string{"COPY k d"}},
		{name: "COPY destination in another database", setup: []string{"SET k 1"}, db: 1, key: "d", between: []string{"COPY k d DB 1"}, changed: true},
		{name: "MOVE, the source", setup: []string{"SET k 1"}, key: "k", between: []string{"MOVE k 1"}, changed: true},
		{name: "MOVE, the destination", setup: []string{"SET k 1"}, db: 1, key: "k", between: []string{"MOVE k 1"}, changed: true},
		{name: "RENAME destination", setup: []string{"SET k 1"}, key: "n", between: []string{"RENAME k n"}, changed: true},
		{name: "DEL", setup: []string{"SET k 1"}, key: "k", between: []string{"DEL nokey k"}, changed: true},
		// What Redis does not count as a change, as it changes nothing.
		{name: "DEL of a missing key", key: "k", between: []string{"DEL k", "UNLINK k", "GETDEL k"}},
		{name: "DEL of another key", setup: []string{"SET k 1", "SET o 1"}, key: "k", between: []string{"DEL o nokey"}},
		{name: "EXPIRE refused", setup: []string{"SET k 1 EX 100"}, key: "k", between: []string{"EXPIRE k 50 GT", "EXPIRE k 500 NX", "EXPIRE nokey 10", "PERSIST nokey"}},
		{name: "PERSIST without a TTL", setup: []string{"SET k 1"}, key: "k", between: []string{"PERSIST k", "GETEX k", "GETEX k PERSIST"}},
		{name: "PERSIST", setup: []string{"SET k 1 EX 100"}, key: "k", between: []string{"PERSIST k"}, changed: true},
		{name: "SET NX refused", setup: []string{"SET k 1"}, key: "k", between: []string{"SET k 2 NX", "SETNX k 2", "MSETNX o 1 k 2", "SET k 2 NX GET"}},
		{name: "SET XX refused", key: "k", between: []string{"SET k 2 XX", "GETEX k EX 10"}},
		{name: "RENAME onto itself", setup: []string{"SET k 1", "SET o 1"}, key: "k", between: []string{"RENAME k k", "RENAMENX o k", "MOVE nokey 1"}},
		{name: "BITOP of nothing onto nothing", key: "k", between: []string{"BITOP OR k nokey"}},
		{name: "BITOP of nothing onto a key", setup: []string{"SET k 1"}, key: "k", between: []string{"BITOP OR k nokey"}, changed: true},
		{name: "BITFIELD without a write", setup: []string{"SET k 1"}, key: "k", between: []string{"BITFIELD k GET u8 0", "BITFIELD k OVERFLOW FAIL INCRBY u2 0 100"}},
		{name: "BITFIELD", setup: []string{"SET k 1"}, key: "k", between: []string{"BITFIELD k GET u8 0 SET u8 0 49"}, changed: true},
		{name: "SETBIT of the same value", setup: []string{"SETBIT k 7 1"}, key: "k", between: []string{"SETBIT k 7 1", "SETBIT k 6 0"}},
		{name: "SETBIT past the end", setup: []string{"SETBIT k 7 0"}, key: "k", between: []string{"SETBIT k 100 0"}, changed: true},
		// Flushes and swaps change the keys they find, as Redis signals
		// them.
		{name: "FLUSHDB", setup: []string{"SET k 1"}, key: "k", between: []string{"FLUSHDB"}, changed: true},
		{name: "FLUSHDB of a missing key", setup: []string{"SET o 1"}, key: "k", between: []string{"FLUSHDB"}},
		{name: "FLUSHDB of another database", setup: []string{"SET k 1"}, db: 1, key: "k", between: []string{"FLUSHDB"}},
		{name: "FLUSHDB of more keys than buckets", setup: []string{msetMany(versionBuckets + 1)}, key: "k", between: []string{"FLUSHDB"}, changed: true},
		{name: "FLUSHALL", setup: []string{"SET k 1", "MOVE k 3"}, db: 3, key: "k", between: []string{"FLUSHALL"}, changed: true},
		{name: "FLUSHALL of a missing key", setup: []string{"SET k 1"}, db: 3, key: "k", between: []string{"FLUSHALL"}},
		{name: "SWAPDB, the key arriving", setup: []string{"SET k 1"}, db: 2, key: "k", between: []string{"SWAPDB 0 2"}, changed: true},
		{name: "SWAPDB, the key leaving", setup: []string{"SET k 1"}, key: "k", between: []string{"SWAPDB 0 2"}, changed: true},
		{name: "SWAPDB of missing keys", setup: []string{"SET o 1"}, db: 2, key: "k", between: []string{"SWAPDB 0 2"}},
		{name: "key expired", setup: []string{"SET k 1 PX 100"}, key: "k", at: 101, changed: true},
		{name: "TTL not reached", setup: []string{"SET k 1 PX 100"}, key: "k", at: 100},
		{name: "a bit expired", setup: []string{"BITPSETEX k 100 7"}, key: "k", between: []string{"SET other 1"}, at: 500, changed: true},
		{name: "a read", setup: []string{"SET k 1"}, key: "k", between: []string{"GET k", "BITCOUNT k"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := New()
			for _, l := range c.setup {
				do(s, testNow, l)
			}
			w := s.Watch(c.db, []byte(c.key))
			for _, l := range c.between {
				do(s, testNow+c.at, l)
			}
			got := watchRuns(s, testNow+c.at, w, "SET k tx", "INCR n")
			want := []string{"+OK\r\n", "+OK\r\n", ":1\r\n", "+OK\r\n"}
			if c.changed {
				want = []string{"*-1\r\n", "$-1\r\n", "$-1\r\n", "+OK\r\n"}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("replies %q, want %q", got, want)
			}
			if v := do(s, testNow+c.at, "GET k"); (v == "$2\r\ntx\r\n") == c.changed {
				t.Fatalf("after the transaction GET k is %q", v)
			}
		})
	}
}

// TestWatchCheckOnReadPath runs checks of read-only transactions through
// Read, as a node answers them without a log entry: there a key whose
// TTL passed is still stored, and counts as changed all the same.
func TestWatchCheckOnReadPath(t *testing.T) {
	s := New()
	do(s, testNow, "SET k 1")
	do(s, testNow, "SET short 1 PX 100")
	read := func(w Watched, now int64) string {
		var out Replies
		s.Read([]Command{WatchCheck(1, []Watched{w}), {Args: bytesArgs("GET k")}, {Args: bytesArgs("STRLEN k")}}, now, &out)
		return string(out.Reply(0)) + string(out.Reply(1)) + string(out.Reply(2))
	}
	k, short := s.Watch(0, []byte("k")), s.Watch(0, []byte("short"))
	if got := read(k, testNow); got != "+OK\r\n$1\r\n1\r\n:1\r\n" {
		t.Fatalf("unchanged: %q", got)
	}
	if got := read(short, testNow+101); got != "*-1\r\n$-1\r\n:1\r\n" {
		t.Fatalf("expired, not removed: %q", got)
	}
	do(s, testNow, "APPEND k 2")
	if got := read(k, testNow); got != "*-1\r\n$-1\r\n:2\r\n" {
		t.Fatalf("changed: %q", got)
	}
}

// TestWatchCheckSyntax refuses malformed checks without skipping what
// follows.
func TestWatchCheckSyntax(t *testing.T) {
	s := New()
	for _, line := range []string{
		"WATCHCHECK x 0 k 0", "WATCHCHECK -1 0 k 0", "WATCHCHECK 1 0 k 0 1",
		"WATCHCHECK 1 16 k 0", "WATCHCHECK 1 0 k -1", "WATCHCHECK 1 0 k x",
	} {
		var out Replies
		s.Apply([]Command{{Args: bytesArgs(line)}, {Args: bytesArgs("SET k 1")}}, testNow, &out)
		if got := string(out.Reply(0)) + string(out.Reply(1)); got != "-ERR syntax error\r\n+OK\r\n" {
			t.Errorf("%s: %q", line, got)
		}
	}
	if got := do(s, testNow, "WATCHCHECK 1 0 k"); !strings.HasPrefix(got, "-ERR wrong number of arguments") {
		t.Errorf("too few arguments: %q", got)
	}
}

// TestVersionsInSnapshots restores the versions, so a check decides the
// same on a replica restored from a snapshot, and rejects versions that
// could not have been handed out.
func TestVersionsInSnapshots(t *testing.T) {
	s := New()
	// Database 1 gets more keys than buckets, so that its flush stamps
	// it as a whole: version 1, then 2; then 3 and 4.
	var many []Command
	for i := range versionBuckets + 1 {
		many = append(many, Command{DB: 1, Args: bytesArgs(fmt.Sprintf("SET many:%d 1", i))})
	}
	s.Apply(append(many, Command{Args: bytesArgs("SET k 1")}), testNow, &Replies{})
	execAt(s, testNow, 1, []byte("FLUSHDB"))
	do(s, testNow, "SET a 1")
	do(s, testNow, "SET b 1")
	r := snapRoundTrip(t, s)
	if r.mu.versions != s.mu.versions {
		t.Fatal("the restored versions differ")
	}
	for _, w := range []Watched{{Key: "a", Version: 3}, {Key: "b", Version: 4}, {Key: "k", Version: 1}, {DB: 1, Key: "missing", Version: 2}} {
		got, was := r.Watch(w.DB, []byte(w.Key)), s.Watch(w.DB, []byte(w.Key))
		if got != was || was.Version < w.Version {
			t.Fatalf("version of %s in database %d: %d restored, %d, want at least %d", w.Key, w.DB, got.Version, was.Version, w.Version)
		}
	}
	data := snapBytes(t, s)
	vers := appendVersions(nil, &s.mu.versions)
	// The latest version (4), 16 database stamps (database 1's is
	// FLUSHDB's, 2), the count of buckets stamped, then each bucket's
	// gap and stamp.
	stamped := 0
	for _, b := range s.mu.versions.buckets {
		if b != 0 {
			stamped++
		}
	}
	if n, _ := binary.Uvarint(vers[17:]); vers[0] != 4 || vers[1] != 0 || vers[2] != 2 || n != uint64(stamped) {
		t.Fatalf("versions encode to % x", vers[:20])
	}
	at := len(data) - 4 - len(vers)
	with := func(what string, section []byte) {
		b := append(append(append([]byte(nil), data[:at]...), section...), 0, 0, 0, 0)
		snapRejects(t, snapVictim(), resum(b), what)
	}
	dbs := make([]byte, NumDBs)
	with("a stamp after the latest", append(append([]byte{1}, dbs...), vers[17:]...))
	with("a database stamp after the latest", append(append([]byte{4, 9}, dbs[1:]...), vers[17:]...))
	with("too many buckets", binary.AppendUvarint(append([]byte{4}, dbs...), versionBuckets+1))
	with("a bucket out of range", append(binary.AppendUvarint(append([]byte{4}, append(dbs, 1)...), versionBuckets), 1))
	with("a section cut short", vers[:len(vers)-1])
}
