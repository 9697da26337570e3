package server

import (
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/presenced/presenced/server/redisserver"
	"github.com/redis/go-redis/v9"
)

// dialUnix connects to the unix socket at path.
func dialUnix(t *testing.T, path string) *respConn {
	t.Helper()
	conn, err := redisserver.DialUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &respConn{tb: t, conn: conn}
}

// clientField matches a field of a CLIENT LIST line.
var listField = regexp.MustCompile(`\b(id|addr|laddr|flags)=(\S*)`)

// TestUnixSocketMatchesRedis serves clients on a unix socket of
// presenced's and of redis-server's, and compares what each shows of
// them: the socket's permissions and settings, CLIENT LIST's addresses
// and flags (U, and x inside MULTI), MONITOR's and SLOWLOG's addresses,
// and CLIENT KILL ADDR.
func TestUnixSocketMatchesRedis(t *testing.T) {
	run := func(path string) []string {
		var seen []string
		note := func(s string) { seen = append(seen, strings.ReplaceAll(s, path, "SOCK")) }
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		note(st.Mode().String())
		a, b := dialUnix(t, path), dialUnix(t, path)
		settings := bulkArray(t, a.do("CONFIG", "GET", "unixsocket*"))
		note(strings.Join(sortedPairs(settings), " "))
		id := strings.Trim(a.do("CLIENT", "ID"), ":\r\n")
		a.expect("+OK\r\n", "MULTI")
		for _, line := range strings.Split(b.do("CLIENT", "LIST"), "\n") {
			if strings.Contains(line, "id="+id+" ") {
				for _, m := range listField.FindAllStringSubmatch(line, -1) {
					if m[1] != "id" {
						note(m[0])
					}
				}
			}
		}
		a.expect("+OK\r\n", "DISCARD")
		m := dialUnix(t, path)
		m.expect("+OK\r\n", "MONITOR")
		a.expect("+PONG\r\n", "PING")
		line := m.reply()
		note(line[strings.Index(line, "["):])
		b.expect("+OK\r\n", "CONFIG", "SET", "slowlog-log-slower-than", "0")
		b.expect("+OK\r\n", "SLOWLOG", "RESET")
		a.expect("$1\r\nx\r\n", "ECHO", "x")
		fields := bulkArray(t, b.do("SLOWLOG", "GET", "1"))
		note(fields[len(fields)-2]) // the client's address, then its name
		note(b.do("CLIENT", "KILL", "ADDR", path+":0", "LADDR", path+":0"))
		return seen
	}
	dir := t.TempDir()
	ours := filepath.Join(dir, "presenced.sock")
	startServer(t, func(c *Config) { c.UnixSocket, c.UnixSocketPerm = ours, 0o700 })
	ref := filepath.Join(dir, "redis.sock")
	redisserver.StartForTest(t, redisserver.Options{Args: []string{"--unixsocket", ref, "--unixsocketperm", "700"}})
	got, want := run(ours), run(ref)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("presenced:\n%q\nredis-server:\n%q", got, want)
	}
}

// TestUnixSocketClients drives presenced's unix socket with go-redis (a
// pipeline of heartbeats, which an event loop serves) and redis-cli, after
// a start that found a file left at the socket's path.
func TestUnixSocketClients(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.sock")
	if err := os.WriteFile(path, []byte("left behind"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, func(c *Config) { c.UnixSocket = path })
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Network: "unix", Addr: path})
	defer rdb.Close()
	pipe := rdb.Pipeline()
	for i := range 64 {
		pipe.SetBit(ctx, "online", int64(i*3), 1)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	out, err := osexec.Command("redis-cli", "-s", path, "BITCOUNT", "online").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "64" {
		t.Errorf("redis-cli -s: %q, %v", out, err)
	}
	srv.Close()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the socket file stays after Close: %v", err)
	}
}

// sortedPairs joins a flat list of names and values into name=value
// pairs, sorted: CONFIG GET's reply, whose order Redis does not set.
func sortedPairs(flat []string) []string {
	var pairs []string
	for i := 0; i+1 < len(flat); i += 2 {
		pairs = append(pairs, flat[i]+"="+flat[i+1])
	}
	slices.Sort(pairs)
	return pairs
}

// TestParseUnixSocketPerm checks unixsocketperm's octal syntax.
func TestParseUnixSocketPerm(t *testing.T) {
	for v, want := range map[string]os.FileMode{"700": 0o700, "0770": 0o770, "777": 0o777, "0": 0} {
		if got, err := ParseUnixSocketPerm(v); err != nil || got != want {
			t.Errorf("%q: %o, %v", v, got, err)
		}
	}
	for _, v := range []string{"", "800", "1777", "rwx", "-1"} {
		if _, err := ParseUnixSocketPerm(v); err == nil {
			t.Errorf("%q accepted", v)
		}
	}
}
