package server

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/presenced/presenced/server/redisserver"
	"github.com/redis/go-redis/v9"
)

// goRedisRESP3Results runs, with go-redis in RESP3 (its default), the
// commands whose replies RESP3 changes, and returns what go-redis made of
// each.
func goRedisRESP3Results(t *testing.T, rdb *redis.Client) map[string]any {
	t.Helper()
	ctx := context.Background()
	out := map[string]any{}
	note := func(what string, v any, err error) {
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("%s: %v", what, err)
		}
		out[what] = v
		out[what+" error"] = errors.Is(err, redis.Nil)
	}
	info, err := rdb.Do(ctx, "CLIENT", "INFO").Text()
	if err != nil || !strings.Contains(info, " resp=3") {
		t.Fatalf("CLIENT INFO = %q, %v: not in RESP3", info, err)
	}
	v, err := rdb.Get(ctx, "nosuch").Result()
	note("GET", v, err)
	v, err = rdb.SetArgs(ctx, "k", "v", redis.SetArgs{Get: true}).Result()
	note("SET GET", v, err)
	vs, err := rdb.MGet(ctx, "k", "nosuch").Result()
	note("MGET", vs, err)
	cfg, err := rdb.ConfigGet(ctx, "maxclients").Result()
	note("CONFIG GET", cfg, err)
	rdb.Set(ctx, "a", "ohmytext", 0)
	rdb.Set(ctx, "b", "mynewtext", 0)
	lcs, err := rdb.LCS(ctx, &redis.LCSQuery{Key1: "a", Key2: "b", Idx: true, WithMatchLen: true}).Result()
	note("LCS IDX", lcs, err)
	text, err := rdb.Info(ctx, "keyspace").Result()
	note("INFO keyspace", text, err)
	cmds, err := rdb.Command(ctx).Result()
	if err != nil {
		t.Fatalf("COMMAND: %v", err)
	}
	out["COMMAND get"] = *cmds["get"]

	sub := rdb.Subscribe(ctx, "ch")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatalf("SUBSCRIBE: %v", err)
	}
	n, err := rdb.Publish(ctx, "ch", "hi").Result()
	note("PUBLISH", n, err)
	msg, err := sub.ReceiveMessage(ctx)
	note("message", *msg, err)
	return out
}

// TestGoRedisRESP3 compares what go-redis in RESP3 gets from presenced
// and from redis-server.
func TestGoRedisRESP3(t *testing.T) {
	ref := redisserver.StartForTest(t, redisserver.Options{})
	theirs := redis.NewClient(&redis.Options{Addr: ref.Addr(), MaxRetries: -1})
	t.Cleanup(func() { theirs.Close() })
	got, want := goRedisRESP3Results(t, newGoRedis(t, startServer(t))), goRedisRESP3Results(t, theirs)
	for what, w := range want {
		if what == "INFO keyspace" {
			continue // compared below, as it lists each server's own
		}
		if g := got[what]; !reflect.DeepEqual(g, w) {
			t.Errorf("%s: presenced %#v, redis-server %#v", what, g, w)
		}
	}
	if g := got["INFO keyspace"].(string); !strings.HasPrefix(g, "# Keyspace\r\ndb0:keys=3,expires=0,") {
		t.Errorf("INFO keyspace: %q", g)
	}
}
