package server

import (
	"strconv"
	"strings"
	"testing"

	"github.com/presenced/presenced/server/redisserver"
)

// TestMigrateFromRedis moves keys from a redis-server into presenced with
// Redis's own MIGRATE, which sends RESTOREs: to a standalone node and to
// a follower, which forwards them. The bitmaps, strings and TTLs arrive
// as they were; presenced's DUMP restores on redis-server again.
func TestMigrateFromRedis(t *testing.T) {
	ref := dial(t, redisserver.StartForTest(t, redisserver.Options{}).Addr())
	standalone := startServer(t)
	_, _, follower := leaderAndFollower(t)
	for _, target := range []*Server{standalone, follower} {
		ref.expect("+OK\r\n", "FLUSHALL")
		for id := 0; id < 200000; id += 7 + id%13 {
			ref.send([]byte("SETBIT online " + strconv.Itoa(id) + " 1\r\n"))
		}
		for id := 0; id < 200000; id += 7 + id%13 {
			ref.reply()
		}
		ref.expect("+OK\r\n", "SET", "count", "12345")
		ref.expect("+OK\r\n", "SET", "session", strings.Repeat("alice ", 100), "EX", "1000")
		want := map[string]string{}
		for _, k := range []string{"online", "count", "session"} {
			want[k] = ref.do("GET", k)
		}

		_, port, _ := strings.Cut(target.Addr(), ":")
		ref.expect("+OK\r\n", "MIGRATE", "127.0.0.1", port, "online", "0", "5000", "COPY")
		ref.expect("+OK\r\n", "MIGRATE", "127.0.0.1", port, "", "0", "5000", "COPY", "KEYS", "count", "session")
		ref.expect("-ERR Target instance replied with error: BUSYKEY Target key name already exists.\r\n", "MIGRATE", "127.0.0.1", port, "count", "0", "5000", "COPY")
		c := dial(t, target.Addr())
		for k, v := range want {
			if got := c.do("GET", k); got != v {
				t.Errorf("%s: GET %s after MIGRATE: %.60q, want %.60q", target.Addr(), k, got, v)
			}
		}
		if ttl := intBody(t, c.do("TTL", "session")); ttl < 990 || ttl > 1000 {
			t.Errorf("%s: TTL of a migrated key: %d", target.Addr(), ttl)
		}
		if got, want := c.do("BITCOUNT", "online"), ref.do("BITCOUNT", "online"); got != want {
			t.Errorf("%s: BITCOUNT after MIGRATE %q, want %q", target.Addr(), got, want)
		}

		// And back: presenced's DUMP, restored by redis-server.
		for k, v := range want {
			payload := bulkBody(t, c.do("DUMP", k))
			ref.expect("+OK\r\n", "RESTORE", k+":back", "0", payload)
			if got := ref.do("GET", k+":back"); got != v {
				t.Errorf("redis-server restored presenced's DUMP of %s as %.60q", k, got)
			}
		}
	}
}
