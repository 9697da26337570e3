package server

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/presenced/presenced/internal/proctest"
	"github.com/presenced/presenced/server/redisserver"
)

// The exact reply bytes in this file were observed from redis-server
// 7.0.15 (Debian's package) for the same input, unless a comment says
// presenced differs on purpose.

// bigValue is an argument larger than a connection's first read buffer.
var bigValue = func() string {
	b := make([]byte, 20000)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return string(b)
}()

// mixedPipeline is a pipeline of multibulk and inline requests, reads,
// writes, errors, a transaction and an argument larger than the read
// buffer; mixedReplies is what redis-server answers to it.
var (
	mixedPipeline = "FLUSHALL\r\n" +
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n" +
		"SETBIT bm 7 1\r\n" +
		"GET bm\r\n" +
		"\r\n" + // an empty inline line: no reply
		"*0\r\n" + // an empty multibulk: no reply
		"*-1\r\n" + // a negative count: no reply
		`ECHO "a b\x41"` + "\r\n" +
		"*1\r\n$4\r\nPING\r\n" +
		"NOSUCH x\r\n" +
		"GET\r\n" +
		"INCR k\r\n" +
		"*2\r\n$3\r\nGET\r\n$0\r\n\r\n" +
		"*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n" + bulk(bigValue) +
		"STRLEN big\r\n" +
		"GETRANGE big 19990 -1\r\n" +
		"MULTI\r\nSETBIT bm 0 1\r\nINCR n\r\nEXEC\r\n" +
		"BITCOUNT bm\r\n" +
		`SET q 'it\'s'` + "\r\n" +
		"GET q\r\n" +
		"PING hello\n" // a bare LF ends an inline request too
	mixedReplies = "+OK\r\n+OK\r\n:0\r\n$1\r\n\x01\r\n$4\r\na bA\r\n+PONG\r\n" +
		"-ERR unknown command 'NOSUCH', with args beginning with: 'x' \r\n" +
		"-ERR wrong number of arguments for 'get' command\r\n" +
		"-ERR value is not an integer or out of range\r\n" +
		"$-1\r\n+OK\r\n:20000\r\n" + bulk(bigValue[19990:]) +
		"+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n:0\r\n:1\r\n:2\r\n+OK\r\n$4\r\nit's\r\n$5\r\nhello\r\n"
)

// countReplies is the number of replies in raw.
func countReplies(tb testing.TB, raw string) int {
	tb.Helper()
	r := bufio.NewReader(strings.NewReader(raw))
	n := 0
	for ; ; n++ {
		if _, err := r.Peek(1); err != nil {
			return n
		}
		if _, err := redisserver.ReadReply(r); err != nil {
			tb.Fatalf("bad expected replies %q: %v", raw, err)
		}
	}
}

// sendInChunks writes data in pieces whose sizes next returns, then reads
// n replies.
func sendInChunks(c *respConn, data string, next func() int, n int) string {
	for len(data) > 0 {
		k := min(next(), len(data))
		c.send([]byte(data[:k]))
		data = data[k:]
	}
	return c.replies(n)
}

func TestInlineCommands(t *testing.T) {
	c := dial(t, startServer(t).Addr())
	cases := []struct{ in, want string }{
		{"PING\r\n", "+PONG\r\n"},
		{"ping\n", "+PONG\r\n"},
		{`SET a "hello world"` + "\r\n", "+OK\r\n"},
		{"GET a\r\n", "$11\r\nhello world\r\n"},
		{`SET b "\x00\n\t\"q\"" ` + "\r\n", "+OK\r\n"},
		{"GET b\r\n", "$6\r\n\x00\n\t\"q\"\r\n"},
		{"  SET   c   ''  \r\n", "+OK\r\n"},
		{"STRLEN c\r\n", ":0\r\n"},
		{"get\r\n", "-ERR wrong number of arguments for 'get' command\r\n"},
		{"foo bar\r\n", "-ERR unknown command 'foo', with args beginning with: 'bar' \r\n"},
	}
	for _, tc := range cases {
		c.send([]byte(tc.in))
		if got := c.reply(); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestPipelineSplitAnywhere(t *testing.T) {
	addr := startServer(t).Addr()
	n := countReplies(t, mixedReplies)
	check := func(name, got string) {
		t.Helper()
		if got != mixedReplies {
			t.Errorf("%s: replies differ\ngot  %q\nwant %q", name, got, mixedReplies)
		}
	}
	check("whole", sendInChunks(dial(t, addr), mixedPipeline, func() int { return len(mixedPipeline) }, n))
	check("byte by byte", sendInChunks(dial(t, addr), mixedPipeline, func() int { return 1 }, n))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 5 {
		check(fmt.Sprintf("random chunks #%d", i), sendInChunks(dial(t, addr), mixedPipeline, func() int { return 1 + rng.IntN(64) }, n))
	}
	// Every boundary of the requests before the big argument, as two
	// writes on a fresh connection each.
	small := mixedPipeline[:strings.Index(mixedPipeline, "*3\r\n$3\r\nSET\r\n$3\r\nbig")]
	wantSmall := mixedReplies[:strings.Index(mixedReplies, "$-1\r\n+OK\r\n:20000")+len("$-1\r\n")]
	for i := 1; i < len(small); i++ {
		c := dial(t, addr)
		c.send([]byte(small[:i]))
		c.send([]byte(small[i:]))
		if got := c.replies(countReplies(t, wantSmall)); got != wantSmall {
			t.Fatalf("split at %d (%q | %q): got %q, want %q", i, small[:i], small[i:], got, wantSmall)
		}
		c.conn.Close()
	}
}

func TestDisconnectMidPipeline(t *testing.T) {
	srv := startServer(t)
	other := dial(t, srv.Addr())
	other.expect("+OK\r\n", "SET", "other", "safe")

	// A complete command, then a cut inside the next one's argument.
	a := dial(t, srv.Addr())
	a.send([]byte("SET done 1\r\n*3\r\n$3\r\nSET\r\n$4\r\ncut1\r\n$10\r\nhal"))
	if got := a.reply(); got != "+OK\r\n" {
		t.Fatalf("complete command before the cut: got %q", got)
	}
	a.conn.Close()

	// An open transaction, then a cut.
	b := dial(t, srv.Addr())
	b.send([]byte("MULTI\r\nSET cut2 1\r\n*2\r\n$3\r\nGET"))
	if got := b.replies(2); got != "+OK\r\n+QUEUED\r\n" {
		t.Fatalf("MULTI before the cut: got %q", got)
	}
	b.conn.Close()

	waitClients(t, srv, 1)
	other.expect("$4\r\nsafe\r\n", "GET", "other")
	other.expect("$1\r\n1\r\n", "GET", "done")
	other.expect(":0\r\n", "EXISTS", "cut1", "cut2")
	other.expect("+PONG\r\n", "PING")
}

// TestShutdown checks SHUTDOWN on the server: the writes sent before it
// are applied and answered, then the connection closes without a reply,
// and the server reports the request for the process that runs it, which
// stops it. The other connections are served until then.
func TestShutdown(t *testing.T) {
	srv := startServer(t)
	other := dial(t, srv.Addr())
	c := dial(t, srv.Addr())
	c.expect("-ERR No shutdown in progress.\r\n", "SHUTDOWN", "ABORT")
	select {
	case <-srv.ShutdownRequested():
		t.Fatal("shutdown requested before SHUTDOWN")
	default:
	}
	var req []byte
	req = redisserver.AppendCommand(req, "SET", "before", "1")
	req = redisserver.AppendCommand(req, "SHUTDOWN", "NOSAVE", "NOW")
	req = redisserver.AppendCommand(req, "SET", "after", "1")
	c.send(req)
	if got := c.reply(); got != "+OK\r\n" {
		t.Fatalf("SET before SHUTDOWN: got %q", got)
	}
	c.expectClosed()
	select {
	case <-srv.ShutdownRequested():
	default:
		t.Fatal("SHUTDOWN closed the connection but requested no shutdown")
	}
	other.expect("$1\r\n1\r\n", "GET", "before")
	other.expect(":0\r\n", "EXISTS", "after")
}

// waitClients waits until exactly n clients are connected.
func waitClients(tb testing.TB, srv *Server, n int) {
	tb.Helper()
	deadline := time.Now().Add(ioTimeout)
	for len(srv.clientList()) != n {
		if time.Now().After(deadline) {
			tb.Fatalf("%d clients connected, want %d", len(srv.clientList()), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestProtocolErrorsCloseOnlyThatConnection(t *testing.T) {
	srv := startServer(t)
	other := dial(t, srv.Addr())
	other.expect("+OK\r\n", "SET", "other", "safe")
	cases := []struct{ in, want string }{
		{"*1\r\n$536870913\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"*1\r\n$-1\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"*1\r\n$abc\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"*abc\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"*3000000000\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"*2\r\nx3\r\n", "-ERR Protocol error: expected '$', got 'x'\r\n"},
		{`SET "a` + "\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
		{"SET 'a\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
		{`SET "a"b` + "\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
		{strings.Repeat("a", 64*1024+1), "-ERR Protocol error: too big inline request\r\n"},
		{"*" + strings.Repeat("1", 64*1024+1), "-ERR Protocol error: too big mbulk count string\r\n"},
		{"*1\r\n$" + strings.Repeat("1", 64*1024+1), "-ERR Protocol error: too big bulk count string\r\n"},
		// Replies to the requests before the bad one come first.
		{"PING\r\nSET before 1\r\n*abc\r\nSET after 1\r\n", "+PONG\r\n+OK\r\n-ERR Protocol error: invalid multibulk length\r\n"},
	}
	for _, tc := range cases {
		c := dial(t, srv.Addr())
		c.send([]byte(tc.in))
		if got := c.replies(countReplies(t, tc.want)); got != tc.want {
			t.Errorf("%.40q: got %q, want %q", tc.in, got, tc.want)
		}
		c.expectClosed()
	}
	other.expect("$4\r\nsafe\r\n", "GET", "other")
	other.expect("$1\r\n1\r\n", "GET", "before")
	other.expect(":0\r\n", "EXISTS", "after")
}

func TestProtoMaxBulkLenIsLive(t *testing.T) {
	srv := startServer(t)
	c := dial(t, srv.Addr())
	c.expect("+OK\r\n", "CONFIG", "SET", "proto-max-bulk-len", "1mb")
	c.expect("+OK\r\n", "SET", "k", strings.Repeat("x", 1<<20))
	c.send([]byte(fmt.Sprintf("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n", 1<<20+1)))
	if got := c.reply(); got != "-ERR Protocol error: invalid bulk length\r\n" {
		t.Errorf("bulk over proto-max-bulk-len: got %q", got)
	}
	c.expectClosed()
}

func TestQueryBufferLimit(t *testing.T) {
	srv := startServer(t)
	admin := dial(t, srv.Addr())
	admin.expect("+OK\r\n", "CONFIG", "SET", "client-query-buffer-limit", "1mb")
	admin.expect("+OK\r\n", "SET", "other", "safe")

	// A 3 MB argument of which 2.5 MB arrive: Redis drops the client
	// without a reply once its query buffer passes the limit.
	c := dial(t, srv.Addr())
	c.send([]byte("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$3000000\r\n"))
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	for sent := 0; sent < 2500000; sent += len(chunk) {
		if _, err := c.conn.Write(chunk); err != nil {
			break // the server closed the connection
		}
	}
	c.expectClosed()
	admin.expect("$4\r\nsafe\r\n", "GET", "other")
	admin.expect(":0\r\n", "EXISTS", "big")
}

func TestUnknownCommandText(t *testing.T) {
	c := dial(t, startServer(t).Addr())
	a126 := strings.Repeat("a", 126)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"foo"}, "-ERR unknown command 'foo', with args beginning with: \r\n"},
		{[]string{"foo", "bar", "baz"}, "-ERR unknown command 'foo', with args beginning with: 'bar' 'baz' \r\n"},
		// The name and the arguments are each cut to 128 bytes in all.
		{[]string{strings.Repeat("x", 200), strings.Repeat("y", 200)},
			"-ERR unknown command '" + strings.Repeat("x", 128) + "', with args beginning with: '" + strings.Repeat("y", 128) + "' \r\n"},
		{[]string{"foo", strings.Repeat("a", 100), strings.Repeat("b", 100), "c"},
			"-ERR unknown command 'foo', with args beginning with: '" + strings.Repeat("a", 100) + "' '" + strings.Repeat("b", 25) + "' \r\n"},
		{[]string{"foo", a126, "b"}, "-ERR unknown command 'foo', with args beginning with: '" + a126 + "' \r\n"},
		{[]string{"foo", a126[1:], "b", "c"}, "-ERR unknown command 'foo', with args beginning with: '" + a126[1:] + "' \r\n"},
		// Line breaks become spaces; a NUL ends an argument, as in C.
		{[]string{"fo\r\no", "a\rb", "c\nd"}, "-ERR unknown command 'fo  o', with args beginning with: 'a b' 'c d' \r\n"},
		{[]string{"foo", "a\x00b", "c"}, "-ERR unknown command 'foo', with args beginning with: 'a' 'c' \r\n"},
		{[]string{"f\x00oo", "a"}, "-ERR unknown command 'f', with args beginning with: 'a' \r\n"},
		// Not compared with redis-server, which finds a real command's
		// name followed by a NUL (C's strcasecmp stops there) only when
		// its hash, seeded at random at start, falls in that command's
		// bucket.
		{[]string{"GET\x00", "k"}, "-ERR unknown command 'GET', with args beginning with: 'k' \r\n"},
	}
	for _, tc := range cases {
		c.expect(tc.want, tc.args...)
	}
}

func TestWrongArity(t *testing.T) {
	c := dial(t, startServer(t).Addr())
	cases := [][]string{
		{"get"}, {"GET", "a", "b"}, {"set", "a"}, {"setbit", "k", "1"}, {"ping", "a", "b"},
		{"echo"}, {"time", "x"}, {"select"}, {"multi", "x"}, {"debug"}, {"function"},
	}
	for _, args := range cases {
		c.expect("-ERR wrong number of arguments for '"+strings.ToLower(args[0])+"' command\r\n", args...)
	}
	subs := [][]string{
		{"memory", "usage"}, {"config", "set", "maxclients"}, {"config", "get"}, {"client", "getname", "x"},
		{"client", "id", "x"}, {"command", "count", "x"},
	}
	for _, args := range subs {
		c.expect("-ERR wrong number of arguments for '"+args[0]+"|"+args[1]+"' command\r\n", args...)
	}
}

func TestConfigGetSet(t *testing.T) {
	c := dial(t, startServer(t).Addr())
	c.expect("*2\r\n$10\r\nmaxclients\r\n$5\r\n10000\r\n", "CONFIG", "GET", "maxclients")
	c.expect("+OK\r\n", "CONFIG", "SET", "maxclients", "50")
	c.expect("*2\r\n$10\r\nmaxclients\r\n$2\r\n50\r\n", "CONFIG", "GET", "MAXCLIENTS")
	c.expect("*2\r\n$18\r\nproto-max-bulk-len\r\n$9\r\n536870912\r\n", "CONFIG", "GET", "proto-max-*")
	c.expect("+OK\r\n", "CONFIG", "SET", "proto-max-bulk-len", "2mb")
	c.expect("*2\r\n$18\r\nproto-max-bulk-len\r\n$7\r\n2097152\r\n", "CONFIG", "GET", "proto-max-bulk-len")
	c.expect("+OK\r\n", "CONFIG", "SET", "client-query-buffer-limit", "1mb")
	c.expect("*2\r\n$25\r\nclient-query-buffer-limit\r\n$7\r\n1048576\r\n", "CONFIG", "GET", "client-query-buffer-limit")
	c.expect("*0\r\n", "CONFIG", "GET", "nosuch")
	if got := c.do("CONFIG", "GET", "*"); !strings.Contains(got, "$10\r\nmaxclients\r\n$2\r\n50\r\n") {
		t.Errorf("CONFIG GET * lacks maxclients: %q", got)
	}
	c.expect("-ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'\r\n", "CONFIG", "SET", "nosuch", "1")
	c.expect("-ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer\r\n",
		"CONFIG", "SET", "maxclients", "abc")
	c.expect("-ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument must be between 1 and 4294967295 inclusive\r\n",
		"CONFIG", "SET", "maxclients", "0")
	c.expect("-ERR CONFIG SET failed (possibly related to argument 'client-query-buffer-limit') - argument must be a memory value\r\n",
		"CONFIG", "SET", "client-query-buffer-limit", "abc")
	c.expect("-ERR CONFIG SET failed (possibly related to argument 'client-query-buffer-limit') - argument must be between 1048576 and 9223372036854775807 inclusive\r\n",
		"CONFIG", "SET", "client-query-buffer-limit", "1k")
	c.expect("-ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config\r\n",
		"CONFIG", "SET", "databases", "3")
	c.expect("-ERR CONFIG SET failed (possibly related to argument 'hll-sparse-max-bytes') - can't set immutable config\r\n",
		"CONFIG", "SET", "hll-sparse-max-bytes", "100")
	c.expect("-ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'\r\n", "CONFIG", "SET", "maxclients", "x", "nosuch", "1")
	c.expect("-ERR CONFIG SET failed (possibly related to argument 'maxclients') - duplicate parameter\r\n",
		"CONFIG", "SET", "maxclients", "60", "maxclients", "70")
	// A failed CONFIG SET changes nothing, even the parameters before the
	// bad one.
	c.expect("-ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer\r\n",
		"CONFIG", "SET", "proto-max-bulk-len", "4mb", "maxclients", "x")
	c.expect("*4\r\n$18\r\nproto-max-bulk-len\r\n$7\r\n2097152\r\n$10\r\nmaxclients\r\n$2\r\n50\r\n",
		"CONFIG", "GET", "proto-max-bulk-len", "maxclients")
	c.expect("-ERR unknown subcommand 'FOO'. Try CONFIG HELP.\r\n", "CONFIG", "FOO")
}

// infoFields parses an INFO reply into its sections' names and fields.
func infoFields(tb testing.TB, reply string) (sections []string, fields map[string]string) {
	tb.Helper()
	r := bufio.NewReader(strings.NewReader(reply))
	header, _ := r.ReadString('\n')
	size, err := strconv.Atoi(strings.TrimSpace(header[1:]))
	if header[0] != '$' || err != nil || size != len(reply)-len(header)-2 {
		tb.Fatalf("INFO reply is not one bulk string: %q", reply)
	}
	fields = map[string]string{}
	for _, line := range strings.Split(reply[len(header):len(reply)-2], "\r\n") {
		switch {
		case strings.HasPrefix(line, "# "):
			sections = append(sections, line[2:])
		case line != "":
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				tb.Fatalf("INFO line %q has no colon", line)
			}
			fields[k] = v
		}
	}
	return sections, fields
}

func TestInfo(t *testing.T) {
	srv := startServer(t)
	c := dial(t, srv.Addr())
	dial(t, srv.Addr()).expect("+PONG\r\n", "PING")
	for i := range 3 {
		c.expect(":0\r\n", "SETBIT", "s", strconv.Itoa(i), "1")
	}
	c.expect("-ERR wrong number of arguments for 'get' command\r\n", "GET")
	c.expect("+OK\r\n", "SET", "t", "x", "EX", "100")
	c.expect("-ERR value is not an integer or out of range\r\n", "INCR", "t")
	c.expect("+OK\r\n", "SELECT", "3")
	c.expect("+OK\r\n", "SET", "u", "1")

	sections, fields := infoFields(t, c.do("INFO"))
	if want := []string{"Server", "Clients", "Memory", "Persistence", "Stats", "Replication", "CPU", "Errorstats", "Cluster", "Keyspace", "History"}; !equalStrings(sections, want) {
		t.Errorf("INFO sections %q, want %q", sections, want)
	}
	checks := map[string]string{
		"redis_version":     redisVersion,
		"tcp_port":          srv.Addr()[strings.LastIndexByte(srv.Addr(), ':')+1:],
		"connected_clients": "2",
		"db0":               "keys=2,expires=1,avg_ttl=0",
		"db3":               "keys=1,expires=0,avg_ttl=0",
		"role":              "master",
		"connected_slaves":  "0",
		"raft_state":        "leader",
	}
	for k, v := range checks {
		if fields[k] != v {
			t.Errorf("INFO %s = %q, want %q", k, fields[k], v)
		}
	}
	for _, k := range []string{"used_memory", "uptime_in_seconds", "total_connections_received", "total_commands_processed"} {
		if n, err := strconv.ParseInt(fields[k], 10, 64); err != nil || n < 0 {
			t.Errorf("INFO %s = %q, want a count", k, fields[k])
		}
	}

	sections, fields = infoFields(t, c.do("INFO", "commandstats"))
	if !equalStrings(sections, []string{"Commandstats"}) {
		t.Errorf("INFO commandstats sections %q", sections)
	}
	checkCommandStats(t, fields, map[string]string{"setbit": "3 0 0", "get": "0 1 0", "incr": "1 0 1", "set": "2 0 0"})
	sections, _ = infoFields(t, c.do("INFO", "keyspace", "CLIENTS"))
	if !equalStrings(sections, []string{"Clients", "Keyspace"}) {
		t.Errorf("INFO keyspace clients sections %q", sections)
	}
	sections, _ = infoFields(t, c.do("INFO", "everything"))
	if len(sections) != 13 {
		t.Errorf("INFO everything sections %q, want all thirteen", sections)
	}
	c.expect("$0\r\n\r\n", "INFO", "nosection")
}

// TestCommandStatsOfAPipeline checks the counts of a pipeline whose
// writes are one batch: runs of the same command, with failures inside
// a run and at its edges.
func TestCommandStatsOfAPipeline(t *testing.T) {
	srv := startServer(t)
	c := dial(t, srv.Addr())
	c.expect("+OK\r\n", "SET", "t", "x")
	var pipe []byte
	for _, args := range [][]string{
		{"INCR", "n"}, {"INCR", "t"}, {"INCR", "n"}, {"INCR", "t"},
		{"SETBIT", "b", "1", "1"}, {"SETBIT", "b", "x", "1"},
		{"INCR", "t"}, {"INCR", "n"},
		{"SET", "u", "1"}, {"SET", "v", "2"},
	} {
		pipe = redisserver.AppendCommand(pipe, args...)
	}
	c.send(pipe)
	notInt := "-ERR value is not an integer or out of range\r\n"
	want := ":1\r\n" + notInt + ":2\r\n" + notInt + ":0\r\n" +
		"-ERR bit offset is not an integer or out of range\r\n" + notInt + ":3\r\n+OK\r\n+OK\r\n"
	if got := c.replies(10); got != want {
		t.Fatalf("replies %q, want %q", got, want)
	}
	_, fields := infoFields(t, c.do("INFO", "commandstats"))
	checkCommandStats(t, fields, map[string]string{"incr": "6 0 3", "setbit": "2 0 1", "set": "3 0 0"})
}

// commandStat is the shape of an INFO commandstats line.
var commandStat = regexp.MustCompile(`^calls=(\d+),usec=\d+,usec_per_call=\d+\.\d\d,rejected_calls=(\d+),failed_calls=(\d+)$`)

// checkCommandStats checks the commandstats fields of INFO: want maps a
// command to its calls, rejected and failed calls, separated by spaces.
func checkCommandStats(t *testing.T, fields, want map[string]string) {
	t.Helper()
	for name, counts := range want {
		m := commandStat.FindStringSubmatch(fields["cmdstat_"+name])
		if m == nil || strings.Join(m[1:], " ") != counts {
			t.Errorf("cmdstat_%s = %q, want calls, rejected, failed = %s", name, fields["cmdstat_"+name], counts)
		}
	}
}

func equalStrings(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

// clientField returns the value of field in a CLIENT INFO or CLIENT LIST
// line.
func clientField(line, field string) string {
	for _, kv := range strings.Fields(line) {
		if k, v, _ := strings.Cut(kv, "="); k == field {
			return v
		}
	}
	return ""
}

// bulkBody is the content of a bulk string reply.
func bulkBody(tb testing.TB, reply string) string {
	tb.Helper()
	header, body, ok := strings.Cut(reply, "\r\n")
	if !ok || header[0] != '$' || !strings.HasSuffix(body, "\r\n") {
		tb.Fatalf("not a bulk string: %q", reply)
	}
	return strings.TrimSuffix(body, "\r\n")
}

// intBody is the value of an integer reply.
func intBody(tb testing.TB, reply string) int64 {
	tb.Helper()
	n, ok := intReply([]byte(reply))
	if !ok {
		tb.Fatalf("not an integer reply: %q", reply)
	}
	return n
}

// TestClientListCmdMatchesRedis compares CLIENT LIST's cmd field with
// redis-server's: NULL before a first command and after an unknown
// subcommand, a subcommand's full name, the last of a pipeline, and the
// command that lists, for its own line.
func TestClientListCmdMatchesRedis(t *testing.T) {
	run := func(addr string) []string {
		lister := dial(t, addr)
		conns := []*respConn{dial(t, addr), dial(t, addr), dial(t, addr), dial(t, addr), dial(t, addr)}
		var ids []string
		for _, c := range append([]*respConn{lister}, conns...) {
			ids = append(ids, strconv.FormatInt(intBody(t, c.do("CLIENT", "ID")), 10))
		}
		conns[1].do("OBJECT", "ENCODING", "nosuch")
		conns[2].do("CLIENT", "NOSUCH")
		conns[3].do("CONFIG", "GET", "maxclients")
		conns[4].send([]byte("SET k v\r\nGETBIT k 1\r\nOBJECT ENCODING k\r\n"))
		conns[4].replies(3)
		dial(t, addr) // a connection that sent nothing, listed once the server took it
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(bulkBody(t, lister.do("INFO", "clients")), "connected_clients:7\r\n"); {
			if time.Now().After(deadline) {
				t.Fatal("the silent connection was not taken")
			}
		}
		var out []string
		list := strings.Split(strings.TrimSuffix(bulkBody(t, lister.do("CLIENT", "LIST")), "\n"), "\n")
		for _, line := range list {
			at := slices.Index(ids, clientField(line, "id"))
			out = append(out, strconv.Itoa(at)+":"+clientField(line, "cmd"))
		}
		slices.Sort(out)
		out = append(out, clientField(bulkBody(t, lister.do("CLIENT", "INFO")), "cmd"))
		lister.send([]byte("MULTI\r\nPING\r\nCLIENT INFO\r\nEXEC\r\n"))
		execReply := lister.replies(4)
		return append(out, clientField(execReply[strings.LastIndex(execReply, "id="):], "cmd"))
	}
	got, want := run(startServer(t).Addr()), run(redisserver.StartForTest(t, redisserver.Options{}).Addr())
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("cmd fields: presenced %q, redis-server %q", got, want)
	}
}

func TestClientCommands(t *testing.T) {
	srv := startServer(t)
	a, b := dial(t, srv.Addr()), dial(t, srv.Addr())
	a.expect("$-1\r\n", "CLIENT", "GETNAME")
	a.expect("+OK\r\n", "CLIENT", "SETNAME", "alice")
	a.expect("$5\r\nalice\r\n", "CLIENT", "GETNAME")
	a.expect("-ERR Client names cannot contain spaces, newlines or special characters.\r\n", "CLIENT", "SETNAME", "a b")
	a.expect("$5\r\nalice\r\n", "CLIENT", "GETNAME")
	// CLIENT SETINFO is Redis 7.2's; its texts follow 7.2.
	a.expect("+OK\r\n", "CLIENT", "SETINFO", "LIB-NAME", "go-test")
	a.expect("+OK\r\n", "CLIENT", "SETINFO", "lib-ver", "1.2")
	a.expect("-ERR Unrecognized option 'foo'\r\n", "CLIENT", "SETINFO", "foo", "x")
	a.expect("-ERR lib-name cannot contain spaces, newlines or special characters.\r\n", "CLIENT", "SETINFO", "lib-name", "a b")
	b.expect("+OK\r\n", "SELECT", "5")

	idA, idB := intBody(t, a.do("CLIENT", "ID")), intBody(t, b.do("CLIENT", "ID"))
	if idA == idB || idA <= 0 || idB <= 0 {
		t.Fatalf("client ids %d and %d", idA, idB)
	}
	info := bulkBody(t, a.do("CLIENT", "INFO"))
	want := map[string]string{"id": strconv.FormatInt(idA, 10), "name": "alice", "lib-name": "go-test", "lib-ver": "1.2", "db": "0"}
	for k, v := range want {
		if got := clientField(info, k); got != v {
			t.Errorf("CLIENT INFO %s=%q, want %q (%q)", k, got, v, info)
		}
	}
	if addr := clientField(info, "addr"); addr != a.conn.NetConn().LocalAddr().String() {
		t.Errorf("CLIENT INFO addr=%q, want %q", addr, a.conn.NetConn().LocalAddr())
	}

	lines := strings.Split(strings.TrimSuffix(bulkBody(t, a.do("CLIENT", "LIST")), "\n"), "\n")
	if len(lines) != 2 || clientField(lines[0], "id") != strconv.FormatInt(idA, 10) ||
		clientField(lines[1], "id") != strconv.FormatInt(idB, 10) || clientField(lines[1], "db") != "5" {
		t.Errorf("CLIENT LIST = %q", lines)
	}
	only := bulkBody(t, a.do("CLIENT", "LIST", "ID", strconv.FormatInt(idB, 10)))
	if strings.Count(only, "\n") != 1 || clientField(only, "id") != strconv.FormatInt(idB, 10) {
		t.Errorf("CLIENT LIST ID %d = %q", idB, only)
	}
	if got := bulkBody(t, a.do("CLIENT", "LIST", "TYPE", "normal")); strings.Count(got, "\n") != 2 {
		t.Errorf("CLIENT LIST TYPE normal = %q", got)
	}
	a.expect("$0\r\n\r\n", "CLIENT", "LIST", "TYPE", "pubsub")
	a.expect("$0\r\n\r\n", "CLIENT", "LIST", "ID", "999999", "1000000")
	a.expect("-ERR Invalid client ID\r\n", "CLIENT", "LIST", "ID", "x")
	a.expect("-ERR Unknown client type 'foo'\r\n", "CLIENT", "LIST", "TYPE", "foo")
	a.expect("-ERR syntax error\r\n", "CLIENT", "LIST", "FOO")
	a.expect("-ERR unknown subcommand 'FOO'. Try CLIENT HELP.\r\n", "CLIENT", "FOO")
}

func TestCommandIntrospection(t *testing.T) {
	c := dial(t, startServer(t).Addr())
	count := intBody(t, c.do("COMMAND", "COUNT"))
	header, elems, ok := arrayElements([]byte(c.do("COMMAND")))
	if !ok || int64(len(elems)) != count || count < 50 {
		t.Fatalf("COMMAND: %q with %d entries, COMMAND COUNT %d", header, len(elems), count)
	}
	_, names, _ := arrayElements([]byte(c.do("COMMAND", "LIST")))
	listed := map[string]bool{}
	for _, n := range names {
		listed[bulkBody(t, string(n))] = true
	}
	for _, n := range []string{"setbit", "getbit", "bitcount", "bitop", "bitfield", "get", "set", "client|list", "config|get", "command|docs"} {
		if !listed[n] {
			t.Errorf("COMMAND LIST lacks %s", n)
		}
	}
	c.expect("*1\r\n$8\r\nbitcount\r\n", "COMMAND", "LIST", "FILTERBY", "PATTERN", "bitc*")
	c.expect("-ERR syntax error\r\n", "COMMAND", "LIST", "FILTERBY")

	// Redis's COMMAND INFO get, up to the key specifications, which
	// presenced leaves empty.
	info := c.do("COMMAND", "INFO", "get", "nosuch")
	wantPrefix := "*2\r\n*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n*3\r\n+@read\r\n+@string\r\n+@fast\r\n*0\r\n"
	if !strings.HasPrefix(info, wantPrefix) || !strings.HasSuffix(info, "\r\n$-1\r\n") {
		t.Errorf("COMMAND INFO get nosuch = %q, want it to start %q and end with a null", info, wantPrefix)
	}
	c.expect("*1\r\n$-1\r\n", "COMMAND", "INFO", "nosuch")

	docs := c.do("COMMAND", "DOCS", "get")
	for _, want := range []string{"*2\r\n$3\r\nget\r\n", "$7\r\nsummary\r\n$22\r\nGet the value of a key\r\n", "$5\r\ngroup\r\n$6\r\nstring\r\n", "$5\r\nsince\r\n$5\r\n1.0.0\r\n"} {
		if !strings.Contains(docs, want) {
			t.Errorf("COMMAND DOCS get = %q, lacks %q", docs, want)
		}
	}
	if docs := c.do("COMMAND", "DOCS", "client"); !strings.Contains(docs, "$11\r\nsubcommands\r\n") || !strings.Contains(docs, "$11\r\nclient|list\r\n") {
		t.Errorf("COMMAND DOCS client lacks its subcommands: %q", docs)
	}
	c.expect("*0\r\n", "COMMAND", "DOCS", "nosuch")
	_, all, _ := arrayElements([]byte(c.do("COMMAND", "DOCS")))
	if int64(len(all)) != 2*count {
		t.Errorf("COMMAND DOCS has %d entries, want %d", len(all)/2, count)
	}
	c.expect("-ERR unknown subcommand 'FOO'. Try COMMAND HELP.\r\n", "COMMAND", "FOO")
}

// helloReply is HELLO's reply in RESP2 for a client id.
func helloReply(id int64) string {
	return "*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n" + bulk(redisVersion) +
		"$5\r\nproto\r\n:2\r\n$2\r\nid\r\n:" + strconv.FormatInt(id, 10) + "\r\n" +
		"$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"
}

func TestHello(t *testing.T) {
	c := dial(t, startServer(t).Addr())
	id := intBody(t, c.do("CLIENT", "ID"))
	c.expect("-NOPROTO unsupported protocol version\r\n", "HELLO", "4")
	c.expect("-ERR Protocol version is not an integer or out of range\r\n", "HELLO", "x")
	c.expect(helloReply(id), "HELLO", "2")
	c.expect(helloReply(id), "HELLO")
	c.expect(helloReply(id), "HELLO", "2", "SETNAME", "hi")
	c.expect("$2\r\nhi\r\n", "CLIENT", "GETNAME")
	c.expect("-ERR Syntax error in HELLO option 'FOO'\r\n", "HELLO", "2", "FOO")
	c.expect("-ERR Syntax error in HELLO option 'AUTH'\r\n", "HELLO", "2", "AUTH", "default")
	if !strings.Contains(c.do("CLIENT", "INFO"), " resp=2 ") {
		t.Error("CLIENT INFO does not show resp=2")
	}

	// RESP3 until HELLO 2 or RESET.
	resp3 := "%7" + strings.TrimPrefix(strings.Replace(helloReply(id), "proto\r\n:2", "proto\r\n:3", 1), "*14")
	c.expect(resp3, "HELLO", "3")
	c.expect(resp3, "HELLO")
	if got := c.do("CLIENT", "INFO"); !strings.HasPrefix(got, "=") || !strings.Contains(got, "\r\ntxt:id=") || !strings.Contains(got, " resp=3 ") {
		t.Errorf("CLIENT INFO in RESP3: %q", got)
	}
	for _, tt := range []struct {
		cmd   []string
		first string // the text's start
	}{{[]string{"INFO", "server"}, "# Server\r\n"}, {[]string{"RAFT", "INFO"}, "node_id:"}, {[]string{"RAFT", "DIGEST"}, "applied_index:"}} {
		if got := c.do(tt.cmd...); !strings.HasPrefix(got, "=") || !strings.Contains(got, "\r\ntxt:"+tt.first) {
			t.Errorf("%s in RESP3: %q, want a verbatim string", tt.cmd, got)
		}
	}
	c.expect("_\r\n", "GET", "nosuch")
	c.expect("+RESET\r\n", "RESET")
	c.expect("$-1\r\n", "GET", "nosuch")
	c.expect(helloReply(id), "HELLO")
}

func TestConnectionCommands(t *testing.T) {
	c := dial(t, startServer(t).Addr())
	c.expect("+PONG\r\n", "PING")
	c.expect("$2\r\nhi\r\n", "PING", "hi")
	c.expect("$5\r\na\r\nb \r\n", "ECHO", "a\r\nb ")
	c.expect("$0\r\n\r\n", "ECHO", "")

	before := time.Now()
	_, parts, ok := arrayElements([]byte(c.do("TIME")))
	after := time.Now()
	if !ok || len(parts) != 2 {
		t.Fatalf("TIME reply has %d parts", len(parts))
	}
	sec, err1 := strconv.ParseInt(bulkBody(t, string(parts[0])), 10, 64)
	usec, err2 := strconv.ParseInt(bulkBody(t, string(parts[1])), 10, 64)
	got := time.Unix(sec, usec*1000)
	if err1 != nil || err2 != nil || usec < 0 || usec >= 1e6 || got.Before(before.Truncate(time.Microsecond)) || got.After(after) {
		t.Errorf("TIME = %q %q, want between %v and %v", parts[0], parts[1], before, after)
	}

	for _, n := range []string{"16", "-1", "2147483647"} {
		c.expect("-ERR DB index is out of range\r\n", "SELECT", n)
	}
	for _, n := range []string{"x", "99999999999999999999"} {
		c.expect("-ERR value is not an integer or out of range\r\n", "SELECT", n)
	}
	c.expect("-ERR value is out of range, value must between -2147483648 and 2147483647\r\n", "SELECT", "2147483648")
	c.expect("+OK\r\n", "SELECT", "15")

	// RESET drops the database, the name and an open transaction.
	c.expect("+OK\r\n", "SET", "in15", "1")
	c.expect("+OK\r\n", "CLIENT", "SETNAME", "n")
	c.expect("+OK\r\n", "MULTI")
	c.expect("+QUEUED\r\n", "SET", "queued", "1")
	c.expect("+RESET\r\n", "RESET")
	c.expect("-ERR EXEC without MULTI\r\n", "EXEC")
	c.expect("$-1\r\n", "CLIENT", "GETNAME")
	c.expect(":0\r\n", "EXISTS", "in15", "queued")
	c.expect("+OK\r\n", "SELECT", "15")
	c.expect(":1\r\n", "EXISTS", "in15")
	c.expect("-ERR wrong number of arguments for 'reset' command\r\n", "RESET", "x")

	c.expect("+OK\r\n", "QUIT")
	c.expectClosed()
}

func TestHarnessCommands(t *testing.T) {
	var log proctest.SyncBuffer
	c := dial(t, startServer(t, func(c *Config) { c.Cluster.LogOutput = &log }).Addr())
	// Redis's test harness sends these before each test.
	c.expect("+OK\r\n", "SELECT", "9")
	c.expect("+OK\r\n", "FLUSHALL")
	c.expect("+OK\r\n", "FUNCTION", "FLUSH")
	c.expect("+OK\r\n", "FUNCTION", "FLUSH", "sync")
	c.expect("+OK\r\n", "FUNCTION", "FLUSH", "ASYNC")
	c.expect("-ERR FUNCTION FLUSH only supports SYNC|ASYNC option\r\n", "FUNCTION", "FLUSH", "x")
	c.expect("-ERR unknown subcommand 'FOO'. Try FUNCTION HELP.\r\n", "FUNCTION", "FOO")
	// redis-server refuses DEBUG unless enable-debug-command allows it, as
	// the harness configures; presenced accepts DEBUG LOG and writes the
	// line to its log, as Redis does.
	c.expect("+OK\r\n", "DEBUG", "LOG", "hello world")
	if !strings.Contains(log.String(), "DEBUG LOG: hello world\n") {
		t.Errorf("DEBUG LOG did not write its line to the log:\n%s", log.String())
	}
	c.expect("-ERR unknown subcommand or wrong number of arguments for 'FOO'. Try DEBUG HELP.\r\n", "DEBUG", "FOO")
	c.expect("-ERR unknown subcommand or wrong number of arguments for 'LOG'. Try DEBUG HELP.\r\n", "DEBUG", "LOG", "a", "b")
}

func TestMemoryCommands(t *testing.T) {
	c := dial(t, startServer(t).Addr())
	c.expect("+OK\r\n", "MEMORY", "PURGE")
	c.expect("$-1\r\n", "MEMORY", "USAGE", "nokey")
	c.expect(":0\r\n", "SETBIT", "small", "1", "1")
	for i := range 2000 {
		c.send(redisserver.AppendCommand(nil, "SETBIT", "large", strconv.Itoa(i*97), "1"))
	}
	if got := c.replies(2000); strings.Count(got, ":0\r\n") != 2000 {
		t.Fatalf("SETBIT replies: %.100q", got)
	}
	small := intBody(t, c.do("MEMORY", "USAGE", "small"))
	large := intBody(t, c.do("MEMORY", "USAGE", "large", "SAMPLES", "5"))
	if small <= 0 || large <= small {
		t.Errorf("MEMORY USAGE: small key %d bytes, large key %d bytes", small, large)
	}
	if got := intBody(t, c.do("MEMORY", "USAGE", "large", "SAMPLES", "0", "SAMPLES", "3")); got != large {
		t.Errorf("MEMORY USAGE with repeated SAMPLES = %d, want %d", got, large)
	}
	c.expect("-ERR syntax error\r\n", "MEMORY", "USAGE", "small", "FOO")
	c.expect("-ERR value is not an integer or out of range\r\n", "MEMORY", "USAGE", "small", "SAMPLES", "x")
	c.expect("-ERR syntax error\r\n", "MEMORY", "USAGE", "small", "SAMPLES", "-1")
	c.expect("-ERR unknown subcommand 'FOO'. Try MEMORY HELP.\r\n", "MEMORY", "FOO")
}

// TestConfigResetStat checks CONFIG RESETSTAT and the counts of INFO
// commandstats and errorstats against a real redis-server: after the
// same commands on both, and a reset, INFO's counters, commandstats and
// errorstats count only what came after the reset (keys that expired
// before it no longer either), subcommands apart from their container
// command, errors by their code, inside a transaction too, as Redis 7
// does.
func TestConfigResetStat(t *testing.T) {
	d := newDiffer(t)
	for _, target := range []*diffTarget{d.ref, d.sut} {
		do := func(words ...string) string {
			t.Helper()
			reply, err := target.do(argv(words...))
			if err != nil {
				t.Fatal(err)
			}
			return string(reply)
		}
		for _, cmd := range [][]string{{"SET", "t", "x"}, {"SETBIT", "s", "1", "1"}, {"GET"}, {"INCR", "t"}, {"SET", "e", "1", "PX", "1"}} {
			do(cmd...)
		}
		// Redis counts a key expired when a read finds it so, presenced
		// when the log's clock removes it: wait for the count.
		for deadline := time.Now().Add(10 * time.Second); ; {
			do("EXISTS", "e")
			_, fields := infoFields(t, do("INFO", "stats"))
			if fields["expired_keys"] == "1" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: INFO expired_keys = %q 10 s after a key's 1 ms TTL, want 1", target.name, fields["expired_keys"])
			}
		}
		if got := do("CONFIG", "RESETSTAT"); got != "+OK\r\n" {
			t.Fatalf("%s: CONFIG RESETSTAT = %q", target.name, got)
		}
		for _, cmd := range [][]string{{"SET", "u", "1"}, {"INCR", "t"}, {"CONFIG", "GET"}, {"CONFIG", "NOSUCH"}, {"CONFIG", "GET", "maxclients"}, {"CLIENT", "ID"}, {"CLIENT", "GETNAME"}, {"CONFIG"}, {"OBJECT", "ENCODING", "t"}, {"OBJECT", "ENCODING"}, {"OBJECT", "NOSUCH", "t"}, {"NOSUCHCMD"}, {"EXEC"}, {"MULTI"}, {"INCR"}, {"EXEC"}, {"MULTI"}, {"INCR", "t"}, {"EXEC"}} {
			do(cmd...)
		}
	}
	stats := func(target *diffTarget) map[string]string {
		out := map[string]string{}
		reply, err := target.do(argv("INFO", "stats"))
		if err != nil {
			t.Fatal(err)
		}
		_, fields := infoFields(t, string(reply))
		for _, k := range []string{"total_connections_received", "total_commands_processed", "rejected_connections", "expired_keys", "total_error_replies"} {
			out[k] = fields[k]
		}
		if reply, err = target.do(argv("INFO", "commandstats", "errorstats")); err != nil {
			t.Fatal(err)
		}
		_, fields = infoFields(t, string(reply))
		for k, v := range fields {
			if m := commandStat.FindStringSubmatch(v); m != nil {
				out[k] = strings.Join(m[1:], " ")
			} else {
				out[k] = v
			}
		}
		return out
	}
	want, got := stats(d.ref), stats(d.sut)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after CONFIG RESETSTAT, presenced's INFO counts\n%v\nredis-server's\n%v", got, want)
	}
}

// TestInfoCPU checks INFO's CPU section against a real redis-server's
// (the same fields, but the per-thread ones Go has no use for) and that
// it counts the processor time of the process, which the test spends.
func TestInfoCPU(t *testing.T) {
	d := newDiffer(t)
	cpu := func(target *diffTarget) map[string]float64 {
		reply, err := target.do(argv("INFO", "cpu"))
		if err != nil {
			t.Fatal(err)
		}
		sections, fields := infoFields(t, string(reply))
		if !equalStrings(sections, []string{"CPU"}) {
			t.Fatalf("%s: INFO cpu sections %q", target.name, sections)
		}
		out := map[string]float64{}
		for k, v := range fields {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 {
				t.Fatalf("%s: INFO %s = %q, want seconds", target.name, k, v)
			}
			out[k] = f
		}
		return out
	}
	ref, before := cpu(d.ref), cpu(d.sut)
	for k := range ref {
		if _, ok := before[k]; !ok && !strings.HasSuffix(k, "_main_thread") {
			t.Errorf("INFO cpu lacks %s, which redis-server reports", k)
		}
	}
	for k := range before {
		if _, ok := ref[k]; !ok {
			t.Errorf("INFO cpu reports %s, which redis-server does not", k)
		}
	}
	spin := 0
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
		spin++ // the server runs in this process: its time is the test's
	}
	after := cpu(d.sut)
	if used := after["used_cpu_user"] + after["used_cpu_sys"] - before["used_cpu_user"] - before["used_cpu_sys"]; used <= 0 {
		t.Errorf("INFO cpu: %.6f s used over %d spins of 50 ms, want more than nothing", used, spin)
	}
}
