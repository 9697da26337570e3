package server

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// TestSlowlogMatchesRedis logs every command (slowlog-log-slower-than 0)
// on presenced and on redis-server, sends both the same commands, and
// compares their slow logs but for what depends on the moment: each
// entry's timestamp, its time taken and the client's port.
func TestSlowlogMatchesRedis(t *testing.T) {
	d := newDiffer(t)
	closed := closedPort(t)
	mset := []string{"MSET"}
	for i := range 20 {
		mset = append(mset, "k"+strconv.Itoa(i), "v")
	}
	cmds := [][]string{
		{"CONFIG", "SET", "slowlog-log-slower-than", "0"},
		{"CONFIG", "SET", "slowlog-max-len", "8"},
		{"SLOWLOG", "RESET"},
		{"SET", "a", "1"},
		{"CLIENT", "SETNAME", "bob"},
		{"SET", "long", strings.Repeat("x", 200)},
		mset,
		{"SETBIT", "b", "7", "1"},
		{"MIGRATE", "127.0.0.1", closed, "", "0", "100", "AUTH2", "user", "pw", "AUTH", "pw2", "KEYS", "a", "auth"},
		{"GET", "a"},
		{"MULTI"},
		{"INCR", "n"},
		{"EXEC"},
	}
	logs := map[string]string{}
	for _, target := range []*diffTarget{d.ref, d.sut} {
		for _, c := range cmds {
			if _, err := target.do(argv(c...)); err != nil {
				t.Fatal(err)
			}
		}
		raw, err := target.do(argv("SLOWLOG", "GET", "-1"))
		if err != nil {
			t.Fatal(err)
		}
		logs[target.name] = slowlogShape(t, raw)
		for _, c := range [][]string{{"CONFIG", "SET", "slowlog-log-slower-than", "10000", "slowlog-max-len", "128"}, {"SLOWLOG", "RESET"}} {
			if _, err := target.do(argv(c...)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if logs["presenced"] != logs["redis"] {
		t.Fatalf("slow log\n%s\nredis-server's\n%s", logs["presenced"], logs["redis"])
	}
	if !strings.Contains(logs["redis"], "... (72 more bytes)") || !strings.Contains(logs["redis"], "... (10 more arguments)") {
		t.Fatalf("the commands do not exercise the shortening: %s", logs["redis"])
	}
}

// slowlogShape renders a SLOWLOG GET reply one entry a line, with the
// timestamp and the time taken left out and the client's address without
// its port.
func slowlogShape(t *testing.T, raw []byte) string {
	t.Helper()
	_, entries, ok := arrayElements(raw)
	if !ok {
		t.Fatalf("SLOWLOG GET: %q", raw)
	}
	var b strings.Builder
	for _, e := range entries {
		_, f, ok := arrayElements(e)
		if !ok || len(f) != 6 || f[1][0] != ':' || f[2][0] != ':' {
			t.Fatalf("slow log entry %q", e)
		}
		_, args, _ := arrayElements(f[3])
		host, _, _ := bytes.Cut(f[4], []byte(":"))
		fmt.Fprintf(&b, "id %q args %q client %q name %q\n", f[0], bytes.Join(args, nil), host, f[5])
	}
	return b.String()
}
