package main

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/presenced/presenced/server/redisserver"
)

// listIDs yields its values in order.
type listIDs []uint64

func (l *listIDs) next() uint64 {
	v := (*l)[0]
	*l = (*l)[1:]
	return v
}

func TestMultiIDTemplateEncodesLikeAppendCommand(t *testing.T) {
	tmpl := bitsetex("k", 90, 3)
	got := tmpl.appendTo(nil, &listIDs{5, 0, 123456789012})
	want := redisserver.AppendCommand(nil, "BITSETEX", "k", "90", "5", "0", "123456789012")
	if !bytes.Equal(got, want) {
		t.Errorf("BITSETEX of 3 ids: %q, want %q", got, want)
	}
	if tmpl.ids() != 3 || tmpl.replies() != 1 || opsOf(tmpl) != 3 {
		t.Errorf("ids %d, replies %d, ops %d; want 3, 1, 3", tmpl.ids(), tmpl.replies(), opsOf(tmpl))
	}
	if fixed := newTemplate([]string{"PING"}, 0); opsOf(fixed) != 1 {
		t.Errorf("a command without ids counts %d ops, want 1", opsOf(fixed))
	}
}

func TestBatchEncodesItsCommandsInOrder(t *testing.T) {
	b := batch{newTemplate([]string{"SETBIT", "k"}, 1, "1"), newTemplate([]string{"EXPIRE", "k", "90"}, 0), newTemplate([]string{"GETBITS", "k"}, 2)}
	got := b.appendTo(nil, &listIDs{7, 8, 9})
	var want []byte
	want = redisserver.AppendCommand(want, "SETBIT", "k", "7", "1")
	want = redisserver.AppendCommand(want, "EXPIRE", "k", "90")
	want = redisserver.AppendCommand(want, "GETBITS", "k", "8", "9")
	if !bytes.Equal(got, want) {
		t.Errorf("batch: %q, want %q", got, want)
	}
	if b.ids() != 3 || b.replies() != 3 {
		t.Errorf("batch ids %d, replies %d; want 3, 3", b.ids(), b.replies())
	}
	heartbeat := batch{setbitTemplate, newTemplate([]string{"EXPIRE", heartbeatKey, "90"}, 0)}
	if opsOf(heartbeat) != 1 || heartbeat.replies() != 2 {
		t.Errorf("SETBIT + EXPIRE: %d ops, %d replies; want 1, 2", opsOf(heartbeat), heartbeat.replies())
	}
}

func TestZaddNowScoresWithTheClock(t *testing.T) {
	z := newZaddNow("online:users")
	before := time.Now().UnixMilli()
	got := z.appendTo(nil, &listIDs{42})
	after := time.Now().UnixMilli()
	// The score is the 4th argument: *4, $4 ZADD, $12 key, $13 score.
	parts := strings.Split(string(got), "\r\n")
	if len(parts) != 10 || parts[0] != "*4" || parts[2] != "ZADD" || parts[4] != "online:users" || parts[8] != "42" {
		t.Fatalf("ZADD encoded as %q", got)
	}
	score, err := strconv.ParseInt(parts[6], 10, 64)
	if err != nil || score < before || score > after {
		t.Errorf("score %q, want a time in [%d, %d]", parts[6], before, after)
	}
	if z.ids() != 1 || z.replies() != 1 {
		t.Errorf("ids %d, replies %d; want 1, 1", z.ids(), z.replies())
	}
}

func TestBitpsetexAtCountsDownToItsDeadline(t *testing.T) {
	at := time.Now().Add(time.Minute)
	b := bitpsetexAt("k", at, 2)
	got := b.appendTo(nil, &listIDs{3, 4})
	parts := strings.Split(string(got), "\r\n")
	if len(parts) != 12 || parts[0] != "*5" || parts[2] != "BITPSETEX" || parts[8] != "3" || parts[10] != "4" {
		t.Fatalf("BITPSETEX encoded as %q", got)
	}
	if ms, err := strconv.ParseInt(parts[6], 10, 64); err != nil || ms > 60_000 || ms < 59_000 {
		t.Errorf("TTL %q ms for a deadline a minute away", parts[6])
	}
	if b.ids() != 2 || opsOf(b) != 2 {
		t.Errorf("ids %d, ops %d; want 2, 2", b.ids(), opsOf(b))
	}
	late := bitpsetexAt("k", time.Now().Add(-time.Second), 1).appendTo(nil, &listIDs{1})
	if !bytes.Contains(late, []byte("\r\n$1\r\n1\r\n$1\r\n1\r\n")) {
		t.Errorf("a passed deadline encodes as %q, want a TTL of 1 ms", late)
	}
}

func TestNewRequestsDoNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 64<<10)
	ids := newRandomIDs(1, 1, 100_000_000)
	for name, r := range map[string]request{
		"zadd":  newZaddNow("k"),
		"pset":  bitpsetexAt("k", time.Now(), 100),
		"batch": batch{setbitTemplate, newTemplate([]string{"EXPIRE", "k", "90"}, 0)},
		"multi": newTemplate([]string{"GETBITS", "k"}, 500),
	} {
		if n := testing.AllocsPerRun(100, func() { buf = r.appendTo(buf[:0], ids) }); n != 0 {
			t.Errorf("%s allocates %v times", name, n)
		}
	}
}

func TestConnShareSplitsWholeRequests(t *testing.T) {
	for _, c := range []struct {
		count     uint64
		per, conn int
	}{{1000, 10, 3}, {500, 100, 4}, {64, 64, 50}, {7, 1, 4}} {
		var next uint64
		for i := range c.conn {
			from, to := connShare(c.count, c.per, c.conn, i)
			if from != next || to < from || from%uint64(c.per) != 0 || to%uint64(c.per) != 0 {
				t.Fatalf("%+v: connection %d gets [%d, %d) after %d", c, i, from, to, next)
			}
			next = to
		}
		if next != c.count {
			t.Errorf("%+v: shares end at %d", c, next)
		}
	}
}

func TestLoadedIDsComeFromTheLoadedUsers(t *testing.T) {
	perm := newPermutation(10_000, 3)
	loaded := map[uint64]bool{}
	for i := range uint64(100) {
		loaded[perm.at(i)] = true
	}
	src := loadedIDs{perm: perm, rank: newRandomIDs(1, 2, 100)}
	seen := map[uint64]bool{}
	for range 10_000 {
		v := src.next()
		if !loaded[v] {
			t.Fatalf("id %d is not among the 100 loaded", v)
		}
		seen[v] = true
	}
	if len(seen) != 100 {
		t.Errorf("%d of the 100 users had heartbeats", len(seen))
	}
}

// testSuite is a suite for helpers that need its configuration.
func testSuite() *suite {
	cfg := QuickConfig()
	cfg.LoadConns, cfg.LoadPipeline = 3, 7
	return &suite{cfg: cfg, rep: &Report{}, logf: func(string, ...any) {}}
}

func TestLoadPermSetsEachIDOnceWithMultiIDRequests(t *testing.T) {
	srv := redisserver.StartForTest(t, redisserver.Options{})
	s := testSuite()
	perm := newPermutation(1_000_000, 9)
	sadd := newTemplate([]string{"SADD", "s"}, 10)
	// Two successive ranges, as the slices of the mass expiry are sent.
	for _, r := range [][2]uint64{{0, 1230}, {1230, 770}} {
		res, err := s.loadPerm(srv, sadd, perm, r[0], r[1])
		if err != nil {
			t.Fatal(err)
		}
		if res.ops != r[1] {
			t.Errorf("range %v: %d ops, want %d", r, res.ops, r[1])
		}
	}
	c, err := dial(srv.Addr(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	v, err := c.do(time.Minute, "SMEMBERS", "s")
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, m := range v.([]any) {
		got = append(got, m.(string))
	}
	for i := range uint64(2000) {
		want = append(want, strconv.FormatUint(perm.at(i), 10))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the set holds %d members, not the first 2000 ids of the permutation", len(got))
	}
	if _, err := s.loadPerm(srv, sadd, perm, 0, 15); err == nil {
		t.Error("loading 15 ids with 10-id requests did not fail")
	}
}

func TestBatchAndUntilAgainstRedis(t *testing.T) {
	srv := redisserver.StartForTest(t, redisserver.Options{})
	stop := make(chan struct{})
	time.AfterFunc(100*time.Millisecond, func() { close(stop) })
	heartbeat := batch{newTemplate([]string{"SETBIT", "b"}, 1, "1"), newTemplate([]string{"EXPIRE", "b", "90"}, 0)}
	res, err := drive(targetOf(srv), loadSpec{req: heartbeat, pipeline: 8, conns: 2, until: stop,
		ids: func(c int) idSource { return newRandomIDs(1, uint64(c), 1000) }})
	if err != nil {
		t.Fatal(err)
	}
	// Each round trip is 8 heartbeats, 16 commands; had the replies been
	// miscounted, the reader would have stalled or mixed up round trips.
	if res.ops == 0 || res.ops%8 != 0 || res.rtt.n != res.ops/8 {
		t.Errorf("%d ops in %d round trips, want 8 a round trip", res.ops, res.rtt.n)
	}
	c, err := dial(srv.Addr(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	if ttl, err := c.doInt(time.Minute, "TTL", "b"); err != nil || ttl <= 0 || ttl > 90 {
		t.Errorf("TTL after the heartbeats: %d, %v", ttl, err)
	}
}

func TestZsetCleanupRemovesOnlyTheStale(t *testing.T) {
	srv := redisserver.StartForTest(t, redisserver.Options{})
	c, err := dial(srv.Addr(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	now := time.Now().UnixMilli()
	for id, age := range map[string]time.Duration{"old": 2 * time.Minute, "edge": 91 * time.Second, "fresh": 10 * time.Second} {
		if _, err := c.do(time.Minute, "ZADD", "z", strconv.FormatInt(now-age.Milliseconds(), 10), id); err != nil {
			t.Fatal(err)
		}
	}
	stop, err := zsetCleanup("z", 90*time.Second)(targetOf(srv))
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	v, err := c.do(time.Minute, "ZRANGE", "z", "0", "-1")
	if err != nil || len(v.([]any)) != 1 || v.([]any)[0] != "fresh" {
		t.Errorf("after the cleanup: %v, %v; want [fresh]", v, err)
	}
}

func TestMarkdownRendersPresenceTables(t *testing.T) {
	rep := &Report{Groups: []Group{
		{Title: "own", Throughput: true, Columns: bitsetexColumns, Unit: "ids", Rows: []Row{{Workload: "b", Target: targetBitsetex,
			Presenced: Measurement{Value: 9e5, P50: time.Millisecond, P99: 2 * time.Millisecond, SrvCPU: 1, GenCPU: 0.5},
			Redis:     Measurement{Value: 1e6, P50: time.Millisecond, P99: 3 * time.Millisecond}}}},
		{Title: "mem", Columns: deadlineMemColumns, Rows: []Row{{Workload: "d", Target: targetDeadlineMem,
			Presenced: Measurement{Value: 1 << 20}, Redis: Measurement{Value: 4 << 20}}}},
		{Title: "cpu", CPUs: []CPURow{{Workload: "x", Took: 15 * time.Second, CPU: 0.031, RefName: "idle", Ref: 0.004, Limit: targetExpiryCPU},
			{Workload: "y", Took: time.Second, CPU: 0.2, RefName: "arming", Limit: targetExpiryCPU}}},
		{Title: "lat", Window: "expiry", Pauses: []PauseRow{{Workload: "p", Server: "presenced", Took: time.Second}}},
	}}
	checkMarkdown(t, rep,
		"| workload | presenced BITSETEX ids/s | presenced SETBIT ids/s | ratio | target | met | presenced BITSETEX p50 | presenced BITSETEX p99 | presenced SETBIT p50 | presenced SETBIT p99 |",
		"| b | 900k | 1.00M | 0.900× | ≥ 0.9× | yes | 1.00ms | 2.00ms | 1.00ms | 3.00ms |",
		"| workload | per-bit deadlines | bitmap | ratio | target | met |",
		"| d | 1.0 MiB | 4.0 MiB | 0.250× | ≤ 0.5× | yes |",
		"| x | 15.00s | 3.1% of a core | idle | 0.4% of a core | ≤ 5.0% of a core | yes |",
		"| y | 1.00s | 20.0% of a core | arming | 0.0% of a core | ≤ 5.0% of a core | no |",
		"| max during | expiry took |",
		"| b (columns: presenced BITSETEX, presenced SETBIT) | 1.00 | 0.50 | 0.00 | 0.00 |",
	)
}
