package server

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	osexec "os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/presenced/presenced/server/redisserver"
)

// trackingScript exercises CLIENT TRACKING: connection 0 tracks (in
// RESP3 but where the script says), 1 writes, 2 takes redirected
// invalidations in RESP2.
var trackingScript = []psStep{
	{conn: 0, args: []string{"HELLO", "3"}},
	// Refusals, in Redis's order.
	{conn: 0, args: []string{"CLIENT", "TRACKING"}},
	{conn: 0, args: []string{"CLIENT", "TRACKING", "maybe"}},
	{conn: 0, args: []string{"CLIENT", "TRACKING", "on", "foo"}},
	{conn: 0, args: []string{"CLIENT", "TRACKING", "on", "REDIRECT"}},
	{conn: 0, args: []string{"CLIENT", "TRACKING", "on", "REDIRECT", "x"}},
	{conn: 0, args: []string{"CLIENT", "TRACKING", "on", "REDIRECT", "0"}},
	{conn: 0, args: []string{"CLIENT", "TRACKING", "on", "REDIRECT", "{id:2}", "REDIRECT", "{id:2}"}, ids: true},
	{conn: 0, args: []string{"CLIENT", "TRACKING", "on", "PREFIX", "a"}},
	{conn: 0, args: []string{"CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "a", "PREFIX", "ab"}},
	{conn: 0, args: []string{"CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "ab", "PREFIX", "a"}},
	{conn: 0, args: []string{"CLIENT", "TRACKING", "on", "BCAST", "OPTIN"}},
	{conn: 0, args: []string{"CLIENT", "TRACKING", "on", "OPTIN", "OPTOUT"}},
	{conn: 0, args: []string{"CLIENT", "TRACKING", "off", "PREFIX", "x"}},
	{conn: 0, args: []string{"CLIENT", "CACHING", "yes"}},
	{conn: 0, args: []string{"CLIENT", "CACHING"}},
	{conn: 0, args: []string{"CLIENT", "GETREDIR"}},
	{conn: 0, args: []string{"CLIENT", "TRACKINGINFO"}},
	{conn: 0, args: []string{"CLIENT", "TRACKINGINFO", "x"}},
	{conn: 0, args: []string{"CLIENT", "INFO"}, fields: []string{"flags", "redir"}},
	// The default mode: each key read is invalidated once, at its next
	// change.
	{conn: 0, args: []string{"CLIENT", "TRACKING", "on"}},
	{conn: 0, args: []string{"CLIENT", "TRACKING", "on", "BCAST"}},
	{conn: 0, args: []string{"CLIENT", "CACHING", "yes"}},
	{conn: 0, args: []string{"CLIENT", "GETREDIR"}},
	{conn: 0, args: []string{"CLIENT", "TRACKINGINFO"}},
	{conn: 0, args: []string{"CLIENT", "INFO"}, fields: []string{"flags", "redir"}},
	{conn: 0, args: []string{"GET", "k"}},
	{conn: 0, args: []string{"MGET", "k", "k2"}},
	{conn: 0, args: []string{"GETBIT", "bm", "5"}},
	{conn: 0, args: []string{"BITCOUNT", "bm2"}},
	{conn: 1, args: []string{"SET", "k", "1"}},
	{conn: 0, args: []string{"PING"}, n: 2},
	{conn: 1, args: []string{"SET", "k", "2"}}, // forgotten since
	{conn: 1, args: []string{"SETBIT", "bm", "5", "1"}},
	{conn: 1, args: []string{"MSET", "k2", "x", "bm2", "y"}},
	{conn: 0, args: []string{"PING"}, n: 4},
	{conn: 0, args: []string{"GETBIT", "bm", "5"}},
	{conn: 1, args: []string{"SETBIT", "bm", "5", "1"}}, // changes nothing
	{conn: 1, args: []string{"DEL", "nosuch"}},
	{conn: 0, args: []string{"PING"}},
	{conn: 1, args: []string{"SETBIT", "bm", "5", "0"}},
	{conn: 0, args: []string{"PING"}, n: 2},
	// Its own writes: after their replies, after EXEC's in a transaction,
	// where a read after the write is remembered again.
	{conn: 0, args: []string{"GET", "k"}},
	{conn: 0, args: []string{"SET", "k", "3"}, n: 2},
	{conn: 0, args: []string{"GET", "k"}},
	{conn: 0, args: []string{"MULTI"}},
	{conn: 0, args: []string{"SET", "k", "4"}},
	{conn: 0, args: []string{"GET", "k"}},
	{conn: 0, args: []string{"EXEC"}, n: 2},
	{conn: 1, args: []string{"APPEND", "k", "5"}},
	{conn: 0, args: []string{"PING"}, n: 2},
	{conn: 0, args: []string{"MULTI"}},
	{conn: 0, args: []string{"GET", "k"}},
	{conn: 0, args: []string{"SET", "k", "6"}},
	{conn: 0, args: []string{"EXEC"}, n: 2},
	{conn: 1, args: []string{"SET", "k", "7"}},
	{conn: 0, args: []string{"PING"}},
	// Flushes: a null for every tracking client. SWAPDB tells nothing.
	{conn: 0, args: []string{"GET", "k"}},
	{conn: 1, args: []string{"FLUSHDB"}},
	{conn: 0, args: []string{"PING"}, n: 2},
	{conn: 1, args: []string{"FLUSHALL"}},
	{conn: 0, args: []string{"PING"}, n: 2},
	{conn: 0, args: []string{"GET", "k"}},
	{conn: 1, args: []string{"SWAPDB", "0", "1"}},
	{conn: 0, args: []string{"PING"}},
	{conn: 1, args: []string{"SWAPDB", "0", "1"}},
	// OPTIN: only the command after CLIENT CACHING yes, or the
	// transaction.
	{conn: 0, args: []string{"CLIENT", "TRACKING", "off"}},
	{conn: 0, args: []string{"CLIENT", "INFO"}, fields: []string{"flags", "redir"}},
	{conn: 0, args: []string{"CLIENT", "TRACKING", "on", "OPTIN"}},
	{conn: 0, args: []string{"CLIENT", "TRACKING", "on", "OPTOUT"}},
	{conn: 0, args: []string{"CLIENT", "CACHING", "no"}},
	{conn: 0, args: []string{"CLIENT", "CACHING", "maybe"}},
	{conn: 0, args: []string{"GET", "o1"}},
	{conn: 0, args: []string{"CLIENT", "CACHING", "yes"}},
	{conn: 0, args: []string{"CLIENT", "TRACKINGINFO"}},
	{conn: 0, args: []string{"GET", "o2"}},
	{conn: 0, args: []string{"GET", "o3"}},
	{conn: 0, args: []string{"CLIENT", "TRACKINGINFO"}},
	{conn: 0, args: []string{"CLIENT", "CACHING", "yes"}},
	{conn: 0, args: []string{"MULTI"}},
	{conn: 0, args: []string{"GET", "o4"}},
	{conn: 0, args: []string{"GET", "o5"}},
	{conn: 0, args: []string{"EXEC"}},
	{conn: 0, args: []string{"GET", "o6"}},
	{conn: 1, args: []string{"MSET", "o1", "1", "o2", "2", "o3", "3", "o4", "4", "o5", "5", "o6", "6"}},
	{conn: 0, args: []string{"PING"}, n: 4},
	// OPTOUT: all but the command after CLIENT CACHING no; NOLOOP: not
	// its own writes.
	{conn: 0, args: []string{"CLIENT", "TRACKING", "off"}},
	{conn: 0, args: []string{"CLIENT", "TRACKING", "on", "OPTOUT", "NOLOOP"}},
	{conn: 0, args: []string{"CLIENT", "TRACKINGINFO"}},
	{conn: 0, args: []string{"CLIENT", "CACHING", "no"}},
	{conn: 0, args: []string{"CLIENT", "TRACKINGINFO"}},
	{conn: 0, args: []string{"GET", "o1"}},
	{conn: 0, args: []string{"GET", "o2"}},
	{conn: 0, args: []string{"GET", "o3"}},
	{conn: 0, args: []string{"SET", "o3", "x"}},
	{conn: 1, args: []string{"MSET", "o1", "1", "o2", "2", "o3", "3"}},
	{conn: 0, args: []string{"PING"}, n: 2},
	// BCAST: every key under the prefixes, one message per prefix and
	// write, its keys in order.
	{conn: 0, args: []string{"CLIENT", "TRACKING", "off"}},
	{conn: 0, args: []string{"CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "user:", "PREFIX", "bm"}},
	{conn: 0, args: []string{"CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "us"}},
	{conn: 0, args: []string{"CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "user:1:x"}},
	{conn: 0, args: []string{"CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "other"}},
	{conn: 0, args: []string{"CLIENT", "TRACKING", "on"}},
	{conn: 0, args: []string{"CLIENT", "TRACKINGINFO"}},
	{conn: 0, args: []string{"CLIENT", "INFO"}, fields: []string{"flags", "redir"}},
	{conn: 0, args: []string{"GET", "user:9"}},
	{conn: 1, args: []string{"MSET", "user:2", "a", "user:1", "b", "x", "c", "other1", "d"}},
	{conn: 0, args: []string{"PING"}, n: 3},
	{conn: 1, args: []string{"SETBIT", "bm", "1", "1"}},
	{conn: 0, args: []string{"PING"}, n: 2},
	{conn: 0, args: []string{"SET", "user:3", "x"}, n: 2},
	{conn: 0, args: []string{"RESET"}},
	{conn: 0, args: []string{"CLIENT", "TRACKINGINFO"}},
	{conn: 0, args: []string{"HELLO", "3"}},
	{conn: 0, args: []string{"CLIENT", "TRACKING", "on", "BCAST", "NOLOOP", "PREFIX", "user:"}},
	{conn: 0, args: []string{"SET", "user:3", "y"}},
	{conn: 1, args: []string{"SET", "user:4", "y"}},
	{conn: 0, args: []string{"PING"}, n: 2},
	{conn: 0, args: []string{"CLIENT", "TRACKING", "off"}},
	// A RESP2 client redirects to a subscribed RESP2 connection, which
	// hears on __redis__:invalidate.
	{conn: 0, args: []string{"HELLO", "2"}},
	{conn: 2, args: []string{"SUBSCRIBE", "__redis__:invalidate"}},
	{conn: 0, args: []string{"CLIENT", "TRACKING", "on", "REDIRECT", "{id:2}"}, ids: true},
	{conn: 0, args: []string{"CLIENT", "GETREDIR"}, idReplies: true},
	{conn: 0, args: []string{"CLIENT", "TRACKINGINFO"}, idReplies: true},
	{conn: 0, args: []string{"CLIENT", "INFO"}, fields: []string{"flags", "redir"}, idReplies: true},
	{conn: 0, args: []string{"GET", "r1"}},
	{conn: 1, args: []string{"SET", "r1", "x"}},
	{conn: 2},
	{conn: 1, args: []string{"FLUSHALL"}},
	{conn: 2},
	// Once the target is gone, the redirect is broken; a RESP3 client
	// is told so.
	{conn: 1, args: []string{"CLIENT", "KILL", "ID", "{id:2}"}, ids: true},
	{conn: 0, args: []string{"GET", "r2"}},
	{conn: 1, args: []string{"SET", "r2", "x"}},
	{conn: 0, args: []string{"CLIENT", "TRACKINGINFO"}, idReplies: true},
	{conn: 0, args: []string{"CLIENT", "INFO"}, fields: []string{"flags", "redir"}, idReplies: true},
	{conn: 0, args: []string{"HELLO", "3"}},
	{conn: 0, args: []string{"GET", "r2"}},
	{conn: 1, args: []string{"SET", "r2", "y"}},
	{conn: 0, args: []string{"PING"}, n: 2, idReplies: true},
	{conn: 0, args: []string{"CLIENT", "TRACKING", "off"}},
	// The command table and the setting.
	{conn: 1, args: []string{"COMMAND", "INFO", "client|tracking", "client|caching", "client|getredir", "client|trackinginfo"}},
	{conn: 1, args: []string{"COMMAND", "DOCS", "client|tracking", "client|caching", "client|getredir", "client|trackinginfo"}},
	{conn: 1, args: []string{"CONFIG", "GET", "tracking-table-max-keys"}},
	{conn: 1, args: []string{"CONFIG", "SET", "tracking-table-max-keys", "-1"}},
}

// TestTrackingDiff runs trackingScript on redis-server and on presenced
// and compares every reply and invalidation, byte for byte.
func TestTrackingDiff(t *testing.T) {
	ref := redisserver.StartForTest(t, redisserver.Options{})
	srv := startServer(t)
	runPubSubDiff(t, ref.Addr(), srv.Addr(), trackingScript)
}

// cachingClient is a RESP3 connection with tracking on and the cache a
// client keeps with it: a GET's reply is cached until an invalidation
// drops it.
type cachingClient struct {
	t     *testing.T
	conn  *redisserver.Conn
	cache map[string]string
}

func newCachingClient(t *testing.T, addr string) *cachingClient {
	t.Helper()
	conn, err := redisserver.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	cc := &cachingClient{t: t, conn: conn, cache: map[string]string{}}
	cc.do("HELLO", "3")
	if got := cc.do("CLIENT", "TRACKING", "on"); got != "+OK\r\n" {
		t.Fatalf("CLIENT TRACKING on: %q", got)
	}
	return cc
}

// do sends args and returns the reply, applying the invalidations that
// come before it.
func (cc *cachingClient) do(args ...string) string {
	cc.t.Helper()
	if _, err := cc.conn.Write(redisserver.AppendCommand(nil, args...)); err != nil {
		cc.t.Fatal(err)
	}
	for {
		reply, err := cc.conn.ReadReply()
		if err != nil {
			cc.t.Fatal(err)
		}
		if reply[0] != '>' {
			return string(reply)
		}
		cc.invalidate(reply)
	}
}

// invalidate applies an invalidation push.
func (cc *cachingClient) invalidate(push []byte) {
	_, elems, ok := arrayElements(push)
	if !ok || len(elems) != 2 || string(elems[0]) != "$10\r\ninvalidate\r\n" {
		cc.t.Fatalf("not an invalidation: %q", push)
	}
	if string(elems[1]) == "_\r\n" {
		clear(cc.cache)
		return
	}
	_, keys, ok := arrayElements(elems[1])
	if !ok {
		cc.t.Fatalf("invalidation without keys: %q", push)
	}
	for _, k := range keys {
		_, key, _ := strings.Cut(strings.TrimSuffix(string(k), "\r\n"), "\r\n")
		delete(cc.cache, key)
	}
}

// get returns key's value from the cache, or reads it and caches it.
func (cc *cachingClient) get(key string) string {
	if v, ok := cc.cache[key]; ok {
		return v
	}
	v := cc.do("GET", key)
	cc.cache[key] = v
	return v
}

// getInTransaction is get with the read in a transaction that also
// writes, so that it is applied from the log, where the writes of other
// connections are applied right after it, in the same entry, while its
// reply is on its way.
func (cc *cachingClient) getInTransaction(key string) string {
	if v, ok := cc.cache[key]; ok {
		return v
	}
	cc.do("MULTI")
	cc.do("GET", key)
	cc.do("INCR", "reads")
	_, elems, ok := arrayElements([]byte(cc.do("EXEC")))
	if !ok || len(elems) != 2 {
		cc.t.Fatalf("EXEC of GET %s and INCR: %v", key, elems)
	}
	cc.cache[key] = string(elems[0])
	return cc.cache[key]
}

// TestTrackingKeepsCachesFresh checks the promise of client-side caching
// under concurrent writes, on one node and on a follower: once the writes
// are acknowledged and the client has heard what came before a later
// reply, every value it caches is the server's. A reply read before a
// change must reach the client before the change's invalidation; after
// it, the client would keep the old value.
func TestTrackingKeepsCachesFresh(t *testing.T) {
	t.Run("one node", func(t *testing.T) {
		srv := startServer(t)
		checkCachesFresh(t, srv.Addr(), srv.Addr())
	})
	t.Run("follower", func(t *testing.T) {
		_, l, f := leaderAndFollower(t)
		checkCachesFresh(t, l.Addr(), f.Addr())
	})
}

// checkCachesFresh writes through writeAddr while a caching client on
// readAddr reads, then checks the client's cache.
func checkCachesFresh(t *testing.T, writeAddr, readAddr string) {
	const keys, writes = 8, 3000
	reader := newCachingClient(t, readAddr)
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		w, err := redisserver.Dial(writeAddr)
		if err != nil {
			t.Error(err)
			return
		}
		defer w.Close()
		for i := range writes {
			if _, err := w.Do([]byte("INCR"), []byte(fmt.Sprintf("fresh:%d", i%keys))); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	rng := rand.New(rand.NewPCG(1, 2))
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		key := fmt.Sprintf("fresh:%d", rng.IntN(keys))
		if rng.IntN(4) == 0 {
			delete(reader.cache, key) // as a cache evicts
		}
		if rng.IntN(2) == 0 {
			reader.get(key)
		} else {
			reader.getInTransaction(key)
		}
	}
	wg.Wait()
	// A read on the reader's node covers every acknowledged write, and
	// the invalidations of the batch it answered come before the next
	// reply.
	reader.do("GET", "fresh:sync")
	reader.do("PING")
	check, err := redisserver.Dial(readAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()
	if _, err := check.Do([]byte("HELLO"), []byte("3")); err != nil {
		t.Fatal(err)
	}
	for key, cached := range reader.cache {
		now, err := check.Do([]byte("GET"), []byte(key))
		if err != nil {
			t.Fatal(err)
		}
		if string(now) != cached {
			t.Errorf("%s: cached %q, but the server has %q", key, cached, now)
		}
	}
}

// TestTrackingExpiryAndLimit checks the invalidations no write sends: a
// key's expiry, and the keys the server forgets past
// tracking-table-max-keys; and INFO's counts.
func TestTrackingExpiryAndLimit(t *testing.T) {
	srv := startServer(t)
	c := dial(t, srv.Addr())
	c.expect("+OK\r\n", "SET", "e", "1", "PX", "150")
	reader := newCachingClient(t, srv.Addr())
	if got := reader.get("e"); got != "$1\r\n1\r\n" {
		t.Fatalf("GET e: %q", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for reader.cache["e"] != "" && time.Now().Before(deadline) {
		reader.conn.NetConn().SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		push, err := reader.conn.ReadReply()
		if err == nil {
			reader.invalidate(push)
		}
	}
	reader.conn.NetConn().SetReadDeadline(time.Time{})
	if _, ok := reader.cache["e"]; ok {
		t.Fatal("the expiry of a key read was not invalidated")
	}

	c.expect("+OK\r\n", "CONFIG", "SET", "tracking-table-max-keys", "2")
	for _, k := range []string{"l1", "l2", "l3"} {
		reader.get(k)
	}
	reader.do("PING")
	if len(reader.cache) != 2 {
		t.Errorf("the cache holds %d keys past a table of 2, want 2: %v", len(reader.cache), reader.cache)
	}
	info := c.do("INFO", "all")
	for _, want := range []string{"tracking_clients:1\r\n", "tracking_total_keys:2\r\n", "tracking_total_items:2\r\n", "tracking_total_prefixes:0\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO lacks %q", strings.TrimSpace(want))
		}
	}
	reader.do("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "p")
	if got := reader.do("CLIENT", "TRACKING", "off"); got != "+OK\r\n" {
		t.Fatalf("CLIENT TRACKING off: %q", got)
	}
	info = c.do("INFO", "all")
	for _, want := range []string{"tracking_clients:0\r\n", "tracking_total_keys:0\r\n", "tracking_total_prefixes:0\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("after tracking off, INFO lacks %q", strings.TrimSpace(want))
		}
	}
	if !bytes.Contains([]byte(c.do("CLIENT", "LIST")), []byte("redir=-1")) {
		t.Error("CLIENT LIST lacks redir=-1 for clients that do not track")
	}
}

// trackingPyScript has redis-py take invalidations the way a RESP2
// client does: on a second, subscribed connection that the first
// redirects them to.
const trackingPyScript = `
import json, sys, redis
port = int(sys.argv[1])
w = redis.Redis(port=port)
p = redis.Redis(port=port).pubsub()
p.subscribe("__redis__:invalidate")
p.get_message(timeout=5)
sub = [c["id"] for c in w.client_list() if c["sub"] == "1"][0]
r = redis.Redis(port=port, single_connection_client=True)
r.execute_command("CLIENT", "TRACKING", "on", "REDIRECT", sub)
r.get("k")
w.set("k", "1")
changed = p.get_message(timeout=5)
w.flushall()
flushed = p.get_message(timeout=5)
print(json.dumps([changed["channel"].decode(), [k.decode() for k in changed["data"]], flushed["data"]]))
`

// TestTrackingRedisPy runs trackingPyScript on redis-server and on
// presenced.
func TestTrackingRedisPy(t *testing.T) {
	python := pythonWithRedis(t)
	ref := redisserver.StartForTest(t, redisserver.Options{})
	srv := startServer(t)
	run := func(addr string) string {
		_, port, _ := net.SplitHostPort(addr)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := osexec.CommandContext(ctx, python, "-c", trackingPyScript, port).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-py on %s: %v\n%s", addr, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	want := `["__redis__:invalidate", ["k"], null]`
	if got := run(ref.Addr()); got != want {
		t.Fatalf("redis-py on redis-server: %s, want %s", got, want)
	}
	if got := run(srv.Addr()); got != want {
		t.Errorf("redis-py on presenced: %s, want %s", got, want)
	}
}

// TestTrackingPipelinesDiff sends pipelines to redis-server and to
// presenced and compares what comes back: CLIENT TRACKING in the middle
// of a pipeline (which moves a connection an event loop serves to a
// goroutine of its own), CLIENT CACHING for the next command of a
// pipeline alone, and a pipeline's write and then read of a key.
func TestTrackingPipelinesDiff(t *testing.T) {
	ref := redisserver.StartForTest(t, redisserver.Options{})
	srv := startServer(t)
	type send struct {
		conn    int
		cmds    [][]string
		replies int
	}
	script := []send{
		{conn: 0, cmds: [][]string{{"HELLO", "3"}, {"CLIENT", "TRACKING", "on"}, {"GET", "a"}}, replies: 3},
		{conn: 1, cmds: [][]string{{"SET", "a", "1"}}, replies: 1},
		{conn: 0, cmds: [][]string{{"PING"}}, replies: 2},
		{conn: 0, cmds: [][]string{{"SET", "b", "1"}, {"GET", "b"}, {"GET", "c"}}, replies: 3},
		{conn: 1, cmds: [][]string{{"MSET", "b", "2", "c", "2"}}, replies: 1},
		{conn: 0, cmds: [][]string{{"PING"}}, replies: 3},
		{conn: 0, cmds: [][]string{{"CLIENT", "TRACKING", "off"}, {"CLIENT", "TRACKING", "on", "OPTIN"}, {"CLIENT", "CACHING", "yes"}, {"GET", "d"}, {"GET", "e"}, {"MGET", "f", "g"}}, replies: 6},
		{conn: 1, cmds: [][]string{{"MSET", "d", "1", "e", "1", "f", "1", "g", "1"}}, replies: 1},
		{conn: 0, cmds: [][]string{{"PING"}}, replies: 2},
	}
	var got [2][]string
	for side, addr := range []string{ref.Addr(), srv.Addr()} {
		conns := []*redisserver.Conn{}
		for range 2 {
			c, err := redisserver.Dial(addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			conns = append(conns, c)
		}
		for _, s := range script {
			var pipeline []byte
			for _, cmd := range s.cmds {
				pipeline = redisserver.AppendCommand(pipeline, cmd...)
			}
			if _, err := conns[s.conn].Write(pipeline); err != nil {
				t.Fatal(err)
			}
			var replies []byte
			for range s.replies {
				conns[s.conn].NetConn().SetReadDeadline(time.Now().Add(10 * time.Second))
				r, err := conns[s.conn].ReadReply()
				if err != nil {
					t.Fatalf("%v: %v", s.cmds, err)
				}
				replies = append(replies, r...)
			}
			if s.cmds[0][0] == "HELLO" {
				replies = replies[bytes.Index(replies, []byte("+OK")):] // HELLO's map tells the versions apart
			}
			got[side] = append(got[side], fmt.Sprintf("%v: %q", s.cmds, replies))
		}
	}
	for i := range got[0] {
		if got[0][i] != got[1][i] {
			t.Errorf("redis:     %s\npresenced: %s", got[0][i], got[1][i])
		}
	}
}
