package server

import (
	"context"
	"fmt"
	"maps"
	"net"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/presenced/presenced/server/redisserver"
)

// TestSyncBackupLoadsIntoRedis takes a backup of a node with `redis-cli
// --rdb`, which asks for it with SYNC as a replica would, and starts a
// redis-server on the file: every key of every database comes back with
// its bytes and its TTL (strings, integers, bitmaps set bit by bit, dense
// and far out, a HyperLogLog), and nothing else does. The backup is taken
// from a follower, after a write through the leader it must hold.
func TestSyncBackupLoadsIntoRedis(t *testing.T) {
	cli := requireTool(t, "redis-cli")
	srvs := startCluster(t, 3)
	l := clusterLeader(t, srvs)
	c := dial(t, l.Addr())
	for _, cmd := range [][]string{
		{"SET", "s", "hello"}, {"SET", "n", "12345"}, {"SET", "empty", ""},
		{"SETBIT", "b", "7", "1"}, {"SETBIT", "b", "100", "1"}, {"SETBIT", "far", "40000000", "1"},
		{"PFADD", "h", "a", "b", "c"}, {"SET", "ttl", "v", "EX", "1000"},
		{"SELECT", "3"}, {"SETBIT", "online:bitmap:3", "300", "1"}, {"PEXPIRE", "online:bitmap:3", "5000000"},
		{"SELECT", "15"}, {"APPEND", "last", "v"},
	} {
		if got := c.do(cmd...); got[0] == '-' {
			t.Fatalf("%v: %q", cmd, got)
		}
	}
	for i := range 200 {
		c.expect("+OK\r\n", "SET", fmt.Sprint("k", i), fmt.Sprint(i*i))
	}
	follower := clusterFollowers(srvs, l)[0]
	host, port, _ := net.SplitHostPort(follower.Addr())
	dir := t.TempDir()
	out, err := osexec.Command(cli, "-h", host, "-p", port, "--rdb", filepath.Join(dir, "dump.rdb")).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --rdb: %v\n%s", err, out)
	}
	ref := redisserver.StartForTest(t, redisserver.Options{Dir: dir})
	compareKeyspaces(t, l.Addr(), ref.Addr())
}

// compareKeyspaces checks that the servers at got and want hold the same
// keys in every database, with the same bytes, and TTLs within a minute
// of each other.
func compareKeyspaces(t *testing.T, got, want string) {
	t.Helper()
	ctx := context.Background()
	for db := range 16 {
		var keys [2]map[string]string
		var ttls [2]map[string]time.Duration
		for i, addr := range []string{got, want} {
			rdb := redis.NewClient(&redis.Options{Addr: addr, DB: db, Protocol: 2})
			defer rdb.Close()
			all, err := rdb.Keys(ctx, "*").Result()
			if err != nil {
				t.Fatal(err)
			}
			keys[i], ttls[i] = map[string]string{}, map[string]time.Duration{}
			for _, k := range all {
				keys[i][k] = rdb.Get(ctx, k).Val()
				ttls[i][k] = rdb.PTTL(ctx, k).Val()
			}
		}
		if !maps.Equal(keys[0], keys[1]) {
			t.Errorf("db %d: keys %q, want %q", db, slices.Sorted(maps.Keys(keys[0])), slices.Sorted(maps.Keys(keys[1])))
		}
		for k, d := range ttls[1] {
			if g := ttls[0][k]; (g < 0) != (d < 0) || (g-d).Abs() > time.Minute {
				t.Errorf("db %d key %s: PTTL %v, want %v", db, k, g, d)
			}
		}
	}
}

// TestSyncEndsItsConnection checks SYNC's reply on the wire: the RDB
// file as a bulk string without the final CRLF, and then the end of the
// connection, since presenced streams no replication after it.
func TestSyncEndsItsConnection(t *testing.T) {
	c := dial(t, startServer(t).Addr())
	c.expect("+OK\r\n", "SET", "k", "v")
	c.send(redisserver.AppendCommand(nil, "SYNC"))
	rest := string(c.readToClose())
	var n int
	var body string
	if _, err := fmt.Sscanf(rest, "$%d\r\n", &n); err != nil {
		t.Fatalf("SYNC's reply %q", rest)
	}
	body = rest[len(fmt.Sprintf("$%d\r\n", n)):]
	if len(body) != n || body[:9] != "REDIS0010" || body[n-9] != 0xff {
		t.Errorf("SYNC's reply: %d bytes, a file of %d, %q", len(body), n, body)
	}
}
