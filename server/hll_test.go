package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/presenced/presenced/server/redisserver"
)

// TestHyperLogLogGrowthMatchesRedis grows HyperLogLogs from empty until
// they turn dense, a few elements at a time, and merges one into another
// on the way, comparing every reply and the strings' bytes after each
// step with redis-server's: the sparse opcodes presenced writes, split
// and merged as each register rises, must be Redis's own.
func TestHyperLogLogGrowthMatchesRedis(t *testing.T) {
	d := newDiffer(t)
	for seed := range uint64(4) {
		r := rand.New(rand.NewPCG(seed, 0x686c6c))
		var cmds [][][]byte
		for added := 0; added < 8000; {
			key := []string{"h", "g"}[r.IntN(2)]
			args := []string{"PFADD", key}
			for range 1 + r.IntN(6) {
				args = append(args, strconv.FormatUint(r.Uint64(), 36))
				added++
			}
			cmds = append(cmds, argv(args...), argv("GET", key))
			switch r.IntN(40) {
			case 0:
				cmds = append(cmds, argv("PFCOUNT", key), argv("GET", key), argv("PFCOUNT", "h", "g"))
			case 1:
				cmds = append(cmds, argv("PFMERGE", "m", "h", "g"), argv("GET", "m"), argv("PFCOUNT", "m"))
			}
		}
		d.run(fmt.Sprintf("seed %d", seed), cmds, true)
		if t.Failed() {
			return
		}
	}
}

// pfSelfTestTimeout bounds a PFSELFTEST's reply: seconds under the race
// detector, more on a loaded machine.
const pfSelfTestTimeout = 5 * time.Minute

// TestPFSelfTestMatchesRedis runs PFSELFTEST on presenced and on
// redis-server: both pass Redis's checks. It has a test of its own, out
// of the differential scripts, for the time it takes under the race
// detector (seconds, where the scripts' replies have ten at most on a
// loaded machine).
func TestPFSelfTestMatchesRedis(t *testing.T) {
	ctx := context.Background()
	var replies []string
	for _, addr := range []string{startServer(t).Addr(), redisserver.StartForTest(t, redisserver.Options{}).Addr()} {
		rdb := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: pfSelfTestTimeout, MaxRetries: -1})
		t.Cleanup(func() { rdb.Close() })
		reply, err := rdb.Do(ctx, "PFSELFTEST").Text()
		if err != nil {
			t.Fatalf("PFSELFTEST on %s: %v", addr, err)
		}
		replies = append(replies, reply)
	}
	if replies[0] != "OK" || replies[1] != "OK" {
		t.Errorf("PFSELFTEST: presenced %q, redis-server %q", replies[0], replies[1])
	}
}
