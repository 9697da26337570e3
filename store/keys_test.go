package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/presenced/presenced/proto"
)

func TestKeyCommands(t *testing.T) {
	runScript(t, []step{
		{"MSET a 1 b 2 c 3", rOK},
		{"EXISTS a b nokey a", rInt(3)},
		{"TOUCH a nokey a", rInt(2)},
		{"TYPE a", "+string\r\n"},
		{"TYPE nokey", "+none\r\n"},
		{"DBSIZE", rInt(3)},
		{"DEL a a nokey", rInt(1)},
		{"UNLINK b c", rInt(2)},
		{"DBSIZE", rInt(0)},
		{"RANDOMKEY", rNull},
		{"SET a 1", rOK},
		{"RANDOMKEY", rBulk("a")},
		{"KEYS *", rBulks("a")},
		{"KEYS b*", rBulks()},
		{"SCAN 0", rArr(rBulk("0"), rBulks("a"))},
		{"SCAN 0 MATCH a TYPE string COUNT 100", rArr(rBulk("0"), rBulks("a"))},
		{"SCAN 0 TYPE STRING", rArr(rBulk("0"), rBulks("a"))},
		{"SCAN 0 TYPE hash", rArr(rBulk("0"), rBulks())},
		{"SCAN 0 MATCH b", rArr(rBulk("0"), rBulks())},
		{"SCAN 0 MATCH b MATCH *", rArr(rBulk("0"), rBulks("a"))},
		{"SCAN +0", rArr(rBulk("0"), rBulks("a"))},
		{`SCAN ""`, rArr(rBulk("0"), rBulks("a"))},
		{"SCAN 18446744073709551616", rErr(proto.ErrCursor)},
		{`SCAN " 0"`, rErr(proto.ErrCursor)},
		{`SCAN "0 "`, rErr(proto.ErrCursor)},
		{"SCAN -", rErr(proto.ErrCursor)},
		{"SCAN 0x1", rErr(proto.ErrCursor)},
		{"SCAN abc COUNT 0", rErr(proto.ErrCursor)},
		{"SCAN 0 COUNT 0", rErr(proto.ErrSyntax)},
		{"SCAN 0 COUNT -1", rErr(proto.ErrSyntax)},
		{"SCAN 0 COUNT abc", rErr(proto.ErrNotInteger)},
		{"SCAN 0 COUNT", rErr(proto.ErrSyntax)},
		{"SCAN 0 MATCH", rErr(proto.ErrSyntax)},
		{"SCAN 0 foo bar", rErr(proto.ErrSyntax)},
		{"RENAME nokey x", rErr(proto.ErrNoSuchKey)},
		{"RENAME nokey nokey", rErr(proto.ErrNoSuchKey)},
		{"RENAMENX nokey x", rErr(proto.ErrNoSuchKey)},
		{"RENAME a a", rOK},
		{"RENAMENX a a", rInt(0)},
		{"EXPIRE a 100", rInt(1)},
		{"RENAME a b", rOK},
		{"TTL b", rInt(100)},
		{"EXISTS a", rInt(0)},
		{"SET c 3", rOK},
		{"RENAMENX b c", rInt(0)},
		{"RENAMENX b d", rInt(1)},
		{"RENAME d c", rOK},
		{"GET c", rBulk("1")},
		{"TTL c", rInt(100)},
		{"MOVE c 0", rErr(proto.ErrSameObject)},
		{"MOVE c 16", rErr(proto.ErrDBIndex)},
		{"MOVE c -1", rErr(proto.ErrDBIndex)},
		{"MOVE c 4294967296", rErr(errIntRange)},
		{"COPY c d DB -4294967296", rErr(errIntRange)},
		{"SWAPDB 4294967296 0", rErr("ERR invalid first DB index")},
		{"MOVE c abc", rErr(proto.ErrNotInteger)},
		{"MOVE nokey 99", rErr(proto.ErrDBIndex)},
		{"MOVE nokey 1", rInt(0)},
		{"MOVE c 1", rInt(1)},
		{"EXISTS c", rInt(0)},
		{"@1 TTL c", rInt(100)},
		{"SET c x", rOK},
		{"MOVE c 1", rInt(0)},
		{"COPY c c", rErr(proto.ErrSameObject)},
		{"COPY c c DB 0", rErr(proto.ErrSameObject)},
		{"COPY c d DB 99", rErr(proto.ErrDBIndex)},
		{"COPY c d DB abc", rErr(proto.ErrNotInteger)},
		{"COPY c d DB", rErr(proto.ErrSyntax)},
		{"COPY c d foo", rErr(proto.ErrSyntax)},
		{"COPY nokey d", rInt(0)},
		{"COPY c c DB 1", rInt(0)},
		{"COPY c c DB 1 REPLACE", rInt(1)},
		{"@1 GET c", rBulk("x")},
		{"@1 TTL c", rInt(-1)},
		{"@1 COPY c e DB 0", rInt(1)},
		{"APPEND e y", rInt(2)},
		{"@1 GET c", rBulk("x")},
		{"PEXPIRE e 100000", rInt(1)},
		{"COPY e f replace db 0 REPLACE", rInt(1)},
		{"TTL f", rInt(100)},
		{"SWAPDB 0 16", rErr(proto.ErrDBIndex)},
		{"SWAPDB -1 0", rErr(proto.ErrDBIndex)},
		{"SWAPDB a 0", rErr("ERR invalid first DB index")},
		{"SWAPDB 0 a", rErr("ERR invalid second DB index")},
		{"SWAPDB 16 a", rErr("ERR invalid second DB index")},
		{"SWAPDB 0 0", rOK},
		{"DBSIZE", rInt(3)},
		{"SWAPDB 0 1", rOK},
		{"DBSIZE", rInt(1)},
		{"@1 DBSIZE", rInt(3)},
		{"@1 TTL f", rInt(100)},
		{"FLUSHDB foo", rErr(proto.ErrSyntax)},
		{"FLUSHDB ASYNC", rOK},
		{"DBSIZE", rInt(0)},
		{"@1 DBSIZE", rInt(3)},
		{"FLUSHALL SYNC ASYNC", rErr(proto.ErrSyntax)},
		{"FLUSHALL sync", rOK},
		{"@1 DBSIZE", rInt(0)},
	})
}

func TestExpireCommands(t *testing.T) {
	runScript(t, []step{
		{"EXPIRE nokey 10", rInt(0)},
		{"EXPIRE nokey abc", rErr(proto.ErrNotInteger)},
		{"TTL nokey", rInt(-2)},
		{"PTTL nokey", rInt(-2)},
		{"EXPIRETIME nokey", rInt(-2)},
		{"PEXPIRETIME nokey", rInt(-2)},
		{"PERSIST nokey", rInt(0)},
		{"SET k v", rOK},
		{"TTL k", rInt(-1)},
		{"PTTL k", rInt(-1)},
		{"EXPIRETIME k", rInt(-1)},
		{"PERSIST k", rInt(0)},
		{"EXPIRE k 10 NX XX", rErr(errExpireNX)},
		{"EXPIRE k 10 nx gt", rErr(errExpireNX)},
		{"EXPIRE k 10 LT NX", rErr(errExpireNX)},
		{"EXPIRE k 10 GT LT", rErr(errExpireGTLT)},
		{"EXPIRE k 10 foo", rErr("ERR Unsupported option foo")},
		{"EXPIRE k abc foo", rErr("ERR Unsupported option foo")},
		{`EXPIRE k 1 "ab\x00c"`, rErr("ERR Unsupported option ab")},
		{"EXPIRE k 9223372036854775807", rErr("ERR invalid expire time in 'expire' command")},
		{"EXPIRE k -9223372036854775808", rErr("ERR invalid expire time in 'expire' command")},
		{"PEXPIRE k 9223372036854775807", rErr("ERR invalid expire time in 'pexpire' command")},
		{"EXPIREAT k 9223372036854776", rErr("ERR invalid expire time in 'expireat' command")},
		{"EXPIRE k 100 GT", rInt(0)}, // no TTL counts as infinite
		{"EXPIRE k 100 XX", rInt(0)},
		{"EXPIRE k 100 LT", rInt(1)},
		{"TTL k", rInt(100)},
		{"EXPIRE k 50 GT", rInt(0)},
		{"EXPIRE k 99 GT", rInt(0)}, // equal deadlines: see EXPIREAT below
		{"EXPIRE k 150 GT", rInt(1)},
		{"EXPIRE k 200 LT", rInt(0)},
		{"EXPIRE k 100 LT XX", rInt(1)},
		{"EXPIRE k 100 NX", rInt(0)},
		{"TTL k", rInt(100)},
		{"PERSIST k", rInt(1)},
		{"PERSIST k", rInt(0)},
		{"EXPIRE k 100 nx", rInt(1)},
		{"EXPIREAT k 4000000000", rInt(1)},
		{"EXPIRETIME k", rInt(4000000000)},
		{"PEXPIRETIME k", rInt(4000000000000)},
		{"EXPIREAT k 4000000000 GT", rInt(0)},
		{"PEXPIREAT k 4000000000000 LT", rInt(0)},
		{"PEXPIREAT k 4000000000499", rInt(1)},
		{"EXPIRETIME k", rInt(4000000000)},
		{"PEXPIREAT k 4000000000500", rInt(1)},
		{"EXPIRETIME k", rInt(4000000001)},
		{"PEXPIREAT k 9223372036854775807", rInt(1)},
		{"EXPIRETIME k", rInt(9223372036854776)},
		{"PEXPIRETIME k", rInt(9223372036854775807)},
		{"EXPIREAT k 9223372036854775", rInt(1)},
		{"EXPIRE k 0", rInt(1)},
		{"EXISTS k", rInt(0)},
		{"SET k v", rOK},
		{"EXPIRE k -5", rInt(1)},
		{"EXISTS k", rInt(0)},
		{"SET k v", rOK},
		{"PEXPIREAT k 1 LT", rInt(1)}, // no TTL counts as infinite: LT applies
		{"EXISTS k", rInt(0)},
		{"SET k v", rOK},
		{"EXPIREAT k 1 GT", rInt(0)},
		{"EXISTS k", rInt(1)},
	})
}

// TestExpiryTime drives the clock: a key lives through its deadline's
// millisecond, reads stop seeing it after that without removing it, and
// the next tick (an empty Apply) removes it.
func TestExpiryTime(t *testing.T) {
	s := New()
	t0 := int64(testNow)
	checks := []struct {
		now       int64
		cmd, want string
	}{
		{t0, "SET k v PX 1500", rOK},
		{t0, "SET other v", rOK},
		{t0, "SET later v EX 100", rOK},
		{t0, "PTTL k", rInt(1500)},
		{t0, "TTL k", rInt(2)},
		{t0 + 1001, "TTL k", rInt(0)},
		{t0 + 1000, "TTL k", rInt(1)},
		{t0, "PEXPIRETIME k", rInt(t0 + 1500)},
		{t0 + 1500, "GET k", rBulk("v")},
		{t0 + 1500, "PTTL k", rInt(0)},
		{t0 + 1501, "GET k", rNull},
		{t0 + 1501, "TTL k", rInt(-2)},
		{t0 + 1501, "EXISTS k", rInt(0)},
		{t0 + 1501, "DBSIZE", rInt(2)},
		{t0 + 1501, "KEYS *", ""}, // checked below, order is free
		{t0 + 1501, "RANDOMKEY", ""},
		{t0 + 1501, "MGET k other", rArr(rNull, rBulk("v"))},
		{t0 + 1501, "OBJECT ENCODING k", rNull},
	}
	for _, c := range checks {
		got := do(s, c.now, c.cmd)
		switch c.cmd {
		case "KEYS *":
			if got != rBulks("other", "later") && got != rBulks("later", "other") {
				t.Errorf("KEYS * at +%d: %q", c.now-t0, got)
			}
		case "RANDOMKEY":
			for range 50 {
				if got = do(s, c.now, c.cmd); got == rBulk("k") {
					t.Errorf("RANDOMKEY returned an expired key")
				}
			}
		default:
			if got != c.want {
				t.Errorf("%s at +%d: got %q want %q", c.cmd, c.now-t0, got, c.want)
			}
		}
	}
	// Nothing removed the key yet: reads do not write.
	if ks := s.Keyspace(); len(ks) != 1 || ks[0] != (KeyspaceInfo{DB: 0, Keys: 3, Expires: 2}) {
		t.Fatalf("before the tick: %+v", ks)
	}
	var out Replies
	s.Apply(nil, t0+1501, &out)
	if ks := s.Keyspace(); len(ks) != 1 || ks[0] != (KeyspaceInfo{DB: 0, Keys: 2, Expires: 1}) {
		t.Fatalf("after the tick: %+v", ks)
	}
	if st := s.Stats(); st.ExpiredKeys != 1 {
		t.Fatalf("expired keys: %d", st.ExpiredKeys)
	}
}

// TestExpiryFollowsKeys checks that the TTL travels with RENAME, MOVE,
// COPY and SWAPDB, and that ticks expire the keys where they went.
func TestExpiryFollowsKeys(t *testing.T) {
	s := New()
	t0 := int64(testNow)
	for _, cmd := range []string{
		"SET a v PX 100", "RENAME a b",
		"SET c v PX 200", "MOVE c 3",
		"SET d v PX 300", "COPY d e DB 4",
		"SET f v PX 400", "SWAPDB 0 5",
		"SET g v PX 10000", "EXPIRE g 1 GT", "PEXPIRE g 500 LT",
	} {
		do(s, t0, cmd)
	}
	want := []KeyspaceInfo{{0, 1, 1}, {3, 1, 1}, {4, 1, 1}, {5, 3, 3}}
	if ks := s.Keyspace(); !slices.Equal(ks, want) {
		t.Fatalf("keyspace %+v, want %+v", ks, want)
	}
	var out Replies
	for _, tick := range []struct{ at, expired int64 }{{101, 1}, {201, 2}, {301, 4}, {401, 5}, {501, 6}} {
		s.Apply(nil, t0+tick.at, &out)
		if st := s.Stats(); st.ExpiredKeys != tick.expired {
			t.Fatalf("tick +%d: %d keys expired, want %d", tick.at, st.ExpiredKeys, tick.expired)
		}
	}
	if ks := s.Keyspace(); len(ks) != 0 {
		t.Fatalf("keys left: %+v", ks)
	}
}

// TestScanExactlyOnce runs full SCAN iterations while keys are added
// and deleted between the pages: every key present from start to end
// must come back exactly once, and no key that never existed may.
func TestScanExactlyOnce(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rnd := rand.New(rand.NewPCG(seed, seed))
		s := New()
		live := map[string]bool{}
		ever := map[string]bool{}
		name := func() string { return "key:" + strconv.Itoa(rnd.IntN(3000)) }
		for range 1000 {
			k := name()
			do(s, testNow, "SET "+k+" v")
			live[k], ever[k] = true, true
		}
		stable := map[string]bool{}
		for k := range live {
			stable[k] = true
		}
		seen := map[string]int{}
		cursor := "0"
		for pages := 0; ; pages++ {
			if pages > 10000 {
				t.Fatal("the scan does not end")
			}
			count := 1 + rnd.IntN(30)
			reply := execAt(s, testNow, 0, []byte("SCAN"), []byte(cursor), []byte("COUNT"), []byte(strconv.Itoa(count)))
			var keys []string
			cursor, keys = parseScanReply(t, reply)
			for _, k := range keys {
				seen[k]++
				if !ever[k] {
					t.Fatalf("seed %d: SCAN returned %q, which never existed", seed, k)
				}
			}
			for range rnd.IntN(10) {
				k := name()
				if rnd.IntN(2) == 0 {
					do(s, testNow, "SET "+k+" v")
					live[k], ever[k] = true, true
				} else {
					do(s, testNow, "DEL "+k)
					delete(live, k)
					delete(stable, k)
				}
			}
			if cursor == "0" {
				break
			}
		}
		for k := range stable {
			if seen[k] != 1 {
				t.Fatalf("seed %d: key %q present throughout came back %d times", seed, k, seen[k])
			}
		}
		for k, n := range seen {
			if n > 1 {
				t.Fatalf("seed %d: key %q came back %d times", seed, k, n)
			}
		}
	}
}

// parseScanReply splits a SCAN reply into its cursor and keys.
func parseScanReply(t *testing.T, reply string) (string, []string) {
	t.Helper()
	parts := strings.Split(reply, "\r\n")
	if len(parts) < 4 || parts[0] != "*2" {
		t.Fatalf("bad SCAN reply %q", reply)
	}
	var keys []string
	for i := 5; i+1 < len(parts); i += 2 {
		keys = append(keys, parts[i])
	}
	n, _ := strconv.Atoi(strings.TrimPrefix(parts[3], "*"))
	if len(keys) != n {
		t.Fatalf("bad SCAN reply %q", reply)
	}
	return parts[2], keys
}

// TestScanMatchAndExpired checks SCAN's filters and that expired keys
// never come back, over a full iteration.
func TestScanMatchAndExpired(t *testing.T) {
	s := New()
	want := map[string]bool{}
	for i := range 200 {
		k := fmt.Sprintf("user:%d", i)
		if i%3 == 0 {
			do(s, testNow, "SET "+k+" v PX 10")
		} else {
			do(s, testNow, "SET "+k+" v")
			if strings.HasSuffix(k, "7") {
				want[k] = true
			}
		}
		do(s, testNow, "SET other:"+strconv.Itoa(i)+"7 v")
	}
	got := map[string]bool{}
	for cursor := "0"; ; {
		var keys []string
		cursor, keys = parseScanReply(t, execAt(s, testNow+11, 0, []byte("SCAN"), []byte(cursor), []byte("MATCH"), []byte("user:*7"), []byte("COUNT"), []byte("7")))
		for _, k := range keys {
			got[k] = true
		}
		if cursor == "0" {
			break
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	if got := do(s, testNow+11, "DBSIZE"); got != rInt(200+200-67) {
		t.Fatalf("DBSIZE %q", got)
	}
}

// TestEachKey checks that EachKey visits every live key of one database
// once, skips expired keys, and stops when asked to.
func TestEachKey(t *testing.T) {
	s := New()
	want := map[string]bool{}
	for i := range 100 {
		k := "k" + strconv.Itoa(i)
		switch i % 4 {
		case 0:
			do(s, testNow, "SET "+k+" v PX 10")
		case 1:
			execAt(s, testNow, 3, []byte("SET"), []byte(k), []byte("v"))
		default:
			do(s, testNow, "SET "+k+" v")
			want[k] = true
		}
	}
	got := map[string]bool{}
	s.EachKey(0, testNow+11, func(key string) bool {
		if got[key] {
			t.Errorf("%s visited twice", key)
		}
		got[key] = true
		return true
	})
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	visits := 0
	s.EachKey(0, testNow+11, func(string) bool { visits++; return visits < 5 })
	if visits != 5 {
		t.Fatalf("%d visits after asking to stop at the fifth", visits)
	}
}

func TestRandomkeyCoversKeys(t *testing.T) {
	s := New()
	for i := range 5 {
		do(s, testNow, "SET k"+strconv.Itoa(i)+" v")
	}
	for i := range 20 {
		do(s, testNow, "SET dead"+strconv.Itoa(i)+" v PX 1")
	}
	seen := map[string]bool{}
	for range 2000 {
		r := do(s, testNow+2, "RANDOMKEY")
		if !strings.Contains(r, "k") || strings.Contains(r, "dead") {
			t.Fatalf("RANDOMKEY %q", r)
		}
		seen[r] = true
	}
	if len(seen) != 5 {
		t.Fatalf("RANDOMKEY returned %d distinct keys of 5", len(seen))
	}
	if r := execAt(s, testNow+2, 1, []byte("RANDOMKEY")); r != rNull {
		t.Fatalf("RANDOMKEY in an empty database: %q", r)
	}
}

// globCases is a table of patterns and strings with Redis's verdict,
// which TestGlob also checks against KEYS on a real redis-server.
var globCases = []struct {
	pattern, s string
	match      bool
}{
	{"*", "", false}, // KEYS * takes every key without matching
	{"*", "abc", true},
	{"a*", "abc", true},
	{"a*", "bac", false},
	{"*c", "abc", true},
	{"a*c", "ac", true},
	{"a*c", "abxc", true},
	{"a*c", "abxcd", false},
	{"a**c", "abc", true},
	{"*a*b*c*", "xaxbxcx", true},
	{"*a*b*c*", "xaxcxbx", false},
	{"?", "a", true},
	{"?", "", false},
	{"?", "ab", false},
	{"a?c", "abc", true},
	{"a?c", "ac", false},
	{"[abc]", "b", true},
	{"[abc]", "d", false},
	{"[^abc]", "d", true},
	{"[^abc]", "a", false},
	{"[a-c]x", "bx", true},
	{"[c-a]x", "bx", true},
	{"[a-c]x", "dx", false},
	{"[^a-c]x", "dx", true},
	{"[a-]", "-", false},
	{"[a-]", "a", true},
	{"[]", "]", false},
	{"[]]", "]", false},
	{"[\\]]", "]", true},
	{"[\\-]", "-", true},
	{"[a\\-c]", "b", false},
	{"[abc", "a", true},
	{"[abc", "abc", false},
	{"x[abc", "xc", true},
	{"[", "[", false},
	{"[^", "a", true},
	{"\\*", "*", true},
	{"\\*", "a", false},
	{"\\?", "?", true},
	{"a\\", "a\\", true},
	{"\\", "\\", true},
	{"a*\\", "abc\\", true},
	{"\\a", "a", true},
	{"[[]", "[", true},
	{"*[0-9]", "key7", true},
	{"*[0-9]", "key", false},
	{"user:*:name", "user:1:name", true},
	{"user:*:name", "user::name", true},
	{"user:*:name", "user:1:nam", false},
	{"*?", "", false},
	{"*?", "a", true},
	{"a*", "a", true},
	{"a*?*", "a", false},
	{"A", "a", false},
	{"[\x80-\xff]", "\x90", true},
	{"[a-\xff]", "\x90", false}, // C chars are signed: the range is [-1, 'a']
	{"[a-\xff]", "b", false},
	{"[\x01-\xff]", "b", false},
	{strings.Repeat("*a", 20) + "b", strings.Repeat("a", 40), false},
}

func TestGlob(t *testing.T) {
	for _, c := range globCases {
		if got := globMatch(c.pattern, c.s); got != c.match {
			t.Errorf("globMatch(%q, %q) = %v, want %v", c.pattern, c.s, got, c.match)
		}
		if got := Match([]byte(c.pattern), []byte(c.s), false); got != c.match {
			t.Errorf("Match(%q, %q, false) = %v, want %v", c.pattern, c.s, got, c.match)
		}
	}
	if !Match([]byte("CONFIG*"), []byte("config|get"), true) || Match([]byte("CONFIG*"), []byte("config|get"), false) {
		t.Error("Match ignores case only with nocase")
	}
	if !Match([]byte("[A-C]"), []byte("b"), true) || Match([]byte("[A-C]"), []byte("b"), false) {
		t.Error("ranges ignore case only with nocase")
	}
	r := startRedis(t)
	if r == nil {
		return
	}
	for _, c := range globCases {
		if c.s == "" {
			continue // Redis keys are never empty here
		}
		r.do(t, 0, []byte("FLUSHALL"))
		r.do(t, 0, []byte("SET"), []byte(c.s), []byte("v"))
		want := rBulks()
		if c.match {
			want = rBulks(c.s)
		}
		if got := r.do(t, 0, []byte("KEYS"), []byte(c.pattern)); got != want {
			t.Errorf("redis-server disagrees on %q ~ %q: KEYS says %q", c.pattern, c.s, got)
		}
	}
}

func TestMemoryUsage(t *testing.T) {
	s := New()
	cases := []struct {
		key, val string
		want     int64
	}{
		{"k", "v", 64},
		{"k", "123", 48},
		{strings.Repeat("k", 36), "12345", 88},
		{"k", strings.Repeat("x", 44), 96},
		{"k", strings.Repeat("x", 45), 112},
	}
	r := startRedis(t)
	for _, c := range cases {
		execAt(s, testNow, 0, []byte("SET"), []byte(c.key), []byte(c.val))
		got, ok := s.MemoryUsage(0, []byte(c.key), testNow)
		if !ok || got != c.want {
			t.Errorf("MemoryUsage of %d-byte key, %d-byte value: %d, %v; want %d", len(c.key), len(c.val), got, ok, c.want)
		}
		if r != nil {
			r.do(t, 0, []byte("SET"), []byte(c.key), []byte(c.val))
			if rr := r.do(t, 0, []byte("MEMORY"), []byte("USAGE"), []byte(c.key)); rr != rInt(c.want) {
				t.Errorf("redis-server says %q for %d-byte key, %d-byte value", rr, len(c.key), len(c.val))
			}
		}
	}
	do(s, testNow, "SETBIT b 1000000 1")
	if got, ok := s.MemoryUsage(0, []byte("b"), testNow); !ok || got > 1000 {
		t.Errorf("a one-bit bitmap uses %d bytes", got)
	}
	do(s, testNow, "SET gone v PX 1")
	if _, ok := s.MemoryUsage(0, []byte("gone"), testNow+2); ok {
		t.Error("an expired key has a size")
	}
	if _, ok := s.MemoryUsage(NumDBs, []byte("k"), testNow); ok {
		t.Error("a database out of range has keys")
	}
}

// TestConcurrentReads runs the index-walking reads under the read lock
// while writes change the index, for the race detector.
func TestConcurrentReads(t *testing.T) {
	s := New()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 2000 {
			do(s, testNow, "SET k"+strconv.Itoa(i%300)+" v PX "+strconv.Itoa(1+i%5))
			do(s, testNow+int64(i%7), "DEL k"+strconv.Itoa((i*7)%300))
		}
	}()
	for _, cmd := range []string{"SCAN 0 COUNT 50", "KEYS k1*", "RANDOMKEY", "DBSIZE"} {
		for range 200 {
			if r := do(s, testNow+3, cmd); strings.HasPrefix(r, "-") {
				t.Fatalf("%s: %q", cmd, r)
			}
		}
	}
	<-done
}

// TestExpiryObserver checks that the expiry observer is told of every
// Apply's expiry, and of how long it took: longer when the expiry
// removed many keys than when it removed none; and nothing once unset.
func TestExpiryObserver(t *testing.T) {
	s := New()
	var took []time.Duration
	s.SetExpiryObserver(func(d time.Duration) { took = append(took, d) })
	for i := range 50000 {
		execAt(s, testNow, 0, []byte("SET"), fmt.Appendf(nil, "k%d", i), []byte("v"), []byte("PX"), []byte("1000"))
	}
	took = took[:0]
	do(s, testNow+1, "SET a b")    // nothing to expire
	do(s, testNow+2000, "SET a b") // every k expires
	if n := execAt(s, testNow+2000, 0, []byte("DBSIZE")); n != ":1\r\n" || len(took) != 2 {
		t.Fatalf("DBSIZE %q after the expiry; observer told %d times, want 2", n, len(took))
	}
	if took[1] <= took[0] {
		t.Errorf("expiring 50000 keys took %v, expiring none %v", took[1], took[0])
	}
	s.SetExpiryObserver(nil)
	do(s, testNow+3000, "SET a c")
	if len(took) != 2 {
		t.Errorf("an unset observer was told %d times more", len(took)-2)
	}
}
