package server

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/presenced/presenced/history"
	"github.com/redis/go-redis/v9"
)

// historyInterval is the bitmap snapshot interval of the history tests:
// short, so that a test waits little for the next snapshot.
const historyInterval = 200 * time.Millisecond

// withHistory records history with a snapshot every historyInterval,
// all kept for an hour.
func withHistory(c *Config) {
	c.History = DefaultHistoryConfig()
	c.History.Interval = historyInterval
	c.History.Retention = []history.Tier{{Step: historyInterval, Keep: time.Hour}}
}

// historyInfo returns the fields of HISTORY INFO [key].
func historyInfo(tb testing.TB, c *respConn, key ...string) map[string]string {
	tb.Helper()
	_, fields := infoFields(tb, c.do(append([]string{"HISTORY", "INFO"}, key...)...))
	return fields
}

// waitRecorded waits until c's node recorded every boundary up to t
// (unix ms): the leader's ticks move log time on.
func waitRecorded(tb testing.TB, c *respConn, t int64) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for backoff := time.Millisecond; ; backoff = min(2*backoff, 20*time.Millisecond) {
		newest, err := strconv.ParseInt(historyInfo(tb, c)["newest_ms"], 10, 64)
		if err != nil {
			tb.Fatalf("HISTORY INFO newest_ms: %v", err)
		}
		if newest >= t {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("history newest %d did not reach %d", newest, t)
		}
		<-time.After(backoff) // polling the node's progress, not waiting for it
	}
}

// boundaryAfter returns the first multiple of step after t.
func boundaryAfter(t, step int64) int64 { return (t/step + 1) * step }

// pastReads are reads whose replies at a time in the past are compared
// with the live replies captured then.
var pastReadScript = [][]string{
	{"GETBIT", "a", "5"},
	{"GETBIT", "a", "7"},
	{"GETBIT", "a", "100000"},
	{"GETBIT", "a", "x"},
	{"BITCOUNT", "a"},
	{"BITCOUNT", "a", "0", "-1"},
	{"BITCOUNT", "a", "1", "12500", "BIT"},
	{"BITCOUNT", "missing"},
	{"BITPOS", "a", "1"},
	{"BITPOS", "a", "0"},
	{"BITPOS", "a", "1", "1", "-1"},
	{"GETBITS", "a", "5", "7", "8", "9999", "100000"},
	{"BITSCAN", "a", "0"},
	{"BITSCAN", "a", "0", "COUNT", "1"},
	{"BITOPCOUNT", "AND", "a", "b"},
	{"BITOPCOUNT", "OR", "a", "b", "missing"},
	{"BITOPCOUNT", "XOR", "a", "b"},
	{"GETBIT", "b", "9999"},
	{"BITCOUNT", "missing", "x", "y"},
	{"BITCOUNT", "a", "x", "1"},
	{"BITCOUNT", "a", "0"},
	{"BITCOUNT", "a", "0", "1", "WORD"},
	{"BITCOUNT", "a", "-1", "-5", "WORD"},
	{"BITCOUNT", "a", "-2", "-1", "BIT"},
	{"BITCOUNT", "a", "1", "1250"},
}

// historyPhase is a transaction of writes and the counts of key a after it.
type historyPhase struct {
	writes [][]string
	countA int
}

// historyPhases change a (and b) so that a's count differs after each.
var historyPhases = []historyPhase{
	{[][]string{{"SETBIT", "a", "5", "1"}, {"SETBIT", "a", "9999", "1"}, {"SETBIT", "b", "5", "1"}}, 2},
	{[][]string{{"SETBIT", "a", "7", "1"}, {"SETBIT", "a", "8", "1"}, {"SETBIT", "a", "5", "0"}, {"SETBIT", "b", "9999", "1"}}, 3},
	{[][]string{{"DEL", "a"}, {"SET", "plain", "v"}}, 0},
	{[][]string{{"SETBIT", "a", "100000", "1"}, {"SETBIT", "b", "8", "1"}}, 1},
}

// observed is the state after a phase: a boundary t (unix ms) at which
// the state held, and the live replies of pastReadScript then.
type observed struct {
	t     int64
	lives []string
}

// runPhases applies each phase as one transaction on w, waits until the
// history of every conn in readers recorded a boundary after it (a multiple
// of step, so that a bitmap snapshot holds it) and captures the live
// replies of pastReadScript on w.
func runPhases(t *testing.T, w *respConn, step int64, readers ...*respConn) []observed {
	t.Helper()
	var out []observed
	for _, p := range historyPhases {
		w.expect("+OK\r\n", "MULTI")
		for _, cmd := range p.writes {
			w.expect("+QUEUED\r\n", cmd...)
		}
		if got := w.do("EXEC"); !strings.HasPrefix(got, fmt.Sprintf("*%d\r\n", len(p.writes))) {
			t.Fatalf("EXEC: %q", got)
		}
		// The entry's log time is the leader's clock when proposed: at
		// most now.
		b := boundaryAfter(time.Now().UnixMilli(), step)
		for _, r := range append([]*respConn{w}, readers...) {
			waitRecorded(t, r, b)
		}
		o := observed{t: b}
		for _, cmd := range pastReadScript {
			o.lives = append(o.lives, w.do(cmd...))
		}
		out = append(out, o)
	}
	return out
}

// checkPast compares each read of pastReadScript at each observed time,
// with ATMS, to its live reply then.
func checkPast(t *testing.T, c *respConn, seen []observed) {
	t.Helper()
	for i, o := range seen {
		for j, cmd := range pastReadScript {
			if got := c.do(append(cmd, "ATMS", strconv.FormatInt(o.t, 10))...); got != o.lives[j] {
				t.Errorf("phase %d: %s ATMS %d: %q, live then %q", i, strings.Join(cmd, " "), o.t, got, o.lives[j])
			}
		}
	}
}

// TestHistoryReadsPast checks that every read with AT/ATMS replies, byte
// for byte, what the same read replied live at that time; that the count
// series holds exactly the counts at the boundaries BITHISTORY reports;
// and COPY ... AT.
func TestHistoryReadsPast(t *testing.T) {
	srv := startServer(t, withHistory)
	c := dial(t, srv.Addr())
	// Before a existed: nothing, as live; the fast paths agree.
	before := boundaryAfter(time.Now().UnixMilli(), 100)
	waitRecorded(t, c, before)
	empty := []string{c.do("BITCOUNT", "a"), c.do("GETBIT", "a", "5"), c.do("BITSCAN", "a", "0"), c.do("BITPOS", "a", "1")}
	seen := runPhases(t, c, historyInterval.Milliseconds())
	checkPast(t, c, seen)
	at := strconv.FormatInt(before, 10)
	c.expect(empty[0], "BITCOUNT", "a", "ATMS", at)
	c.expect(empty[1], "GETBIT", "a", "5", "ATMS", at)
	c.expect(empty[2], "BITSCAN", "a", "0", "ATMS", at)
	c.expect(empty[3], "BITPOS", "a", "1", "ATMS", at)

	// The count series: one point per phase, at the boundary after the
	// phase's entry; between two points the count is the earlier one's.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	points := bitHistory(t, rdb, "a", "-", "+")
	if len(points) != len(historyPhases) {
		t.Fatalf("BITHISTORY a - +: %v, want one point per phase", points)
	}
	prev := int64(0)
	for i, p := range points {
		if p.value != strconv.Itoa(historyPhases[i].countA) || p.ms > seen[i].t || (i > 0 && p.ms <= seen[i-1].t) || p.ms%100 != 0 {
			t.Errorf("point %d: %+v, want count %d at a boundary in (%d, %d]", i, p, historyPhases[i].countA, prev, seen[i].t)
		}
		c.expect(":"+p.value+"\r\n", "BITCOUNT", "a", "ATMS", strconv.FormatInt(p.ms, 10))
		before := "0"
		if i > 0 {
			before = points[i-1].value
		}
		c.expect(":"+before+"\r\n", "BITCOUNT", "a", "ATMS", strconv.FormatInt(p.ms-1, 10))
		prev = p.ms
	}

	// COPY ... AT materializes a past bitmap into a live key.
	phase2 := strconv.FormatInt(seen[1].t, 10)
	c.expect(":1\r\n", "COPY", "a", "a2", "ATMS", phase2)
	c.expect(":0\r\n", "COPY", "a", "a2", "ATMS", phase2)
	c.expect(":1\r\n", "COPY", "a", "a2", "REPLACE", "ATMS", phase2)
	c.expect(":1\r\n", "COPY", "a", "a2", "DB", "3", "ATMS", phase2, "REPLACE")
	c.expect(":0\r\n", "COPY", "missing", "m2", "ATMS", phase2)
	c.expect(seen[1].lives[5], "BITCOUNT", "a2", "0", "-1")
	// a2 holds 7, 8 and 9999; a holds 100000 now, b 5, 8 and 9999.
	c.expect(":0\r\n", "BITOPCOUNT", "AND", "a2", "a")
	c.expect(":2\r\n", "BITOPCOUNT", "AND", "a2", "b")
	c.expect(":4\r\n", "BITOPCOUNT", "OR", "a2", "a")
	c.expect("-ERR syntax error\r\n", "COPY", "a", "a2", "NOPE", "ATMS", phase2)
	c.expect("-ERR DB index is out of range\r\n", "COPY", "a", "a2", "DB", "16", "ATMS", phase2)
	c.expect("+OK\r\n", "SELECT", "3")
	c.expect(seen[1].lives[5], "BITCOUNT", "a2", "0", "-1")
	c.expect("+OK\r\n", "SELECT", "0")

	// AT takes whole seconds: wait for the next one to be recorded.
	sec := boundaryAfter(time.Now().UnixMilli(), 1000)
	waitRecorded(t, c, sec)
	secs := strconv.FormatInt(sec/1000, 10)
	c.expect(":1\r\n", "BITCOUNT", "a", "AT", secs)
	c.expect(":1\r\n", "BITCOUNT", "a", "at", secs)
	c.expect(":1\r\n", "GETBIT", "a", "100000", "At", secs)
	c.expect(seen[3].lives[12], "BITSCAN", "a", "0", "AT", secs)
	checkSteps(t, c, rdb, points)
}

// checkSteps checks BITHISTORY a with STEP 1 and each aggregate against
// a model built from the raw points: buckets of a second from the
// first whole second after the first point; each but the last (which ends at the
// newest time held, still moving) is checked.
func checkSteps(t *testing.T, c *respConn, rdb *redis.Client, points []historySample) {
	t.Helper()
	countAt := func(ms int64) int64 {
		c := int64(0)
		for _, p := range points {
			if p.ms <= ms {
				c, _ = strconv.ParseInt(p.value, 10, 64)
			}
		}
		return c
	}
	from := (points[0].ms + 999) / 1000
	waitRecorded(t, c, (from+2)*1000) // two whole buckets to check
	byAgg := map[string][]historySample{}
	for _, agg := range []string{"last", "min", "max", "avg"} {
		got := bitHistory(t, rdb, "a", strconv.FormatInt(from, 10), "+", "STEP", "1", "AGGREGATE", agg)
		if len(got) < 3 {
			t.Fatalf("BITHISTORY STEP 1 AGGREGATE %s: %v, want two whole buckets and more", agg, got)
		}
		byAgg[agg] = got
		for k, s := range got {
			start := from*1000 + int64(k)*1000
			if s.ms != start {
				t.Errorf("AGGREGATE %s: sample %d at %d, want %d", agg, k, s.ms, start)
			}
			if k == len(got)-1 {
				break
			}
			lo, hi := countAt(start), countAt(start)
			for _, p := range points {
				if v := countAt(p.ms); p.ms > start && p.ms < start+1000 {
					lo, hi = min(lo, v), max(hi, v)
				}
			}
			want := map[string]int64{"last": countAt(start + 999), "min": lo, "max": hi}
			if w, ok := want[agg]; ok && s.value != strconv.FormatInt(w, 10) {
				t.Errorf("AGGREGATE %s: sample %d = %s, want %d", agg, k, s.value, w)
			}
			if agg == "avg" {
				v, err := strconv.ParseFloat(s.value, 64)
				if err != nil || v < float64(lo) || v > float64(hi) {
					t.Errorf("AGGREGATE avg: sample %d = %q, not in [%d, %d]", k, s.value, lo, hi)
				}
			}
		}
	}
	if def := bitHistory(t, rdb, "a", strconv.FormatInt(from, 10), "+", "STEP", "1"); len(def) == 0 || def[0] != byAgg["last"][0] {
		t.Errorf("STEP without AGGREGATE: %v, want LAST's %v", def, byAgg["last"])
	}
}

// historySample is one [timestamp, value] pair of BITHISTORY.
type historySample struct {
	ms    int64
	value string
}

// bitHistory runs BITHISTORY and checks the shape of its reply.
func bitHistory(tb testing.TB, rdb *redis.Client, args ...string) []historySample {
	tb.Helper()
	cmd := []any{"BITHISTORY"}
	for _, a := range args {
		cmd = append(cmd, a)
	}
	reply, err := rdb.Do(context.Background(), cmd...).Slice()
	if err != nil {
		tb.Fatalf("BITHISTORY %q: %v", args, err)
	}
	var out []historySample
	for _, r := range reply {
		pair, ok := r.([]any)
		if !ok || len(pair) != 2 {
			tb.Fatalf("BITHISTORY %q: entry %v is not a pair", args, r)
		}
		ms, ok1 := pair[0].(int64)
		v, ok2 := pair[1].(string)
		if !ok1 || !ok2 {
			tb.Fatalf("BITHISTORY %q: entry %#v is not [integer, string]", args, pair)
		}
		out = append(out, historySample{ms, v})
	}
	return out
}

// TestHistoryErrors checks the replies to bad times, times outside the
// range held, AT inside MULTI and a server without history.
func TestHistoryErrors(t *testing.T) {
	srv := startServer(t, withHistory)
	c := dial(t, srv.Addr())
	c.expect(":0\r\n", "SETBIT", "a", "3", "1")
	now := time.Now().UnixMilli()
	waitRecorded(t, c, boundaryAfter(now, 100))

	c.expect("-ERR wrong number of arguments for 'getbit' command\r\n", "GETBIT", "a", "3", "AT")
	c.expect("-ERR wrong number of arguments for 'getbit' command\r\n", "GETBIT", "a", "AT", "5")
	c.expect("-ERR value is not an integer or out of range\r\n", "GETBIT", "a", "3", "AT", "soon")
	c.expect("-ERR value is not an integer or out of range\r\n", "BITCOUNT", "a", "ATMS", "1.5")
	c.expect("-ERR value is not an integer or out of range\r\n", "BITCOUNT", "a", "AT", "9223372036854775807")
	c.expect("-ERR bit offset is not an integer or out of range\r\n", "GETBIT", "a", "-1", "ATMS", strconv.FormatInt(now, 10))
	future := c.do("BITCOUNT", "a", "AT", strconv.FormatInt(now/1000+3600, 10))
	if !strings.HasPrefix(future, "-ERR history: ") || !strings.Contains(future, "after the newest point held") {
		t.Errorf("a time in the future: %q", future)
	}
	past := c.do("GETBITS", "a", "3", "AT", "1000")
	if !strings.HasPrefix(past, "-ERR history: 1000 is before the oldest point held (") {
		t.Errorf("a time before the range held: %q", past)
	}
	c.expect(past, "COPY", "a", "b", "AT", "1000")

	c.expect("+OK\r\n", "MULTI")
	c.expect("-ERR AT inside MULTI is not allowed\r\n", "BITCOUNT", "a", "AT", "1")
	c.expect("-ERR BITHISTORY inside MULTI is not allowed\r\n", "BITHISTORY", "a", "-", "+")
	c.expect("-EXECABORT Transaction discarded because of previous errors.\r\n", "EXEC")

	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"a", "x", "+"}, errFromTime},
		{[]string{"a", "-", "-5"}, errToTime},
		{[]string{"a", "-", "+", "STEP", "0"}, errStep},
		{[]string{"a", "-", "+", "STEP", "1", "AGGREGATE", "sum"}, errAggregate},
		{[]string{"a", "-", "+", "AGGREGATE", "max"}, errAggregateStep},
		{[]string{"a", "-", "+", "STEP"}, "ERR syntax error"},
		{[]string{"a", "-", "+", "COUNT", "3"}, "ERR syntax error"},
	} {
		cmd := append([]string{"BITHISTORY"}, tc.args...)
		if got := c.do(cmd...); got != "-"+tc.want+"\r\n" {
			t.Errorf("%q: %q, want %q", cmd, got, tc.want)
		}
	}
	if got := bitHistory(t, rdb, "missing", "-", "+"); len(got) != 0 {
		t.Errorf("BITHISTORY of a key never recorded: %v", got)
	}

	off := startServer(t, func(c *Config) { c.History.Enabled = false })
	o := dial(t, off.Addr())
	o.expect("-"+errHistoryOff+"\r\n", "BITCOUNT", "a", "AT", "1")
	o.expect("-"+errHistoryOff+"\r\n", "HISTORY", "INFO")
	o.expect(":0\r\n", "BITCOUNT", "a")
}

// TestHistoryPurge checks that HISTORY PURGE erases a key's past, which
// is then recorded again from its present state.
func TestHistoryPurge(t *testing.T) {
	srv := startServer(t, withHistory)
	c := dial(t, srv.Addr())
	c.expect(":0\r\n", "SETBIT", "a", "3", "1")
	b1 := boundaryAfter(time.Now().UnixMilli(), historyInterval.Milliseconds())
	waitRecorded(t, c, b1)
	c.expect(":0\r\n", "SETBIT", "a", "4", "1")
	b2 := boundaryAfter(time.Now().UnixMilli(), historyInterval.Milliseconds())
	waitRecorded(t, c, b2)
	c.expect(":1\r\n", "BITCOUNT", "a", "ATMS", strconv.FormatInt(b1, 10))
	c.expect("+OK\r\n", "HISTORY", "PURGE", "a")
	b3 := boundaryAfter(time.Now().UnixMilli(), historyInterval.Milliseconds())
	waitRecorded(t, c, b3)
	c.expect(":0\r\n", "BITCOUNT", "a", "ATMS", strconv.FormatInt(b1, 10))
	c.expect(":0\r\n", "GETBIT", "a", "3", "ATMS", strconv.FormatInt(b2, 10))
	c.expect(":2\r\n", "BITCOUNT", "a", "ATMS", strconv.FormatInt(b3, 10))
	c.expect(":1\r\n", "GETBIT", "a", "3", "ATMS", strconv.FormatInt(b3, 10))
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	if got := bitHistory(t, rdb, "a", "-", "+"); len(got) != 1 || got[0].value != "2" || got[0].ms <= b2 {
		t.Errorf("BITHISTORY after PURGE: %v, want only the count recorded again", got)
	}
	checkHistoryInfo(t, c, b3)
}

// checkHistoryInfo checks HISTORY INFO [key] and INFO history on a node
// that recorded key a up to newest.
func checkHistoryInfo(t *testing.T, c *respConn, newest int64) {
	t.Helper()
	atLeast := func(what string, fields map[string]string, name string, least int64) {
		t.Helper()
		if n, err := strconv.ParseInt(fields[name], 10, 64); err != nil || n < least {
			t.Errorf("%s %s = %q, want at least %d", what, name, fields[name], least)
		}
	}
	sections, info := infoFields(t, c.do("INFO", "history"))
	if !equalStrings(sections, []string{"History"}) || info["history_enabled"] != "1" {
		t.Errorf("INFO history: %q %v", sections, info)
	}
	for what, fields := range map[string]map[string]string{"INFO history": info, "HISTORY INFO": historyInfo(t, c), "HISTORY INFO a": historyInfo(t, c, "a")} {
		for _, name := range []string{"points", "snapshots", "bytes_on_disk", "oldest_ms"} {
			atLeast(what, fields, name, 1)
		}
		atLeast(what, fields, "newest_ms", newest)
		if fields["retention"] != "200ms:1h" {
			t.Errorf("%s retention = %q", what, fields["retention"])
		}
	}
	key := historyInfo(t, c, "a")
	atLeast("HISTORY INFO a", key, "newest_count_ms", 1)
	atLeast("HISTORY INFO a", key, "newest_snapshot_ms", 1)
	if key["key"] != "a" || key["db"] != "0" {
		t.Errorf("HISTORY INFO a names %q in db %q", key["key"], key["db"])
	}
	if empty := historyInfo(t, c, "missing"); empty["points"] != "0" || empty["snapshots"] != "0" {
		t.Errorf("HISTORY INFO of a key never recorded: %v", empty)
	}
	c.expect("-ERR syntax error\r\n", "HISTORY", "INFO", "a", "b")
	if help := c.do("HISTORY", "HELP"); !strings.HasPrefix(help, "*") || !strings.Contains(help, "PURGE <key>") {
		t.Errorf("HISTORY HELP: %q", help)
	}
	c.expect("-ERR unknown subcommand 'NOPE'. Try HISTORY HELP.\r\n", "HISTORY", "NOPE")
}

// TestHistoryReplicas checks that every node of a cluster answers reads
// in the past as the leader answered them live.
func TestHistoryReplicas(t *testing.T) {
	srvs := startCluster(t, 3, withHistory)
	l := clusterLeader(t, srvs)
	var readers []*respConn
	for _, f := range clusterFollowers(srvs, l) {
		readers = append(readers, dial(t, f.Addr()))
	}
	w := dial(t, l.Addr())
	seen := runPhases(t, w, historyInterval.Milliseconds(), readers...)
	for _, r := range readers {
		checkPast(t, r, seen)
	}
	// COPY ... AT on a follower goes to the leader through the log.
	readers[0].expect(":1\r\n", "COPY", "a", "a2", "ATMS", strconv.FormatInt(seen[1].t, 10))
	w.expect(seen[1].lives[5], "BITCOUNT", "a2", "0", "-1")
}

// TestHistoryLateFollower checks that a node that joins after the log
// was compacted receives the history with the snapshot it installs, and
// answers for times before it joined.
func TestHistoryLateFollower(t *testing.T) {
	compact := func(c *Config) { c.Cluster.TrailingLogs = 1 }
	srvs := startCluster(t, 1, withHistory, compact)
	w := dial(t, srvs[0].Addr())
	seen := runPhases(t, w, historyInterval.Milliseconds())
	w.expect("+OK\r\n", "RAFT", "SNAPSHOT")
	late := startServer(t, withHistory, compact, clusterMember(1, srvs[0].Addr()))
	waitApplied(t, append(srvs, late))
	if late.Node().Stats().Restores == 0 {
		t.Fatal("the late node caught up without a snapshot")
	}
	checkPast(t, dial(t, late.Addr()), seen)
}

// TestIsTimeWord checks isTimeWord's shortcut on the first byte against
// case-insensitive comparison alone, on every word of two bytes, on every
// first byte of AT and ATMS, and on words whose letters fold from other
// runes.
func TestIsTimeWord(t *testing.T) {
	want := func(b []byte) bool {
		return strings.EqualFold(string(b), "AT") || strings.EqualFold(string(b), "ATMS")
	}
	check := func(b []byte) {
		t.Helper()
		if got := isTimeWord(b); got != want(b) {
			t.Fatalf("isTimeWord(%q) = %v", b, got)
		}
	}
	for c := range 256 {
		for d := range 256 {
			check([]byte{byte(c), byte(d)})
		}
		check([]byte{byte(c), 't'})
		check([]byte{byte(c), 'T', 'm', 'S'})
	}
	for _, w := range []string{"", "a", "at", "At", "aT", "AT", "atms", "ATMS", "ATM", "ATMSX", "ATMſ", "atmſ", "\u212aT"} {
		check([]byte(w))
	}
}

// TestHistoryOfAQuietLog checks that reads of the past answer for the
// latest boundary on the leader and on a follower while the leader, with
// nothing due, proposes no ticks: the read has it tick first.
func TestHistoryOfAQuietLog(t *testing.T) {
	srvs := startCluster(t, 2, withHistory)
	l := clusterLeader(t, srvs)
	w := dial(t, l.Addr())
	w.expect(":0\r\n", "SETBIT", "a", "7", "1")
	// Quiet once the count and the snapshot of the write are recorded: the
	// snapshot comes at the first interval boundary after the write's
	// count, and the store is not due before it.
	snapshot := boundaryAfter(time.Now().UnixMilli(), historyInterval.Milliseconds())
	deadline := time.Now().Add(10 * time.Second)
	quiet := func() bool { now := time.Now().UnixMilli(); return now >= snapshot && !l.store.Due(now) }
	for backoff := time.Millisecond; !quiet(); backoff = min(2*backoff, 20*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the leader's store stays due")
		}
		<-time.After(backoff) // polling the node's progress
	}
	for _, s := range srvs {
		c := dial(t, s.Addr())
		before := l.Node().Stats().Entries
		at := boundaryAfter(time.Now().UnixMilli(), 100) - 100
		if at <= l.store.Now() {
			at += 100 // the latest boundary, after the log's time
			for time.Now().UnixMilli() < at {
				<-time.After(time.Millisecond) // waiting for the boundary to pass
			}
		}
		c.expect(":1\r\n", "BITCOUNT", "a", "ATMS", strconv.FormatInt(at, 10))
		c.expect(":1\r\n", "GETBIT", "a", "7", "ATMS", strconv.FormatInt(at, 10))
		if l.Node().Stats().Entries == before {
			t.Fatalf("%s: a read at %d, after the log's time, proposed no entry", s.Node().Config().NodeID, at)
		}
	}
}
