package server

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/presenced/presenced/server/redisserver"
)

// TestMonitor runs the same commands under MONITOR against redis-server
// and presenced and compares the lines the monitoring connection gets,
// times and ports aside.
func TestMonitor(t *testing.T) {
	closed := closedPort(t)
	sameAsRedis(t, "MONITOR lines", 15, func(t *testing.T, addr string) []string { return monitorScenario(t, addr, closed) })
}

// sameAsRedis runs scenario against redis-server and against presenced
// and fails the test unless both return the same lines, and at least
// least of them.
func sameAsRedis(t *testing.T, what string, least int, scenario func(t *testing.T, addr string) []string) {
	t.Helper()
	want := scenario(t, redisserver.StartForTest(t, redisserver.Options{}).Addr())
	got := scenario(t, startServer(t).Addr())
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("presenced's %s:\n%s\nredis-server's:\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(want) < least {
		t.Errorf("only %d %s: %q", len(want), what, want)
	}
}

// monitorLinePrefix is the time and address of a MONITOR line.
var monitorLinePrefix = regexp.MustCompile(`^\+\d+\.\d{6} \[(\d+) ([0-9.]+):(\d+)\] `)

// monitorScenario runs commands on addr while a connection monitors, and
// returns what that connection read, with the times left out and the
// addresses named; its MIGRATEs go to the port closed, where nothing
// listens.
func monitorScenario(t *testing.T, addr, closed string) []string {
	mon, c := dial(t, addr), dial(t, addr)
	names := map[string]string{
		mon.conn.NetConn().LocalAddr().String(): "monitor",
		c.conn.NetConn().LocalAddr().String():   "client",
	}
	monID := strconv.FormatInt(intBody(t, mon.do("CLIENT", "ID")), 10)
	mon.expect("+OK\r\n", "MONITOR")
	mon.send(redisserver.AppendCommand(nil, "MONITOR")) // no reply: it monitors already
	if flags := clientField(bulkBody(t, c.do("CLIENT", "LIST", "ID", monID)), "flags"); flags != "O" {
		t.Errorf("%s: CLIENT LIST flags of the monitoring connection %q, want O", addr, flags)
	}
	for _, cmd := range [][]string{
		{"SET", "k", "a b\"c\n\x01\\"}, {"get", "k"}, {"AUTH", "secret"}, {"HELLO", "2", "AUTH", "default", "pw", "SETNAME", "n"},
		{"CONFIG", "GET", "maxclients"}, {"CLIENT", "SETNAME", "x"}, {"CLIENT", "KILL", "ID", "999999"}, {"CLIENT", "NOSUCH"},
		{"NOSUCH"}, {"GET"}, {"SETBIT", "k", "100000000000", "1"},
		{"MULTI"}, {"SET", "x", "1"}, {"SELECT", "2"}, {"GET", "y"}, {"EXEC"},
		{"PING"}, {"SELECT", "0"}, {"MIGRATE", "127.0.0.1", closed, "k", "0", "100", "COPY", "AUTH", "pw"},
		{"MIGRATE", "127.0.0.1", closed, "", "0", "100", "AUTH2", "user", "pw", "KEYS", "auth", "k"}, {"ECHO", "client done"},
	} {
		c.do(cmd...)
	}
	mon.send(redisserver.AppendCommand(nil, "GET", "z"))
	mon.send(redisserver.AppendCommand(nil, "ECHO", "monitor done"))
	var lines []string
	for len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], "[0 monitor] ") {
		line := strings.TrimSuffix(mon.reply(), "\r\n")
		if m := monitorLinePrefix.FindStringSubmatch(line); m != nil {
			line = "[" + m[1] + " " + names[m[2]+":"+m[3]] + "] " + line[len(m[0]):]
		}
		lines = append(lines, line)
	}
	mon.expect("+RESET\r\n", "RESET")
	mon.expect("$-1\r\n", "GET", "z")
	return lines
}

// TestMonitorOfACluster monitors a leader and a follower: each shows the
// commands its own clients sent, a write forwarded from the follower
// only on the follower.
func TestMonitorOfACluster(t *testing.T) {
	_, l, f := leaderAndFollower(t)
	ml, mf := dial(t, l.Addr()), dial(t, f.Addr())
	ml.expect("+OK\r\n", "MONITOR")
	mf.expect("+OK\r\n", "MONITOR")
	dial(t, f.Addr()).expect("+OK\r\n", "SET", "k", "from the follower")
	dial(t, l.Addr()).expect("$4\r\ndone\r\n", "ECHO", "done")
	dial(t, f.Addr()).expect("$4\r\ndone\r\n", "ECHO", "done")
	for _, tc := range []struct {
		mon  *respConn
		want []string
	}{
		{ml, []string{`"ECHO" "done"`}},
		{mf, []string{`"SET" "k" "from the follower"`, `"ECHO" "done"`}},
	} {
		for _, want := range tc.want {
			if line := tc.mon.reply(); !strings.HasSuffix(line, "] "+want+"\r\n") {
				t.Errorf("MONITOR line %q, want one of %s", line, want)
			}
		}
	}
}
