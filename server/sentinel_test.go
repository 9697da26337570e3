package server

import (
	"bytes"
	"context"
	"maps"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/presenced/presenced/server/redisserver"
)

// TestSentinelAnswersFromTheCluster checks SENTINEL on every node of a
// cluster: the leader is the master, at its client address, the other
// nodes its replicas and the node's fellow sentinels.
func TestSentinelAnswersFromTheCluster(t *testing.T) {
	srvs := startCluster(t, 3)
	l := clusterLeader(t, srvs)
	ctx := context.Background()
	for _, s := range srvs {
		c := dial(t, s.Addr())
		host, port, _ := net.SplitHostPort(l.Addr())
		c.expect("*2\r\n"+bulk(host)+bulk(port), "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")
		c.expect("*-1\r\n", "SENTINEL", "get-master-addr-by-name", "other")
		c.expect("-ERR No such master with that name\r\n", "SENTINEL", "MASTER", "other")
		c.expect("-ERR No such master with that name\r\n", "SENTINEL", "REPLICAS", "other")
		c.expect("-ERR unknown subcommand 'NOSUCH'. Try SENTINEL HELP.\r\n", "SENTINEL", "NOSUCH")
		c.expect("-ERR wrong number of arguments for 'sentinel|master' command\r\n", "SENTINEL", "MASTER")
		c.expect("+OK 3 usable Sentinels. Quorum and failover authorization can be reached\r\n", "SENTINEL", "CKQUORUM", "mymaster")
		if id := bulkBody(t, c.do("SENTINEL", "MYID")); len(id) != 40 || id != runID(s.Node().Config().NodeID) {
			t.Errorf("SENTINEL MYID = %q", id)
		}

		rdb := redis.NewSentinelClient(&redis.Options{Addr: s.Addr()})
		t.Cleanup(func() { rdb.Close() })
		master, err := rdb.Master(ctx, "mymaster").Result()
		if err != nil {
			t.Fatal(err)
		}
		if master["ip"] != host || master["port"] != port || master["flags"] != "master" || master["num-slaves"] != "2" || master["quorum"] != "2" {
			t.Errorf("SENTINEL MASTER on %s: %v", s.Addr(), master)
		}
		replicas, err := rdb.Replicas(ctx, "mymaster").Result()
		if err != nil {
			t.Fatal(err)
		}
		checkListed(t, "SENTINEL REPLICAS on "+s.Addr(), replicas, func(r map[string]string) bool {
			return r["flags"] == "slave" && r["master-host"] == host && r["master-port"] == port && r["master-link-status"] == "ok"
		}, srvs, l)
		sentinels, err := rdb.Sentinels(ctx, "mymaster").Result()
		if err != nil {
			t.Fatal(err)
		}
		checkListed(t, "SENTINEL SENTINELS on "+s.Addr(), sentinels, func(o map[string]string) bool {
			return o["flags"] == "sentinel"
		}, srvs, s)
	}
}

// checkListed checks that the entries of a SENTINEL REPLICAS or
// SENTINELS reply each pass ok, and list the client addresses of srvs but
// except's.
func checkListed(t *testing.T, what string, entries []map[string]string, ok func(map[string]string) bool, srvs []*Server, except *Server) {
	t.Helper()
	var got, want []string
	for _, e := range entries {
		if !ok(e) {
			t.Errorf("%s: entry %v", what, e)
		}
		got = append(got, net.JoinHostPort(e["ip"], e["port"]))
	}
	for _, o := range srvs {
		if o != except {
			want = append(want, o.Addr())
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s lists %v, want %v", what, got, want)
	}
}

// TestSentinelFailoverClient drives a cluster with go-redis's client for
// Sentinel, given the leader alone as its sentinel: it finds the leader,
// and the other nodes as sentinels (SENTINEL SENTINELS); when the leader
// stops, it asks them for the new one and writes on, and a subscriber of
// +switch-master hears of the switch.
func TestSentinelFailoverClient(t *testing.T) {
	srvs := startCluster(t, 3)
	l := clusterLeader(t, srvs)
	ctx := context.Background()
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: []string{l.Addr()}})
	t.Cleanup(func() { rdb.Close() })
	role, err := rdb.Do(ctx, "ROLE").Slice()
	if err != nil || role[0] != "master" {
		t.Fatalf("the client's first node: ROLE = %v, %v", role, err)
	}
	if err := rdb.Set(ctx, "k", "before", 0).Err(); err != nil {
		t.Fatal(err)
	}

	// A subscriber of +switch-master on a node that stays.
	var survivor *Server
	for _, s := range srvs {
		if s != l {
			survivor = s
		}
	}
	sub := dial(t, survivor.Addr())
	sub.do("SUBSCRIBE", "+switch-master")

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	msg := sub.reply()
	_, elems, ok := arrayElements([]byte(msg))
	if !ok || len(elems) != 3 {
		t.Fatalf("+switch-master message %q", msg)
	}
	parts := strings.Fields(bulkBody(t, string(elems[2])))
	oldHost, oldPort, _ := net.SplitHostPort(l.Addr())
	if len(parts) != 5 || parts[0] != "mymaster" || parts[1] != oldHost || parts[2] != oldPort {
		t.Fatalf("+switch-master message %q", msg)
	}
	newAddr := net.JoinHostPort(parts[3], parts[4])
	var newLeader *Server
	for _, s := range srvs {
		if s.Addr() == newAddr {
			newLeader = s
		}
	}
	if newLeader == nil || !newLeader.Node().IsLeader() {
		t.Fatalf("+switch-master names %s, not the new leader", newAddr)
	}
	if err := rdb.Set(ctx, "k", "after", 0).Err(); err != nil {
		t.Fatalf("write after the failover: %v", err)
	}
	if v, err := rdb.Get(ctx, "k").Result(); v != "after" || err != nil {
		t.Fatalf("GET k = %q, %v", v, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		role, err := rdb.Do(ctx, "ROLE").Slice()
		if err == nil && role[0] == "master" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the client did not move to the new leader: ROLE = %v, %v", role, err)
		}
	}
}

// startSentinel starts a real Redis Sentinel that monitors the master at
// addr as mymaster.
func startSentinel(t *testing.T, master string) *redisserver.Process {
	t.Helper()
	bin := redisserver.RequireProgram(t, "redis-server")
	dir := t.TempDir()
	host, port, _ := net.SplitHostPort(master)
	conf := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(conf, []byte("sentinel monitor mymaster "+host+" "+port+" 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Sentinel wants its configuration file first, before the options
	// StartBinary gives.
	wrapper := filepath.Join(dir, "sentinel.sh")
	script := "#!/bin/sh\nexec " + bin + " " + conf + " --sentinel \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := redisserver.StartBinary(wrapper, redisserver.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// sentinelKeys returns the field names of a SENTINEL MASTER-style map
// reply (RESP2's flat array or RESP3's map), in order.
func sentinelKeys(t *testing.T, raw []byte) []string {
	t.Helper()
	_, elems, ok := arrayElements(raw)
	if !ok {
		t.Fatalf("not a map: %q", raw)
	}
	var keys []string
	for i := 0; i < len(elems); i += 2 {
		keys = append(keys, bulkBody(t, string(elems[i])))
	}
	return keys
}

// TestSentinelRepliesMatchSentinel compares the shapes of SENTINEL's
// replies with a real Sentinel's, watching a redis-server and its
// replica: the same fields in the same order, in RESP2 and RESP3, and
// the same refusals.
func TestSentinelRepliesMatchSentinel(t *testing.T) {
	master := redisserver.StartForTest(t, redisserver.Options{})
	mhost, mport, _ := net.SplitHostPort(master.Addr())
	redisserver.StartForTest(t, redisserver.Options{Args: []string{"--replicaof", mhost, mport}})
	ref := dialTarget(t, "sentinel", startSentinel(t, master.Addr()).Addr())
	srvs := startCluster(t, 3)
	sut := dialTarget(t, "presenced", clusterLeader(t, srvs).Addr())
	do := func(d *diffTarget, args ...string) []byte {
		reply, err := d.do(argv(args...))
		if err != nil {
			t.Fatal(err)
		}
		return reply
	}
	// Sentinel learns of the replica from the master's INFO.
	deadline := time.Now().Add(10 * time.Second)
	for string(do(ref, "SENTINEL", "REPLICAS", "mymaster")) == "*0\r\n" {
		if time.Now().After(deadline) {
			t.Fatal("Sentinel did not find the replica")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, proto := range []string{"2", "3"} {
		do(ref, "HELLO", proto)
		do(sut, "HELLO", proto)
		if got, want := sentinelKeys(t, do(sut, "SENTINEL", "MASTER", "mymaster")), sentinelKeys(t, do(ref, "SENTINEL", "MASTER", "mymaster")); !slices.Equal(got, want) {
			t.Errorf("RESP%s: SENTINEL MASTER fields %q, Sentinel's %q", proto, got, want)
		}
		_, mine, _ := arrayElements(do(sut, "SENTINEL", "REPLICAS", "mymaster"))
		_, theirs, _ := arrayElements(do(ref, "SENTINEL", "REPLICAS", "mymaster"))
		if got, want := sentinelKeys(t, mine[0]), sentinelKeys(t, theirs[0]); !slices.Equal(got, want) {
			t.Errorf("RESP%s: SENTINEL REPLICAS fields %q, Sentinel's %q", proto, got, want)
		}
		for _, args := range [][]string{
			{"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "other"},
			{"SENTINEL", "MASTER", "other"},
			{"SENTINEL", "REPLICAS", "other"},
			{"SENTINEL", "SENTINELS", "other"},
			{"SENTINEL", "NOSUCH"},
			{"SENTINEL", "MASTER"},
			{"SENTINEL", "MASTERS", "x"},
			{"SENTINEL", "CKQUORUM", "other"},
			{"SENTINEL", "FAILOVER", "other"},
			{"SENTINEL", "CKQUORUM"},
			{"SENTINEL", "FAILOVER", "mymaster", "x"},
		} {
			if got, want := do(sut, args...), do(ref, args...); !bytes.Equal(got, want) {
				t.Errorf("RESP%s: %s: %q, Sentinel %q", proto, formatCommand(argv(args...)), got, want)
			}
		}
	}
}

// TestSentinelLoneMasterMatchesSentinel compares, byte for byte, a real
// Sentinel watching a redis-server without replicas and a lone node
// answering for itself: both can reach their quorum, and neither has a
// replica to fail over to.
func TestSentinelLoneMasterMatchesSentinel(t *testing.T) {
	ref := dial(t, startSentinel(t, redisserver.StartForTest(t, redisserver.Options{}).Addr()).Addr())
	sut := dial(t, startServer(t).Addr())
	for _, args := range [][]string{
		{"SENTINEL", "CKQUORUM", "mymaster"},
		{"SENTINEL", "FAILOVER", "mymaster"},
	} {
		if got, want := sut.do(args...), ref.do(args...); got != want {
			t.Errorf("%v: %q, Sentinel %q", args, got, want)
		}
	}
}

// TestSentinelFailover checks SENTINEL FAILOVER through go-redis's
// Sentinel client, sent to a follower and then to the leader: each time
// the leader hands its leadership over before the reply, and writes go
// on through the new one.
func TestSentinelFailover(t *testing.T) {
	srvs := startCluster(t, 3)
	ctx := context.Background()
	for i, via := range []string{"a follower", "the leader"} {
		l := clusterLeader(t, srvs)
		node := l
		if i == 0 {
			node = clusterFollowers(srvs, l)[0]
		}
		rdb := redis.NewSentinelClient(&redis.Options{Addr: node.Addr()})
		t.Cleanup(func() { rdb.Close() })
		if err := rdb.Failover(ctx, "mymaster").Err(); err != nil {
			t.Fatalf("SENTINEL FAILOVER on %s: %v", via, err)
		}
		if l.Node().IsLeader() {
			t.Fatalf("SENTINEL FAILOVER on %s answered while the leader still led", via)
		}
		if next := clusterLeader(t, srvs); next == l {
			t.Fatalf("SENTINEL FAILOVER on %s: the same leader leads again", via)
		}
		c := dial(t, node.Addr())
		c.expect("+OK\r\n", "SET", "k", via)
		c.expect(bulk(via), "GET", "k")
	}
}

// TestSentinelQuorum checks SENTINEL CKQUORUM as the nodes of a 3-node
// cluster stop: two of three still reach the quorum, one alone does not.
func TestSentinelQuorum(t *testing.T) {
	srvs := startCluster(t, 3)
	survivor := clusterFollowers(srvs, clusterLeader(t, srvs))[0]
	c := dial(t, survivor.Addr())
	want := []string{
		"+OK 2 usable Sentinels. Quorum and failover authorization can be reached\r\n",
		"-NOQUORUM 1 usable Sentinels. Not enough available Sentinels to reach the specified quorum for this master. " +
			"Not enough available Sentinels to reach the majority and authorize a failover\r\n",
	}
	stopped := 0
	for _, s := range srvs {
		if s == survivor {
			continue
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		c.expect(want[stopped], "SENTINEL", "CKQUORUM", "mymaster")
		stopped++
	}
}

// sentinelPyScript finds the master through redis-py's Sentinel, given
// one node as its sentinel, writes and reads through it, and prints the
// master's and the replicas' addresses.
const sentinelPyScript = `
import sys
from redis.sentinel import Sentinel
s = Sentinel([("127.0.0.1", int(sys.argv[1]))], socket_timeout=5)
m = s.master_for("mymaster", socket_timeout=5)
m.set("py", "v")
host, port = s.discover_master("mymaster")
print("%s:%d" % (host, port))
print(m.get("py").decode())
print(" ".join(sorted("%s:%d" % a for a in s.discover_slaves("mymaster"))))
`

// TestSentinelRedisPy checks that redis-py's Sentinel finds the leader,
// writes through it, and lists the followers as replicas.
func TestSentinelRedisPy(t *testing.T) {
	python := pythonWithRedis(t)
	srvs := startCluster(t, 3)
	l := clusterLeader(t, srvs)
	var followers []string
	for _, s := range srvs {
		if s != l {
			followers = append(followers, s.Addr())
		}
	}
	slices.Sort(followers)
	_, port, _ := net.SplitHostPort(followers[0])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := osexec.CommandContext(ctx, python, "-c", sentinelPyScript, port).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-py: %v\n%s", err, out)
	}
	want := l.Addr() + "\nv\n" + strings.Join(followers, " ") + "\n"
	if string(out) != want {
		t.Errorf("redis-py printed %q, want %q", out, want)
	}
}

// sentinelIoredisScript finds the master through ioredis's Sentinel
// support, given one node as its sentinel, writes and reads through it,
// and prints the address it connected to and what it read.
const sentinelIoredisScript = `
const Redis = require("ioredis");
const [host, port] = process.argv[1].split(":");
const r = new Redis({ sentinels: [{ host, port: Number(port) }], name: "mymaster", lazyConnect: true });
(async () => {
  await r.connect();
  await r.set("js", "v");
  console.log(r.stream.remoteAddress + ":" + r.stream.remotePort);
  console.log(await r.get("js"));
  r.disconnect();
})().catch((e) => { console.error(e); process.exit(1); });
`

// TestSentinelIoredis checks that ioredis's Sentinel support finds the
// leader and writes through it.
func TestSentinelIoredis(t *testing.T) {
	node := requireTool(t, "node")
	srvs := startCluster(t, 3)
	l := clusterLeader(t, srvs)
	follower := srvs[0]
	if follower == l {
		follower = srvs[1]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := osexec.CommandContext(ctx, node, "-e", sentinelIoredisScript, follower.Addr())
	cmd.Dir = ioredisDir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ioredis: %v\n%s", err, out)
	}
	if want := l.Addr() + "\nv\n"; string(out) != want {
		t.Errorf("ioredis printed %q, want %q", out, want)
	}
}

// TestSentinelReportsADownNode checks that a member that does not answer
// is listed at the client address it gave before, flagged down, while
// the others are not.
func TestSentinelReportsADownNode(t *testing.T) {
	srvs := startCluster(t, 3)
	l := clusterLeader(t, srvs)
	var down, up *Server
	for _, s := range srvs {
		switch {
		case s == l:
		case down == nil:
			down = s
		default:
			up = s
		}
	}
	ctx := context.Background()
	rdb := redis.NewSentinelClient(&redis.Options{Addr: l.Addr()})
	t.Cleanup(func() { rdb.Close() })
	if _, err := rdb.Replicas(ctx, "mymaster").Result(); err != nil {
		t.Fatal(err)
	}
	downAddr := down.Addr()
	if err := down.Close(); err != nil {
		t.Fatal(err)
	}
	replicas, err := rdb.Replicas(ctx, "mymaster").Result()
	if err != nil {
		t.Fatal(err)
	}
	flags := map[string]string{}
	for _, r := range replicas {
		flags[net.JoinHostPort(r["ip"], r["port"])] = r["flags"]
	}
	want := map[string]string{downAddr: "slave,s_down,disconnected", up.Addr(): "slave"}
	if !maps.Equal(flags, want) {
		t.Errorf("SENTINEL REPLICAS flags %v, want %v", flags, want)
	}
}
