package store

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/presenced/presenced/proto"
	"github.com/presenced/presenced/server/redisserver"
)

// Script tests: each step is a command line and its exact RESP reply.
// runScript checks the replies of a fresh store at testNow and, when
// redis-server is installed, that a real Redis sends the same bytes, so
// the expectations are Redis's and not ours.

// testNow is the log time of the script tests, unix ms. Scripts compared
// with Redis only use times far in the past or the future of both clocks.
const testNow = 1_700_000_000_000

type step struct {
	cmd  string // arguments separated by spaces; "..." is a Go-quoted argument; "@n " runs in database n
	want string // the exact reply
}

// Reply builders for the tables.
const (
	rOK   = "+OK\r\n"
	rNull = "$-1\r\n"
	rNone = "$0\r\n\r\n"
)

func rInt(n int64) string   { return ":" + strconv.FormatInt(n, 10) + "\r\n" }
func rErr(s string) string  { return "-" + s + "\r\n" }
func rBulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
func rArr(items ...string) string {
	return "*" + strconv.Itoa(len(items)) + "\r\n" + strings.Join(items, "")
}
func rBulks(items ...string) string {
	for i, s := range items {
		items[i] = rBulk(s)
	}
	return rArr(items...)
}

// parseStep splits a step's command into its database and arguments.
func parseStep(t *testing.T, line string) (int, [][]byte) {
	t.Helper()
	db := 0
	if rest, ok := strings.CutPrefix(line, "@"); ok {
		n, tail, _ := strings.Cut(rest, " ")
		db, _ = strconv.Atoi(n)
		line = tail
	}
	var args [][]byte
	for line != "" {
		line = strings.TrimLeft(line, " ")
		var arg string
		if strings.HasPrefix(line, `"`) {
			q, err := strconv.QuotedPrefix(line)
			if err != nil {
				t.Fatalf("bad quoting in %q: %v", line, err)
			}
			arg, _ = strconv.Unquote(q)
			line = line[len(q):]
		} else {
			arg, line, _ = strings.Cut(line, " ")
		}
		args = append(args, []byte(arg))
	}
	return db, args
}

// execAt runs one command on s at time now, through Read for commands
// that do not write, and returns a copy of its reply.
func execAt(s *Store, now int64, db int, args ...[]byte) string {
	var out Replies
	cmds := []Command{{DB: db, Args: args}}
	if spec := proto.Lookup(args[0]); spec != nil && spec.Flags&proto.Write == 0 {
		s.Read(cmds, now, &out)
	} else {
		s.Apply(cmds, now, &out)
	}
	return string(out.Reply(0))
}

// do runs a command line on s at time now in database 0.
func do(s *Store, now int64, line string) string {
	var args [][]byte
	for _, a := range strings.Fields(line) {
		args = append(args, []byte(a))
	}
	return execAt(s, now, 0, args...)
}

func runScript(t *testing.T, steps []step) {
	t.Helper()
	s := New()
	for i, st := range steps {
		db, args := parseStep(t, st.cmd)
		if got := execAt(s, testNow, db, args...); got != st.want {
			t.Errorf("step %d %s:\n got %q\nwant %q", i, st.cmd, got, st.want)
		}
	}
	r := startRedis(t)
	if r == nil {
		return
	}
	r.do(t, 0, []byte("FLUSHALL"))
	for i, st := range steps {
		db, args := parseStep(t, st.cmd)
		if got := r.do(t, db, args...); got != st.want {
			t.Errorf("redis-server disagrees with the table at step %d %s:\nredis %q\ntable %q", i, st.cmd, got, st.want)
		}
	}
}

// redisServer is a connection to a real redis-server, the referee.
type redisServer struct {
	conn *redisserver.Conn
}

// startRedis starts redis-server for the test and connects to it. Outside
// CI it returns nil when redis-server is not installed, and the caller
// checks the store alone.
func startRedis(t *testing.T) *redisServer {
	t.Helper()
	return connectRedis(t, redisserver.StartIfInstalled(t, redisserver.Options{}))
}

// connectRedis connects to p for the length of the test; nil stays nil.
func connectRedis(t *testing.T, p *redisserver.Process) *redisServer {
	t.Helper()
	if p == nil {
		return nil
	}
	conn, err := redisserver.Dial(p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &redisServer{conn: conn}
}

// do sends a command in database db and returns Redis's raw reply.
func (r *redisServer) do(t *testing.T, db int, args ...[]byte) string {
	t.Helper()
	if db != 0 {
		r.do(t, 0, []byte("SELECT"), []byte(strconv.Itoa(db)))
		defer r.do(t, 0, []byte("SELECT"), []byte("0"))
	}
	reply, err := r.conn.Do(args...)
	if err != nil {
		t.Fatal(err)
	}
	return string(reply)
}

func TestSetOptions(t *testing.T) {
	invalid := rErr("ERR invalid expire time in 'set' command")
	runScript(t, []step{
		{"SET k v", rOK},
		{"GET k", rBulk("v")},
		{"SET k v EX 0", invalid},
		{"SET k v EX -1", invalid},
		{"SET k v PX 0", invalid},
		{"SET k v EXAT 0", invalid},
		{"SET k v EX 9223372036854775807", invalid},
		{"SET k v EX 9223372036854775", invalid},
		{"SET k v PX 9223372036854775807", invalid},
		{"SET k v EX abc", rErr(proto.ErrNotInteger)},
		{"SET k v EX", rErr(proto.ErrSyntax)},
		{"SET k v NX XX", rErr(proto.ErrSyntax)},
		{"SET k v XX NX", rErr(proto.ErrSyntax)},
		{"SET k v EX 10 PX 10", rErr(proto.ErrSyntax)},
		{"SET k v EX 10 KEEPTTL", rErr(proto.ErrSyntax)},
		{"SET k v KEEPTTL EXAT 10", rErr(proto.ErrSyntax)},
		{"SET k v PERSIST", rErr(proto.ErrSyntax)},
		{"SET k v foo", rErr(proto.ErrSyntax)},
		{"SET k v2 NX", rNull},
		{"SET k v2 nx GET", rBulk("v")},
		{"SET k v2 XX GET", rBulk("v")},
		{"SET nokey v XX", rNull},
		{"SET nokey v XX GET", rNull},
		{"EXISTS nokey", rInt(0)},
		{"SET k v3 GET GET", rBulk("v2")},
		{"SET k v4 EX 100 EX 200", rOK},
		{"TTL k", rInt(200)},
		{"SET k v5 KEEPTTL", rOK},
		{"TTL k", rInt(200)},
		{"SET k v6", rOK},
		{"TTL k", rInt(-1)},
		{"SET k v7 PXAT 9223372036854775807", rOK},
		{"PEXPIRETIME k", rInt(9223372036854775807)},
		{"SET k v8 EXAT 4000000000 GET", rBulk("v7")},
		{"EXPIRETIME k", rInt(4000000000)},
		{"SET k v EXAT 1", rOK},
		{"GET k", rNull},
		{`SET e ""`, rOK},
		{"GET e", rNone},
		{`SET "a b" "c\r\nd"`, rOK},
		{`GET "a b"`, rBulk("c\r\nd")},
	})
}

func TestStringVariants(t *testing.T) {
	runScript(t, []step{
		{"SETEX k 0 v", rErr("ERR invalid expire time in 'setex' command")},
		{"PSETEX k -5 v", rErr("ERR invalid expire time in 'psetex' command")},
		{"SETEX k abc v", rErr(proto.ErrNotInteger)},
		{"SETEX k 100 v", rOK},
		{"TTL k", rInt(100)},
		{"PSETEX k 100000 v", rOK},
		{"TTL k", rInt(100)},
		{"SETNX k w", rInt(0)},
		{"SETNX n w", rInt(1)},
		{"GETSET n x", rBulk("w")},
		{"GETSET m x", rNull},
		{"GET m", rBulk("x")},
		{"GETSET k y", rBulk("v")},
		{"TTL k", rInt(-1)},
		{"GETDEL k", rBulk("y")},
		{"GETDEL k", rNull},
		{"EXISTS k", rInt(0)},
		{"MSET a 1", rOK},
		{"MSET a", rErr("ERR wrong number of arguments for 'mset' command")},
		{"MSET a 1 b", rErr("ERR wrong number of arguments for 'mset' command")},
		{"MSETNX a 1 b", rErr("ERR wrong number of arguments for 'msetnx' command")},
		{"MSET a 1 b 2 a 3", rOK},
		{"MGET a b c", rArr(rBulk("3"), rBulk("2"), rNull)},
		{"MSETNX c 1 a 1", rInt(0)},
		{"EXISTS c", rInt(0)},
		{"MSETNX c 1 d 2", rInt(1)},
		{"MGET c d", rBulks("1", "2")},
		{"STRLEN a", rInt(1)},
		{"STRLEN nokey", rInt(0)},
	})
}

func TestGetex(t *testing.T) {
	runScript(t, []step{
		{"GETEX k", rNull},
		{"GETEX k EX 0", rNull}, // the key is looked up before the time is checked
		{"GETEX k foo", rErr(proto.ErrSyntax)},
		{"SET k v", rOK},
		{"GETEX k EX 0", rErr("ERR invalid expire time in 'getex' command")},
		{"GETEX k PX abc", rErr(proto.ErrNotInteger)},
		{"GETEX k PERSIST EX 5", rErr(proto.ErrSyntax)},
		{"GETEX k EX 5 PERSIST", rErr(proto.ErrSyntax)},
		{"GETEX k KEEPTTL", rErr(proto.ErrSyntax)},
		{"GETEX k NX", rErr(proto.ErrSyntax)},
		{"GETEX k EX 10 EX 100", rBulk("v")},
		{"TTL k", rInt(100)},
		{"GETEX k", rBulk("v")},
		{"TTL k", rInt(100)},
		{"GETEX k PERSIST PERSIST", rBulk("v")},
		{"TTL k", rInt(-1)},
		{"GETEX k EXAT 4000000000", rBulk("v")},
		{"EXPIRETIME k", rInt(4000000000)},
		{"GETEX k PXAT 1", rBulk("v")},
		{"EXISTS k", rInt(0)},
	})
}

func TestAppendSetrangeGetrange(t *testing.T) {
	runScript(t, []step{
		{"APPEND k abc", rInt(3)},
		{"APPEND k def", rInt(6)},
		{`APPEND k ""`, rInt(6)},
		{"GET k", rBulk("abcdef")},
		{"GETRANGE k 0 -1", rBulk("abcdef")},
		{"GETRANGE k 1 2", rBulk("bc")},
		{"GETRANGE k -2 -1", rBulk("ef")},
		{"GETRANGE k -1 -5", rNone},
		{"GETRANGE k 5 1", rNone},
		{"GETRANGE k -100 100", rBulk("abcdef")},
		{"GETRANGE k 6 10", rNone},
		{"GETRANGE k -9223372036854775808 9223372036854775807", rBulk("abcdef")},
		{"GETRANGE k a 1", rErr(proto.ErrNotInteger)},
		{"GETRANGE k 0 1.5", rErr(proto.ErrNotInteger)},
		{"GETRANGE nokey 0 -1", rNone},
		{"SUBSTR k 0 1", rBulk("ab")},
		{"SETRANGE k -1 x", rErr("ERR offset is out of range")},
		{"SETRANGE k abc x", rErr(proto.ErrNotInteger)},
		{"SETRANGE k 536870912 x", rErr(proto.ErrStringTooLong)},
		{"SETRANGE k 536870911 xy", rErr(proto.ErrStringTooLong)},
		{"SETRANGE k 9223372036854775807 x", rErr(proto.ErrStringTooLong)},
		{`SETRANGE k 536870912 ""`, rInt(6)},
		{"SETRANGE k 1 XY", rInt(6)},
		{"GET k", rBulk("aXYdef")},
		{"SETRANGE k 8 Z", rInt(9)},
		{"GET k", rBulk("aXYdef\x00\x00Z")},
		{`SETRANGE n 5 ""`, rInt(0)},
		{"EXISTS n", rInt(0)},
		{"SETRANGE n 3 ab", rInt(5)},
		{"GET n", rBulk("\x00\x00\x00ab")},
		{"STRLEN n", rInt(5)},
	})
}

func TestIncrDecr(t *testing.T) {
	runScript(t, []step{
		{"INCR n", rInt(1)},
		{"INCRBY n 10", rInt(11)},
		{"DECR n", rInt(10)},
		{"DECRBY n 20", rInt(-10)},
		{"INCRBY n abc", rErr(proto.ErrNotInteger)},
		{"INCRBY n 1.5", rErr(proto.ErrNotInteger)},
		{"DECRBY n 9223372036854775808", rErr(proto.ErrNotInteger)},
		{"DECRBY n -9223372036854775808", rErr("ERR decrement would overflow")},
		{"SET n 9223372036854775807", rOK},
		{"INCR n", rErr(proto.ErrOverflow)},
		{"INCRBY n 0", rInt(9223372036854775807)},
		{"DECRBY n -1", rErr(proto.ErrOverflow)},
		{"SET n -9223372036854775808", rOK},
		{"DECR n", rErr(proto.ErrOverflow)},
		{"INCRBY n -1", rErr(proto.ErrOverflow)},
		{"INCRBY n 9223372036854775807", rInt(-1)},
		{`SET s " 1"`, rOK},
		{"INCR s", rErr(proto.ErrNotInteger)},
		{"SET s 01", rOK},
		{"INCR s", rErr(proto.ErrNotInteger)},
		{"SET s +1", rOK},
		{"INCR s", rErr(proto.ErrNotInteger)},
		{"SET s -0", rOK},
		{"INCR s", rErr(proto.ErrNotInteger)},
		{"SET s 123456789012345678901", rOK},
		{"INCR s", rErr(proto.ErrNotInteger)},
		{`SET s ""`, rOK},
		{"INCR s", rErr(proto.ErrNotInteger)},
		{"SET t 5 EX 100", rOK},
		{"INCR t", rInt(6)},
		{"TTL t", rInt(100)},
		{"GET t", rBulk("6")},
	})
}

func TestObjectEncoding(t *testing.T) {
	enc := func(s string) string { return rBulk(s) }
	runScript(t, []step{
		{"SET a 123", rOK},
		{"OBJECT ENCODING a", enc("int")},
		{"OBJECT REFCOUNT a", rInt(2147483647)},
		{"SET a 12345", rOK},
		{"OBJECT REFCOUNT a", rInt(1)},
		{"SET a 9999", rOK},
		{"OBJECT REFCOUNT a", rInt(2147483647)},
		{"INCR a", rInt(10000)},
		{"OBJECT ENCODING a", enc("int")},
		{"OBJECT REFCOUNT a", rInt(1)},
		{"SET a -5", rOK},
		{"OBJECT REFCOUNT a", rInt(1)},
		{"SET a 01", rOK},
		{"OBJECT ENCODING a", enc("embstr")},
		{"SET a -9223372036854775808", rOK},
		{"OBJECT ENCODING a", enc("int")},
		{"SET a 99999999999999999999", rOK},
		{"OBJECT ENCODING a", enc("embstr")},
		{"SET a 01234567890123456789012345678901234567890123", rOK},
		{"OBJECT ENCODING a", enc("embstr")},
		{"SET a 012345678901234567890123456789012345678901234", rOK},
		{"OBJECT ENCODING a", enc("raw")},
		{"SET a 1", rOK},
		{"APPEND a 2", rInt(2)},
		{"OBJECT ENCODING a", enc("raw")},
		{"INCR a", rInt(13)},
		{"OBJECT ENCODING a", enc("int")},
		{"APPEND b 5", rInt(1)},
		{"OBJECT ENCODING b", enc("int")},
		{"SETRANGE c 0 12", rInt(2)},
		{"OBJECT ENCODING c", enc("raw")},
		{"SET d 7", rOK},
		{"SETRANGE d 0 8", rInt(1)},
		{"OBJECT ENCODING d", enc("raw")},
		{"SET e 42", rOK},
		{"COPY e f", rInt(1)},
		{"OBJECT ENCODING f", enc("int")},
		{"OBJECT REFCOUNT f", rInt(1)},
		{"COPY c g", rInt(1)},
		{"OBJECT ENCODING g", enc("raw")},
		{"RENAME c h", rOK},
		{"OBJECT ENCODING h", enc("raw")},
		{"OBJECT ENCODING nokey", rNull},
		{"OBJECT REFCOUNT nokey", rNull},
		{"OBJECT IDLETIME nokey", rNull},
		{"OBJECT FREQ a", rErr(errNoLFU)},
		{"OBJECT foo", rErr("ERR unknown subcommand 'foo'. Try OBJECT HELP.")},
		{"OBJECT foo bar", rErr("ERR unknown subcommand 'foo'. Try OBJECT HELP.")},
		{"OBJECT ENCODING", rErr("ERR wrong number of arguments for 'object|encoding' command")},
		{"OBJECT ENCODING a b", rErr("ERR wrong number of arguments for 'object|encoding' command")},
		{"OBJECT HELP x", rErr("ERR wrong number of arguments for 'object|help' command")},
		{"OBJECT", rErr("ERR wrong number of arguments for 'object' command")},
		{"OBJECT help", "*15\r\n+OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+ENCODING <key>\r\n" +
			"+    Return the kind of internal representation used in order to store the value\r\n+    associated with a <key>.\r\n" +
			"+FREQ <key>\r\n+    Return the access frequency index of the <key>. The returned integer is\r\n" +
			"+    proportional to the logarithm of the recent access frequency of the key.\r\n+IDLETIME <key>\r\n" +
			"+    Return the idle time of the <key>, that is the approximated number of\r\n" +
			"+    seconds elapsed since the last access to the key.\r\n+REFCOUNT <key>\r\n" +
			"+    Return the number of references of the value associated with the specified\r\n+    <key>.\r\n" +
			"+HELP\r\n+    Prints this help.\r\n"},
	})
}

// TestStringOnBitmap checks the string commands on a value built by
// SETBIT, which stays a bitmap through APPEND and SETRANGE, against the
// same commands on the same bytes held raw.
func TestStringOnBitmap(t *testing.T) {
	s := New()
	for _, off := range []string{"1", "7", "9", "30", "100"} {
		do(s, testNow, "SETBIT bm "+off+" 1")
	}
	raw := []byte(do(s, testNow, "GET bm"))
	raw = raw[bytes.Index(raw, []byte("\r\n"))+2 : len(raw)-2]
	execAt(s, testNow, 0, []byte("SET"), []byte("raw"), raw)
	ops := []string{
		"APPEND %s xyz", "SETRANGE %s 2 AB", "SETRANGE %s 20 Q", "SETRANGE %s 0 \x00\x00", "APPEND %s \xff",
	}
	for _, op := range ops {
		a, b := do(s, testNow, strings.Replace(op, "%s", "bm", 1)), do(s, testNow, strings.Replace(op, "%s", "raw", 1))
		if a != b {
			t.Fatalf("%q: bitmap %q, raw %q", op, a, b)
		}
		for _, read := range []string{"GET %s", "STRLEN %s", "GETRANGE %s 3 9", "GETRANGE %s -4 -1", "GETRANGE %s 0 0"} {
			if a, b := do(s, testNow, strings.Replace(read, "%s", "bm", 1)), do(s, testNow, strings.Replace(read, "%s", "raw", 1)); a != b {
				t.Fatalf("after %q, %q: bitmap %q, raw %q", op, read, a, b)
			}
		}
		if got := do(s, testNow, "OBJECT ENCODING bm"); got != rBulk("roaring") {
			t.Fatalf("after %q the bitmap became %q", op, got)
		}
		if got := do(s, testNow, "OBJECT ENCODING raw"); got != rBulk("raw") {
			t.Fatalf("after %q the raw string became %q", op, got)
		}
	}
	if got := do(s, testNow, "SET n 0"); got != rOK {
		t.Fatal(got)
	}
	do(s, testNow, "SETBIT n 2 1") // '0' has bit 2 set already: the value turns into a bitmap of "0"
	if got := do(s, testNow, "INCR n"); got != rInt(1) {
		t.Fatalf("INCR of a bitmap holding \"0\": %q", got)
	}
	if got := do(s, testNow, "OBJECT ENCODING n"); got != rBulk("int") {
		t.Fatalf("INCR left %q", got)
	}
	if got := do(s, testNow, "INCR bm"); got != rErr(proto.ErrNotInteger) {
		t.Fatalf("INCR of a long bitmap: %q", got)
	}
}
