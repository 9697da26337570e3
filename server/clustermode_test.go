package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	osexec "os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/presenced/presenced/internal/hashslot"
	"github.com/presenced/presenced/server/redisserver"
)

// enableCluster is the option of a server started with --cluster-enabled
// yes.
func enableCluster(c *Config) { c.ClusterEnabled = true }

// startRedisClusterNode starts a redis-server in cluster mode that holds
// every slot alone, as a presenced node of one does, and returns once
// its cluster is ok.
func startRedisClusterNode(t *testing.T) *redisserver.Process {
	t.Helper()
	ref := redisserver.StartForTest(t, redisserver.Options{Args: []string{"--cluster-enabled", "yes", "--cluster-announce-ip", "127.0.0.1"}})
	c := dial(t, ref.Addr())
	c.expect("+OK\r\n", "CLUSTER", "ADDSLOTSRANGE", "0", strconv.Itoa(hashslot.Count-1))
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(bulkBody(t, c.do("CLUSTER", "INFO")), "cluster_state:ok"); {
		if time.Now().After(deadline) {
			t.Fatal("redis-server's cluster did not become ok")
		}
		c.expect("+PONG\r\n", "PING")
	}
	return ref
}

// TestClusterModeMatchesRedis compares CLUSTER on a presenced node with
// --cluster-enabled yes with a redis-server in cluster mode that holds
// every slot: the replies that do not name the node byte for byte, the
// others once the node's ID, ports and epoch are set aside.
func TestClusterModeMatchesRedis(t *testing.T) {
	ref := startRedisClusterNode(t)
	sut := startServer(t, enableCluster)
	d := &differ{t: t, ref: dialTarget(t, "redis", ref.Addr()), sut: dialTarget(t, "presenced", sut.Addr())}

	rng := rand.New(rand.NewPCG(3, 7))
	var keys []string
	for range 600 {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = "{}ab\x00\xff"[rng.IntN(6)]
		}
		keys = append(keys, string(b))
	}
	keys = append(keys, "", "{user1000}.following", "foo{bar}{zap}", "{}", "}{")
	var cmds [][][]byte
	for _, k := range keys {
		cmds = append(cmds, argv("CLUSTER", "KEYSLOT", k))
	}
	// Keys in a few slots, through hash tags, and what the slots hold.
	slots := map[int]bool{0: true, 16383: true}
	for i := range 60 {
		k := fmt.Sprintf("{tag%d}:%d", i%5, i)
		cmds = append(cmds, argv("SET", k, "v"))
		slots[hashslot.Of([]byte(k))] = true
	}
	cmds = append(cmds, argv("SET", "gone", "v", "PX", "1"), argv("SETBIT", "{tag1}:bits", "7", "1"))
	for slot := range slots {
		s := strconv.Itoa(slot)
		cmds = append(cmds, argv("CLUSTER", "COUNTKEYSINSLOT", s), argv("CLUSTER", "GETKEYSINSLOT", s, "0"))
	}
	for _, line := range []string{
		"CLUSTER COUNTKEYSINSLOT x", "CLUSTER COUNTKEYSINSLOT -1", "CLUSTER COUNTKEYSINSLOT 16384",
		"CLUSTER GETKEYSINSLOT x 1", "CLUSTER GETKEYSINSLOT 1 x", "CLUSTER GETKEYSINSLOT 1 -1", "CLUSTER GETKEYSINSLOT 16384 1",
		"CLUSTER KEYSLOT", "CLUSTER KEYSLOT a b", "CLUSTER NOSUCH", "CLUSTER", "CLUSTER HELP",
		"CLUSTER FAILOVER", "CLUSTER FAILOVER FORCE", "CLUSTER FAILOVER takeover", "CLUSTER FAILOVER NOW", "CLUSTER FAILOVER FORCE TAKEOVER",
		"CLUSTER REPLICAS nosuch", "CLUSTER SLAVES nosuch", "CLUSTER COUNT-FAILURE-REPORTS nosuch", "CLUSTER LINKS",
		"CLUSTER SAVECONFIG", "ASKING", "READONLY", "READWRITE", "INFO cluster", "REPLICAOF NO ONE", "SLAVEOF 127.0.0.1 1",
		"FAILOVER", "FAILOVER ABORT", "FAILOVER TO 127.0.0.1 1 FORCE", "FAILOVER TIMEOUT -1",
	} {
		cmds = append(cmds, argv(strings.Fields(line)...))
	}
	for _, resp3 := range []bool{false, true} {
		d.resp3 = resp3
		d.run(fmt.Sprintf("cluster mode (RESP3: %v)", resp3), cmds, false)
	}

	// GETKEYSINSLOT lists the same keys, in an order of its own.
	for slot := range slots {
		s := strconv.Itoa(slot)
		got, want := keysInSlot(t, d.sut, s), keysInSlot(t, d.ref, s)
		if !slices.Equal(got, want) {
			t.Errorf("CLUSTER GETKEYSINSLOT %s 100: %q, redis-server: %q", s, got, want)
		}
	}

	// The replies that name the node, with its ID, ports and epoch set
	// aside.
	for _, resp3 := range []bool{false, true} {
		hello := "2"
		if resp3 {
			hello = "3"
		}
		for _, target := range []*diffTarget{d.ref, d.sut} {
			target.do(argv("HELLO", hello))
		}
		for _, line := range []string{"CLUSTER INFO", "CLUSTER NODES", "CLUSTER SLOTS", "CLUSTER SHARDS", "CLUSTER MYID", "HELLO " + hello} {
			args := argv(strings.Fields(line)...)
			want := anonymiseNode(t, d.ref, ref.Addr(), args)
			if got := anonymiseNode(t, d.sut, sut.Addr(), args); !bytes.Equal(got, want) {
				t.Errorf("RESP%s: %s: %q, redis-server: %q", hello, line, got, want)
			}
		}
		// A lone master has no replicas and no failure reports.
		id := bulkBody(t, string(mustDo(t, d.sut, argv("CLUSTER", "MYID"))))
		for _, line := range []string{"CLUSTER REPLICAS " + id, "CLUSTER COUNT-FAILURE-REPORTS " + id} {
			if got := mustDo(t, d.sut, argv(strings.Fields(line)...)); string(got) != map[bool]string{true: "*0\r\n", false: ":0\r\n"}[strings.Contains(line, "REPLICAS")] {
				t.Errorf("%s: %q", line, got)
			}
		}
	}
}

// mustDo sends args to target and returns the reply.
func mustDo(t *testing.T, target *diffTarget, args [][]byte) []byte {
	t.Helper()
	reply, err := target.do(args)
	if err != nil {
		t.Fatal(err)
	}
	return reply
}

// keysInSlot returns CLUSTER GETKEYSINSLOT's keys of slot, sorted.
func keysInSlot(t *testing.T, target *diffTarget, slot string) []string {
	t.Helper()
	_, elems, ok := arrayElements(mustDo(t, target, argv("CLUSTER", "GETKEYSINSLOT", slot, "100")))
	if !ok {
		t.Fatalf("%s: CLUSTER GETKEYSINSLOT %s is no array", target.name, slot)
	}
	var keys []string
	for _, e := range elems {
		keys = append(keys, bulkBody(t, string(e)))
	}
	slices.Sort(keys)
	return keys
}

// anonymiseNode sends args to target and returns its reply with the
// node's ID, its client port, its bus port (raft's, for presenced), its
// config epoch, its replication offset, its HELLO client ID and version
// replaced by placeholders.
func anonymiseNode(t *testing.T, target *diffTarget, addr string, args [][]byte) []byte {
	t.Helper()
	id := bulkBody(t, string(mustDo(t, target, argv("CLUSTER", "MYID"))))
	_, port, _ := net.SplitHostPort(addr)
	reply := mustDo(t, target, args)
	reply = bytes.ReplaceAll(reply, []byte(id), []byte("<id>"))
	for _, re := range []struct{ pattern, with string }{
		{`:` + port + `@\d+ `, ":<port>@<bus> "},
		{`:` + port + `\r\n`, ":<port>\r\n"},
		{`(epoch:|connected|- 0 0) \d+`, "$1 <epoch>"},
		{`epoch:\d+`, "epoch:<epoch>"},
		{`(\$2\r\nid\r\n:)\d+`, "$1<client>"},
		{`(replication-offset\r\n:)\d+`, "$1<offset>"},
		{`(version\r\n)\$\d+\r\n[0-9.]+`, "$1<version>"},
		{`\$\d+\r\n(cluster_state)`, "$$<len>\r\n$1"},
		{`=\d+\r\ntxt:`, "=<len>\r\ntxt:"},
		{`\$\d+\r\n(<id>)`, "$$<len>\r\n$1"},
	} {
		reply = regexp.MustCompile(re.pattern).ReplaceAll(reply, []byte(re.with))
	}
	return reply
}

// TestClusterDisabledAnswers checks the node's mode where Redis reports
// it: INFO's and HELLO's, and CONFIG GET cluster-enabled, with and
// without cluster support.
func TestClusterDisabledAnswers(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		srv := startServer(t, func(c *Config) { c.ClusterEnabled = enabled })
		c := dial(t, srv.Addr())
		mode, flag, yes := "standalone", "0", "no"
		if enabled {
			mode, flag, yes = "cluster", "1", "yes"
		}
		if info := bulkBody(t, c.do("INFO", "server")); !strings.Contains(info, "\r\nredis_mode:"+mode+"\r\n") {
			t.Errorf("enabled %v: INFO server: %q", enabled, info)
		}
		if info := bulkBody(t, c.do("INFO", "cluster")); info != "# Cluster\r\ncluster_enabled:"+flag+"\r\n" {
			t.Errorf("enabled %v: INFO cluster: %q", enabled, info)
		}
		if hello := string(c.do("HELLO", "2")); !strings.Contains(hello, bulk("mode")+bulk(mode)) {
			t.Errorf("enabled %v: HELLO: %q", enabled, hello)
		}
		c.expect("*2\r\n"+bulk("cluster-enabled")+bulk(yes), "CONFIG", "GET", "cluster-enabled")
	}
}

// TestClusterOfThreeNodes checks CLUSTER on every node of a cluster of
// three: the leader is the master of the one shard, the others its
// replicas, and every node describes them alike.
func TestClusterOfThreeNodes(t *testing.T) {
	srvs := startCluster(t, 3, enableCluster)
	l := clusterLeader(t, srvs)
	checkClusterView(t, srvs, l)
	// redis-cli's check of a Redis Cluster finds one master, with two
	// replicas, covering every slot. A member that does not answer a
	// node's question within its bound (a second, which a loaded machine
	// can exceed) shows as failing in that node's view: the check is
	// asked again a few times before its answer counts.
	wants := []string{"16384 slots | 2 slaves.", "[OK] All nodes agree about slots configuration.", "[OK] All 16384 slots covered."}
	var missing []string
	var out []byte
	var err error
	for range 3 {
		out, err = osexec.Command(requireTool(t, "redis-cli"), "--cluster", "check", clusterFollowers(srvs, l)[0].Addr()).CombinedOutput()
		missing = missing[:0]
		for _, want := range wants {
			if err != nil || !strings.Contains(string(out), want) {
				missing = append(missing, want)
			}
		}
		if len(missing) == 0 {
			break
		}
	}
	if len(missing) > 0 {
		t.Errorf("redis-cli --cluster check does not say %q: %v\n%s", missing, err, out)
	}

	for _, s := range srvs {
		c := dial(t, s.Addr())
		c.expect("-ERR presenced holds every hash slot in one shard: slots cannot be moved\r\n", "CLUSTER", "ADDSLOTS", "1")
		c.expect("-ERR presenced's members join with RAFT ADD and leave with RAFT REMOVE\r\n", "CLUSTER", "MEET", "127.0.0.1", "1")
		c.expect("-ERR presenced's config epoch is the raft term, which elections advance\r\n", "CLUSTER", "BUMPEPOCH")
		if s == l {
			c.expect("-ERR You should send CLUSTER FAILOVER to a replica\r\n", "CLUSTER", "FAILOVER")
		}
	}
}

// checkClusterView checks CLUSTER MYID, SLOTS, SHARDS, NODES, REPLICAS
// and INFO on every node of srvs, whose leader is l.
func checkClusterView(t *testing.T, srvs []*Server, l *Server) {
	t.Helper()
	ctx := context.Background()
	ids := map[string]*Server{}
	for _, s := range srvs {
		ids[runID(s.Node().Config().NodeID)] = s
	}
	masterID := runID(l.Node().Config().NodeID)
	for _, s := range srvs {
		rdb := goRedis(t, s)
		where := s.Node().Config().NodeID
		if id, err := rdb.ClusterMyID(ctx).Result(); err != nil || ids[id] != s {
			t.Errorf("%s: CLUSTER MYID = %q, %v", where, id, err)
		}
		//lint:ignore SA1019 CLUSTER SLOTS is what go-redis's ClusterClient asks
		slots, err := rdb.ClusterSlots(ctx).Result()
		if err != nil || len(slots) != 1 || slots[0].Start != 0 || slots[0].End != 16383 || len(slots[0].Nodes) != len(srvs) {
			t.Fatalf("%s: CLUSTER SLOTS = %+v, %v", where, slots, err)
		}
		var replicas []string
		for i, n := range slots[0].Nodes {
			if ids[n.ID] == nil || ids[n.ID].Addr() != n.Addr || (i == 0) != (ids[n.ID] == l) {
				t.Errorf("%s: CLUSTER SLOTS node %d: %+v", where, i, n)
			}
			if i > 0 {
				replicas = append(replicas, n.ID)
			}
		}
		shards, err := rdb.ClusterShards(ctx).Result()
		if err != nil || len(shards) != 1 || len(shards[0].Nodes) != len(srvs) {
			t.Fatalf("%s: CLUSTER SHARDS = %+v, %v", where, shards, err)
		}
		for i, n := range shards[0].Nodes {
			role := "replica"
			if i == 0 {
				role = "master"
			}
			o := ids[n.ID]
			if o == nil || net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10)) != o.Addr() || n.Endpoint != n.IP || n.Role != role ||
				n.Health != "online" || n.ReplicationOffset <= 0 {
				t.Errorf("%s: CLUSTER SHARDS node %d: %+v", where, i, n)
			}
		}
		nodes, err := rdb.ClusterNodes(ctx).Result()
		lines := strings.Split(strings.TrimSuffix(nodes, "\n"), "\n")
		if err != nil || len(lines) != len(srvs) {
			t.Fatalf("%s: CLUSTER NODES = %q, %v", where, nodes, err)
		}
		for _, line := range lines {
			f := strings.Fields(line)
			o := ids[f[0]]
			if o == nil {
				t.Fatalf("%s: CLUSTER NODES line %q", where, line)
			}
			_, raftPort, _ := net.SplitHostPort(o.Node().RaftAddr())
			flags, master, slotRange := "slave", masterID, ""
			if o == l {
				flags, master, slotRange = "master", "-", "0-16383"
			}
			if o == s {
				flags = "myself," + flags
			}
			want := []string{f[0], o.Addr() + "@" + raftPort, flags, master, "0", f[5], f[6], "connected"}
			if slotRange != "" {
				want = append(want, slotRange)
			}
			if !slices.Equal(f, want) || f[6] != strconv.FormatUint(s.Node().Stats().Term, 10) {
				t.Errorf("%s: CLUSTER NODES line %q, want %q", where, line, want)
			}
			if o == s && f[5] != "0" {
				t.Errorf("%s: its own line %q has a pong time", where, line)
			}
		}
		if got, err := rdb.Do(ctx, "CLUSTER", "REPLICAS", masterID).StringSlice(); err != nil || len(got) != len(srvs)-1 {
			t.Errorf("%s: CLUSTER REPLICAS of the master = %q, %v", where, got, err)
		}
		if err := rdb.Do(ctx, "CLUSTER", "REPLICAS", replicas[0]).Err(); err == nil || err.Error() != "ERR The specified node is not a master" {
			t.Errorf("%s: CLUSTER REPLICAS of a replica: %v", where, err)
		}
		info, err := rdb.ClusterInfo(ctx).Result()
		for _, want := range []string{"cluster_state:ok\r\n", "cluster_slots_ok:16384\r\n", fmt.Sprintf("cluster_known_nodes:%d\r\n", len(srvs)), "cluster_size:1\r\n"} {
			if err != nil || !strings.Contains(info, want) {
				t.Errorf("%s: CLUSTER INFO lacks %q: %q, %v", where, want, info, err)
			}
		}
	}
}

// TestClusterClients drives a cluster of three with go-redis's client
// for Redis Cluster, given a follower's address alone, reading from
// replicas: writes reach the leader, reads the followers, and after
// CLUSTER FAILOVER on a follower, which then leads, the client writes on.
func TestClusterClients(t *testing.T) {
	srvs := startCluster(t, 3, enableCluster)
	l := clusterLeader(t, srvs)
	var followers []*Server
	for _, s := range srvs {
		if s != l {
			followers = append(followers, s)
		}
	}
	ctx := context.Background()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{followers[0].Addr()}, ReadOnly: true})
	t.Cleanup(func() { rdb.Close() })
	const n = 40
	for i := range n {
		if err := rdb.SetBit(ctx, fmt.Sprintf("online:bitmap:%d", i%4), int64(i), 1).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if got := getCalls(t, l); got != 0 {
		t.Errorf("the leader had %d GETBIT calls before any read", got)
	}
	waitApplied(t, srvs)
	for i := range n {
		if v, err := rdb.GetBit(ctx, fmt.Sprintf("online:bitmap:%d", i%4), int64(i)).Result(); v != 1 || err != nil {
			t.Fatalf("GETBIT %d: %d, %v", i, v, err)
		}
	}
	onFollowers := 0
	for _, f := range followers {
		onFollowers += getCalls(t, f)
	}
	if lc := getCalls(t, l); lc != 0 || onFollowers != n {
		t.Errorf("GETBITs: %d on the leader, %d on the followers, want 0 and %d", lc, onFollowers, n)
	}

	// A follower asks for the leadership.
	to := followers[1]
	if err := goRedis(t, to).Do(ctx, "CLUSTER", "FAILOVER").Err(); err != nil {
		t.Fatal(err)
	}
	// The hand-over is answered once the former leader stepped down for
	// the target, which may still be counting its votes.
	if got := clusterLeader(t, srvs); got != to {
		t.Fatalf("%s leads after CLUSTER FAILOVER on %s", got.Node().Config().NodeID, to.Node().Config().NodeID)
	}
	former := goRedis(t, l)
	for deadline := time.Now().Add(10 * time.Second); ; { // until the former leader hears of the new one
		//lint:ignore SA1019 CLUSTER SLOTS is what go-redis's ClusterClient asks
		slots, err := former.ClusterSlots(ctx).Result()
		if err == nil && len(slots) == 1 && slots[0].Nodes[0].Addr == to.Addr() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the former leader's CLUSTER SLOTS after the failover: %+v, %v", slots, err)
		}
	}
	checkClusterView(t, srvs, to)
	if err := rdb.Incr(ctx, "after").Err(); err != nil {
		t.Fatal(err)
	}
	rdb.ReloadState(ctx)
	if v, err := rdb.Incr(ctx, "after").Result(); v != 2 || err != nil {
		t.Fatalf("INCR after the failover: %d, %v", v, err)
	}
}

// goRedis returns a go-redis client of s, closed when the test ends.
func goRedis(t *testing.T, s *Server) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// getCalls returns how many GETBITs the server ran, from INFO
// commandstats.
func getCalls(t *testing.T, s *Server) int {
	t.Helper()
	info := bulkBody(t, dial(t, s.Addr()).do("INFO", "commandstats"))
	m := regexp.MustCompile(`cmdstat_getbit:calls=(\d+)`).FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// clusterPyScript drives a cluster with redis-py's RedisCluster as
// testdata/ioredis/cluster.js does with ioredis: python3 -c script
// HOST:PORT write|read PREFIX.
const clusterPyScript = `
import json, sys
from redis.cluster import RedisCluster
host, port = sys.argv[1].rsplit(":", 1)
phase, prefix = sys.argv[2], sys.argv[3]
rc = RedisCluster(host=host, port=int(port), read_from_replicas=True)
out = {"replies": []}
for i in range(10):
    key = "%s:bitmap:%d" % (prefix, i % 3)
    out["replies"].append(rc.setbit(key, i, 1) if phase == "write" else rc.getbit(key, i))
out["replies"].append(rc.set(prefix + ":s", "v") if phase == "write" else rc.get(prefix + ":s").decode())
out["masters"] = [n.name for n in rc.get_primaries()]
out["replicas"] = sorted(n.name for n in rc.get_replicas())
print(json.dumps(out))
rc.close()
`

// TestClusterClientsOfOtherLanguages drives a cluster of three with
// redis-py's and ioredis's clients for Redis Cluster, each given one
// follower's address: they find the leader as the master and the others
// as its replicas, write through the master and, once the followers
// applied the writes, read them back from the replicas.
func TestClusterClientsOfOtherLanguages(t *testing.T) {
	python := pythonWithRedis(t)
	requireIoredis(t)
	node := requireTool(t, "node")
	srvs := startCluster(t, 3, enableCluster)
	l := clusterLeader(t, srvs)
	var followers []*Server
	var replicas []string
	for _, s := range srvs {
		if s != l {
			followers = append(followers, s)
			replicas = append(replicas, s.Addr())
		}
	}
	slices.Sort(replicas)
	for _, client := range []struct {
		name    string
		command func(ctx context.Context, phase, prefix string) *osexec.Cmd
		setOK   any // SET's reply as the client gives it
	}{
		{"redis-py", func(ctx context.Context, phase, prefix string) *osexec.Cmd {
			return osexec.CommandContext(ctx, python, "-c", clusterPyScript, followers[0].Addr(), phase, prefix)
		}, true},
		{"ioredis", func(ctx context.Context, phase, prefix string) *osexec.Cmd {
			cmd := osexec.CommandContext(ctx, node, "cluster.js", followers[1].Addr(), phase, prefix)
			cmd.Dir = ioredisDir
			return cmd
		}, "OK"},
	} {
		t.Run(client.name, func(t *testing.T) {
			run := func(phase string, want []any) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				out, err := client.command(ctx, phase, client.name).Output()
				if err != nil {
					t.Fatalf("%s: %v\n%s", phase, err, out)
				}
				var got struct {
					Replies  []any
					Masters  []string
					Replicas []string
				}
				if err := json.Unmarshal(out, &got); err != nil {
					t.Fatalf("%s: %q: %v", phase, out, err)
				}
				if fmt.Sprint(got.Replies) != fmt.Sprint(want) || !slices.Equal(got.Masters, []string{l.Addr()}) || !slices.Equal(got.Replicas, replicas) {
					t.Errorf("%s: %+v, want replies %v, master %s, replicas %v", phase, got, want, l.Addr(), replicas)
				}
			}
			bits := func(v float64) []any {
				out := make([]any, 10)
				for i := range out {
					out[i] = v
				}
				return out
			}
			run("write", append(bits(0), client.setOK))
			waitApplied(t, srvs)
			before := getCalls(t, followers[0]) + getCalls(t, followers[1])
			run("read", append(bits(1), "v"))
			if getCalls(t, followers[0])+getCalls(t, followers[1]) == before {
				t.Error("no GETBIT reached a replica")
			}
		})
	}
}

// TestClusterOverTLS checks that a client on the TLS port is given the
// nodes' TLS ports, and a client on the plain port their plain ports, so
// that go-redis's client for Redis Cluster over TLS reaches every node.
func TestClusterOverTLS(t *testing.T) {
	p := newTestPKI(t)
	srvs := startCluster(t, 3, enableCluster, func(c *Config) { c.TLS = p.tlsConfig("yes") })
	l := clusterLeader(t, srvs)
	tlsConfig := &tls.Config{RootCAs: p.roots, Certificates: []tls.Certificate{p.client}}
	ctx := context.Background()
	for _, s := range srvs {
		for _, overTLS := range []bool{false, true} {
			opts := &redis.Options{Addr: s.Addr()}
			if overTLS {
				opts = &redis.Options{Addr: s.TLSAddr(), TLSConfig: tlsConfig}
			}
			rdb := redis.NewClient(opts)
			defer rdb.Close()
			got, want := shardAddrs(t, rdb), serverAddrs(srvs, (*Server).Addr)
			if overTLS {
				want = serverAddrs(srvs, (*Server).TLSAddr)
			}
			if !slices.Equal(got, want) {
				t.Errorf("CLUSTER SHARDS (TLS: %v) on %s: %v, want %v", overTLS, s.Node().Config().NodeID, got, want)
			}
		}
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{clusterFollowers(srvs, l)[0].TLSAddr()}, TLSConfig: tlsConfig, ReadOnly: true})
	t.Cleanup(func() { rdb.Close() })
	if err := rdb.SetBit(ctx, "online", 42, 1).Err(); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, srvs)
	if v, err := rdb.GetBit(ctx, "online", 42).Result(); v != 1 || err != nil {
		t.Fatalf("GETBIT over TLS from a replica: %d, %v", v, err)
	}
}

// TestClusterAnnounce checks that what nodes tell clients of each other
// (CLUSTER SHARDS, SENTINEL) is the announced host and ports, as set at
// start and by CONFIG SET, for nodes behind NAT or a port mapping.
func TestClusterAnnounce(t *testing.T) {
	srvs := startCluster(t, 3, enableCluster)
	announced := func(s *Server) string {
		return net.JoinHostPort("10.0.0."+s.Node().Config().NodeID[1:], "700"+s.Node().Config().NodeID[1:])
	}
	for _, s := range srvs {
		host, port, _ := net.SplitHostPort(announced(s))
		c := dial(t, s.Addr())
		c.expect("+OK\r\n", "CONFIG", "SET", "cluster-announce-ip", host, "cluster-announce-port", port)
		c.expect("*2\r\n"+bulk("cluster-announce-port")+bulk(port), "CONFIG", "GET", "cluster-announce-port")
	}
	c := dial(t, srvs[0].Addr())
	c.expect("-ERR CONFIG SET failed (possibly related to argument 'cluster-announce-port') - argument must be between 0 and 65535 inclusive\r\n",
		"CONFIG", "SET", "cluster-announce-port", "70000")
	l := clusterLeader(t, srvs)
	ctx := context.Background()
	for _, s := range srvs {
		got, want := shardAddrs(t, goRedis(t, s)), serverAddrs(srvs, announced)
		if !slices.Equal(got, want) {
			t.Errorf("CLUSTER SHARDS on %s: %v, want %v", s.Node().Config().NodeID, got, want)
		}
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr()})
		defer sc.Close()
		addr, err := sc.GetMasterAddrByName(ctx, "mymaster").Result()
		if err != nil || net.JoinHostPort(addr[0], addr[1]) != announced(l) {
			t.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME on %s: %v, %v, want %s", s.Node().Config().NodeID, addr, err, announced(l))
		}
	}
}

// shardAddrs returns the addresses of the nodes of the one shard CLUSTER
// SHARDS lists, sorted.
func shardAddrs(t *testing.T, rdb *redis.Client) []string {
	t.Helper()
	shards, err := rdb.ClusterShards(context.Background()).Result()
	if err != nil || len(shards) != 1 {
		t.Fatalf("CLUSTER SHARDS: %+v, %v", shards, err)
	}
	var out []string
	for _, n := range shards[0].Nodes {
		out = append(out, net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10)))
	}
	slices.Sort(out)
	return out
}

// serverAddrs returns addr of each server, sorted.
func serverAddrs(srvs []*Server, addr func(*Server) string) []string {
	var out []string
	for _, s := range srvs {
		out = append(out, addr(s))
	}
	slices.Sort(out)
	return out
}
