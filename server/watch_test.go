package server

import (
	"context"
	"errors"
	"net"
	osexec "os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/presenced/presenced/server/redisserver"
	"github.com/redis/go-redis/v9"
)

// TestWatchSeesOtherConnections fails an EXEC after another connection
// changed a watched key, on a standalone server, whose connections event
// loops serve: by a write, by expiry, and not by a change of another key.
func TestWatchSeesOtherConnections(t *testing.T) {
	srv := startServer(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	transaction := func() string {
		a.expect("+OK\r\n", "MULTI")
		a.expect("+QUEUED\r\n", "INCR", "n")
		return a.do("EXEC")
	}
	a.expect("+OK\r\n", "WATCH", "k", "j")
	b.expect("+OK\r\n", "SET", "other", "1")
	if got := transaction(); got != "*1\r\n:1\r\n" {
		t.Fatalf("another key changed: EXEC %q", got)
	}
	a.expect("+OK\r\n", "WATCH", "k", "j")
	b.expect("+OK\r\n", "SET", "j", "1")
	if got := transaction(); got != "*-1\r\n" {
		t.Fatalf("a watched key changed: EXEC %q", got)
	}
	b.expect("+OK\r\n", "SET", "k", "1", "PX", "1")
	a.expect("+OK\r\n", "WATCH", "k")
	for b.do("EXISTS", "k") != ":0\r\n" {
		b.expect("+OK\r\n", "SET", "other", "1") // a write: the store's time moves on
	}
	if got := transaction(); got != "*-1\r\n" {
		t.Fatalf("a watched key expired: EXEC %q", got)
	}
	a.expect("$1\r\n1\r\n", "GET", "n")
}

// TestWatchIncrementsOnEveryNode runs go-redis's optimistic transactions
// (WATCH, GET, MULTI, SET, EXEC, retried when EXEC fails) from clients of
// every node of a cluster, all on one counter: no increment may be lost,
// which it would be if a check let a transaction through after another
// changed the counter. The followers forward their transactions, check
// included, to the leader; every replica ends with the same state.
func TestWatchIncrementsOnEveryNode(t *testing.T) {
	srvs := startCluster(t, 3)
	ctx := context.Background()
	const workersPerNode, increments = 3, 12
	var retries atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, len(srvs)*workersPerNode)
	for _, srv := range srvs {
		rdb := newGoRedis(t, srv)
		for range workersPerNode {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for done := 0; done < increments; {
					err := rdb.Watch(ctx, func(tx *redis.Tx) error {
						n, err := tx.Get(ctx, "counter").Int()
						if err != nil && !errors.Is(err, redis.Nil) {
							return err
						}
						_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
							p.Set(ctx, "counter", n+1, 0)
							return nil
						})
						return err
					}, "counter")
					switch {
					case errors.Is(err, redis.TxFailedErr):
						retries.Add(1)
					case err != nil:
						errs <- err
						return
					default:
						done++
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := strconv.Itoa(len(srvs) * workersPerNode * increments)
	if got, err := newGoRedis(t, srvs[0]).Get(ctx, "counter").Result(); got != want || err != nil {
		t.Fatalf("counter %q, %v; want %s (after %d retries)", got, err, want, retries.Load())
	}
	t.Logf("%s increments, %d retries", want, retries.Load())
	checkDigests(t, srvs)
}

// watchPyScript drives WATCH with redis-py: a transaction that nobody
// interferes with, one whose key another connection changes between
// WATCH and EXEC, and redis-py's retrying transaction helper. It prints
// the results as JSON.
const watchPyScript = `
import json, sys, redis
r = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]))
other = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]))
k = "watched"
r.set(k, 1)
def attempt(interfere):
    with r.pipeline() as p:
        p.watch(k)
        v = int(p.get(k))
        if interfere:
            other.set(k, 100)
        p.multi()
        p.set(k, v + 1)
        try:
            return p.execute()
        except redis.WatchError:
            return "WatchError"
out = [attempt(False), attempt(True), int(r.get(k))]
def incr(p):
    v = int(p.get(k))
    p.multi()
    p.set(k, v + 1)
out += [r.transaction(incr, k), int(r.get(k))]
print(json.dumps(out))
`

// TestWatchRedisPy runs the redis-py session on a follower and on
// redis-server and compares the results.
func TestWatchRedisPy(t *testing.T) {
	python := pythonWithRedis(t)
	_, _, f := leaderAndFollower(t)
	ref := redisserver.StartForTest(t, redisserver.Options{})
	run := func(addr string) string {
		_, port, _ := net.SplitHostPort(addr)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := osexec.CommandContext(ctx, python, "-c", watchPyScript, port).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-py on %s: %v\n%s", addr, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	got, want := run(f.Addr()), run(ref.Addr())
	if got != want || want != `[[true], "WatchError", 100, [true], 101]` {
		t.Fatalf("redis-py on a follower: %s; on redis-server: %s", got, want)
	}
}
