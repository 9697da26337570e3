package server

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestBitTTLConfig checks CONFIG SET and GET of the bit-TTL rules and
// that SETBIT arms a rule's TTL only on matching keys.
func TestBitTTLConfig(t *testing.T) {
	srv := startServer(t)
	c := dial(t, srv.Addr())
	steps := []struct{ cmd, want string }{
		{"CONFIG GET bit-ttl", "*2\r\n$7\r\nbit-ttl\r\n$0\r\n\r\n"},
		{"CONFIG SET bit-ttl \"online:* 30 sess:* 600\"", "+OK\r\n"},
		{"CONFIG GET bit-*", "*2\r\n$7\r\nbit-ttl\r\n" + bulk("online:* 30 sess:* 600")},
		{"SETBIT online:x 5 1", ":0\r\n"},
		{"SETBIT other 5 1", ":0\r\n"},
		{"BITTTL other 5", ":-1\r\n"},
		{"BITTTL online:x 6", ":-2\r\n"},
		{"CONFIG SET bit-ttl \"online:* 30 sess:*\"", "-ERR CONFIG SET failed (possibly related to argument 'bit-ttl') - bit-ttl must be pairs of <pattern> <seconds>\r\n"},
		{"CONFIG SET bit-ttl \"online:* 0\"", "-ERR CONFIG SET failed (possibly related to argument 'bit-ttl') - invalid TTL \"0\" for pattern \"online:*\": want a positive number of seconds\r\n"},
		{"CONFIG SET bit-ttl \"online:* x\" maxclients 0", "-ERR CONFIG SET failed (possibly related to argument 'bit-ttl') - invalid TTL \"x\" for pattern \"online:*\": want a positive number of seconds\r\n"},
		{"CONFIG SET bit-ttl \"\" BIT-TTL \"\"", "-ERR CONFIG SET failed (possibly related to argument 'BIT-TTL') - duplicate parameter\r\n"},
		{"CONFIG GET bit-ttl", "*2\r\n$7\r\nbit-ttl\r\n" + bulk("online:* 30 sess:* 600")},
		{"CONFIG SET maxclients 0 bit-ttl \"\"", "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument must be between 1 and 4294967295 inclusive\r\n"},
		{"CONFIG GET bit-ttl", "*2\r\n$7\r\nbit-ttl\r\n" + bulk("online:* 30 sess:* 600")},
	}
	for _, s := range steps {
		if got := c.do(splitQuoted(s.cmd)...); got != s.want {
			t.Fatalf("%s: %q, want %q", s.cmd, got, s.want)
		}
	}
	if got := c.do("BITTTL", "online:x", "5"); got != ":30\r\n" && got != ":29\r\n" {
		t.Fatalf("BITTTL of a bit a rule armed: %q, want about 30", got)
	}
	// Clearing the rules: SETBIT 1 makes an armed bit persistent again.
	for _, s := range []struct{ cmd, want string }{
		{"CONFIG SET bit-ttl \"\"", "+OK\r\n"},
		{"CONFIG GET bit-ttl", "*2\r\n$7\r\nbit-ttl\r\n$0\r\n\r\n"},
		{"SETBIT online:x 5 1", ":1\r\n"},
		{"BITTTL online:x 5", ":-1\r\n"},
	} {
		if got := c.do(splitQuoted(s.cmd)...); got != s.want {
			t.Fatalf("%s: %q, want %q", s.cmd, got, s.want)
		}
	}
}

// splitQuoted splits a command line at spaces, keeping double-quoted
// parts (quotes removed) whole.
func splitQuoted(line string) []string {
	var out []string
	for i, part := range strings.Split(line, "\"") {
		if i%2 == 1 {
			out = append(out, part)
		} else {
			out = append(out, strings.Fields(part)...)
		}
	}
	return out
}

// receiveEvents reads n messages from ps and returns them as
// "channel: payload" lines.
func receiveEvents(t *testing.T, ps *redis.PubSub, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []string
	for len(out) < n {
		msg, err := ps.ReceiveMessage(ctx)
		if err != nil {
			t.Fatalf("after %q: %v", out, err)
		}
		out = append(out, msg.Channel+": "+msg.Payload)
	}
	return out
}

// TestBitEvents subscribes with go-redis and checks the join, leave and
// expire events of a key, in order.
func TestBitEvents(t *testing.T) {
	srv := startServer(t)
	ctx := context.Background()
	rdb := newGoRedis(t, srv)
	if err := rdb.SetBit(ctx, "room", 1, 1).Err(); err != nil {
		t.Fatal(err) // before anyone listens: no event
	}
	ps := rdb.Subscribe(ctx, "__bitevent__:room")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	cmds := [][]any{
		{"BITPSETEX", "room", 300, 3, 4},
		{"SETBIT", "room", 3, 0},
		{"SETBIT", "room", 3, 0},
		{"SETBIT", "other", 3, 1},
		{"SETBIT", "room", 9, 1},
	}
	for _, cmd := range cmds {
		if err := rdb.Do(ctx, cmd...).Err(); err != nil {
			t.Fatal(cmd, err)
		}
	}
	got := receiveEvents(t, ps, 5)
	want := []string{
		"__bitevent__:room: join 3", "__bitevent__:room: join 4",
		"__bitevent__:room: leave 3", "__bitevent__:room: join 9",
		"__bitevent__:room: expire 4",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	// Bit 1 was set before, without a deadline: re-arming it is no join;
	// it expires.
	if err := rdb.Do(ctx, "BITPSETEX", "room", 100, 1).Err(); err != nil {
		t.Fatal(err)
	}
	if got := receiveEvents(t, ps, 1); got[0] != "__bitevent__:room: expire 1" {
		t.Fatalf("event %q, want expire 1", got)
	}
	if n, err := rdb.BitCount(ctx, "room", nil).Result(); err != nil || n != 1 {
		t.Fatalf("BITCOUNT after expiry: %d, %v; want 1 (bit 9)", n, err)
	}
}

// TestBitTTLAndEventsReplicated sets a rule on a follower, writes on
// another node, and checks that every node arms the same deadline and
// that a subscriber on each node sees each event once.
func TestBitTTLAndEventsReplicated(t *testing.T) {
	srvs := startCluster(t, 3)
	ctx := context.Background()
	l := clusterLeader(t, srvs)
	f := clusterFollowers(srvs, l)
	if err := newGoRedis(t, f[0]).ConfigSet(ctx, "bit-ttl", "online:* 1").Err(); err != nil {
		t.Fatal(err)
	}
	subs := subscribeEvents(t, srvs)
	w := newGoRedis(t, f[1])
	for _, off := range []int64{10, 20} {
		if err := w.SetBit(ctx, "online:1", off, 1).Err(); err != nil {
			t.Fatal(err)
		}
	}
	waitApplied(t, srvs)
	for _, s := range srvs {
		rdb := newGoRedis(t, s)
		if rules, err := rdb.ConfigGet(ctx, "bit-ttl").Result(); err != nil || rules["bit-ttl"] != "online:* 1" {
			t.Fatalf("%s: bit-ttl %q, %v", s.Node().Config().NodeID, rules, err)
		}
		ms, err := rdb.Do(ctx, "BITPTTL", "online:1", 20).Int64()
		// Deadlines are kept to 100 ms, rounded up.
		if err != nil || ms <= 0 || ms > 1100 {
			t.Fatalf("%s: BITPTTL %d, %v; want the rule's 1 s", s.Node().Config().NodeID, ms, err)
		}
	}
	want := []string{"__bitevent__:online:1: join 10", "__bitevent__:online:1: join 20", "__bitevent__:online:1: expire 10", "__bitevent__:online:1: expire 20"}
	for i, ps := range subs {
		if got := receiveEvents(t, ps, 4); !slices.Equal(got, want) {
			t.Fatalf("node %d: events %q, want %q", i, got, want)
		}
	}
	// Nothing more arrives: each event came once.
	for i, s := range srvs {
		checkNoMoreEvents(t, s, subs[i])
	}
}

// subscribeEvents subscribes to every bit event on each of srvs and
// returns the subscriptions, in the same order, closed with the test.
func subscribeEvents(t *testing.T, srvs []*Server) []*redis.PubSub {
	t.Helper()
	var subs []*redis.PubSub
	for _, s := range srvs {
		ps := newGoRedis(t, s).PSubscribe(context.Background(), "__bitevent__:*")
		t.Cleanup(func() { ps.Close() })
		if _, err := ps.Receive(context.Background()); err != nil {
			t.Fatal(err)
		}
		subs = append(subs, ps)
	}
	return subs
}

// checkNoMoreEvents publishes a marker on srv (PUBLISH is local to the
// node it is sent to) and fails unless it is the next message ps, a
// subscription on srv, receives: no event arrived twice or late.
func checkNoMoreEvents(t *testing.T, srv *Server, ps *redis.PubSub) {
	t.Helper()
	if err := newGoRedis(t, srv).Publish(context.Background(), "__bitevent__:marker", "end").Err(); err != nil {
		t.Fatal(err)
	}
	if got := receiveEvents(t, ps, 1); got[0] != "__bitevent__:marker: end" {
		t.Fatalf("%s: an event arrived twice or late: %q", srv.Node().Config().NodeID, got)
	}
}

// TestBitExpiryAcrossFailover arms bits through the leader, stops it
// before they expire, and checks that the survivors expire each bit once,
// on time, under the new leader: a subscriber of each survivor sees every
// event exactly once.
func TestBitExpiryAcrossFailover(t *testing.T) {
	srvs := startCluster(t, 3)
	ctx := context.Background()
	l := clusterLeader(t, srvs)
	survivors := clusterFollowers(srvs, l)
	subs := subscribeEvents(t, survivors)
	w := newGoRedis(t, l)
	if err := w.Do(ctx, "BITPSETEX", "online", 1500, 1, 2).Err(); err != nil {
		t.Fatal(err)
	}
	if err := w.Do(ctx, "BITSETEX", "online", 600, 3).Err(); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, srvs)
	l.Close()
	clusterLeader(t, survivors)
	want := []string{"__bitevent__:online: join 1", "__bitevent__:online: join 2", "__bitevent__:online: join 3",
		"__bitevent__:online: expire 1", "__bitevent__:online: expire 2"}
	for i, ps := range subs {
		if got := receiveEvents(t, ps, len(want)); !slices.Equal(got, want) {
			t.Fatalf("survivor %d: events %q, want %q", i, got, want)
		}
	}
	for i, s := range survivors {
		rdb := newGoRedis(t, s)
		bits, err := rdb.Do(ctx, "GETBITS", "online", 1, 2, 3).Int64Slice()
		if err != nil || !slices.Equal(bits, []int64{0, 0, 1}) {
			t.Fatalf("survivor %d: bits %v, %v; want [0 0 1]", i, bits, err)
		}
		if ttl, err := rdb.Do(ctx, "BITTTL", "online", 3).Int64(); err != nil || ttl < 590 || ttl > 600 {
			t.Fatalf("survivor %d: BITTTL of the live bit %d, %v", i, ttl, err)
		}
		checkNoMoreEvents(t, s, subs[i]) // nothing expires twice
	}
}
