package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	osexec "os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/presenced/presenced/server/redisserver"
)

// psStep is one step of a pub/sub differential script: connection conn
// sends args (nothing, when args is empty: it only reads) and reads n
// replies or messages (one when n is 0).
type psStep struct {
	conn int
	args []string
	n    int
	// sorted compares an array reply's elements in sorted order, where
	// Redis leaves their order unspecified.
	sorted bool
	// ids replaces "{id:N}" in args with the ID of the side's connection
	// N, as the servers number their connections apart; idReplies
	// replaces those IDs in the replies with "{id:N}".
	ids, idReplies bool
	// fields keeps only these fields of a CLIENT INFO reply.
	fields []string
}

// pubsubScript exercises the pub/sub commands over three connections.
var pubsubScript = []psStep{
	{conn: 0, args: []string{"UNSUBSCRIBE"}},
	{conn: 0, args: []string{"PUNSUBSCRIBE"}},
	{conn: 0, args: []string{"UNSUBSCRIBE", "x", "y"}, n: 2},
	{conn: 0, args: []string{"PUNSUBSCRIBE", "x*"}},
	{conn: 0, args: []string{"SUBSCRIBE", "c1", "c2", "c1"}, n: 3},
	// RESP2 subscribed mode: only (un)subscribing, PING, QUIT and RESET.
	{conn: 0, args: []string{"PING"}},
	{conn: 0, args: []string{"PING", "hi"}},
	{conn: 0, args: []string{"PING", "a", "b"}},
	{conn: 0, args: []string{"GET", "k"}},
	{conn: 0, args: []string{"CLIENT", "ID"}},
	{conn: 0, args: []string{"client", "list"}},
	{conn: 0, args: []string{"CLIENT", "NOSUCH"}},
	{conn: 0, args: []string{"CLIENT", "SETNAME"}},
	{conn: 0, args: []string{"PUBSUB", "NUMSUB", "c1"}},
	{conn: 0, args: []string{"PUBLISH", "c1", "x"}},
	{conn: 0, args: []string{"MULTI"}},
	{conn: 0, args: []string{"EXEC"}},
	{conn: 0, args: []string{"HELLO", "2"}},
	{conn: 0, args: []string{"NOSUCH"}},
	{conn: 0, args: []string{"SUBSCRIBE"}},
	{conn: 0, args: []string{"UNSUBSCRIBE", "zz"}},
	{conn: 0, args: []string{"PSUBSCRIBE", "c*", "c*", "h[ae]llo", `\*`}, n: 4},
	{conn: 0, args: []string{"PUNSUBSCRIBE", "nope"}},
	// Introspection and publishing from another connection.
	{conn: 1, args: []string{"PUBSUB", "NUMSUB"}},
	{conn: 1, args: []string{"PUBSUB", "NUMSUB", "c1", "c2", "zz", "c1", "c*"}},
	{conn: 1, args: []string{"PUBSUB", "NUMPAT"}},
	{conn: 1, args: []string{"PUBSUB", "CHANNELS"}, sorted: true},
	{conn: 1, args: []string{"PUBSUB", "CHANNELS", "*1"}},
	{conn: 1, args: []string{"pubsub", "channels", "nomatch*"}},
	{conn: 1, args: []string{"PUBLISH", "c1", "hello"}},
	{conn: 0, n: 2}, // message c1, then pmessage c* c1
	{conn: 1, args: []string{"PUBLISH", "hallo", ""}},
	{conn: 0},
	{conn: 1, args: []string{"PUBLISH", "*", "star"}},
	{conn: 0},
	{conn: 1, args: []string{"PUBLISH", "nobody", "m"}},
	{conn: 2, args: []string{"PSUBSCRIBE", "c*"}},
	{conn: 1, args: []string{"PUBSUB", "NUMPAT"}},
	{conn: 1, args: []string{"PUBLISH", "c2", "two"}},
	{conn: 0, n: 2},
	{conn: 2},
	// PUBSUB errors.
	{conn: 1, args: []string{"PUBSUB"}},
	{conn: 1, args: []string{"PUBSUB", "FOO"}},
	{conn: 1, args: []string{"PUBSUB", "NUMPAT", "x"}},
	{conn: 1, args: []string{"PUBSUB", "CHANNELS", "a", "b"}},
	{conn: 1, args: []string{"pubsub", "channels", "a", "b"}},
	{conn: 1, args: []string{"PUBSUB", "HELP", "x"}},
	{conn: 1, args: []string{"PUBLISH", "c1"}},
	{conn: 1, args: []string{"PUBLISH", "c1", "a", "b"}},
	// Leaving: the last unsubscription ends subscribed mode.
	{conn: 0, args: []string{"PUNSUBSCRIBE", "h[ae]llo", `\*`}, n: 2},
	{conn: 0, args: []string{"PUNSUBSCRIBE"}},
	{conn: 0, args: []string{"UNSUBSCRIBE", "c2"}},
	{conn: 0, args: []string{"GET", "k"}},
	{conn: 0, args: []string{"UNSUBSCRIBE"}},
	{conn: 0, args: []string{"UNSUBSCRIBE"}},
	{conn: 0, args: []string{"PING"}},
	{conn: 0, args: []string{"GET", "k"}},
	{conn: 1, args: []string{"PUBSUB", "CHANNELS"}},
	{conn: 1, args: []string{"PUBSUB", "NUMSUB", "c1"}},
	{conn: 1, args: []string{"PUBLISH", "c1", "gone"}},
	{conn: 2},
	// A SUBSCRIBE queued in a transaction; EXEC while subscribed.
	{conn: 0, args: []string{"MULTI"}},
	{conn: 0, args: []string{"SUBSCRIBE", "t"}},
	{conn: 0, args: []string{"EXEC"}},
	{conn: 0, args: []string{"EXEC"}},
	{conn: 1, args: []string{"PUBLISH", "t", "in"}},
	{conn: 0},
	// RESET leaves every subscription, without replies for them.
	{conn: 0, args: []string{"RESET"}},
	{conn: 0, args: []string{"GET", "k"}},
	{conn: 1, args: []string{"PUBLISH", "t", "after reset"}},
	{conn: 2, args: []string{"RESET"}},
	{conn: 1, args: []string{"PUBSUB", "NUMPAT"}},
	// The command table, as COMMAND reports it.
	{conn: 1, args: []string{"COMMAND", "INFO", "subscribe", "unsubscribe", "psubscribe", "punsubscribe", "publish"}},
	{conn: 1, args: []string{"COMMAND", "INFO", "pubsub|numpat", "pubsub|channels", "pubsub|numsub", "pubsub|help"}},
	{conn: 1, args: []string{"COMMAND", "DOCS", "subscribe", "unsubscribe", "punsubscribe", "publish"}},
	// QUIT is allowed while subscribed.
	{conn: 2, args: []string{"SUBSCRIBE", "q"}},
	{conn: 2, args: []string{"QUIT"}},
}

// pubsubRESP3Script exercises pub/sub for a client that speaks RESP3:
// replies and messages are pushes, and any command may run while
// subscribed.
var pubsubRESP3Script = []psStep{
	{conn: 0, args: []string{"HELLO", "3"}},
	{conn: 0, args: []string{"UNSUBSCRIBE"}},
	{conn: 0, args: []string{"PUNSUBSCRIBE", "x*"}},
	{conn: 0, args: []string{"SUBSCRIBE", "c1", "c2"}, n: 2},
	{conn: 0, args: []string{"PING"}},
	{conn: 0, args: []string{"PING", "hi"}},
	{conn: 0, args: []string{"GET", "k"}},
	{conn: 0, args: []string{"SET", "k", "v", "GET"}},
	{conn: 0, args: []string{"MGET", "k", "nosuch"}},
	{conn: 0, args: []string{"CONFIG", "GET", "notify-keyspace-events"}},
	{conn: 0, args: []string{"PSUBSCRIBE", "c*"}},
	{conn: 1, args: []string{"PUBLISH", "c1", "hello"}},
	{conn: 0, n: 2}, // message c1, then pmessage c* c1
	// A transaction while subscribed.
	{conn: 0, args: []string{"MULTI"}},
	{conn: 0, args: []string{"GET", "nosuch"}},
	{conn: 0, args: []string{"EXEC"}},
	// Back to RESP2: messages are arrays again, and subscribed mode
	// refuses other commands.
	{conn: 0, args: []string{"HELLO", "2"}},
	{conn: 1, args: []string{"PUBLISH", "c2", "two"}},
	{conn: 0, n: 2},
	{conn: 0, args: []string{"GET", "k"}},
	{conn: 0, args: []string{"PING"}},
	{conn: 0, args: []string{"HELLO", "3"}},
	{conn: 0, args: []string{"UNSUBSCRIBE", "c1"}},
	// RESET leaves the subscriptions and RESP3.
	{conn: 0, args: []string{"RESET"}},
	{conn: 0, args: []string{"GET", "nosuch"}},
	{conn: 0, args: []string{"HELLO", "3"}},
	{conn: 0, args: []string{"PUNSUBSCRIBE"}},
	{conn: 0, args: []string{"SUBSCRIBE", "t"}},
	{conn: 0, args: []string{"UNSUBSCRIBE"}},
	{conn: 0, args: []string{"GET", "nosuch"}},
	// Keyspace events are pushes too.
	{conn: 0, args: []string{"SUBSCRIBE", "__keyevent@0__:set"}},
	{conn: 1, args: []string{"CONFIG", "SET", "notify-keyspace-events", "E$"}},
	{conn: 1, args: []string{"SET", "x", "y"}},
	{conn: 0},
	{conn: 1, args: []string{"CONFIG", "SET", "notify-keyspace-events", ""}},
}

// pubsubShardScript exercises the shard channels, a namespace apart from
// the channels and patterns, with counts of their own in the replies.
var pubsubShardScript = []psStep{
	{conn: 0, args: []string{"SUNSUBSCRIBE"}},
	{conn: 0, args: []string{"SUNSUBSCRIBE", "x", "y"}, n: 2},
	{conn: 0, args: []string{"SSUBSCRIBE"}},
	{conn: 0, args: []string{"SSUBSCRIBE", "s1", "s2", "s1"}, n: 3},
	{conn: 0, args: []string{"SUBSCRIBE", "s1"}},
	{conn: 0, args: []string{"PSUBSCRIBE", "s*"}},
	{conn: 0, args: []string{"SSUBSCRIBE", "s3"}},
	{conn: 0, args: []string{"SUNSUBSCRIBE", "nope"}},
	// Subscribed mode in RESP2, with shard channels alone too.
	{conn: 0, args: []string{"GET", "k"}},
	{conn: 0, args: []string{"SPUBLISH", "s1", "x"}},
	{conn: 0, args: []string{"PUBSUB", "SHARDCHANNELS"}},
	{conn: 0, args: []string{"PING"}},
	{conn: 1, args: []string{"PUBSUB", "SHARDCHANNELS"}, sorted: true},
	{conn: 1, args: []string{"PUBSUB", "SHARDCHANNELS", "*1"}},
	{conn: 1, args: []string{"PUBSUB", "SHARDNUMSUB", "s1", "s3", "zz"}},
	{conn: 1, args: []string{"PUBSUB", "SHARDNUMSUB"}},
	{conn: 1, args: []string{"PUBSUB", "NUMSUB", "s1", "s2"}},
	{conn: 1, args: []string{"PUBSUB", "CHANNELS"}, sorted: true},
	{conn: 1, args: []string{"PUBSUB", "SHARDCHANNELS", "a", "b"}},
	{conn: 1, args: []string{"PUBSUB", "HELP"}},
	{conn: 1, args: []string{"CLIENT", "INFO"}, fields: []string{"flags", "sub", "psub", "ssub"}},
	{conn: 1, args: []string{"CLIENT", "LIST", "ID", "{id:0}"}, ids: true, fields: []string{"flags", "sub", "psub", "ssub"}},
	{conn: 1, args: []string{"SPUBLISH", "s1", "hello"}},
	{conn: 0}, // smessage s1 alone: not the channel s1, nor s*
	{conn: 1, args: []string{"PUBLISH", "s1", "plain"}},
	{conn: 0, n: 2}, // message s1, then pmessage s* s1
	{conn: 1, args: []string{"SPUBLISH", "s9", "nobody"}},
	{conn: 1, args: []string{"SPUBLISH", "s1"}},
	{conn: 2, args: []string{"HELLO", "3"}},
	{conn: 2, args: []string{"SSUBSCRIBE", "s1"}},
	{conn: 2, args: []string{"SPUBLISH", "s1", "self"}, n: 2},
	{conn: 0},
	{conn: 2, args: []string{"GET", "k"}},
	// Leaving: subscribed mode lasts while shard channels are left.
	{conn: 0, args: []string{"UNSUBSCRIBE"}},
	{conn: 0, args: []string{"PUNSUBSCRIBE"}},
	{conn: 0, args: []string{"GET", "k"}},
	{conn: 0, args: []string{"SUNSUBSCRIBE", "s2", "s3"}, n: 2},
	{conn: 0, args: []string{"SUNSUBSCRIBE"}}, // s1, the last one
	{conn: 0, args: []string{"SUNSUBSCRIBE"}},
	{conn: 0, args: []string{"GET", "k"}},
	{conn: 2, args: []string{"RESET"}},
	{conn: 1, args: []string{"PUBSUB", "SHARDCHANNELS"}},
	{conn: 1, args: []string{"SPUBLISH", "s1", "gone"}},
	{conn: 1, args: []string{"COMMAND", "GETKEYS", "SSUBSCRIBE", "a", "b"}},
	{conn: 1, args: []string{"COMMAND", "GETKEYS", "SPUBLISH", "a", "b"}},
}

// TestPubSubDiff runs pubsubScript and pubsubRESP3Script on redis-server
// and on presenced and requires the same bytes for every reply and
// message.
func TestPubSubDiff(t *testing.T) {
	ref := redisserver.StartForTest(t, redisserver.Options{})
	srv := startServer(t)
	for _, script := range [][]psStep{pubsubScript, pubsubRESP3Script, pubsubShardScript} {
		runPubSubDiff(t, ref.Addr(), srv.Addr(), script)
	}
}

// runPubSubDiff runs script on the servers at ref and sut, each on three
// new connections.
func runPubSubDiff(t *testing.T, ref, sut string, script []psStep) {
	t.Helper()
	sides := []struct {
		name  string
		conns []*diffTarget
	}{{name: "redis"}, {name: "presenced"}}
	var ids [2][]string
	for i, addr := range []string{ref, sut} {
		for range 3 {
			sides[i].conns = append(sides[i].conns, dialTarget(t, sides[i].name, addr))
		}
		if slices.ContainsFunc(script, func(s psStep) bool { return s.ids || s.idReplies }) {
			ids[i] = connIDs(t, sides[i].conns)
		}
	}
	for _, step := range script {
		var got [2][]byte
		for i, side := range sides {
			step := step
			if step.ids {
				step.args = slices.Clone(step.args)
				for n, id := range ids[i] {
					for j := range step.args {
						step.args[j] = strings.ReplaceAll(step.args[j], "{id:"+strconv.Itoa(n)+"}", id)
					}
				}
			}
			reply, err := runStep(side.conns[step.conn], step)
			if err != nil {
				t.Fatalf("conn %d: %s: %s: %v", step.conn, formatCommand(argv(step.args...)), side.name, err)
			}
			if step.idReplies {
				for n, id := range ids[i] {
					reply = bytes.ReplaceAll(reply, []byte(":"+id+"\r\n"), []byte(":{id:"+strconv.Itoa(n)+"}\r\n"))
					reply = bytes.ReplaceAll(reply, []byte("redir="+id), []byte("redir={id:"+strconv.Itoa(n)+"}"))
				}
			}
			if len(step.fields) > 0 {
				reply = clientFields(reply, step.fields)
			}
			if len(step.args) > 0 {
				reply = normalise(argv(step.args...), reply)
			}
			if step.sorted {
				if header, elems, ok := arrayElements(reply); ok {
					slices.SortFunc(elems, bytes.Compare)
					reply = slices.Concat(append([][]byte{header}, elems...)...)
				}
			}
			got[i] = reply
		}
		if !bytes.Equal(got[0], got[1]) {
			t.Errorf("conn %d: %s: replies differ\nredis:     %s\npresenced: %s",
				step.conn, formatCommand(argv(step.args...)), clip(got[0]), clip(got[1]))
		}
	}
}

// connIDs returns the CLIENT ID of each connection.
func connIDs(t *testing.T, conns []*diffTarget) []string {
	t.Helper()
	var ids []string
	for _, d := range conns {
		reply, err := d.do(argv("CLIENT", "ID"))
		n, ok := intReply(reply)
		if err != nil || !ok {
			t.Fatalf("CLIENT ID: %q, %v", reply, err)
		}
		ids = append(ids, strconv.FormatInt(n, 10))
	}
	return ids
}

// clientFields keeps of a CLIENT INFO reply, a bulk or verbatim string,
// only the named fields, in their order.
func clientFields(reply []byte, names []string) []byte {
	var kept []string
	for _, field := range strings.Fields(string(reply)) {
		if name, _, ok := strings.Cut(field, "="); ok && slices.Contains(names, name) {
			kept = append(kept, field)
		}
	}
	return []byte(strings.Join(kept, " "))
}

// runStep sends a step's command, if any, on d and returns the raw bytes
// of the replies it reads.
func runStep(d *diffTarget, step psStep) ([]byte, error) {
	if len(step.args) > 0 {
		if _, err := d.conn.Write(redisserver.AppendCommand(nil, step.args...)); err != nil {
			return nil, err
		}
	}
	var all []byte
	for range max(step.n, 1) {
		r, err := d.conn.ReadReply()
		if err != nil {
			return all, err
		}
		all = append(all, r...)
	}
	return all, nil
}

// frame encodes a pub/sub reply or message as Redis sends it.
func frame(parts ...any) string {
	s := "*" + strconv.Itoa(len(parts)) + "\r\n"
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			s += bulk(v)
		case int:
			s += ":" + strconv.Itoa(v) + "\r\n"
		case nil:
			s += "$-1\r\n"
		}
	}
	return s
}

// TestPubSubUnsubscribeAllOrder checks what Redis leaves unspecified and
// presenced fixes: UNSUBSCRIBE and PUNSUBSCRIBE without arguments leave
// the channels and patterns in sorted order.
func TestPubSubUnsubscribeAllOrder(t *testing.T) {
	c := dial(t, startServer(t).Addr())
	c.send(redisserver.AppendCommand(nil, "SUBSCRIBE", "b", "c", "a"))
	c.replies(3)
	c.send(redisserver.AppendCommand(nil, "PSUBSCRIBE", "z*", "y*"))
	c.replies(2)
	c.send(redisserver.AppendCommand(nil, "UNSUBSCRIBE"))
	want := frame("unsubscribe", "a", 4) + frame("unsubscribe", "b", 3) + frame("unsubscribe", "c", 2)
	if got := c.replies(3); got != want {
		t.Errorf("UNSUBSCRIBE: got %q, want %q", got, want)
	}
	c.send(redisserver.AppendCommand(nil, "PUNSUBSCRIBE"))
	want = frame("punsubscribe", "y*", 1) + frame("punsubscribe", "z*", 0)
	if got := c.replies(2); got != want {
		t.Errorf("PUNSUBSCRIBE: got %q, want %q", got, want)
	}
	c.expect("+PONG\r\n", "PING")
}

// TestPubSubIntrospection checks the subscription counts of CLIENT LIST
// and INFO.
func TestPubSubIntrospection(t *testing.T) {
	srv := startServer(t)
	sub, other := dial(t, srv.Addr()), dial(t, srv.Addr())
	subID := intBody(t, sub.do("CLIENT", "ID"))
	sub.send(redisserver.AppendCommand(nil, "SUBSCRIBE", "a", "b"))
	sub.replies(2)
	sub.send(redisserver.AppendCommand(nil, "PSUBSCRIBE", "p*"))
	sub.reply()
	third := dial(t, srv.Addr())
	third.send(redisserver.AppendCommand(nil, "PSUBSCRIBE", "p*", "q*"))
	third.replies(2)
	_, fields := infoFields(t, other.do("INFO", "stats"))
	if fields["pubsub_channels"] != "2" || fields["pubsub_patterns"] != "2" {
		t.Errorf("INFO stats: pubsub_channels %q, pubsub_patterns %q; want 2, 2", fields["pubsub_channels"], fields["pubsub_patterns"])
	}

	list := bulkBody(t, other.do("CLIENT", "LIST", "TYPE", "pubsub"))
	line := ""
	for _, l := range strings.Split(strings.TrimSuffix(list, "\n"), "\n") {
		if strings.HasPrefix(l, "id="+strconv.FormatInt(subID, 10)+" ") {
			line = l
		}
	}
	if !strings.Contains(line, " flags=P ") || !strings.Contains(line, " sub=2 psub=1 ssub=0 ") {
		t.Errorf("CLIENT LIST TYPE pubsub: subscriber's line %q in %q", line, list)
	}
	if normal := bulkBody(t, other.do("CLIENT", "LIST", "TYPE", "normal")); strings.Contains(normal, "flags=P") || strings.Count(normal, "\n") != 1 {
		t.Errorf("CLIENT LIST TYPE normal lists subscribers: %q", normal)
	}
	sub.send(redisserver.AppendCommand(nil, "UNSUBSCRIBE", "a"))
	if got, want := sub.reply(), frame("unsubscribe", "a", 2); got != want {
		t.Fatalf("UNSUBSCRIBE a: %q, want %q", got, want)
	}
	_, fields = infoFields(t, other.do("INFO", "stats"))
	if fields["pubsub_channels"] != "1" {
		t.Errorf("INFO stats after unsubscribing from a: pubsub_channels %q, want 1", fields["pubsub_channels"])
	}
	sub.expect("+RESET\r\n", "RESET")
	line = bulkBody(t, other.do("CLIENT", "LIST", "ID", strconv.FormatInt(subID, 10)))
	if !strings.Contains(line, " flags=N ") || !strings.Contains(line, " sub=0 psub=0 ") {
		t.Errorf("CLIENT LIST after RESET: %q", line)
	}
}

// TestPubSubGoRedis subscribes with go-redis's PubSub API and checks the
// messages and counts it sees.
func TestPubSubGoRedis(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	rdb := newGoRedis(t, srv)
	ps := rdb.Subscribe(ctx, "__bitevent__:online")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // the confirmation
		t.Fatal(err)
	}
	pps := rdb.PSubscribe(ctx, "__bitevent__:*")
	defer pps.Close()
	if _, err := pps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	n, err := rdb.Publish(ctx, "__bitevent__:online", "join 42").Result()
	noErr(t, "PUBLISH", err)
	if n != 2 {
		t.Errorf("PUBLISH reached %d subscribers, want 2", n)
	}
	msg, err := ps.ReceiveMessage(ctx)
	noErr(t, "ReceiveMessage", err)
	if msg.Channel != "__bitevent__:online" || msg.Payload != "join 42" || msg.Pattern != "" {
		t.Errorf("channel subscriber got %+v", msg)
	}
	msg, err = pps.ReceiveMessage(ctx)
	noErr(t, "ReceiveMessage", err)
	if msg.Channel != "__bitevent__:online" || msg.Payload != "join 42" || msg.Pattern != "__bitevent__:*" {
		t.Errorf("pattern subscriber got %+v", msg)
	}
	// go-redis pings an idle subscription; the pong must not disturb it.
	noErr(t, "Ping", ps.Ping(ctx, "hc"))
	if reply, err := ps.Receive(ctx); err != nil || reply.(*redis.Pong).Payload != "hc" {
		t.Errorf("PubSub ping: %#v, %v", reply, err)
	}
	subs, err := rdb.PubSubNumSub(ctx, "__bitevent__:online", "other").Result()
	noErr(t, "PUBSUB NUMSUB", err)
	if subs["__bitevent__:online"] != 1 || subs["other"] != 0 {
		t.Errorf("PUBSUB NUMSUB = %v", subs)
	}
	chans, err := rdb.PubSubChannels(ctx, "__bitevent__:*").Result()
	noErr(t, "PUBSUB CHANNELS", err)
	if !slices.Equal(chans, []string{"__bitevent__:online"}) {
		t.Errorf("PUBSUB CHANNELS = %q", chans)
	}
	noErr(t, "Unsubscribe", ps.Unsubscribe(ctx, "__bitevent__:online"))
	if reply, err := ps.Receive(ctx); err != nil || reply.(*redis.Subscription).Kind != "unsubscribe" {
		t.Fatalf("Unsubscribe's confirmation: %#v, %v", reply, err)
	}
	if n, err := rdb.Publish(ctx, "__bitevent__:online", "leave 42").Result(); err != nil || n != 1 {
		t.Errorf("PUBLISH after one unsubscription reached %d, %v; want 1", n, err)
	}
	msg, err = pps.ReceiveMessage(ctx)
	noErr(t, "ReceiveMessage", err)
	if msg.Payload != "leave 42" {
		t.Errorf("pattern subscriber got %+v", msg)
	}
}

// TestPubSubCLI runs `redis-cli subscribe` against redis-server and
// presenced, publishes to it, and requires the same output.
func TestPubSubCLI(t *testing.T) {
	cli := requireTool(t, "redis-cli")
	ref := redisserver.StartForTest(t, redisserver.Options{})
	var outputs []string
	for _, addr := range []string{ref.Addr(), startServer(t).Addr()} {
		outputs = append(outputs, cliSubscribe(t, cli, addr))
	}
	if outputs[0] != outputs[1] {
		t.Errorf("redis-cli output differs\nredis:\n%s\npresenced:\n%s", outputs[0], outputs[1])
	}
	if !strings.Contains(outputs[1], "pmessage\nev:*\nev:1\nhello world\n") {
		t.Errorf("redis-cli did not print the pattern message:\n%s", outputs[1])
	}
}

// cliSubscribe runs redis-cli subscribe and psubscribe at addr, publishes
// one message once it is subscribed, and returns what it printed.
func cliSubscribe(t *testing.T, cli, addr string) string {
	_, port, _ := strings.Cut(addr, ":")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := osexec.CommandContext(ctx, cli, "-h", "127.0.0.1", "-p", port, "psubscribe", "ev:*")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	term := newTerminal()
	cmd.Stdout = term
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	at := term.waitFor(t, 0, "psubscribe\nev:*\n1\n")
	if got := dial(t, addr).do("PUBLISH", "ev:1", "hello world"); got != ":1\r\n" {
		t.Errorf("PUBLISH: %q", got)
	}
	term.waitFor(t, at, "hello world\n")
	cancel()
	cmd.Wait()
	term.mu.Lock()
	defer term.mu.Unlock()
	return string(term.out)
}

// TestPubSubSlowSubscriber checks that a subscriber that does not read
// never holds up a publisher, and is disconnected once its queued output
// passes the limit, while a subscriber that reads gets every message.
func TestPubSubSlowSubscriber(t *testing.T) {
	srv := startServer(t)
	const limit = 1 << 20
	srv.pubsub.limit.Store(limit)
	slow := dial(t, srv.Addr())
	slow.send(redisserver.AppendCommand(nil, "SUBSCRIBE", "ev"))
	slow.reply()
	fast := dial(t, srv.Addr())
	fast.send(redisserver.AppendCommand(nil, "SUBSCRIBE", "ev"))
	fast.reply()

	const maxMessages = 4096
	msg := bytes.Repeat([]byte("x"), 32<<10)
	received := make(chan error, 1)
	got := make(chan int)
	go func() {
		for i := 0; ; i++ {
			r, err := fast.conn.ReadReply()
			if err != nil {
				received <- err
				return
			}
			if want := frame("message", "ev", strconv.Itoa(i)+string(msg)); string(r) != want {
				received <- fmt.Errorf("message %d: %q", i, clip(r))
				return
			}
			got <- i
		}
	}()
	// The publisher waits for the reading subscriber only, one message at
	// a time, so that its queue never grows; the other's queue grows
	// until it is dropped.
	var counts []int
	published := make(chan struct{})
	go func() {
		defer close(published)
		for i := 0; i < maxMessages; i++ {
			n := srv.pubsub.publish("ev", append([]byte(strconv.Itoa(i)), msg...))
			counts = append(counts, n)
			select {
			case <-got:
			case err := <-received:
				t.Errorf("reading subscriber: %v", err)
				return
			}
			if n == 1 {
				return
			}
		}
	}()
	select {
	case <-published:
	case <-time.After(ioTimeout):
		t.Fatal("the publisher was held up")
	}
	if len(counts) == 0 || counts[len(counts)-1] != 1 || slices.Index(counts, 1) != len(counts)-1 {
		t.Fatalf("PUBLISH counts %v: want 2s, then 1 once the slow subscriber is dropped", counts)
	}
	// The slow subscriber finds its connection closed after what the
	// server had written before the limit: well-formed messages, less
	// than the kernel's buffers plus the limit.
	rest, err := io.ReadAll(slow.conn)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("slow subscriber's connection not closed: %v (read %d bytes)", err, len(rest))
	}
	if n := srv.pubsub.publish("ev", append([]byte(strconv.Itoa(len(counts))), msg...)); n != 1 {
		t.Errorf("PUBLISH after the drop reached %d, want 1", n)
	}
	select {
	case r := <-got:
		if r != len(counts) {
			t.Errorf("reading subscriber got message %d, want %d", r, len(counts))
		}
	case err := <-received:
		t.Errorf("reading subscriber: %v", err)
	}
}

// TestPubSubLimitInOneBatch checks a client whose own replies, in the
// batch that subscribed it, pass the output limit: its connection closes
// while its goroutine is still running that batch, and the server goes on
// serving the others. The outbox's writer may send the confirmation
// before the limit is passed, so what arrives is a prefix of the replies,
// cut short.
func TestPubSubLimitInOneBatch(t *testing.T) {
	srv := startServer(t)
	srv.pubsub.limit.Store(256)
	c := dial(t, srv.Addr())
	batch := redisserver.AppendCommand(nil, "SUBSCRIBE", "ev")
	replies := "*3\r\n$9\r\nsubscribe\r\n$2\r\nev\r\n:1\r\n"
	for range 100 {
		batch = redisserver.AppendCommand(batch, "PING")
		replies += "*2\r\n$4\r\npong\r\n$0\r\n\r\n"
	}
	c.send(batch)
	got := c.readToClose()
	if len(got) >= len(replies) || !strings.HasPrefix(replies, string(got)) {
		t.Fatalf("read %q before the close, want a prefix of the replies cut short", got)
	}
	other := dial(t, srv.Addr())
	other.expect("+PONG\r\n", "PING")
	waitClients(t, srv, 1)
}

// TestPubSubConcurrent publishes from another goroutine while clients
// subscribe, unsubscribe, reset and disconnect, and checks every client's
// stream: a confirmation before any message of its channel, no message
// after the last unsubscription, and direct replies again once it has
// no subscription. Run with -race.
func TestPubSubConcurrent(t *testing.T) {
	srv := startServer(t)
	h := &srv.pubsub
	stop := make(chan struct{})
	var pub sync.WaitGroup
	pub.Add(1)
	go func() {
		defer pub.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if h.listening() {
				h.publish("ch"+strconv.Itoa(i%3), []byte(strconv.Itoa(i)))
			}
			runtime.Gosched() // let the clients keep up with the flood
		}
	}()
	var clients sync.WaitGroup
	var messages atomic.Int64
	for id := range 4 {
		clients.Add(1)
		go func() {
			defer clients.Done()
			c, err := redisserver.Dial(srv.Addr())
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			for round := range 10 {
				if err := subscriberRound(c, id, round, &messages); err != nil {
					t.Errorf("client %d, round %d: %v", id, round, err)
					return
				}
			}
		}()
	}
	clients.Wait()
	close(stop)
	pub.Wait()
	if h.listening() || h.active.Load() != 0 {
		t.Errorf("after every client left: %d subscriptions", h.active.Load())
	}
	if got := messages.Load(); got < 4*10 {
		t.Errorf("%d messages received, want at least one a round", got)
	}
}

// subscriberRound subscribes to a channel and a pattern, reads messages
// until both confirmations and then unsubscribes (by UNSUBSCRIBE or
// RESET), checking the stream.
func subscriberRound(c *redisserver.Conn, id, round int, messages *atomic.Int64) error {
	ch := "ch" + strconv.Itoa((id+round)%3)
	if _, err := c.Write(redisserver.AppendCommand(nil, "SUBSCRIBE", ch)); err != nil {
		return err
	}
	if err := readUntil(c, frame("subscribe", ch, 1), nil); err != nil {
		return err
	}
	if _, err := c.Write(redisserver.AppendCommand(nil, "PSUBSCRIBE", "ch*")); err != nil {
		return err
	}
	if err := readUntil(c, frame("psubscribe", "ch*", 2), messages); err != nil {
		return err
	}
	// The publisher publishes while anyone listens: a message must come
	// before this subscriber leaves.
	if err := readMessage(c, messages); err != nil {
		return err
	}
	last := frame("punsubscribe", "ch*", 0)
	cmd := redisserver.AppendCommand(nil, "UNSUBSCRIBE", ch)
	cmd = redisserver.AppendCommand(cmd, "PUNSUBSCRIBE")
	if round%2 == 1 {
		cmd, last = redisserver.AppendCommand(nil, "RESET"), "+RESET\r\n"
	}
	if _, err := c.Write(cmd); err != nil {
		return err
	}
	if err := readUntil(c, last, messages); err != nil {
		return err
	}
	// Nothing follows: the next reply is a plain PONG.
	if got, err := c.Do([]byte("PING")); err != nil || string(got) != "+PONG\r\n" {
		return fmt.Errorf("PING after leaving: %q, %v", got, err)
	}
	return nil
}

// readMessage reads the next frame, which must be a message or a
// pmessage, and counts it.
func readMessage(c *redisserver.Conn, messages *atomic.Int64) error {
	r, err := c.ReadReply()
	if err != nil {
		return err
	}
	if !isMessage(string(r)) {
		return fmt.Errorf("got %q while waiting for a message", r)
	}
	messages.Add(1)
	return nil
}

// isMessage reports whether the frame s is a message or a pmessage.
func isMessage(s string) bool {
	return strings.HasPrefix(s, "*3\r\n$7\r\nmessage\r\n") || strings.HasPrefix(s, "*4\r\n$8\r\npmessage\r\n")
}

// readUntil reads frames until want, accepting the confirmations of a
// pipelined unsubscription on the way, and messages, which it counts,
// unless messages is nil.
func readUntil(c *redisserver.Conn, want string, messages *atomic.Int64) error {
	for {
		r, err := c.ReadReply()
		if err != nil {
			return err
		}
		s := string(r)
		switch {
		case s == want:
			return nil
		case strings.HasPrefix(s, "*3\r\n$11\r\nunsubscribe\r\n"):
		case messages != nil && isMessage(s):
			messages.Add(1)
		default:
			return fmt.Errorf("got %q while waiting for %q", s, want)
		}
	}
}

// TestSubscribersMatchASetModel adds and removes outboxes of a
// subscribers set at random and checks it against a map after each step:
// the same members, each once in the slice a message runs through.
func TestSubscribersMatchASetModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	boxes := make([]*outbox, 20)
	for i := range boxes {
		boxes[i] = &outbox{}
	}
	var s subscribers
	model := map[*outbox]bool{}
	for step := range 5000 {
		box := boxes[rng.IntN(len(boxes))]
		if rng.IntN(2) == 0 {
			if got, want := s.add(box), !model[box]; got != want {
				t.Fatalf("step %d: add reported %v, want %v", step, got, want)
			}
			model[box] = true
		} else {
			if got, want := s.remove(box), model[box]; got != want {
				t.Fatalf("step %d: remove reported %v, want %v", step, got, want)
			}
			delete(model, box)
		}
		seen := map[*outbox]bool{}
		for i, b := range s.boxes {
			if seen[b] || !model[b] || s.at[b] != i {
				t.Fatalf("step %d: %p in the slice twice, not a member, or indexed at %d rather than %d", step, b, s.at[b], i)
			}
			seen[b] = true
		}
		if len(seen) != len(model) || len(s.at) != len(model) {
			t.Fatalf("step %d: %d in the slice, %d indexed, %d members", step, len(seen), len(s.at), len(model))
		}
	}
}
