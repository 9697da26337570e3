package proto

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/presenced/presenced/server/redisserver"
)

var defaultLimits = Limits{MaxBulkLen: DefaultMaxBulkLen}

// parseCase is a client byte stream and what redis-server 7.0 makes of it:
// the commands it runs, then the protocol error it closes the connection
// with ("" when the stream ends without one, maybe inside a request).
type parseCase struct {
	name string
	in   string
	auth bool // the client has not authenticated
	want [][]string
	err  string
}

func cmds(lines ...string) [][]string {
	var out [][]string
	for _, l := range lines {
		out = append(out, strings.Split(l, " "))
	}
	return out
}

// parseCases were checked against redis-server 7.0.15 by sending the raw
// bytes over TCP (TestParserMatchesRedis repeats the check).
var parseCases = []parseCase{
	{name: "inline", in: "PING\r\n", want: cmds("PING")},
	{name: "inline lf", in: "PING\n", want: cmds("PING")},
	{name: "inline args", in: "ECHO  hello\t\r\n", want: cmds("ECHO hello")},
	{name: "empty lines", in: "\r\n\r\nPING\r\n", want: cmds("PING")},
	{name: "blank line", in: "   \r\nPING\n", want: cmds("PING")},
	{name: "inline cr cr", in: "PING\r\r\n", want: cmds("PING")},
	{name: "inline quotes", in: "ECHO \"\\x41\\x4\"\r\n", want: [][]string{{"ECHO", "Ax4"}}},
	{name: "inline vt", in: "ECHO a\vb\r\n", want: [][]string{{"ECHO", "a\vb"}}},
	{name: "inline empty arg", in: "ECHO \"\"\r\n", want: [][]string{{"ECHO", ""}}},
	{name: "multibulk", in: "*1\r\n$4\r\nPING\r\n", want: cmds("PING")},
	{name: "multibulk args", in: "*2\r\n$4\r\nECHO\r\n$5\r\nhe\r\no\r\n", want: [][]string{{"ECHO", "he\r\no"}}},
	{name: "binary bulk", in: "*2\r\n$4\r\nECHO\r\n$3\r\n\x00*\n\r\n", want: [][]string{{"ECHO", "\x00*\n"}}},
	{name: "empty bulk", in: "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", want: [][]string{{"ECHO", ""}}},
	{name: "empty name", in: "*1\r\n$0\r\n\r\n", want: [][]string{{""}}},
	{name: "*0", in: "*0\r\nPING\r\n", want: cmds("PING")},
	{name: "*-1", in: "*-1\r\nPING\r\n", want: cmds("PING")},
	{name: "*-10", in: "*-10\r\nPING\r\n", want: cmds("PING")},
	{name: "crlf after bulk not checked", in: "*1\r\n$4\r\nPINGxxECHO\r\n", want: cmds("PING", "ECHO")},
	{name: "pipeline", in: "*1\r\n$4\r\nPING\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$1\r\nx\r\nECHO y\n",
		want: cmds("PING", "PING", "ECHO x", "ECHO y")},
	{name: "trailing empty line", in: "*1\r\n$4\r\nPING\r\n\r\n", want: cmds("PING")},
	{name: "big bulk", in: "*2\r\n$4\r\nECHO\r\n$70000\r\n" + strings.Repeat("b", 70000) + "\r\n",
		want: [][]string{{"ECHO", strings.Repeat("b", 70000)}}},

	{name: "incomplete bulk", in: "*1\r\n$4\r\nPING"},
	{name: "incomplete crlf", in: "*1\r\n$4\r\nPING\r"},
	{name: "incomplete header", in: "*1\r"},
	{name: "incomplete inline", in: "PING"},
	{name: "max multibulk", in: "*2147483647\r\n"},
	{name: "max bulk", in: "*1\r\n$536870912\r\n"},
	{name: "nul in header", in: "*1\x00\r\n$4\r\nPING\r\n"},
	{name: "nul in bulk header", in: "*1\r\n$4\x00\r\nPING\r\n"},
	{name: "nul in inline", in: "PI\x00NG\r\nPING\r\n"},
	{name: "bulk count near limit", in: "*1\r\n$" + strings.Repeat("1", InlineMax-2)},
	{name: "inline near limit", in: "PING" + strings.Repeat(" ", InlineMax-4)},

	{name: "multibulk too long", in: "*3000000000\r\n", err: "invalid multibulk length"},
	{name: "multibulk over INT_MAX", in: "*2147483648\r\n", err: "invalid multibulk length"},
	{name: "multibulk empty", in: "*\r\n", err: "invalid multibulk length"},
	{name: "multibulk plus", in: "*+1\r\n", err: "invalid multibulk length"},
	{name: "multibulk leading zero", in: "*01\r\n", err: "invalid multibulk length"},
	{name: "multibulk -0", in: "*-0\r\n", err: "invalid multibulk length"},
	{name: "multibulk space after", in: "*1 \r\n", err: "invalid multibulk length"},
	{name: "multibulk space before", in: "* 1\r\n", err: "invalid multibulk length"},
	{name: "multibulk lf only", in: "*1\nPING\r\n", err: "invalid multibulk length"},
	{name: "bulk -1", in: "*1\r\n$-1\r\n", err: "invalid bulk length"},
	{name: "bulk empty", in: "*1\r\n$\r\n", err: "invalid bulk length"},
	{name: "bulk -0", in: "*1\r\n$-0\r\n", err: "invalid bulk length"},
	{name: "bulk lf only", in: "*1\r\n$4\nPING\r\n", err: "invalid bulk length"},
	{name: "bulk over max", in: "*1\r\n$536870913\r\n", err: "invalid bulk length"},
	{name: "bulk ten digits", in: "*1\r\n$1000000000\r\n", err: "invalid bulk length"},
	{name: "bulk leading zero", in: "*1\r\n$01\r\nx\r\n", err: "invalid bulk length"},
	{name: "bulk plus", in: "*1\r\n$+1\r\nx\r\n", err: "invalid bulk length"},
	{name: "bulk space after", in: "*1\r\n$1 \r\nx\r\n", err: "invalid bulk length"},
	{name: "bulk zero", in: "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", want: [][]string{{"ECHO", ""}}},
	{name: "no dollar", in: "*1\r\nx4\r\nPING\r\n", err: "expected '$', got 'x'"},
	{name: "no dollar after command", in: "*1\r\n$4\r\nPING\r\n*1\r\n*4\r\n", want: cmds("PING"), err: "expected '$', got '*'"},
	{name: "mbulk count too big", in: "*1" + strings.Repeat("1", InlineMax-1), err: "too big mbulk count string"},
	{name: "bulk count too big", in: "*1\r\n$" + strings.Repeat("1", InlineMax), err: "too big bulk count string"},
	{name: "inline too big", in: "PING" + strings.Repeat(" ", InlineMax-3), err: "too big inline request"},
	{name: "nul in header too big", in: "*1\x00\r\n" + strings.Repeat("x", InlineMax), err: "too big mbulk count string"},
	{name: "nul in inline too big", in: "PI\x00NG\r\n" + strings.Repeat("x", InlineMax), err: "too big inline request"},
	{name: "unbalanced double", in: "ECHO \"a\r\n", err: "unbalanced quotes in request"},
	{name: "single quote then text", in: "ECHO 'a'b\r\n", err: "unbalanced quotes in request"},
	{name: "double quote then text", in: "ECHO \"a\"b\r\n", err: "unbalanced quotes in request"},
	{name: "error after inline", in: "PING\r\nECHO 'x\r\n", want: cmds("PING"), err: "unbalanced quotes in request"},

	{name: "unauth 10 args", in: "*10\r\n", auth: true},
	{name: "unauth 11 args", in: "*11\r\n", auth: true, err: "unauthenticated multibulk length"},
	{name: "unauth after command", in: "*1\r\n$4\r\nPING\r\n*11\r\n", auth: true, want: cmds("PING"), err: "unauthenticated multibulk length"},
	{name: "unauth bulk 16384", in: "*1\r\n$16384\r\n", auth: true},
	{name: "unauth bulk 16385", in: "*1\r\n$16385\r\n", auth: true, err: "unauthenticated bulk length"},
	{name: "unauth inline", in: "PING a b c d e f g h i j k l\r\n", auth: true, want: cmds("PING a b c d e f g h i j k l")},
}

// connection feeds a parser the way a server connection does: input
// arrives in chunks, parsed requests are dropped from the front of the
// buffer, and the unparsed tail moves to the front before the next read.
type connection struct {
	t    testing.TB
	p    Parser
	lim  Limits
	buf  []byte
	cmds [][]string
	err  error
}

// feed appends a chunk and parses what it completes. It returns false
// once the stream has failed.
func (c *connection) feed(chunk []byte) bool {
	if c.err != nil {
		return false
	}
	c.buf = append(c.buf, chunk...)
	start := 0
	for {
		args, n, err := c.p.Parse(c.buf[start:], c.lim)
		if n < 0 || n > len(c.buf)-start {
			c.t.Fatalf("Parse consumed %d of %d bytes", n, len(c.buf)-start)
		}
		if err != nil {
			if n != 0 || args != nil {
				c.t.Fatalf("Parse returned %d bytes and %q with error %v", n, args, err)
			}
			c.err = err
			return false
		}
		if n == 0 {
			if args != nil {
				c.t.Fatalf("Parse returned arguments %q without consuming", args)
			}
			break
		}
		start += n
		if len(args) > 0 {
			c.cmds = append(c.cmds, strs(args))
		}
	}
	c.buf = c.buf[:copy(c.buf, c.buf[start:])]
	return true
}

func strs(args [][]byte) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out
}

// parseChunks parses in, cut at the given offsets, on one connection.
func parseChunks(t testing.TB, in []byte, lim Limits, cuts ...int) ([][]string, error) {
	c := &connection{t: t, lim: lim}
	prev := 0
	for _, cut := range append(cuts, len(in)) {
		if !c.feed(in[prev:cut]) {
			break
		}
		prev = cut
	}
	return c.cmds, c.err
}

func (tc parseCase) limits() Limits {
	return Limits{MaxBulkLen: DefaultMaxBulkLen, AuthRequired: tc.auth}
}

func (tc parseCase) check(t *testing.T, how string, got [][]string, err error) {
	t.Helper()
	gotErr := ""
	if err != nil {
		var pe ProtocolError
		if !errors.As(err, &pe) {
			t.Fatalf("%s: %s: error %v is not a ProtocolError", tc.name, how, err)
		}
		gotErr = string(pe)
		if err.Error() != "Protocol error: "+gotErr {
			t.Errorf("%s: error text %q", tc.name, err.Error())
		}
	}
	if !reflect.DeepEqual(got, tc.want) || gotErr != tc.err {
		t.Errorf("%s (%s): got %q, error %q; want %q, error %q", tc.name, how, clipCmds(got), gotErr, clipCmds(tc.want), tc.err)
	}
}

func clipCmds(cmds [][]string) string {
	s := fmt.Sprintf("%q", cmds)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

func TestParseCases(t *testing.T) {
	for _, tc := range parseCases {
		got, err := parseChunks(t, []byte(tc.in), tc.limits())
		tc.check(t, "whole", got, err)
	}
}

// TestParseEverySplit feeds every case cut in two at every byte boundary,
// and one byte at a time: the commands and the error must not depend on
// how the stream is split.
func TestParseEverySplit(t *testing.T) {
	for _, tc := range parseCases {
		in := []byte(tc.in)
		step := 1
		if len(in) > 4096 {
			step = len(in)/64 + 1 // big inputs: a sample of the cuts
		}
		for cut := 0; cut <= len(in); cut += step {
			got, err := parseChunks(t, in, tc.limits(), cut)
			tc.check(t, fmt.Sprintf("cut at %d", cut), got, err)
		}
		if len(in) <= 4096 {
			var cuts []int
			for i := 1; i < len(in); i++ {
				cuts = append(cuts, i)
			}
			got, err := parseChunks(t, in, tc.limits(), cuts...)
			tc.check(t, "byte by byte", got, err)
		}
	}
}

// TestParseKeepsEarlierArgs checks that the arguments of a request stay
// valid while later requests of the same buffer are parsed, as a server
// batching a pipeline needs.
func TestParseKeepsEarlierArgs(t *testing.T) {
	buf := []byte("*2\r\n$3\r\nGET\r\n$1\r\na\r\nSET b 1\r\n*3\r\n$3\r\nDEL\r\n$1\r\nc\r\n$1\r\nd\r\n")
	var p Parser
	var kept [][][]byte
	for start := 0; start < len(buf); {
		args, n, err := p.Parse(buf[start:], defaultLimits)
		if err != nil || n == 0 {
			t.Fatalf("Parse at %d: n %d, error %v", start, n, err)
		}
		kept = append(kept, args)
		start += n
	}
	var got [][]string
	for _, args := range kept {
		got = append(got, strs(args))
	}
	if want := cmds("GET a", "SET b 1", "DEL c d"); !reflect.DeepEqual(got, want) {
		t.Errorf("kept arguments %q, want %q", got, want)
	}
}

// TestParseNeed checks that a connection learns, from the header of a big
// argument, how much buffer the request needs, before the data arrives.
func TestParseNeed(t *testing.T) {
	const size = 1 << 20
	head := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n"
	bulkHead := fmt.Sprintf("$%d\r\n", size)
	in := []byte(head + bulkHead + strings.Repeat("v", size) + "\r\n")
	whole := len(in)
	var p Parser
	for _, tc := range []struct{ have, need int }{
		{0, 0},
		{len(head) - 1, len(head)},
		{len(head), 0},
		{len(head) + len(bulkHead) - 1, 0},
		{len(head) + len(bulkHead), whole},
		{whole - 1, whole},
	} {
		args, n, err := p.Parse(in[:tc.have], defaultLimits)
		if args != nil || n != 0 || err != nil {
			t.Fatalf("Parse(%d bytes) = %q, %d, %v; want incomplete", tc.have, args, n, err)
		}
		if got := p.Need(); got != tc.need {
			t.Errorf("after %d bytes Need() = %d, want %d", tc.have, got, tc.need)
		}
	}
	args, n, err := p.Parse(in, defaultLimits)
	if err != nil || n != whole || len(args) != 3 || len(args[2]) != size {
		t.Fatalf("Parse(whole) = %d args, %d, %v", len(args), n, err)
	}
	if p.Need() != 0 {
		t.Errorf("Need() = %d after the request, want 0", p.Need())
	}
}

// TestParseErrorResets checks that after an error the parser starts over
// with the next buffer, as a fresh connection's parser would.
func TestParseErrorResets(t *testing.T) {
	var p Parser
	if _, _, err := p.Parse([]byte("*2\r\n$3\r\nGET\r\nx\r\n"), defaultLimits); err == nil {
		t.Fatal("no error for a missing '$'")
	}
	args, n, err := p.Parse([]byte("PING\r\n"), defaultLimits)
	if err != nil || n != 6 || len(args) != 1 || string(args[0]) != "PING" {
		t.Errorf("after an error Parse = %q, %d, %v", args, n, err)
	}
}

// splitCases follow Redis's sdssplitargs, which both redis-cli and inline
// requests use; ok false is "unbalanced quotes".
var splitCases = []struct {
	line string
	want []string
	ok   bool
}{
	{"", nil, true},
	{"   \t ", nil, true},
	{"set key value", []string{"set", "key", "value"}, true},
	{"  set\tkey   value  ", []string{"set", "key", "value"}, true},
	{"a\vb", []string{"a\vb"}, true},
	{"\va \fb", []string{"a", "b"}, true},
	{`"hello world"`, []string{"hello world"}, true},
	{`'hello world'`, []string{"hello world"}, true},
	{`""`, []string{""}, true},
	{`'' ""`, []string{"", ""}, true},
	{`"\x41\x4a\x4A\x00z"`, []string{"AJJ\x00z"}, true},
	{`"\x4"`, []string{"x4"}, true},
	{`"\xzz"`, []string{"xzz"}, true},
	{`"\n\r\t\b\a\\\"\q"`, []string{"\n\r\t\b\a\\\"q"}, true},
	{`'\n\x41\''`, []string{`\n\x41'`}, true},
	{`'a\\b'`, []string{`a\\b`}, true},
	{`ab"cd ef"`, []string{"abcd ef"}, true},
	{`ab'cd'`, []string{"abcd"}, true},
	{`a"b"c`, nil, false},
	{`"a"b`, nil, false},
	{`'a'b`, nil, false},
	{`"a`, nil, false},
	{`'a`, nil, false},
	{`"a\"`, nil, false},
	{`"\`, nil, false},
	{`'\'`, nil, false},
	{"\"a\"\tb", []string{"a", "b"}, true},
	{"\"a\"\vb", []string{"a", "b"}, true},
	{"x\x00 y", []string{"x"}, true},
	{"\"a\x00\"", nil, false},
	{"\x80\xff", []string{"\x80\xff"}, true},
}

func TestSplitArgs(t *testing.T) {
	for _, tc := range splitCases {
		got, ok := SplitArgs([]byte(tc.line))
		var gs []string
		if got != nil {
			gs = strs(got)
		}
		if ok != tc.ok || !reflect.DeepEqual(gs, tc.want) {
			t.Errorf("SplitArgs(%q) = %q, %v; want %q, %v", tc.line, gs, ok, tc.want, tc.ok)
		}
	}
}

// redisServer starts redis-server for the test, with a password, and
// returns its address.
func redisServer(t *testing.T) string {
	t.Helper()
	return redisserver.StartForTest(t, redisserver.Options{Password: "pw"}).Addr()
}

// redisReply is what redis-server answers to args of the commands the
// cases use (PING and ECHO): the checks of processCommand in its order,
// unknown command, arity, authentication, then the command's own.
func redisReply(args []string, authed bool) []byte {
	var w Writer
	name := strings.ToLower(args[0])
	switch {
	case name != "ping" && name != "echo":
		bs := make([][]byte, len(args))
		for i, a := range args {
			bs[i] = []byte(a)
		}
		w.Error(ErrUnknownCommand(bs))
	case name == "echo" && len(args) != 2:
		w.Error(ErrArity(name))
	case !authed:
		w.Error(ErrNoAuth)
	case len(args) > 2: // PING's arity is -1: PING itself checks
		w.Error(ErrArity(name))
	case len(args) == 1:
		w.Simple("PONG")
	default:
		w.BulkString(args[1])
	}
	return w.B
}

// TestParserMatchesRedis sends every case to a real redis-server and
// checks that it answers the commands the parser finds, then the
// parser's protocol error and a closed connection.
func TestParserMatchesRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	addr := redisServer(t)
	for _, tc := range parseCases {
		var want []byte
		for _, c := range tc.want {
			want = append(want, redisReply(c, !tc.auth)...)
		}
		if tc.err != "" {
			want = append(want, "-ERR Protocol error: "+tc.err+"\r\n"...)
		}
		got := redisExchange(t, addr, tc.auth, tc.in, len(want), tc.err != "")
		if !bytes.Equal(got, want) {
			t.Errorf("%s: redis-server replied %q, want %q", tc.name, clip(got, 300), clip(want, 300))
		}
	}
}

// TestSplitArgsMatchesRedis sends each line as an inline request after an
// unknown command name, whose error reply lists the arguments Redis split.
func TestSplitArgsMatchesRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	addr := redisServer(t)
	for _, tc := range splitCases {
		if strings.ContainsAny(tc.line, "\r\n\x00") || strings.Contains(strings.Join(tc.want, ""), "\x00") {
			continue // cannot be sent inline, or Redis's error text cuts it
		}
		var w Writer
		if tc.ok {
			args := [][]byte{[]byte("nosuchcommand")}
			for _, a := range tc.want {
				args = append(args, []byte(a))
			}
			w.Error(ErrUnknownCommand(args))
		} else {
			w.Error("ERR " + errUnbalanced.Error())
		}
		got := redisExchange(t, addr, false, "nosuchcommand "+tc.line+"\r\n", len(w.B), !tc.ok)
		if !bytes.Equal(got, w.B) {
			t.Errorf("line %q: redis-server replied %q, want %q", tc.line, got, w.B)
		}
	}
}

// redisExchange sends in on a new connection (authenticated unless
// unauth) and reads n bytes of replies, or everything up to the close
// when closes is set.
func redisExchange(t *testing.T, addr string, unauth bool, in string, n int, closes bool) []byte {
	t.Helper()
	conn, err := redisserver.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if !unauth {
		if reply, err := conn.Do([]byte("AUTH"), []byte("pw")); err != nil || string(reply) != "+OK\r\n" {
			t.Fatalf("AUTH: %q, %v", reply, err)
		}
	}
	if _, err := io.WriteString(conn, in); err != nil {
		t.Fatal(err)
	}
	if closes {
		got, err := io.ReadAll(conn)
		if err != nil {
			t.Fatalf("reading to the close: %v", err)
		}
		return got
	}
	got := make([]byte, n)
	if _, err := io.ReadFull(conn, got); err != nil {
		t.Fatalf("reading %d bytes: %v", n, err)
	}
	return got
}

// BenchmarkParseGetbits parses a GETBITS of 500 offsets: 502 short bulk
// strings, the shape of a batch check.
func BenchmarkParseGetbits(b *testing.B) {
	req := []byte("*502\r\n$7\r\nGETBITS\r\n$15\r\nonline:bitmap:0\r\n")
	for i := range 500 {
		off := strconv.Itoa(12345678 + i*7919)
		req = fmt.Appendf(req, "$%d\r\n%s\r\n", len(off), off)
	}
	var p Parser
	var args [][]byte
	lim := Limits{MaxBulkLen: DefaultMaxBulkLen}
	b.SetBytes(int64(len(req)))
	for b.Loop() {
		var n int
		var err error
		args, n, err = p.ParseAppend(args[:0], req, lim)
		if err != nil || n != len(req) || len(args) != 502 {
			b.Fatalf("parsed %d args in %d of %d bytes: %v", len(args), n, len(req), err)
		}
	}
}
