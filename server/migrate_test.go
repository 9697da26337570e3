package server

import (
	"bytes"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/presenced/presenced/proto"
	"github.com/presenced/presenced/server/redisserver"
)

// migrateScript is run against a redis-server and against presenced, each
// migrating to the same third server, a redis-server: lines starting with
// "target" run on it, the others on the source. $PORT is the target's
// port, $CLOSED a port where nothing listens.
var migrateScript = []string{
	"MIGRATE a b c d",
	"MIGRATE 127.0.0.1 $PORT k 0 1000 NOSUCH",
	"MIGRATE 127.0.0.1 $PORT k 0 1000 AUTH",
	"MIGRATE 127.0.0.1 $PORT k 0 1000 AUTH2 user",
	"MIGRATE 127.0.0.1 $PORT k 0 1000 COPY KEYS a b",
	"MIGRATE 127.0.0.1 $PORT k 0 soon",
	"MIGRATE 127.0.0.1 $PORT k zero 1000",
	"MIGRATE 127.0.0.1 $PORT k zero soon NOSUCH",
	"MIGRATE 127.0.0.1 $PORT k 0 1000",
	`MIGRATE 127.0.0.1 $PORT "" 0 1000 KEYS`,
	`MIGRATE 127.0.0.1 $PORT "" 0 1000 KEYS a b`,
	// A bitmap and a string with a TTL move; the bitmap's bytes arrive.
	"SETBIT k 7 1",
	"SETBIT k 100 1",
	"SET s hello PX 100000",
	"MIGRATE 127.0.0.1 $PORT k 0 1000",
	"EXISTS k",
	"target GET k",
	"target PTTL k",
	`MIGRATE 127.0.0.1 $PORT "" 0 0 KEYS nosuch s`,
	"EXISTS s",
	"target PTTL s",
	"target GET s",
	// COPY keeps the source; a key the target has is refused without
	// REPLACE, and stays; the others of the call still move.
	"SET k again",
	"SET n 42",
	`MIGRATE 127.0.0.1 $PORT "" 0 1000 COPY KEYS k n`,
	"EXISTS k n",
	"target GET k",
	"target GET n",
	"SET n 43",
	"SET fresh 1",
	`MIGRATE 127.0.0.1 $PORT "" 0 1000 KEYS n fresh`,
	"EXISTS n fresh",
	"target GET n",
	"target GET fresh",
	`MIGRATE 127.0.0.1 $PORT "" 0 1000 REPLACE KEYS n`,
	"EXISTS n",
	"target GET n",
	// Another database on each side.
	"SELECT 1",
	"SET other x",
	"MIGRATE 127.0.0.1 $PORT other 2 1000",
	"EXISTS other",
	"SELECT 0",
	"target SELECT 2",
	"target GET other",
	"target SELECT 0",
	// The target refuses the database, or AUTH: nothing moves.
	"SET k v",
	"MIGRATE 127.0.0.1 $PORT k 99 1000",
	"MIGRATE 127.0.0.1 $PORT k 0 1000 AUTH secret",
	"MIGRATE 127.0.0.1 $PORT k 0 1000 AUTH2 default secret",
	"MIGRATE 127.0.0.1 $PORT k 0 1000 REPLACE AUTH2 default secret AUTH other",
	"EXISTS k",
	// Nothing listens.
	"MIGRATE 127.0.0.1 $CLOSED k 0 1000",
	"EXISTS k",
}

// TestMigrateDiff runs migrateScript from a redis-server and from
// presenced, to the same redis-server, and compares every reply, of the
// sources and of the target.
func TestMigrateDiff(t *testing.T) {
	dst := redisserver.StartForTest(t, redisserver.Options{})
	_, port, _ := net.SplitHostPort(dst.Addr())
	closed := closedPort(t)
	target := dialTarget(t, "target", dst.Addr())
	run := func(src *diffTarget) []string {
		var replies []string
		for _, args := range [][]string{{"FLUSHALL"}, {"SELECT", "0"}} {
			for _, d := range []*diffTarget{src, target} {
				if _, err := d.do(argv(args...)); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, line := range migrateScript {
			line = strings.NewReplacer("$PORT", port, "$CLOSED", closed).Replace(line)
			d := src
			if rest, ok := strings.CutPrefix(line, "target "); ok {
				d, line = target, rest
			}
			args, ok := proto.SplitArgs([]byte(line))
			if !ok {
				t.Fatalf("cannot split %q", line)
			}
			reply, err := d.do(args)
			if err != nil {
				t.Fatal(err)
			}
			replies = append(replies, string(normalise(args, reply)))
		}
		return replies
	}
	want := run(dialTarget(t, "redis", redisserver.StartForTest(t, redisserver.Options{}).Addr()))
	got := run(dialTarget(t, "presenced", startServer(t).Addr()))
	for i, line := range migrateScript {
		if got[i] != want[i] {
			t.Errorf("%s: presenced %q, redis-server %q", line, got[i], want[i])
		}
	}
}

// closedPort returns a port of 127.0.0.1 where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	return port
}

// TestMigrateLeavesAChangedKey checks that a key written after MIGRATE
// read it is not deleted: the target has the value read, and the source
// keeps the new one.
func TestMigrateLeavesAChangedKey(t *testing.T) {
	s := startServer(t)
	keys := s.store.Migration(0, [][]byte{[]byte("k")}, 0)
	if len(keys) != 0 {
		t.Fatalf("an empty store migrates %d keys", len(keys))
	}
	c := dialTarget(t, "presenced", s.Addr())
	if _, err := c.do(argv("SET", "k", "old")); err != nil {
		t.Fatal(err)
	}
	keys = s.store.Migration(0, [][]byte{[]byte("k"), []byte("nosuch")}, 0)
	if len(keys) != 1 || !bytes.Contains(keys[0].Payload, []byte("old")) {
		t.Fatalf("Migration: %+v", keys)
	}
	if _, err := c.do(argv("SET", "k", "new")); err != nil {
		t.Fatal(err)
	}
	cl := &client{s: s, db: 0}
	if got := cl.deleteMigrated(keys); got != errMigrateChanged {
		t.Errorf("deleting a key changed since it was read: %q", got)
	}
	if reply, _ := c.do(argv("GET", "k")); string(reply) != "$3\r\nnew\r\n" {
		t.Errorf("GET k: %q", reply)
	}
	keys = s.store.Migration(0, [][]byte{[]byte("k")}, 0)
	if got := cl.deleteMigrated(keys); got != "" {
		t.Errorf("deleting an unchanged key: %q", got)
	}
	if reply, _ := c.do(argv("EXISTS", "k")); string(reply) != ":0\r\n" {
		t.Errorf("EXISTS k after the deletion: %q", reply)
	}
}

// TestMigrateFromAFollower migrates keys from a follower of a cluster to
// another presenced: the target restores their values and TTL, every node
// of the cluster deletes them (the follower forwards the deletion), and
// the replicas stay equal.
func TestMigrateFromAFollower(t *testing.T) {
	srvs, l, f := leaderAndFollower(t)
	dst := startServer(t)
	_, port, _ := net.SplitHostPort(dst.Addr())
	runScript(t, l.Addr(), [][]string{{"SETBIT", "bits", "1000", "1"}, {"SET", "s", "v", "EX", "100"}, {"SET", "kept", "x"}})
	got := runScript(t, f.Addr(), [][]string{
		{"MIGRATE", "127.0.0.1", port, "", "0", "1000", "KEYS", "bits", "s", "nosuch"},
		{"MIGRATE", "127.0.0.1", port, "kept", "0", "1000", "COPY"},
	})
	if want := []string{"+OK\r\n", "+OK\r\n"}; !slices.Equal(got, want) {
		t.Fatalf("MIGRATE from a follower: %q, want %q", got, want)
	}
	for _, s := range srvs {
		if got := runScript(t, s.Addr(), [][]string{{"EXISTS", "bits", "s", "kept"}}); got[0] != ":1\r\n" {
			t.Errorf("%s: EXISTS bits s kept after MIGRATE: %q, want 1 (kept, copied)", s.Node().Config().NodeID, got[0])
		}
	}
	got = runScript(t, dst.Addr(), [][]string{{"GETBIT", "bits", "1000"}, {"BITCOUNT", "bits"}, {"GET", "s"}, {"TTL", "s"}, {"GET", "kept"}})
	if got[0] != ":1\r\n" || got[1] != ":1\r\n" || got[2] != "$1\r\nv\r\n" || got[3] == ":-1\r\n" || got[3] == ":-2\r\n" || got[4] != "$1\r\nx\r\n" {
		t.Errorf("the target holds %q", got)
	}
	checkDigests(t, srvs)
}

// TestMigrateInClusterMode checks that a node with --cluster-enabled yes
// restores the keys it migrates with RESTORE-ASKING, as a node of Redis
// Cluster does, which a redis-server target counts.
func TestMigrateInClusterMode(t *testing.T) {
	src := startServer(t, enableCluster)
	dst := redisserver.StartForTest(t, redisserver.Options{})
	_, port, _ := net.SplitHostPort(dst.Addr())
	got := runScript(t, src.Addr(), [][]string{{"SET", "k", "v"}, {"MIGRATE", "127.0.0.1", port, "k", "0", "1000"}})
	if want := []string{"+OK\r\n", "+OK\r\n"}; !slices.Equal(got, want) {
		t.Fatalf("MIGRATE: %q, want %q", got, want)
	}
	stats := bulkBody(t, dial(t, dst.Addr()).do("INFO", "commandstats"))
	if !strings.Contains(stats, "cmdstat_restore-asking:calls=1,") || strings.Contains(stats, "cmdstat_restore:") {
		t.Errorf("the target's commandstats: %q", stats)
	}
}

// TestMigrateCachesItsConnection runs the same MIGRATEs from a
// redis-server and from presenced, each to a target of its own, and
// compares what the targets saw: the connections made to them and the
// SELECTs sent (none while the database stays the same, one again after
// the target refused a key), and the connections the sources keep.
func TestMigrateCachesItsConnection(t *testing.T) {
	seen := func(src *respConn) string {
		dst := redisserver.StartForTest(t, redisserver.Options{})
		_, port, _ := net.SplitHostPort(dst.Addr())
		target := dial(t, dst.Addr())
		target.expect("+OK\r\n", "SET", "k5", "there")
		target.expect("+OK\r\n", "SELECT", "1")
		target.expect("+OK\r\n", "SET", "k5", "there")
		for i, db := range []string{"0", "0", "1", "1", "1", "1"} {
			key := fmt.Sprint("k", i+1)
			src.expect("+OK\r\n", "SET", key, "v")
			src.do("MIGRATE", "127.0.0.1", port, key, db, "1000")
		}
		_, stats := infoFields(t, target.do("INFO", "stats"))
		_, commands := infoFields(t, target.do("INFO", "commandstats"))
		calls, _, _ := strings.Cut(commands["cmdstat_select"], ",")
		_, source := infoFields(t, src.do("INFO", "stats"))
		return fmt.Sprintf("connections %s, SELECT %s, cached %s",
			stats["total_connections_received"], calls, source["migrate_cached_sockets"])
	}
	want := seen(dial(t, redisserver.StartForTest(t, redisserver.Options{}).Addr()))
	if got := seen(dial(t, startServer(t).Addr())); got != want {
		t.Errorf("the target of presenced saw %s; of redis-server, %s", got, want)
	}
}

// TestMigrateSocketsExpire checks that an idle connection MIGRATE keeps
// is closed once unused for longer than migrateSocketTTL, and not before.
func TestMigrateSocketsExpire(t *testing.T) {
	var ms migrateSockets
	a, b := net.Pipe()
	t.Cleanup(func() { b.Close() })
	now := time.Now()
	ms.put("t:1", &migrateConn{conn: a, lastDB: 0}, now)
	ms.closeIdle(now.Add(migrateSocketTTL))
	if ms.count() != 1 {
		t.Fatalf("a connection idle for exactly the TTL was closed")
	}
	ms.closeIdle(now.Add(migrateSocketTTL + time.Second))
	if ms.count() != 0 {
		t.Fatalf("a connection idle past the TTL is kept")
	}
	if _, err := a.Write([]byte("x")); err == nil {
		t.Errorf("the expired connection is still open")
	}
}
