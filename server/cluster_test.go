package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	osexec "os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/redis/go-redis/v9"

	"github.com/presenced/presenced/cluster"
	"github.com/presenced/presenced/server/redisserver"
	"github.com/presenced/presenced/store"
)

// These tests run three servers in one process, replicating over TCP on
// loopback: the first bootstraps the cluster, the others join it through
// its client port, as `presenced --join` does.

// clusterLeaderWait is the LeaderWait of the test clusters: how long a
// write or a linearizable read waits for a reachable leader.
const clusterLeaderWait = time.Second

// startCluster starts n servers that form one cluster and returns them
// once every one of them applied the whole membership; opts change every
// server's configuration.
func startCluster(t *testing.T, n int, opts ...func(*Config)) []*Server {
	t.Helper()
	var srvs []*Server
	for i := range n {
		join := ""
		if i > 0 {
			join = srvs[0].Addr()
		}
		srvs = append(srvs, startServer(t, append([]func(*Config){clusterMember(i, join)}, opts...)...))
	}
	waitApplied(t, srvs)
	return srvs
}

// clusterMember configures the i-th node of a test cluster (from 0),
// which joins the member at join, or bootstraps when join is empty.
func clusterMember(i int, join string) func(*Config) {
	return func(c *Config) {
		c.Cluster.NodeID = "n" + strconv.Itoa(i+1)
		// Slower than a standalone test server's: three nodes
		// sharing a loaded machine must not lose their leader
		// between two steps of a test.
		c.Cluster.HeartbeatTimeout = 300 * time.Millisecond
		c.Cluster.ElectionTimeout = 300 * time.Millisecond
		c.Cluster.LeaderLeaseTimeout = 150 * time.Millisecond
		c.Cluster.LeaderWait = clusterLeaderWait
		c.Cluster.Bootstrap = join == ""
		c.Cluster.Join = join
	}
}

// waitApplied waits until every server applied every entry the leader had
// applied when it was called.
func waitApplied(t *testing.T, srvs []*Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l := clusterLeader(t, srvs)
	if err := l.Node().Tick(ctx); err != nil {
		t.Fatal(err)
	}
	index, _ := l.Node().Digest()
	for _, s := range srvs {
		if err := s.Node().WaitApplied(ctx, index); err != nil {
			t.Fatalf("%s did not apply index %d: %v", s.Node().Config().NodeID, index, err)
		}
	}
}

// checkDigests fails the test unless every server's state digest is the
// same at one applied index: ticks may go on entering the log, so it
// takes the digests again until all were taken at the same index.
func checkDigests(t *testing.T, srvs []*Server) {
	t.Helper()
	waitApplied(t, srvs)
	deadline := time.Now().Add(20 * time.Second)
	for {
		index, digest := srvs[0].Node().Digest()
		same := true
		for _, s := range srvs[1:] {
			i, d := s.Node().Digest()
			if i != index {
				same = false
				break
			}
			if d != digest {
				t.Fatalf("%s: digest %x at index %d, want %x", s.Node().Config().NodeID, d, i, digest)
			}
		}
		if same {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the servers' applied indexes did not meet")
		}
		time.Sleep(time.Millisecond)
	}
}

// clusterLeader returns the server that leads, waiting for one.
func clusterLeader(t *testing.T, srvs []*Server) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		id, err := srvs[0].Node().WaitLeader(ctx)
		if err != nil {
			t.Fatal("no leader:", err)
		}
		for _, s := range srvs {
			if s.Node().Config().NodeID == id && s.Node().IsLeader() {
				return s
			}
		}
		// The leader srvs[0] knows of stepped down; its successor is
		// being elected.
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// leaderAndFollower starts a 3-node cluster and returns its servers, its
// leader and one of its followers.
func leaderAndFollower(t *testing.T) (srvs []*Server, l, f *Server) {
	t.Helper()
	srvs = startCluster(t, 3)
	l = clusterLeader(t, srvs)
	return srvs, l, clusterFollowers(srvs, l)[0]
}

// clusterFollowers returns the servers other than the leader l.
func clusterFollowers(srvs []*Server, l *Server) []*Server {
	var out []*Server
	for _, s := range srvs {
		if s != l {
			out = append(out, s)
		}
	}
	return out
}

// followerScript is a session of writes, a transaction that switches
// databases inside it, reads and errors; keys get a prefix so that the
// same script can run twice on one cluster.
func followerScript(prefix string) [][]string {
	k := func(name string) string { return prefix + name }
	return [][]string{
		{"SET", k("s"), "hello"},
		{"SETBIT", k("bits"), "7", "1"},
		{"SETBIT", k("bits"), "100", "1"},
		{"SETBIT", k("bits"), "7", "0"},
		{"INCR", k("n")},
		{"INCRBY", k("n"), "41"},
		{"APPEND", k("s"), " world"},
		{"MULTI"},
		{"SET", k("m"), "db0"},
		{"SELECT", "3"},
		{"SET", k("m"), "db3"},
		{"INCR", k("c")},
		{"SETBIT", k("mb"), "9", "1"},
		{"INCR", k("m")},
		{"LCS", k("m"), k("c"), "IDX"},
		{"SET", k("none"), "x", "XX", "GET"},
		{"EXEC"},
		{"SET", k("s2"), "x", "GET"},
		{"GETDEL", k("none")},
		{"GET", k("m")},
		{"BITCOUNT", k("mb")},
		{"SELECT", "0"},
		{"GET", k("m")},
		{"GET", k("s")},
		{"GET", k("n")},
		{"BITCOUNT", k("bits")},
		{"GETBIT", k("bits"), "100"},
		{"INCR", k("s")},
		{"SETBIT", k("bits"), "-1", "1"},
		{"SET", k("t"), "v", "EX", "100"},
		{"TTL", k("t")},
		{"PFADD", k("h"), "a", "b", "c"},
		{"PFCOUNT", k("h")},
		{"PFMERGE", k("hm"), k("h"), k("none")},
		{"PFCOUNT", k("h"), k("hm")},
		{"GET", k("hm")},
		{"PFADD", k("s"), "x"},
	}
}

// runScript runs script on a new connection to addr and returns every
// reply.
func runScript(t *testing.T, addr string, script [][]string) []string {
	t.Helper()
	c := dial(t, addr)
	var out []string
	for _, cmd := range script {
		out = append(out, c.do(cmd...))
	}
	return out
}

// TestFollowerServesWrites checks that a client of a follower writes as
// if the follower were the leader: same replies as the leader's (and
// redis-server's) for the same session, in RESP2 and in RESP3, and the
// data on every node.
func TestFollowerServesWrites(t *testing.T) {
	srvs, l, f := leaderAndFollower(t)
	ref := redisserver.StartIfInstalled(t, redisserver.Options{})
	// session runs the script in protocol resp and returns its replies
	// after HELLO's.
	session := func(addr, prefix, resp string) []string {
		return runScript(t, addr, append([][]string{{"HELLO", resp}}, followerScript(prefix)...))[1:]
	}
	for _, resp := range []string{"2", "3"} {
		onLeader := session(l.Addr(), "L"+resp+":", resp)
		onFollower := session(f.Addr(), "F"+resp+":", resp)
		for i, cmd := range followerScript("") {
			if onFollower[i] != onLeader[i] {
				t.Errorf("RESP%s: %v: follower replied %q, leader %q", resp, cmd, onFollower[i], onLeader[i])
			}
		}
		if ref == nil {
			continue
		}
		onRedis := session(ref.Addr(), "F"+resp+":", resp)
		for i, cmd := range followerScript("") {
			if onFollower[i] != onRedis[i] {
				t.Errorf("RESP%s: %v: follower replied %q, redis-server %q", resp, cmd, onFollower[i], onRedis[i])
			}
		}
	}
	// Every node reads what the follower wrote (reads are linearizable,
	// so this needs no waiting).
	check := [][]string{{"GET", "F3:s"}, {"GET", "F3:n"}, {"BITCOUNT", "F3:bits"}, {"SELECT", "3"}, {"GET", "F3:m"}, {"GET", "F3:c"}, {"GETBIT", "F3:mb", "9"}}
	want := []string{bulk("hello world"), bulk("42"), ":1\r\n", "+OK\r\n", bulk("db3"), bulk("1"), ":1\r\n"}
	for _, s := range srvs {
		if got := runScript(t, s.Addr(), check); !slices.Equal(got, want) {
			t.Errorf("%s reads %q, want %q", s.Node().Config().NodeID, got, want)
		}
	}
}

// TestPFCountCachesOnEveryReplica checks that PFCOUNT of one key, which
// writes the count it computes into the key's header as Redis does, does
// so through the log: counted on a follower, the key has the same bytes
// on every node, the count cached in them, and the replicas' digests
// match.
func TestPFCountCachesOnEveryReplica(t *testing.T) {
	srvs, l, f := leaderAndFollower(t)
	runScript(t, l.Addr(), [][]string{{"PFADD", "h", "a", "b", "c"}})
	if got := runScript(t, f.Addr(), [][]string{{"PFCOUNT", "h"}}); got[0] != ":3\r\n" {
		t.Fatalf("PFCOUNT on a follower: %q", got[0])
	}
	waitApplied(t, srvs)
	for _, s := range srvs {
		v := bulkBody(t, runScript(t, s.Addr(), [][]string{{"READONLY"}, {"GET", "h"}})[1])
		if len(v) < 16 || v[8:16] != "\x03\x00\x00\x00\x00\x00\x00\x00" {
			t.Errorf("%s holds %q: not the count 3 cached", s.Node().Config().NodeID, v)
		}
	}
	checkDigests(t, srvs)
}

// TestFollowerKeepsForwardConnections checks that a follower forwarding
// the writes of many clients at once reuses its connections to the
// leader rather than dialing new ones for every burst: the second of two
// rounds of the same concurrency opens none.
func TestFollowerKeepsForwardConnections(t *testing.T) {
	_, l, f := leaderAndFollower(t)
	ctx := context.Background()
	// More clients than the connections a follower keeps idle would be
	// if it forwarded each write on a connection of its own (8, once).
	const writers = 32
	fc := newGoRedis(t, f, func(o *redis.Options) { o.PoolSize = writers; o.MinIdleConns = writers })
	lc := dial(t, l.Addr()) // opened before the rounds: it is not counted in them
	accepted := func() string {
		_, fields := infoFields(t, lc.do("INFO", "stats"))
		return fields["total_connections_received"]
	}
	round := func(r int) {
		errs := make(chan error, writers)
		for w := range writers {
			go func() {
				var err error
				for i := range 50 {
					if err = fc.SetBit(ctx, "fwd", int64(r*100_000+w*1000+i), 1).Err(); err != nil {
						break
					}
				}
				errs <- err
			}()
		}
		for range writers {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
	round(1)
	before := accepted()
	round(2)
	if after := accepted(); after != before {
		t.Errorf("the leader accepted connections during the second round: %s before, %s after", before, after)
	}
	if got, want := lc.do("BITCOUNT", "fwd"), fmt.Sprintf(":%d\r\n", 2*writers*50); got != want {
		t.Errorf("BITCOUNT on the leader: %q, want %q", got, want)
	}
}

// TestFollowerGroupsForwardedWrites has 32 clients of a follower write at
// once, each in a database of its own and some failing a command now and
// then: each must get its own replies, and the follower must forward them
// in fewer calls to the leader than there are writes.
func TestFollowerGroupsForwardedWrites(t *testing.T) {
	_, l, f := leaderAndFollower(t)
	ctx := context.Background()
	const writers, writes = 32, 40
	lc := dial(t, l.Addr())
	execs := func() int {
		_, fields := infoFields(t, lc.do("INFO", "commandstats"))
		calls, _, _ := strings.Cut(strings.TrimPrefix(fields["cmdstat_exec"], "calls="), ",")
		n, _ := strconv.Atoi(calls)
		return n
	}
	before := execs()
	clients := make([]*redis.Client, writers)
	for w := range clients {
		clients[w] = newGoRedis(t, f, func(o *redis.Options) { o.DB = w % 16 })
	}
	errs := make(chan error, writers)
	for w, c := range clients {
		go func() {
			key := fmt.Sprintf("n:%d", w)
			err := c.Set(ctx, "s:"+key, "not a number", 0).Err()
			for i := 1; i <= writes && err == nil; i++ {
				var n int64
				if n, err = c.Incr(ctx, key).Result(); err == nil && n != int64(i) {
					err = fmt.Errorf("writer %d: INCR %s answered %d, want %d", w, key, n, i)
				}
				if w%4 == 0 && err == nil {
					if err = c.Incr(ctx, "s:"+key).Err(); err != nil && strings.Contains(err.Error(), "not an integer") {
						err = nil
					} else {
						err = fmt.Errorf("writer %d: INCR of a string answered %v", w, err)
					}
				}
			}
			errs <- err
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	total := writers*(writes+1) + writers/4*writes
	if calls := execs() - before; calls >= total*3/4 {
		t.Errorf("the follower forwarded %d writes in %d calls", total, calls)
	}
}

// TestFollowerGoRedis drives a follower and the leader with go-redis's
// typed API, a transaction with SELECT inside included, and compares the
// results.
func TestFollowerGoRedis(t *testing.T) {
	srvs, l, f := leaderAndFollower(t)
	ctx := context.Background()
	session := func(srv *Server, prefix string) []string {
		conn := newGoRedis(t, srv).Conn()
		defer conn.Close()
		var out []string
		note := func(c redis.Cmder) { out = append(out, c.String()) }
		note(conn.Set(ctx, prefix+"s", "v", time.Minute))
		note(conn.SetBit(ctx, prefix+"b", 1000, 1))
		note(conn.SetBit(ctx, prefix+"b", 1000, 1))
		note(conn.Incr(ctx, prefix+"n"))
		cmds, err := conn.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Incr(ctx, prefix+"n")
			p.Select(ctx, 5)
			p.SetBit(ctx, prefix+"b", 3, 1)
			p.Set(ctx, prefix+"s", "db5", 0)
			p.Incr(ctx, prefix+"s") // an error inside the transaction
			return nil
		})
		if err == nil || !strings.Contains(err.Error(), "not an integer") {
			t.Errorf("transaction error: %v", err)
		}
		for _, c := range cmds {
			note(c)
		}
		note(conn.BitCount(ctx, prefix+"b", nil))
		note(conn.Get(ctx, prefix+"s"))
		note(conn.Select(ctx, 0))
		note(conn.Get(ctx, prefix+"n"))
		note(conn.BitCount(ctx, prefix+"b", nil))
		return out
	}
	want := session(l, "L:")
	got := session(f, "F:")
	for i := range want {
		if strings.ReplaceAll(got[i], "F:", "") != strings.ReplaceAll(want[i], "L:", "") {
			t.Errorf("follower: %s; leader: %s", got[i], want[i])
		}
	}
	for _, s := range srvs {
		rdb := newGoRedis(t, s, func(o *redis.Options) { o.DB = 5 })
		if v, err := rdb.Get(ctx, "F:s").Result(); v != "db5" || err != nil {
			t.Errorf("%s: GET in db 5: %q, %v", s.Node().Config().NodeID, v, err)
		}
		if v, err := rdb.GetBit(ctx, "F:b", 3).Result(); v != 1 || err != nil {
			t.Errorf("%s: GETBIT in db 5: %d, %v", s.Node().Config().NodeID, v, err)
		}
	}
}

// followerPyScript runs a redis-py session (writes, a transaction with
// SELECT inside and an error, reads) on the server at the port given and
// prints the results as JSON.
const followerPyScript = `
import json, sys, redis
r = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]))
k = sys.argv[2]
out = []
out.append(r.set(k + "s", "v"))
out.append(r.setbit(k + "b", 77, 1))
out.append(r.setbit(k + "b", 77, 1))
out.append(r.incr(k + "n"))
p = r.pipeline(transaction=True)
p.incr(k + "n")
p.execute_command("SELECT", 2)
p.setbit(k + "b", 5, 1)
p.set(k + "x", "db2")
p.incr(k + "x")
res = p.execute(raise_on_error=False)
out.append([type(e).__name__ + ": " + str(e) if isinstance(e, Exception) else e for e in res])
# The transaction's SELECT stays in force on the connection it ran on,
# which r keeps: read through new clients.
r0 = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]))
r2 = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]), db=2)
out.append([r2.get(k + "x").decode(), r2.getbit(k + "b", 5), r0.bitcount(k + "b"), int(r0.get(k + "n"))])
print(json.dumps(out))
`

// TestFollowerRedisPy runs the same redis-py session on the leader and on
// a follower and compares their results.
func TestFollowerRedisPy(t *testing.T) {
	python := pythonWithRedis(t)
	_, l, f := leaderAndFollower(t)
	run := func(srv *Server, prefix string) string {
		_, port, _ := net.SplitHostPort(srv.Addr())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := osexec.CommandContext(ctx, python, "-c", followerPyScript, port, prefix).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-py on %s: %v\n%s", srv.Node().Config().NodeID, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	onLeader, onFollower := run(l, "L:"), run(f, "F:")
	if onFollower != onLeader {
		t.Errorf("redis-py on a follower: %s\non the leader: %s", onFollower, onLeader)
	}
	var got []any
	if err := json.Unmarshal([]byte(onFollower), &got); err != nil {
		t.Fatalf("redis-py output %q: %v", onFollower, err)
	}
	want := `[true, 0, 1, 1, [2, true, 0, true, "ResponseError: value is not an integer or out of range"], ["db2", 1, 1, 2]]`
	if onFollower != want {
		t.Errorf("redis-py results: %s, want %s", onFollower, want)
	}
}

// TestFollowerReadsAreLinearizable writes on the leader and reads at once
// on a follower, many times: a follower that served its own state without
// the read index would sometimes lag behind.
func TestFollowerReadsAreLinearizable(t *testing.T) {
	srvs := startCluster(t, 3)
	l := clusterLeader(t, srvs)
	w := dial(t, l.Addr())
	for _, f := range clusterFollowers(srvs, l) {
		r := dial(t, f.Addr())
		for i := range 100 {
			v := strconv.Itoa(i)
			w.expect("+OK\r\n", "SET", "lin", v)
			w.expect(":0\r\n", "SETBIT", "linbits", v, "1")
			r.send(redisserver.AppendCommand(redisserver.AppendCommand(nil, "GET", "lin"), "BITCOUNT", "linbits"))
			if got, want := r.replies(2), bulk(v)+":"+strconv.Itoa(i+1)+"\r\n"; got != want {
				t.Fatalf("%s read %q right after the leader acknowledged %q", f.Node().Config().NodeID, got, want)
			}
		}
		w.expect(":1\r\n", "DEL", "linbits")
		// READONLY serves this node's own state; READWRITE goes back to
		// linearizable reads.
		r.expect("+OK\r\n", "READONLY")
		r.expect(":0\r\n", "EXISTS", "nothing")
		r.expect("+OK\r\n", "READWRITE")
		r.expect(bulk("99"), "GET", "lin")
	}
}

// roleOf returns a server's ROLE reply as go-redis decodes it.
func roleOf(t *testing.T, s *Server) []any {
	t.Helper()
	role, err := newGoRedis(t, s).Do(context.Background(), "ROLE").Slice()
	if err != nil {
		t.Fatal(err)
	}
	return role
}

// TestRoleAndInfoReplication checks ROLE and INFO replication on the
// leader and on the followers: Redis's shapes, with raft addresses as the
// hosts and ports, and applied indexes as offsets.
func TestRoleAndInfoReplication(t *testing.T) {
	srvs := startCluster(t, 3)
	l := clusterLeader(t, srvs)
	followers := clusterFollowers(srvs, l)
	var followerAddrs []string
	for _, f := range followers {
		followerAddrs = append(followerAddrs, f.Node().RaftAddr())
	}
	slices.Sort(followerAddrs)

	role := roleOf(t, l)
	if len(role) != 3 || role[0] != "master" {
		t.Fatalf("leader ROLE: %#v", role)
	}
	if off, ok := role[1].(int64); !ok || off <= 0 {
		t.Errorf("leader ROLE offset: %#v", role[1])
	}
	replicas, _ := role[2].([]any)
	var got []string
	for _, r := range replicas {
		r, _ := r.([]any)
		if len(r) != 3 {
			t.Fatalf("leader ROLE replica: %#v", r)
		}
		host, _ := r[0].(string)
		port, _ := r[1].(string)
		off, _ := r[2].(string)
		if n, err := strconv.ParseUint(off, 10, 64); err != nil || n == 0 {
			t.Errorf("replica offset %q", off)
		}
		got = append(got, net.JoinHostPort(host, port))
	}
	slices.Sort(got)
	if !slices.Equal(got, followerAddrs) {
		t.Errorf("leader ROLE lists %q, want the followers' raft addresses %q", got, followerAddrs)
	}

	lc := dial(t, l.Addr())
	_, fields := infoFields(t, lc.do("INFO", "replication"))
	if fields["role"] != "master" || fields["connected_slaves"] != "2" {
		t.Errorf("leader INFO replication: %v", fields)
	}
	got = got[:0]
	for _, key := range []string{"slave0", "slave1"} {
		attrs := map[string]string{}
		for _, kv := range strings.Split(fields[key], ",") {
			k, v, _ := strings.Cut(kv, "=")
			attrs[k] = v
		}
		lag, err := strconv.Atoi(attrs["lag"])
		if attrs["state"] != "online" || err != nil || lag < 0 || attrs["offset"] == "" || attrs["node_id"] == "" {
			t.Errorf("leader INFO %s:%s", key, fields[key])
		}
		got = append(got, net.JoinHostPort(attrs["ip"], attrs["port"]))
	}
	slices.Sort(got)
	if !slices.Equal(got, followerAddrs) {
		t.Errorf("leader INFO lists slaves at %q, want %q", got, followerAddrs)
	}
	checkRaftIndexes(t, fields)

	for _, f := range followers {
		id := f.Node().Config().NodeID
		role := roleOf(t, f)
		if len(role) != 5 || role[0] != "slave" || role[3] != "connected" {
			t.Fatalf("%s ROLE: %#v", id, role)
		}
		host, _ := role[1].(string)
		port, _ := role[2].(int64)
		if addr := net.JoinHostPort(host, strconv.FormatInt(port, 10)); addr != l.Node().RaftAddr() {
			t.Errorf("%s ROLE names the master %s, want the leader's raft address %s", id, addr, l.Node().RaftAddr())
		}
		if off, ok := role[4].(int64); !ok || off <= 0 {
			t.Errorf("%s ROLE offset: %#v", id, role[4])
		}
		_, fields := infoFields(t, dial(t, f.Addr()).do("INFO", "replication"))
		if fields["role"] != "slave" || fields["master_link_status"] != "up" ||
			net.JoinHostPort(fields["master_host"], fields["master_port"]) != l.Node().RaftAddr() ||
			fields["master_node_id"] != l.Node().Config().NodeID {
			t.Errorf("%s INFO replication: %v", id, fields)
		}
		checkRaftIndexes(t, fields)
	}

	// A follower gone: connected_slaves counts the one that answers, as
	// Redis counts the replicas connected, and the other is offline.
	gone := followers[0]
	gone.Close()
	_, fields = infoFields(t, lc.do("INFO", "replication"))
	if fields["connected_slaves"] != "1" {
		t.Errorf("leader INFO replication with a follower gone: connected_slaves %q", fields["connected_slaves"])
	}
	offline := fmt.Sprintf("state=offline,offset=0,lag=-1,node_id=%s", gone.Node().Config().NodeID)
	if !strings.HasSuffix(fields["slave0"], offline) && !strings.HasSuffix(fields["slave1"], offline) {
		t.Errorf("leader INFO replication lists no %q: %v", offline, fields)
	}
}

// noElections has a node wait an hour before it stands for election on
// its own, so that only hand-overs move the leadership.
func noElections(c *Config) {
	c.Cluster.HeartbeatTimeout = time.Hour
	c.Cluster.ElectionTimeout = time.Hour
	c.Cluster.LeaderLeaseTimeout = time.Hour / 2
}

// TestReplicaof checks REPLICAOF in a cluster whose nodes wait an hour
// before they stand for election on their own: NO ONE on a follower makes
// it lead, host port on any node makes the member there lead (by its
// client or raft address), the leader's address on a follower is where
// it is already, and an address of no member is refused.
func TestReplicaof(t *testing.T) {
	srvs := startCluster(t, 3, noElections)
	l := clusterLeader(t, srvs)
	followers := clusterFollowers(srvs, l)
	f := dial(t, followers[0].Addr())
	host, port := splitAddr(l.Addr())
	f.expect("+OK Already connected to specified master\r\n", "REPLICAOF", host, port)
	f.expect("-ERR 127.0.0.1:1 is not a member of this node's cluster: presenced's nodes replicate the leader of their own (RAFT ADD adds a node)\r\n",
		"REPLICAOF", "127.0.0.1", "1")
	f.expect("+OK\r\n", "SET", "k", "1")

	f.expect("+OK\r\n", "REPLICAOF", "NO", "ONE")
	if got := clusterLeader(t, srvs); got != followers[0] {
		t.Fatalf("%s leads after REPLICAOF NO ONE on %s", got.Node().Config().NodeID, followers[0].Node().Config().NodeID)
	}
	f.expect("+OK\r\n", "REPLICAOF", "NO", "ONE")

	// The former leader, a follower now, names the other follower by its
	// raft address; then the new leader names the first by its client
	// address.
	host, port = splitAddr(followers[1].Node().RaftAddr())
	dial(t, l.Addr()).expect("+OK\r\n", "SLAVEOF", host, port)
	if got := clusterLeader(t, srvs); got != followers[1] {
		t.Fatalf("%s leads after SLAVEOF %s:%s", got.Node().Config().NodeID, host, port)
	}
	host, port = splitAddr(l.Addr())
	dial(t, followers[1].Addr()).expect("+OK\r\n", "REPLICAOF", host, port)
	if got := clusterLeader(t, srvs); got != l {
		t.Fatalf("%s leads after REPLICAOF %s:%s", got.Node().Config().NodeID, host, port)
	}
	dial(t, l.Addr()).expect(":2\r\n", "INCR", "k")
}

// TestFailover checks FAILOVER's refusals and hand-overs, the hand-over
// of a leader that stops cleanly, and TIMEOUT's bound on a hand-over to a
// stopped node, in a cluster whose nodes wait an hour before they stand
// for election on their own: only a hand-over can move the leadership.
func TestFailover(t *testing.T) {
	srvs := startCluster(t, 3, noElections)
	l := clusterLeader(t, srvs)
	followers := clusterFollowers(srvs, l)
	dial(t, followers[0].Addr()).expect("-ERR FAILOVER is not valid when server is a replica.\r\n", "FAILOVER")
	lc := dial(t, l.Addr())
	host, port := splitAddr(l.Node().RaftAddr())
	lc.expect("-ERR FAILOVER target HOST and PORT is not a replica.\r\n", "FAILOVER", "TO", host, port)
	lc.expect("-ERR FAILOVER with force option requires both a timeout and target HOST and IP.\r\n", "FAILOVER", "FORCE")
	lc.expect("+OK\r\n", "SET", "k", "1")

	to := followers[1]
	host, port = splitAddr(to.Node().RaftAddr())
	lc.expect("+OK\r\n", "FAILOVER", "TO", host, port, "TIMEOUT", "5000")
	if got := clusterLeader(t, srvs); got != to {
		t.Fatalf("%s leads after FAILOVER TO %s", got.Node().Config().NodeID, to.Node().Config().NodeID)
	}
	if role := roleOf(t, l); role[0] != "slave" {
		t.Errorf("the former leader's ROLE: %#v", role)
	}
	lc.expect("-ERR No failover in progress.\r\n", "FAILOVER", "ABORT")
	dial(t, to.Addr()).expect("+OK\r\n", "FAILOVER")
	next := clusterLeader(t, srvs)
	if next == to {
		t.Fatal("FAILOVER to any replica left the leadership where it was")
	}

	// A leader that stops cleanly hands its leadership over.
	if err := next.Close(); err != nil {
		t.Fatal(err)
	}
	rest := clusterFollowers(srvs, next)
	last := clusterLeader(t, rest)
	c := dial(t, last.Addr())
	c.expect(":2\r\n", "INCR", "k")

	// TIMEOUT bounds the wait for a target that never takes over: a
	// listener that took over the stopped follower's raft address,
	// accepting connections and never answering.
	gone := clusterFollowers(rest, last)[0]
	host, port = splitAddr(gone.Node().RaftAddr())
	if err := gone.Close(); err != nil {
		t.Fatal(err)
	}
	mute, err := net.Listen("tcp", gone.Node().RaftAddr())
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 64)
	t.Cleanup(func() {
		mute.Close()
		for conn := range accepted {
			conn.Close()
		}
	})
	go func() {
		defer close(accepted)
		for {
			conn, err := mute.Accept()
			if err != nil {
				return
			}
			accepted <- conn
		}
	}()
	// The leader's pooled connections to the stopped follower fail first,
	// each ending one attempt at once: in the TimeoutNow RPC, or in the
	// replication that catches the target up before it.
	const want = "-ERR FAILOVER aborted: no other node took over within the timeout\r\n"
	got := ""
	for range 10 {
		got = c.do("FAILOVER", "TO", host, port, "TIMEOUT", "100")
		if !strings.Contains(got, "TimeoutNow RPC") && !strings.Contains(got, "in progress") && !strings.Contains(got, "replication failed") {
			break
		}
	}
	if got != want {
		t.Errorf("FAILOVER to an address that never answers: %q, want %q", got, want)
	}
}

// TestRaftDigest checks RAFT DIGEST's fields, and that RAFT INFO, which
// monitoring polls, leaves the digest out: the data's digest, apart from
// WATCH's versions, changes with the data, and the Applies count each
// entry.
func TestRaftDigest(t *testing.T) {
	srvs := startCluster(t, 1)
	c := dial(t, srvs[0].Addr())
	c.do("SET", "k", "v")
	_, info := infoFields(t, c.do("RAFT", "INFO"))
	digest := func() (applied, applies uint64, fields map[string]string) {
		t.Helper()
		_, fields = infoFields(t, c.do("RAFT", "DIGEST"))
		applied, err1 := strconv.ParseUint(fields["applied_index"], 10, 64)
		applies, err2 := strconv.ParseUint(fields["applies"], 10, 64)
		_, err3 := strconv.ParseUint(fields["digest"], 16, 64)
		_, err4 := strconv.ParseUint(fields["data_digest"], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil || len(fields["digest"]) != 16 || len(fields["data_digest"]) != 16 ||
			fields["digest"] == fields["data_digest"] || len(fields) != 4 {
			t.Fatalf("RAFT DIGEST %v", fields)
		}
		return applied, applies, fields
	}
	applied, applies, fields := digest()
	if before, err := strconv.ParseUint(info["applied_index"], 10, 64); err != nil || applied < before {
		t.Fatalf("RAFT DIGEST %v after RAFT INFO's applied_index %q", fields, info["applied_index"])
	}
	if _, ok := info["digest"]; ok {
		t.Fatalf("RAFT INFO has a digest: %v", info)
	}
	c.do("SET", "k", "w")
	_, later, changed := digest()
	if later <= applies || changed["data_digest"] == fields["data_digest"] {
		t.Fatalf("RAFT DIGEST %v, then %v after a SET", fields, changed)
	}
}

// TestRaftInfoTimesTheLog checks RAFT INFO's counters of log writes and
// of entries committed through the node, and their times: a write from a
// client adds to each.
func TestRaftInfoTimesTheLog(t *testing.T) {
	srvs := startCluster(t, 1)
	c := dial(t, srvs[0].Addr())
	keys := []string{"log_writes", "log_write_usec", "entries_committed", "entry_commit_usec"}
	read := func() map[string]uint64 {
		_, fields := infoFields(t, c.do("RAFT", "INFO"))
		out := map[string]uint64{}
		for _, k := range keys {
			n, err := strconv.ParseUint(fields[k], 10, 64)
			if err != nil {
				t.Fatalf("RAFT INFO %s:%q", k, fields[k])
			}
			out[k] = n
		}
		return out
	}
	before := read()
	if r := c.do("SET", "k", "v"); r != "+OK\r\n" {
		t.Fatalf("SET replied %q", r)
	}
	after := read()
	for _, k := range []string{"log_writes", "entries_committed"} {
		if after[k] <= before[k] {
			t.Errorf("RAFT INFO %s went from %d to %d over a write", k, before[k], after[k])
		}
	}
	for _, k := range []string{"log_write_usec", "entry_commit_usec"} {
		if after[k] < before[k] {
			t.Errorf("RAFT INFO %s went back from %d to %d", k, before[k], after[k])
		}
	}
	if after["entry_commit_usec"] == 0 {
		t.Errorf("RAFT INFO entry_commit_usec is 0 after %d entries", after["entries_committed"])
	}
}

// checkRaftIndexes checks the raft indexes of INFO replication.
func checkRaftIndexes(t *testing.T, fields map[string]string) {
	t.Helper()
	for _, key := range []string{"raft_commit_index", "raft_applied_index", "master_repl_offset"} {
		if n, err := strconv.ParseUint(fields[key], 10, 64); err != nil || n == 0 {
			t.Errorf("INFO %s:%q", key, fields[key])
		}
	}
}

// raftMembers returns the members RAFT INFO lists.
func raftMembers(t *testing.T, c *respConn) []string {
	t.Helper()
	_, fields := infoFields(t, c.do("RAFT", "INFO"))
	n, err := strconv.Atoi(fields["members"])
	if err != nil {
		t.Fatalf("RAFT INFO members:%q", fields["members"])
	}
	var out []string
	for i := range n {
		out = append(out, fields["member"+strconv.Itoa(i)])
	}
	slices.Sort(out)
	return out
}

// TestRaftMembership checks RAFT ADD and RAFT REMOVE: their refusals, and
// a removal sent to a follower, which forwards it to the leader.
func TestRaftMembership(t *testing.T) {
	srvs := startCluster(t, 3)
	l := clusterLeader(t, srvs)
	followers := clusterFollowers(srvs, l)
	a, b := followers[0], followers[1]
	ac := dial(t, a.Addr())
	bID, bAddr := b.Node().Config().NodeID, b.Node().RaftAddr()
	var all []string
	for _, s := range srvs {
		all = append(all, fmt.Sprintf("id=%s,addr=%s,voter=1", s.Node().Config().NodeID, s.Node().RaftAddr()))
	}
	slices.Sort(all)
	if got := raftMembers(t, ac); !slices.Equal(got, all) {
		t.Fatalf("RAFT INFO members %q, want %q", got, all)
	}

	ac.expect("-ERR node "+bID+" is already a member, at "+bAddr+"\r\n", "RAFT", "ADD", bID, "127.0.0.1:1")
	ac.expect("-ERR address "+bAddr+" is already node "+bID+"'s\r\n", "RAFT", "ADD", "n9", bAddr)
	ac.expect("-ERR node n9 is not a member\r\n", "RAFT", "REMOVE", "n9")
	for _, addr := range []string{"notanaddr", "127.0.0.1", ":7001", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:x"} {
		ac.expect(fmt.Sprintf("-ERR invalid raft address %q: want host:port, the port from 1 to 65535\r\n", addr), "RAFT", "ADD", "n9", addr)
	}
	for _, id := range []string{"", "n 9", "n9,voter=1", "n=9", "n\x009"} {
		ac.expect(fmt.Sprintf("-ERR invalid node ID %q: an ID must not be empty or hold spaces, control characters, ',' or '='\r\n", id), "RAFT", "ADD", id, "127.0.0.1:1")
	}
	// Nothing listens at a closed port: a voter there would count towards
	// every majority from the start.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	if got, want := ac.do("RAFT", "ADD", "n9", closed), "-ERR node n9 does not answer at raft address "+closed+" ("; !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "): start it first; --join adds it as it starts\r\n") {
		t.Errorf("RAFT ADD of an address nothing listens at: %q", got)
	}
	if got := raftMembers(t, ac); !slices.Equal(got, all) {
		t.Fatalf("refused changes changed the members: %q", got)
	}

	ac.expect("+OK\r\n", "RAFT", "REMOVE", bID)
	want := slices.DeleteFunc(slices.Clone(all), func(m string) bool { return strings.HasPrefix(m, "id="+bID+",") })
	if got := raftMembers(t, dial(t, l.Addr())); !slices.Equal(got, want) {
		t.Errorf("leader's members after RAFT REMOVE %s: %q, want %q", bID, got, want)
	}
	// A linearizable read makes the follower apply everything the leader
	// committed, the membership change included.
	ac.expect("$-1\r\n", "GET", "x")
	if got := raftMembers(t, ac); !slices.Equal(got, want) {
		t.Errorf("%s's members after RAFT REMOVE %s: %q, want %q", a.Node().Config().NodeID, bID, got, want)
	}
	// The two remaining nodes still form a cluster.
	ac.expect("+OK\r\n", "SET", "after", "remove")
	dial(t, l.Addr()).expect(bulk("remove"), "GET", "after")
}

// TestClusterPasswordChange changes requirepass on the leader alone: the
// linearizable reads the leader confirms with the others, on it and on a
// follower, are refused at once with an error that names the two nodes,
// not after waiting for a leader as if none were reachable; once every
// member has the new password, reads work again.
func TestClusterPasswordChange(t *testing.T) {
	srvs := startCluster(t, 3, withPassword("old"))
	l := clusterLeader(t, srvs)
	f := clusterFollowers(srvs, l)[0]
	conns := map[*Server]*respConn{}
	for _, s := range srvs {
		c := dial(t, s.Addr())
		c.expect("+OK\r\n", "AUTH", "old")
		conns[s] = c
	}
	conns[l].expect("+OK\r\n", "SET", "k", "v")
	conns[l].expect("+OK\r\n", "CONFIG", "SET", "requirepass", "new")
	for _, s := range []*Server{l, f} {
		got := conns[s].do("GET", "k")
		if !strings.HasPrefix(got, "-CLUSTERDOWN The member at ") || !strings.Contains(got, " refused the password of the node at "+l.Node().RaftAddr()+": every member needs the same requirepass\r\n") {
			t.Errorf("GET with the leader's password changed alone: %q", got)
		}
	}
	for _, s := range srvs {
		if s != l {
			conns[s].expect("+OK\r\n", "CONFIG", "SET", "requirepass", "new")
		}
	}
	for _, s := range []*Server{l, f} {
		conns[s].expect(bulk("v"), "GET", "k")
	}
}

// TestRaftAddOtherCluster checks that RAFT ADD refuses a running node
// that belongs to a cluster of its own (one started without --join
// bootstraps one), or whose ID is another: added, a node of a later term
// took the leadership with its own data, or left the cluster that added
// it without a majority. The cluster goes on as it was.
func TestRaftAddOtherCluster(t *testing.T) {
	a, b := startServer(t), startServer(t, func(c *Config) { c.Cluster.NodeID = "other" })
	bID, bAddr := b.Node().Config().NodeID, b.Node().RaftAddr()
	ac := dial(t, a.Addr())
	ac.expect("+OK\r\n", "SET", "k", "a's")
	before := raftMembers(t, ac)
	for id, want := range map[string]string{
		bID:  "-ERR node " + bID + " at raft address " + bAddr + " belongs to a cluster already (a node started without --join bootstraps its own): a node joins from an empty --dir, with --join\r\n",
		"n9": "-ERR the node at raft address " + bAddr + " is " + bID + ", not n9\r\n",
	} {
		ac.expect(want, "RAFT", "ADD", id, bAddr)
	}
	if got := raftMembers(t, ac); !slices.Equal(got, before) {
		t.Errorf("members after the refused additions: %q, want %q", got, before)
	}
	ac.expect("+OK\r\n", "SET", "k", "still a's")
}

// TestRaftLastVoter checks that a one-node cluster refuses to remove its
// only voter.
func TestRaftLastVoter(t *testing.T) {
	c := dial(t, startServer(t).Addr())
	c.expect("-ERR node test is the last voter; a cluster cannot remove it\r\n", "RAFT", "REMOVE", "test")
	c.expect("+OK\r\n", "SET", "still", "writable")
}

// TestRaftCommandErrors checks RAFT's arity and subcommand errors against
// those of a container command of redis-server.
func TestRaftCommandErrors(t *testing.T) {
	c := dial(t, startServer(t).Addr())
	cases := []struct {
		raft, redis []string // a RAFT request and its Redis counterpart
		want        string   // RAFT's reply
	}{
		{[]string{"RAFT"}, []string{"CONFIG"}, "-ERR wrong number of arguments for 'raft' command\r\n"},
		{[]string{"RAFT", "FOO"}, []string{"CONFIG", "FOO"}, "-ERR unknown subcommand 'FOO'. Try RAFT HELP.\r\n"},
		{[]string{"RAFT", "add", "x"}, []string{"CONFIG", "set", "x"}, "-ERR wrong number of arguments for 'raft|add' command\r\n"},
		{[]string{"RAFT", "REMOVE"}, []string{"MEMORY", "USAGE"}, "-ERR wrong number of arguments for 'raft|remove' command\r\n"},
		{[]string{"RAFT", "INFO", "x"}, []string{"MEMORY", "STATS", "x"}, "-ERR wrong number of arguments for 'raft|info' command\r\n"},
		{[]string{"RAFT", "HELP", "x"}, []string{"MEMORY", "HELP", "x"}, "-ERR wrong number of arguments for 'raft|help' command\r\n"},
	}
	ref := redisserver.StartIfInstalled(t, redisserver.Options{})
	var rc *respConn
	if ref != nil {
		rc = dial(t, ref.Addr())
	}
	names := strings.NewReplacer("CONFIG", "RAFT", "MEMORY", "RAFT", "'config'", "'raft'", "config|set", "raft|add",
		"memory|usage", "raft|remove", "memory|stats", "raft|info", "memory|help", "raft|help")
	for _, tc := range cases {
		c.expect(tc.want, tc.raft...)
		if rc != nil {
			if got := names.Replace(rc.do(tc.redis...)); got != tc.want {
				t.Errorf("redis-server's %v, renamed, is %q; RAFT's expected %q", tc.redis, got, tc.want)
			}
		}
	}
	help := c.do("RAFT", "HELP")
	if !strings.HasPrefix(help, "*") || !strings.Contains(help, "+RAFT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n") ||
		!strings.HasSuffix(help, "+HELP\r\n+    Prints this help.\r\n") {
		t.Errorf("RAFT HELP: %q", help)
	}
	if rc != nil {
		first, _, _ := strings.Cut(strings.SplitN(rc.do("CONFIG", "HELP"), "\r\n", 2)[1], "\r\n")
		if want := strings.Replace(first, "CONFIG", "RAFT", 1); !strings.Contains(help, want+"\r\n") {
			t.Errorf("RAFT HELP does not start as Redis's help does (%q): %q", want, help)
		}
	}
}

// TestNoLeader stops two of three servers: on the survivor, writes and
// linearizable reads fail with CLUSTERDOWN within LeaderWait (plus a
// margin), never hanging, while a READONLY connection still reads. The
// survivor wrote and read through the leader before, so it holds an idle
// connection to it, closed by the leader as it stopped: the first request
// after the stop meets it, a read in one case, a write in the other.
func TestNoLeader(t *testing.T) {
	read, write := []string{"GET", "k"}, []string{"SET", "k", "lost"}
	for name, order := range map[string][][]string{
		"read first":  {read, write, {"SETBIT", "b", "1", "1"}},
		"write first": {write, read, {"SETBIT", "b", "1", "1"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srvs := startCluster(t, 3)
			l := clusterLeader(t, srvs)
			survivor := clusterFollowers(srvs, l)[0]
			c, ro := dial(t, survivor.Addr()), dial(t, survivor.Addr())
			c.expect("+OK\r\n", "SET", "k", "v")
			c.expect(bulk("v"), "GET", "k")
			ro.expect("+OK\r\n", "READONLY")
			for _, s := range srvs {
				if s != survivor {
					if err := s.Close(); err != nil {
						t.Fatalf("closing %s: %v", s.Node().Config().NodeID, err)
					}
				}
			}
			waitLeaderless(t, survivor)
			bound := clusterLeaderWait + time.Second
			for _, args := range order {
				begin := time.Now()
				got := c.do(args...)
				if took := time.Since(begin); took > bound {
					t.Errorf("%v took %v without a leader, more than %v", args, took, bound)
				}
				if !strings.HasPrefix(got, "-CLUSTERDOWN ") {
					t.Errorf("%v without a leader: %q, want a CLUSTERDOWN error", args, got)
				}
			}
			ro.expect(bulk("v"), "GET", "k")
			ro.expect(":0\r\n", "EXISTS", "b")
		})
	}
}

// waitLeaderless waits until s, whose peers all stopped, can lead no
// more. A closing leader may have handed its leadership to s: s then
// leads alone until its lease runs out, or it may still win the election
// the hand-over started, with a vote cast before the voter closed. That
// election ends within twice the election timeout; the ones after it
// start with a pre-vote nobody answers. So s is done once it stood as a
// candidate for longer than that.
func waitLeaderless(t *testing.T, s *Server) {
	t.Helper()
	settle := 2 * s.Node().Config().ElectionTimeout
	deadline := time.Now().Add(10 * time.Second)
	var since time.Time
	for {
		switch now := time.Now(); {
		case s.Node().Stats().State != raft.Candidate.String():
			since = time.Time{}
		case since.IsZero():
			since = now
		case now.Sub(since) > settle:
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not settle as a candidate: %+v", s.Node().Config().NodeID, s.Node().Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// joiningConfig configures a server that joins, as it starts, the cluster
// of the member at join.
func joiningConfig(t *testing.T, join string) Config {
	cfg := DefaultConfig()
	cfg.Port = 0
	cfg.Dir = t.TempDir()
	cfg.Cluster = testClusterConfig(cfg.Dir)
	cfg.Cluster.Bootstrap = false
	cfg.Cluster.Join = join
	return cfg
}

// TestJoinNotPresenced checks that a server told to join through a
// redis-server refuses to start, saying why.
func TestJoinNotPresenced(t *testing.T) {
	ref := redisserver.StartForTest(t, redisserver.Options{})
	srv, err := New(joiningConfig(t, ref.Addr()))
	if err == nil {
		srv.Close()
		t.Fatal("a server joined a redis-server")
	}
	if !strings.Contains(err.Error(), ref.Addr()+" is not a presenced node") {
		t.Errorf("error: %v", err)
	}
}

// TestJoinWithWrongPassword checks that a server whose password the
// member at --join refuses, or that has none where the member wants one,
// fails to start at once and says so, rather than retrying until the join
// times out.
func TestJoinWithWrongPassword(t *testing.T) {
	member := startServer(t, withPassword("secret"))
	for _, pass := range []string{"", "wrong"} {
		cfg := joiningConfig(t, member.Addr())
		cfg.RequirePass = pass
		srv, err := New(cfg)
		if err == nil {
			srv.Close()
			t.Fatalf("a server with password %q joined a member whose password is another", pass)
		}
		if want := "--join " + member.Addr() + " refused this node's password"; !strings.Contains(err.Error(), want) {
			t.Errorf("password %q: error %v, want it to say %q", pass, err, want)
		}
	}
}

// TestJoinItself checks that a server told to join through its own
// client port or raft address refuses to start at once, saying so.
func TestJoinItself(t *testing.T) {
	free := func() int {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().(*net.TCPAddr).Port
	}
	port, raftPort := free(), free()
	for join, want := range map[string]string{
		fmt.Sprintf("localhost:%d", port):     "is this node's own client port",
		fmt.Sprintf("127.0.0.1:%d", raftPort): "is this node's own raft address",
	} {
		cfg := joiningConfig(t, join)
		cfg.Port = port
		cfg.Cluster.RaftAddr = fmt.Sprintf("127.0.0.1:%d", raftPort)
		srv, err := New(cfg)
		if err == nil {
			srv.Close()
			t.Fatalf("a server joined itself through %s", join)
		}
		if !strings.Contains(err.Error(), "--join "+join+" "+want) {
			t.Errorf("join through %s: error %v", join, err)
		}
	}
}

// TestMaxWriteBytes checks the bound on a batch of writes through the log
// (--max-write-bytes) in a cluster of three, on the leader and on a
// follower, which forwards writes: a command or a MULTI block over it is
// refused with nothing applied, and a pipeline of writes each within it is
// cut into batches that are. A node alone takes the command and the block.
func TestMaxWriteBytes(t *testing.T) {
	const limit = 64 << 10
	bound := func(c *Config) { c.Cluster.MaxBatchBytes = limit }
	srvs := startCluster(t, 3, bound)
	leader := clusterLeader(t, srvs)
	size := func(args ...string) int { return cluster.CommandSize(store.Command{Args: argv(args...)}) }
	big, part := strings.Repeat("x", limit), strings.Repeat("y", limit/3)
	// check sends each kind of write to the server at addr; refused is the
	// reply the big ones get, or "" if they are taken.
	check := func(t *testing.T, addr string, refused func(size int) string) {
		c := dial(t, addr)
		want, exec := "+OK\r\n", "*4\r\n"+strings.Repeat("+OK\r\n", 4)
		if refused != nil {
			want, exec = refused(size("SET", "big", big)), refused(4*size("SET", "m0", part))
		}
		c.expect(want, "SET", "big", big)
		c.expect("+OK\r\n", "MULTI")
		for i := range 4 {
			c.expect("+QUEUED\r\n", "SET", "m"+strconv.Itoa(i), part)
		}
		c.expect(exec, "EXEC")
		var pipeline []byte
		keys := []string{"EXISTS"}
		for i := range 8 {
			keys = append(keys, "p"+strconv.Itoa(i))
			pipeline = redisserver.AppendCommand(pipeline, "SET", keys[len(keys)-1], part)
		}
		c.send(pipeline)
		if got := c.replies(8); got != strings.Repeat("+OK\r\n", 8) {
			t.Errorf("pipeline of 8 SETs of %d bytes: %q", len(part), got)
		}
		if refused != nil {
			c.expect(":8\r\n", append(keys, "big", "m0")...)
		} else {
			c.expect(":10\r\n", append(keys, "big", "m0")...)
		}
	}
	refusal := func(size int) string {
		return fmt.Sprintf("-ERR write too large for the raft log: %d bytes in one batch (a command, a pipeline's batch or a MULTI block), over --max-write-bytes %d\r\n", size, limit)
	}
	t.Run("leader", func(t *testing.T) { check(t, leader.Addr(), refusal) })
	t.Run("follower", func(t *testing.T) {
		dial(t, leader.Addr()).expect(":8\r\n", "DEL", "p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7")
		check(t, clusterFollowers(srvs, leader)[0].Addr(), refusal)
	})
	t.Run("alone", func(t *testing.T) { check(t, startServer(t, bound).Addr(), nil) })
}

// TestWait checks WAIT in a 3-node cluster: it counts the followers that
// applied a connection's writes, on the leader and on a follower (which
// counts itself), waits out its timeout when asked for more than there
// are, answers at once inside MULTI, ends when its client goes away, and
// leaves out a follower that stopped.
func TestWait(t *testing.T) {
	srvs, l, f := leaderAndFollower(t)
	lc, fc := dial(t, l.Addr()), dial(t, f.Addr())
	lc.expect("+OK\r\n", "SET", "k", "1")
	lc.expect(":2\r\n", "WAIT", "2", "0")
	for _, s := range clusterFollowers(srvs, l) {
		ro := dial(t, s.Addr())
		ro.expect("+OK\r\n", "READONLY")
		ro.expect(bulk("1"), "GET", "k")
	}
	fc.expect(":2\r\n", "INCR", "k")
	fc.expect(":2\r\n", "WAIT", "2", "0")
	ro := dial(t, f.Addr())
	ro.expect("+OK\r\n", "READONLY")
	ro.expect(bulk("2"), "GET", "k")

	begin := time.Now()
	lc.expect(":2\r\n", "WAIT", "3", "100")
	if took := time.Since(begin); took < 100*time.Millisecond {
		t.Errorf("WAIT 3 100 with two followers answered after %v", took)
	}
	lc.expect("+OK\r\n", "MULTI")
	lc.expect("+QUEUED\r\n", "WAIT", "3", "0")
	lc.expect("*1\r\n:2\r\n", "EXEC")

	// A client that gives up on a WAIT with no bound leaves the server.
	before := len(l.clientList())
	gone := dial(t, l.Addr())
	gone.send(redisserver.AppendCommand(nil, "WAIT", "3", "0"))
	for len(l.clientList()) == before {
		time.Sleep(time.Millisecond)
	}
	gone.conn.Close()
	deadline := time.Now().Add(10 * time.Second)
	for len(l.clientList()) > before {
		if time.Now().After(deadline) {
			t.Fatal("a client that closed its connection during WAIT is still served")
		}
		time.Sleep(10 * time.Millisecond)
	}

	// With one follower stopped, one is left to count.
	if err := clusterFollowers(srvs, l)[0].Close(); err != nil {
		t.Fatal(err)
	}
	lc.expect(":3\r\n", "INCR", "k")
	lc.expect(":1\r\n", "WAIT", "2", "100")
}

// TestLeaderKeepsLeadWhileFollowersStall holds up every log write of both
// followers for longer than the leader's lease and its followers'
// heartbeat timeout, as a disk busy with another file's flush does: the
// followers still answer the leader's heartbeats, so it keeps its lead,
// and the writes it takes meanwhile succeed once the followers' writes
// finish, in the same term.
func TestLeaderKeepsLeadWhileFollowersStall(t *testing.T) {
	const stall = 700 * time.Millisecond
	var stalled [3]atomic.Bool
	member := 0
	srvs := startCluster(t, 3, func(c *Config) {
		me := &stalled[member]
		member++
		c.Cluster.LogWritten = func(time.Duration) {
			if me.Load() {
				time.Sleep(stall)
			}
		}
	})
	l := clusterLeader(t, srvs)
	term := l.Node().Stats().Term
	for i, s := range srvs {
		if s != l {
			stalled[i].Store(true)
		}
	}
	rdb := redis.NewClient(&redis.Options{Addr: l.Addr(), ReadTimeout: 10 * time.Second})
	defer rdb.Close()
	ctx := context.Background()
	for i := range 3 {
		if err := rdb.SetBit(ctx, "online", int64(i), 1).Err(); err != nil {
			t.Fatalf("write %d while the followers' log writes stall: %v", i, err)
		}
	}
	for i := range stalled {
		stalled[i].Store(false)
	}
	if !l.Node().IsLeader() || l.Node().Stats().Term != term {
		t.Fatalf("the leader of term %d lost its lead while its followers' log writes stalled: now %s in term %d", term, l.Node().Stats().State, l.Node().Stats().Term)
	}
	if n, err := rdb.BitCount(ctx, "online", nil).Result(); err != nil || n != 3 {
		t.Fatalf("BITCOUNT online = %d, %v; want 3", n, err)
	}
	checkDigests(t, srvs)
}
