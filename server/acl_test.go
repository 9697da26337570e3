package server

import (
	"bufio"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/presenced/presenced/server/redisserver"
)

// aclScript is what TestACLMatchesRedis sends, about the default user,
// the categories, and the bad calls of each subcommand.
var aclScript = [][]string{
	{"ACL", "WHOAMI"}, {"ACL", "USERS"}, {"ACL", "LIST"},
	{"ACL", "GETUSER", "default"}, {"ACL", "GETUSER", "bob"},
	{"ACL", "CAT"}, {"ACL", "CAT", "nosuch"}, {"ACL", "CAT", "a", "b"},
	{"ACL", "GENPASS", "0"}, {"ACL", "GENPASS", "4097"}, {"ACL", "GENPASS", "x"}, {"ACL", "GENPASS", "1", "2"},
	{"ACL", "LOG", "x"}, {"ACL", "LOG", "1", "2"}, {"ACL", "LOG", "-1"},
	{"ACL", "DELUSER", "default"}, {"ACL", "DELUSER", "bob", "carl"}, {"ACL", "DELUSER", "bob", "default"},
	{"ACL", "LOAD"}, {"ACL", "SAVE"},
	{"ACL", "DRYRUN", "default", "get", "x"}, {"ACL", "DRYRUN", "default", "GET"}, {"ACL", "DRYRUN", "bob", "get", "x"},
	{"ACL", "DRYRUN", "default", "nosuch"}, {"ACL", "DRYRUN", "default", "config"}, {"ACL", "DRYRUN", "default", "CONFIG", "GET", "x"},
	{"ACL", "DRYRUN", "default", "config", "get"}, {"ACL", "DRYRUN", "default", "Config", "nosuch"}, {"ACL", "DRYRUN", "default", "config|get", "x"},
	{"ACL", "WHOAMI", "x"}, {"ACL"}, {"ACL", "NOSUCH"},
}

// TestACLMatchesRedis sends aclScript to presenced and to redis-server,
// without a password and with one, in RESP2 and RESP3, and compares the
// replies.
func TestACLMatchesRedis(t *testing.T) {
	for _, pass := range []string{"", "s3cret"} {
		withPass := func(cfg *Config) { cfg.RequirePass = pass }
		ours := startServer(t, withPass).Addr()
		ref := redisserver.StartForTest(t, redisserver.Options{Password: pass}).Addr()
		for _, resp := range []string{"2", "3"} {
			hello := []string{"HELLO", resp}
			if pass != "" {
				hello = append(hello, "AUTH", "default", pass)
			}
			o, r := dial(t, ours), dial(t, ref)
			o.do(hello...)
			r.do(hello...)
			for _, cmd := range aclScript {
				if got, want := o.do(cmd...), r.do(cmd...); got != want {
					t.Errorf("password %q, RESP%s, %v: presenced %q, redis-server %q", pass, resp, cmd, got, want)
				}
			}
		}
	}
}

// TestACLCatMatchesRedis checks that ACL CAT lists, for each category,
// the commands and subcommands of presenced's that redis-server lists.
func TestACLCatMatchesRedis(t *testing.T) {
	o, r := dial(t, startServer(t).Addr()), dial(t, redisserver.StartForTest(t, redisserver.Options{}).Addr())
	both := func(c *respConn) map[string]bool {
		names := map[string]bool{}
		for _, name := range bulkArray(t, c.do("COMMAND", "LIST")) {
			names[name] = true
			for _, sub := range bulkArray(t, c.do("COMMAND", "INFO", name)) {
				if strings.HasPrefix(sub, name+"|") {
					names[sub] = true
				}
			}
		}
		return names
	}
	ours, theirs := both(o), both(r)
	common := func(names []string) []string {
		var out []string
		for _, n := range names {
			if ours[n] && theirs[n] {
				out = append(out, n)
			}
		}
		slices.Sort(out)
		return out
	}
	for _, cat := range bulkArray(t, r.do("ACL", "CAT")) {
		got, want := common(bulkArray(t, o.do("ACL", "CAT", cat))), common(bulkArray(t, r.do("ACL", "CAT", cat)))
		if !slices.Equal(got, want) {
			t.Errorf("ACL CAT %s, of the commands both have: presenced %q, redis-server %q", cat, got, want)
		}
	}
}

// bulkArray returns the bulk strings of an array reply, at any depth,
// in order.
func bulkArray(t *testing.T, reply string) []string {
	t.Helper()
	var out []string
	r := bufio.NewReader(strings.NewReader(reply))
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return out
		}
		if line[0] != '$' {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
		if err != nil || n < 0 {
			continue
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(r, b); err != nil {
			t.Fatalf("bad reply %q", reply)
		}
		out = append(out, string(b[:n]))
	}
}

// TestACLGenPassMatchesRedis compares the length of ACL GENPASS's
// passwords for bit counts around each hexadecimal digit, and checks they
// are hexadecimal and differ from call to call.
func TestACLGenPassMatchesRedis(t *testing.T) {
	o, r := dial(t, startServer(t).Addr()), dial(t, redisserver.StartForTest(t, redisserver.Options{}).Addr())
	for _, bits := range []string{"", "1", "3", "4", "5", "8", "9", "255", "4096"} {
		cmd := []string{"ACL", "GENPASS"}
		if bits != "" {
			cmd = append(cmd, bits)
		}
		got, want := bulkArray(t, o.do(cmd...)), bulkArray(t, r.do(cmd...))
		if len(got) != 1 || len(got[0]) != len(want[0]) || strings.Trim(got[0], "0123456789abcdef") != "" {
			t.Errorf("%v: presenced %q, redis-server %q", cmd, got, want)
		}
	}
	if a, b := o.do("ACL", "GENPASS"), o.do("ACL", "GENPASS"); a == b {
		t.Errorf("ACL GENPASS twice: %q both times", a)
	}
}

// TestACLLogMatchesRedis fails authentications on presenced and on
// redis-server alike and compares ACL LOG, but for each entry's age and
// client, which differ by nature.
func TestACLLogMatchesRedis(t *testing.T) {
	run := func(addr string) []string {
		c := dial(t, addr)
		for _, cmd := range [][]string{
			{"AUTH", "wrong"}, {"auth", "bob", "x"}, {"AUTH", "bob", "y"}, {"HELLO", "3", "AUTH", "bob", "x"},
			{"hello", "2", "AUTH", "default", "wrong"}, {"AUTH", "default", "s3cret"},
			{"MULTI"}, {"AUTH", "carl", "x"}, {"EXEC"}, {"AUTH", "bob", "z"},
		} {
			c.do(cmd...)
		}
		var out []string
		for _, n := range []string{"", "2", "0"} {
			cmd := []string{"ACL", "LOG"}
			if n != "" {
				cmd = append(cmd, n)
			}
			out = append(out, aclLogShape(t, c.do(cmd...))...)
			out = append(out, "--")
		}
		out = append(out, c.do("ACL", "LOG", "RESET"), c.do("ACL", "LOG"))
		return out
	}
	got := run(startServer(t, func(cfg *Config) { cfg.RequirePass = "s3cret" }).Addr())
	want := run(redisserver.StartForTest(t, redisserver.Options{Password: "s3cret"}).Addr())
	if !slices.Equal(got, want) {
		t.Errorf("ACL LOG:\npresenced    %q\nredis-server %q", got, want)
	}
}

// aclLogShape describes each entry of an ACL LOG reply by its fields,
// with the age checked to be a recent number of seconds and the client
// to be a CLIENT INFO line.
func aclLogShape(t *testing.T, reply string) []string {
	t.Helper()
	var tokens []string // the bulk strings and integers, in order
	lines := strings.Split(reply, "\r\n")
	for i := 0; i < len(lines); i++ {
		switch {
		case strings.HasPrefix(lines[i], ":"):
			tokens = append(tokens, lines[i][1:])
		case strings.HasPrefix(lines[i], "$"):
			i++
			tokens = append(tokens, lines[i])
		}
	}
	var out []string
	for i := 0; i+1 < len(tokens); i += 2 {
		k, v := tokens[i], tokens[i+1]
		switch k {
		case "age-seconds":
			if age, err := strconv.ParseFloat(v, 64); err != nil || age < 0 || age > 60 {
				t.Errorf("age-seconds %q", v)
			}
			continue
		case "client-info":
			if !strings.HasPrefix(v, "id=") || strings.Contains(v, "\n") {
				t.Errorf("client-info %q", v)
			}
			continue
		}
		out = append(out, k+"="+v)
	}
	return out
}

// TestACLLogGroups checks how failures fold into entries against a
// model: like failures within a minute of an entry among the ten newest
// add to it and make it the newest; at most 128 entries stay.
func TestACLLogGroups(t *testing.T) {
	var l aclLog
	type key struct{ user, object string }
	var model []key
	base := time.Unix(1_800_000_000, 0)
	add := func(user, object string, at time.Duration) {
		l.add(&aclLogEntry{count: 1, context: "toplevel", object: object, username: user, latest: base.Add(at)})
	}
	// Twelve users fail in turn; the first fails again: its entry is the
	// 12th newest, beyond the ten compared, so it gets a new one.
	for i := range 12 {
		add("u"+strconv.Itoa(i), "AUTH", time.Duration(i)*time.Second)
		model = append([]key{{"u" + strconv.Itoa(i), "AUTH"}}, model...)
	}
	add("u0", "AUTH", 12*time.Second)
	model = append([]key{{"u0", "AUTH"}}, model...)
	// u5 is among the ten newest: its entry counts 2 and moves first.
	add("u5", "AUTH", 13*time.Second)
	i := slices.Index(model, key{"u5", "AUTH"})
	model = append([]key{{"u5", "AUTH"}}, slices.Delete(model, i, i+1)...)
	// Another object, or over a minute later, makes a new entry.
	add("u5", "HELLO", 14*time.Second)
	model = append([]key{{"u5", "HELLO"}}, model...)
	add("u5", "AUTH", 74*time.Second)
	model = append([]key{{"u5", "AUTH"}}, model...)
	if len(l.entries) != len(model) {
		t.Fatalf("%d entries, want %d", len(l.entries), len(model))
	}
	for i, e := range l.entries {
		if (key{e.username, e.object}) != model[i] {
			t.Errorf("entry %d: %s %s, want %v", i, e.username, e.object, model[i])
		}
	}
	if l.entries[2].username != "u5" || l.entries[2].count != 2 || !l.entries[2].latest.Equal(base.Add(13*time.Second)) {
		t.Errorf("u5's grouped entry: %+v", l.entries[2])
	}
	for i := range 200 {
		add("v"+strconv.Itoa(i), "AUTH", time.Hour)
	}
	if len(l.entries) != aclLogMaxLen || l.entries[0].username != "v199" || l.entries[aclLogMaxLen-1].username != "v72" {
		t.Errorf("after 200 more: %d entries, newest %s, oldest %s", len(l.entries), l.entries[0].username, l.entries[len(l.entries)-1].username)
	}
}
