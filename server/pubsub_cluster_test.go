package server

import (
	"context"
	"encoding/json"
	"fmt"
	osexec "os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/presenced/presenced/server/redisserver"
	"github.com/redis/go-redis/v9"
)

// TestPublishReachesEveryNode publishes on every node of a cluster whose
// nodes need a password, and checks that each node's subscribers (of the
// channel, of a pattern, and of a shard channel) hear every message once,
// in the order each node published them, while PUBLISH and SPUBLISH count
// the subscribers of the node they were sent to.
func TestPublishReachesEveryNode(t *testing.T) {
	const pass, perNode = "s3cret", 100
	srvs := startCluster(t, 3, withPassword(pass))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	auth := func(o *redis.Options) { o.Password = pass }
	var clients []*redis.Client
	var subs []*redis.PubSub // on node i: subs[i] of "news" and "n*", subs[len(srvs)+i] of shard channel "spot"
	for _, s := range srvs {
		clients = append(clients, newGoRedis(t, s, auth))
	}
	for _, rdb := range clients {
		ps := rdb.Subscribe(ctx, "news")
		if err := ps.PSubscribe(ctx, "n*"); err != nil {
			t.Fatal(err)
		}
		subs = append(subs, ps)
	}
	for _, rdb := range clients {
		subs = append(subs, rdb.SSubscribe(ctx, "spot"))
	}
	for i, ps := range subs {
		t.Cleanup(func() { ps.Close() })
		confirmations := 2
		if i >= len(srvs) {
			confirmations = 1
		}
		for range confirmations {
			if m, err := ps.ReceiveTimeout(ctx, 10*time.Second); err != nil {
				t.Fatal(err)
			} else if _, ok := m.(*redis.Subscription); !ok {
				t.Fatalf("got %#v before the subscription's confirmation", m)
			}
		}
	}
	publish := func(node int, message string) {
		t.Helper()
		// A channel subscriber and a pattern subscriber, as Redis
		// counts them, of this node alone.
		if n, err := clients[node].Publish(ctx, "news", message).Result(); err != nil || n != 2 {
			t.Fatalf("PUBLISH on node %d = %d, %v; want 2", node, n, err)
		}
		if n, err := clients[node].SPublish(ctx, "spot", message).Result(); err != nil || n != 1 {
			t.Fatalf("SPUBLISH on node %d = %d, %v; want 1", node, n, err)
		}
	}
	for j := range perNode {
		for node := range srvs {
			publish(node, fmt.Sprintf("%d:%d", node, j))
		}
	}
	for node := range srvs {
		publish(node, fmt.Sprintf("%d:end", node))
	}
	for i, ps := range subs {
		// Each message once per subscription: twice on "news" ("n*"
		// matches it), once on "spot".
		copies := 2
		if i >= len(srvs) {
			copies = 1
		}
		next := make(map[string]int) // by origin and channel or pattern: the next message due
		ends := 0
		for ends < copies*len(srvs) {
			m, err := ps.ReceiveTimeout(ctx, 10*time.Second)
			if err != nil {
				t.Fatalf("subscriber %d after %v: %v", i, next, err)
			}
			msg, ok := m.(*redis.Message)
			if !ok {
				t.Fatalf("subscriber %d got %#v", i, m)
			}
			origin, seq, _ := strings.Cut(msg.Payload, ":")
			key := origin + " " + msg.Channel + " " + msg.Pattern
			if seq == "end" {
				if next[key] != perNode {
					t.Fatalf("subscriber %d: %s ended after %d messages, want %d", i, key, next[key], perNode)
				}
				next[key]++
				ends++
				continue
			}
			if want := strconv.Itoa(next[key]); seq != want {
				t.Fatalf("subscriber %d: message %s on %s, want %s:%s", i, msg.Payload, key, origin, want)
			}
			next[key]++
		}
	}
	// Each node relayed each of its own messages to both others, and
	// none of those it heard from them.
	want := strconv.Itoa(2 * 2 * (perNode + 1))
	for _, s := range srvs {
		c := dial(t, s.Addr())
		c.do("AUTH", pass)
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, fields := infoFields(t, c.do("RAFT", "INFO"))
			if fields["publish_relayed"] == want && fields["publish_relay_dropped"] == "0" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: publish_relayed %s, publish_relay_dropped %s; want %s and 0",
					s.Node().Config().NodeID, fields["publish_relayed"], fields["publish_relay_dropped"], want)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// TestPublishThroughIoredisCluster publishes with ioredis's client for
// Redis Cluster, which sends PUBLISH to a node of its choosing, while a
// plain ioredis client listens on each node in turn: each hears every
// message, in order.
func TestPublishThroughIoredisCluster(t *testing.T) {
	requireIoredis(t)
	node := requireTool(t, "node")
	srvs := startCluster(t, 3, enableCluster)
	want := make([]string, 20)
	for i := range want {
		want[i] = strconv.Itoa(i)
	}
	for _, s := range srvs {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := osexec.CommandContext(ctx, node, "pubsub.js", srvs[0].Addr(), s.Addr(), strconv.Itoa(len(want)))
		cmd.Dir = ioredisDir
		out, err := cmd.Output()
		cancel()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var heard []string
		if err := json.Unmarshal(out, &heard); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if !slices.Equal(heard, want) {
			t.Errorf("a subscriber on %s heard %q, want %q", s.Node().Config().NodeID, heard, want)
		}
	}
}

// TestRaftRelayKeepsOrder checks that the PUBLISH and SPUBLISH commands
// of a relay call deliver their messages only while no later call of the
// same member has opened: a call of a greater sequence number, or of a
// later incarnation, on any connection. Messages of different members
// do not hold each other up.
func TestRaftRelayKeepsOrder(t *testing.T) {
	srv := startServer(t)
	sub := dial(t, srv.Addr())
	sub.send(redisserver.AppendCommand(nil, "SUBSCRIBE", "ch"))
	sub.replies(1)
	sub.send(redisserver.AppendCommand(nil, "SSUBSCRIBE", "sh"))
	sub.replies(1)
	conns := map[string]*respConn{}
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		conns[name] = dial(t, srv.Addr())
	}
	for _, step := range []struct {
		conn  string
		args  []string
		reply string
	}{
		{"a", []string{"RAFT", "RELAY", "n2", "100", "5"}, "+OK\r\n"},
		{"a", []string{"PUBLISH", "ch", "a1"}, ":1\r\n"},
		{"b", []string{"RAFT", "RELAY", "n2", "100", "6"}, "+OK\r\n"},
		{"b", []string{"PUBLISH", "ch", "b1"}, ":1\r\n"},
		{"a", []string{"PUBLISH", "ch", "a2"}, ":0\r\n"}, // a later call opened
		{"a", []string{"RAFT", "RELAY", "n2", "100", "4"}, "+OK\r\n"},
		{"a", []string{"PUBLISH", "ch", "a3"}, ":0\r\n"},            // an earlier call
		{"c", []string{"RAFT", "RELAY", "n3", "7", "1"}, "+OK\r\n"}, // another member
		{"c", []string{"PUBLISH", "ch", "c1"}, ":1\r\n"},
		{"b", []string{"SPUBLISH", "sh", "b2"}, ":1\r\n"},
		{"d", []string{"RAFT", "RELAY", "n2", "99", "50"}, "+OK\r\n"}, // an earlier incarnation
		{"d", []string{"PUBLISH", "ch", "d1"}, ":0\r\n"},
		{"e", []string{"RAFT", "RELAY", "n2", "101", "1"}, "+OK\r\n"}, // the member restarted
		{"e", []string{"PUBLISH", "ch", "e1"}, ":1\r\n"},
		{"b", []string{"PUBLISH", "ch", "b3"}, ":0\r\n"},
		{"d", []string{"RAFT", "RELAY", "n2", "x", "2"}, "-ERR syntax error\r\n"},
		{"d", []string{"RAFT", "RELAY", "n2", "101", "-1"}, "-ERR syntax error\r\n"},
	} {
		if got := conns[step.conn].do(step.args...); got != step.reply {
			t.Fatalf("%s: %q answered %q, want %q", step.conn, step.args, got, step.reply)
		}
	}
	want := frame("message", "ch", "a1") + frame("message", "ch", "b1") + frame("message", "ch", "c1") +
		frame("smessage", "sh", "b2") + frame("message", "ch", "e1")
	if got := sub.replies(5); got != want {
		t.Fatalf("the subscriber heard %q, want %q", got, want)
	}
	sub.expect("*2\r\n$4\r\npong\r\n$0\r\n\r\n", "PING") // and nothing more before it
}
