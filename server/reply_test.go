package server

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/presenced/presenced/server/redisserver"
)

// replyScript is a pipeline sent in one write after CLIENT REPLY
// changes, in RESP3 when resp3 is set.
type replyScript struct {
	name  string
	resp3 bool
	raw   string // requests as they are sent; commands are inline ones
}

// replyScripts are CLIENT REPLY's cases: what each mode leaves out, on
// which commands and replies, and when the mode ends.
var replyScripts = []replyScript{
	{name: "off then on", raw: "CLIENT REPLY OFF\r\nSET a 1\r\nBOGUS x\r\nGET\r\nCLIENT REPLY ON\r\nGET a\r\n"},
	{name: "skip one write", raw: "SET a 1\r\nCLIENT REPLY SKIP\r\nSET a 2\r\nGET a\r\n"},
	{name: "skip a skip", raw: "SET a 1\r\nCLIENT REPLY SKIP\r\nCLIENT REPLY SKIP\r\nGET a\r\nGET a\r\n"},
	{name: "skip while off", raw: "SET a 1\r\nCLIENT REPLY OFF\r\nCLIENT REPLY SKIP\r\nGET a\r\nCLIENT REPLY ON\r\nGET a\r\n"},
	{name: "on answers after skip", raw: "SET a 1\r\nCLIENT REPLY SKIP\r\nCLIENT REPLY ON\r\nGET a\r\n"},
	{name: "off after skip", raw: "SET a 1\r\nCLIENT REPLY SKIP\r\nCLIENT REPLY OFF\r\nGET a\r\nCLIENT REPLY ON\r\n"},
	{name: "off twice", raw: "CLIENT REPLY OFF\r\nCLIENT REPLY OFF\r\nPING\r\nCLIENT REPLY ON\r\n"},
	{name: "bad arguments", raw: "CLIENT REPLY\r\nCLIENT REPLY maybe\r\nCLIENT REPLY on extra\r\nCLIENT REPLY On\r\n"},
	{name: "reset after skip", raw: "SET a 1\r\nCLIENT REPLY SKIP\r\nRESET\r\nGET a\r\n"},
	{name: "reset after off", raw: "SET a 1\r\nCLIENT REPLY OFF\r\nRESET\r\nGET a\r\n"},
	{name: "skip a transaction's start", raw: "SET a 1\r\nCLIENT REPLY SKIP\r\nMULTI\r\nGET a\r\nEXEC\r\n"},
	{name: "off during a transaction", raw: "SET a 1\r\nMULTI\r\nSET a 3\r\nEXEC\r\nCLIENT REPLY OFF\r\nMULTI\r\nINCR a\r\nEXEC\r\nCLIENT REPLY ON\r\nGET a\r\n"},
	{name: "skip an error", raw: "CLIENT REPLY SKIP\r\nSELECT 99\r\nECHO x\r\n"},
	{name: "skip an unknown command", raw: "CLIENT REPLY SKIP\r\nNOSUCH\r\nECHO x\r\n"},
	{name: "an empty request takes the skip", raw: "CLIENT REPLY SKIP\r\n*0\r\nPING\r\nCLIENT REPLY SKIP\r\n\r\nPING\r\n"},
	{name: "writes while off", raw: "DEL k n\r\nCLIENT REPLY OFF\r\nSETBIT k 1 1\r\nSETBIT k 2 1\r\nSETBIT k 1 0\r\nINCR n\r\nGET k\r\nINCR n\r\nCLIENT REPLY ON\r\nBITCOUNT k\r\nGET n\r\n"},
	{name: "skip one of a pipeline of writes", raw: "DEL k\r\nCLIENT REPLY SKIP\r\nSETBIT k 5 1\r\nSETBIT k 6 1\r\nSETBIT k 5 1\r\nBITCOUNT k\r\n"},
	{name: "subscriptions while off", raw: "CLIENT REPLY OFF\r\nSUBSCRIBE ch\r\nPING\r\nPUBLISH ch x\r\nUNSUBSCRIBE ch\r\nCLIENT REPLY ON\r\nPING\r\n"},
	{name: "pushes while off", resp3: true, raw: "CLIENT REPLY OFF\r\nSUBSCRIBE ch\r\nPUBLISH ch x\r\nCLIENT REPLY ON\r\nPING\r\n"},
	{name: "invalidations while off", resp3: true, raw: "CLIENT REPLY OFF\r\nCLIENT TRACKING ON\r\nGET tk\r\nSET tk 1\r\nCLIENT REPLY ON\r\nPING\r\n"},
}

// replyEnd ends each script: RESET turns replies on, and ECHO's reply
// marks the end of what the script was answered.
const replyEnd = "RESET\r\nECHO end-of-script\r\n"

// runReplyScript sends s on a new connection to addr and returns what it
// was answered, up to replyEnd's ECHO.
func runReplyScript(t *testing.T, addr string, s replyScript) string {
	c := dial(t, addr)
	if s.resp3 {
		c.do("HELLO", "3")
	}
	c.send([]byte(s.raw + replyEnd))
	var all []byte
	deadline := time.Now().Add(time.Minute)
	for !strings.HasSuffix(string(all), bulk("end-of-script")) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: no end after %q", s.name, all)
		}
		all = append(all, c.reply()...)
	}
	return strings.TrimSuffix(string(all), bulk("end-of-script"))
}

// TestClientReplyMatchesRedis runs each CLIENT REPLY script on presenced
// and on redis-server and compares the bytes each answered.
func TestClientReplyMatchesRedis(t *testing.T) {
	ours, ref := startServer(t).Addr(), redisserver.StartForTest(t, redisserver.Options{}).Addr()
	for _, s := range replyScripts {
		want, got := runReplyScript(t, ref, s), runReplyScript(t, ours, s)
		if got != want {
			t.Errorf("%s:\npresenced    %q\nredis-server %q", s.name, got, want)
		}
	}
}

// TestClientReplyInTransaction checks what presenced does where Redis
// sends EXEC an array with fewer elements than it announces: CLIENT
// REPLY in a transaction answers OK there, and takes effect after EXEC.
func TestClientReplyInTransaction(t *testing.T) {
	addr := startServer(t).Addr()
	for _, s := range []struct {
		script, want string
	}{
		{"MULTI\r\nCLIENT REPLY SKIP\r\nGET a\r\nEXEC\r\nGET a\r\n",
			"+OK\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n$1\r\n1\r\n+RESET\r\n"},
		{"MULTI\r\nCLIENT REPLY OFF\r\nGET a\r\nEXEC\r\nGET a\r\n",
			"+OK\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n$1\r\n1\r\n+RESET\r\n"},
		{"CLIENT REPLY OFF\r\nMULTI\r\nCLIENT REPLY ON\r\nEXEC\r\nGET a\r\n",
			"+OK\r\n$1\r\n1\r\n+RESET\r\n"},
		{"MULTI\r\nCLIENT REPLY OFF\r\nCLIENT REPLY ON\r\nEXEC\r\nGET a\r\n",
			"+OK\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n+OK\r\n$1\r\n1\r\n+RESET\r\n"},
	} {
		got := runReplyScript(t, addr, replyScript{name: s.script, raw: "SET a 1\r\n" + s.script})
		if got != s.want {
			t.Errorf("%q: got %q, want %q", s.script, got, s.want)
		}
	}
}

// TestClientReplyOffEndsConnection checks that QUIT and a protocol error
// close a connection whose replies are off, answering nothing (Redis
// leaves it open, as nothing is left to write before the close).
func TestClientReplyOffEndsConnection(t *testing.T) {
	addr := startServer(t).Addr()
	for _, end := range []string{"QUIT\r\n", "*1\r\n$-5\r\n"} {
		c := dial(t, addr)
		c.send([]byte("CLIENT REPLY OFF\r\nPING\r\n" + end))
		c.expectClosed()
	}
}

// TestClientReplyMutesMonitor checks, against redis-server, that a
// monitoring connection whose replies are off receives no lines until
// CLIENT REPLY ON, whose own line then follows its OK.
func TestClientReplyMutesMonitor(t *testing.T) {
	run := func(addr string) []string {
		m, o := dialRaw(t, addr), dial(t, addr)
		m.send([]byte("CLIENT REPLY OFF\r\nMONITOR\r\n"))
		// The monitor is set up once the other connection's commands
		// show in CLIENT LIST's flags of it.
		for !strings.Contains(o.do("CLIENT", "LIST"), "flags=O") {
		}
		o.expect("+OK\r\n", "SET", "x", "1")
		m.send([]byte("CLIENT REPLY ON\r\n"))
		first, second := m.reply(time.Minute), m.reply(time.Minute)
		own := strings.Contains(second, `"CLIENT" "REPLY" "ON"`)
		return []string{first, strconv.FormatBool(own)}
	}
	want, got := run(redisserver.StartForTest(t, redisserver.Options{}).Addr()), run(startServer(t).Addr())
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("monitor after CLIENT REPLY ON: presenced %q, redis-server %q", got, want)
	}
}

// TestClientReplyOffWritesAlone checks, against redis-server, a pipeline
// of writes alone while replies are off: presenced commits such a batch
// with other connections' (see eventLoop.applyWrites), and still answers
// none of it.
func TestClientReplyOffWritesAlone(t *testing.T) {
	run := func(addr string) string {
		c, o := dialRaw(t, addr), dial(t, addr)
		o.expect(":0\r\n", "DEL", "k")
		c.send([]byte("CLIENT REPLY OFF\r\nSETBIT k 1 1\r\nSETBIT k 2 1\r\n"))
		for o.do("BITCOUNT", "k") != ":2\r\n" {
		}
		c.send([]byte("CLIENT REPLY ON\r\nBITCOUNT k\r\n"))
		return c.reply(time.Minute) + c.reply(time.Minute)
	}
	want, got := run(redisserver.StartForTest(t, redisserver.Options{}).Addr()), run(startServer(t).Addr())
	if got != want {
		t.Errorf("after writes while off: presenced %q, redis-server %q", got, want)
	}
}
