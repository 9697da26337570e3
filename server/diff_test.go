package server

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/presenced/presenced/proto"
	"github.com/presenced/presenced/server/redisserver"
)

// The differential test sends the same commands to presenced and to a real
// redis-server and requires byte-identical replies: Redis's replies and
// error texts are the contract. Commands come from seeded generators
// (diffgen_test.go) and from the regression scripts in testdata/diff.

// diffTarget is one side of the comparison: a RESP connection that sends a
// command and returns the raw bytes of its one reply.
type diffTarget struct {
	name string
	conn *redisserver.Conn
}

// dialTarget connects to a RESP server at addr; the connection is closed
// when the test ends.
func dialTarget(tb testing.TB, name, addr string) *diffTarget {
	tb.Helper()
	conn, err := redisserver.Dial(addr)
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	tb.Cleanup(func() { conn.Close() })
	return &diffTarget{name: name, conn: conn}
}

// do sends args as a RESP array and reads one reply's raw bytes.
func (d *diffTarget) do(args [][]byte) ([]byte, error) {
	reply, err := d.conn.Do(args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.name, err)
	}
	return reply, nil
}

// arrayElements splits the raw bytes of an aggregate reply (an array, or
// RESP3's map, set or push) into its header line and the raw bytes of each
// element, a map's keys and values taking turns; ok is false for other
// replies.
func arrayElements(raw []byte) (header []byte, elems [][]byte, ok bool) {
	if len(raw) == 0 || !strings.ContainsRune("*%~>", rune(raw[0])) {
		return nil, nil, false
	}
	r := bufio.NewReader(bytes.NewReader(raw))
	header, err := r.ReadSlice('\n')
	if err != nil {
		return nil, nil, false
	}
	header = slices.Clone(header)
	n, _ := strconv.Atoi(string(header[1 : len(header)-2]))
	if raw[0] == '%' {
		n *= 2
	}
	for range n {
		e, err := redisserver.ReadReply(r)
		if err != nil {
			return nil, nil, false
		}
		elems = append(elems, e)
	}
	return header, elems, true
}

// Expiry times given relative to the clock (EX, PX, EXPIRE, SETEX...) land
// on different milliseconds in the two servers, so replies that report
// them are normalised before the comparison; everything else is compared
// exactly. The generators keep relative times below maxRelativeExpiry and
// absolute ones (EXAT, PXAT, EXPIREAT, PEXPIREAT) far outside that window.
const maxRelativeExpiry = 100000 * time.Second

// normalise rewrites the clock-dependent part of a reply to args:
//   - TTL and PTTL: only the class is compared, -2 (no key), -1 (no
//     expiry) or positive, because a TTL counts down.
//   - EXPIRETIME and PEXPIRETIME: exact, unless the time falls within
//     maxRelativeExpiry of now, i.e. came from a relative expiry; then
//     only that fact is compared.
//   - KEYS: elements sorted by their encoding, since key order is
//     unspecified.
//   - HELLO: the server's version and the client's id are left out.
func normalise(args [][]byte, reply []byte) []byte {
	switch strings.ToUpper(string(args[0])) {
	case "HELLO":
		if header, elems, ok := arrayElements(reply); ok {
			for i := 0; i+1 < len(elems); i += 2 {
				if key := string(elems[i]); key == "$7\r\nversion\r\n" || key == "$2\r\nid\r\n" {
					elems[i+1] = []byte("<varies>")
				}
			}
			return slices.Concat(append([][]byte{header}, elems...)...)
		}
	case "TTL", "PTTL":
		if n, ok := intReply(reply); ok && n > 0 {
			return []byte(":<positive>\r\n")
		}
	case "EXPIRETIME", "PEXPIRETIME":
		unit := time.Second
		if len(args[0]) == len("PEXPIRETIME") {
			unit = time.Millisecond
		}
		if n, ok := intReply(reply); ok && n > 0 && isRelativeTime(time.Duration(n)*unit) {
			return []byte(":<relative>\r\n")
		}
	case "KEYS":
		if header, elems, ok := arrayElements(reply); ok {
			slices.SortFunc(elems, bytes.Compare)
			return slices.Concat(append([][]byte{header}, elems...)...)
		}
	}
	return reply
}

// isRelativeTime reports whether a unix time is one a relative expiry set
// during this test can have produced.
func isRelativeTime(t time.Duration) bool {
	now := time.Duration(time.Now().UnixNano())
	return t > now-time.Minute && t < now+maxRelativeExpiry+time.Minute
}

// intReply parses an integer reply.
func intReply(reply []byte) (int64, bool) {
	if len(reply) < 4 || reply[0] != ':' {
		return 0, false
	}
	n, err := strconv.ParseInt(string(reply[1:len(reply)-2]), 10, 64)
	return n, err == nil
}

// differ runs commands on a reference server and on the server under test
// and reports the first reply that differs.
type differ struct {
	t          *testing.T
	ref, sut   *diffTarget
	mismatches int
	// resp3 makes run speak RESP3 to both (HELLO 3), rather than RESP2.
	resp3 bool
}

// maxMismatches caps the mismatches reported by one test, so that one
// systematic difference does not bury the others.
const maxMismatches = 40

// run sends each command of one sequence to both servers, after FLUSHALL,
// SELECT 0 and a HELLO that picks the protocol (see resp3), and reports the commands whose replies differ. label names
// the sequence (its seed or script file). With stopAtFirst, the sequence
// ends at its first mismatch, since the states may have diverged and what
// follows is noise; scripts, whose lines each check one thing, go on.
func (d *differ) run(label string, cmds [][][]byte, stopAtFirst bool) {
	d.t.Helper()
	hello := argv("HELLO", "2")
	if d.resp3 {
		hello = argv("HELLO", "3")
	}
	setup := [][][]byte{argv("SELECT", "0"), argv("FLUSHALL"), hello}
	for i, args := range slices.Concat(setup, cmds) {
		refReply, err := d.ref.do(args)
		if err != nil {
			d.t.Fatalf("%s: %s: %v", label, formatCommand(args), err)
		}
		sutReply, err := d.sut.do(args)
		if err != nil {
			d.t.Fatalf("%s: %s: %v", label, formatCommand(args), err)
		}
		if bytes.Equal(normalise(args, refReply), normalise(args, sutReply)) {
			continue
		}
		d.mismatches++
		if d.mismatches > maxMismatches {
			d.t.Fatalf("more than %d mismatches; stopping", maxMismatches)
		}
		msg := fmt.Sprintf("%s: replies differ\ncommand:  %s\n%-9s %s\n%-9s %s",
			label, formatCommand(args), d.ref.name+":", clip(refReply), d.sut.name+":", clip(sutReply))
		if stopAtFirst {
			msg += "\nafter FLUSHALL"
			for j, prev := range cmds[:max(0, i-len(setup))] {
				if j == 0 {
					msg += " and:"
				}
				msg += "\n    " + formatCommand(prev)
			}
		}
		d.t.Error(msg)
		if stopAtFirst {
			return
		}
	}
}

// clip quotes a reply for a report, shortening long ones.
func clip(reply []byte) string {
	const limit = 200
	if len(reply) <= limit {
		return strconv.Quote(string(reply))
	}
	return fmt.Sprintf("%q... (%d bytes)", reply[:limit], len(reply))
}

// argv turns words into command arguments.
func argv(words ...string) [][]byte {
	args := make([][]byte, len(words))
	for i, w := range words {
		args[i] = []byte(w)
	}
	return args
}

// formatCommand writes args in the inline syntax proto.SplitArgs reads
// back, quoting arguments that need it, so a failing command can be pasted
// into a testdata/diff script or redis-cli. Arguments longer than
// maxShownArg bytes are cut short and marked, to keep reports readable;
// the seed replays them.
func formatCommand(args [][]byte) string {
	const maxShownArg = 64
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if len(a) > maxShownArg {
			fmt.Fprintf(&b, "%s...(%d bytes)", quoteArg(a[:maxShownArg]), len(a))
			continue
		}
		b.WriteString(quoteArg(a))
	}
	return b.String()
}

// quoteArg returns a as is when it has no blanks, quotes or special bytes,
// and otherwise in double quotes with \xHH escapes.
func quoteArg(a []byte) string {
	plain := len(a) > 0
	for _, c := range a {
		if c <= ' ' || c >= 0x7f || c == '"' || c == '\'' || c == '\\' {
			plain = false
		}
	}
	if plain {
		return string(a)
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range a {
		if c < ' ' || c >= 0x7f || c == '"' || c == '\\' {
			fmt.Fprintf(&b, `\x%02x`, c)
		} else {
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// newDiffer starts a redis-server (the reference) and an in-process
// presenced (the server under test) and connects to both.
func newDiffer(t *testing.T) *differ {
	t.Helper()
	ref := redisserver.StartForTest(t, redisserver.Options{})
	return &differ{
		t:   t,
		ref: dialTarget(t, "redis", ref.Addr()),
		sut: dialTarget(t, "presenced", startServer(t).Addr()),
	}
}

// TestDiffScripts replays the regression scripts in testdata/diff: one
// command per line in inline syntax, '#' starts a comment line. Each file
// starts from an empty keyspace, and runs in RESP2 and again in RESP3.
func TestDiffScripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "diff", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in testdata/diff: %v", err)
	}
	d := newDiffer(t)
	for _, file := range files {
		cmds, err := readScript(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, resp3 := range []bool{false, true} {
			d.resp3 = resp3
			d.run(fmt.Sprintf("%s (RESP3: %v)", file, resp3), cmds, false)
		}
	}
}

// readScript reads a script file into commands.
func readScript(file string) ([][][]byte, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var cmds [][][]byte
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		args, ok := proto.SplitArgs([]byte(line))
		if !ok || len(args) == 0 {
			return nil, fmt.Errorf("%s:%d: cannot split %q", file, i+1, line)
		}
		cmds = append(cmds, args)
	}
	return cmds, nil
}

func TestNormalise(t *testing.T) {
	soon := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	tests := []struct{ cmd, reply, want string }{
		{"TTL", ":57\r\n", ":<positive>\r\n"},
		{"pttl", ":-2\r\n", ":-2\r\n"},
		{"TTL", ":-1\r\n", ":-1\r\n"},
		{"EXPIRETIME", ":" + soon + "\r\n", ":<relative>\r\n"},
		{"PEXPIRETIME", ":" + soon + "000\r\n", ":<relative>\r\n"},
		{"EXPIRETIME", ":3000000000\r\n", ":3000000000\r\n"},
		{"PEXPIRETIME", ":" + soon + "\r\n", ":" + soon + "\r\n"},
		{"KEYS", "*3\r\n$1\r\nb\r\n$2\r\nab\r\n$1\r\na\r\n", "*3\r\n$1\r\na\r\n$1\r\nb\r\n$2\r\nab\r\n"},
		{"GET", ":5\r\n", ":5\r\n"},
	}
	for _, tt := range tests {
		if got := normalise(argv(tt.cmd, "k"), []byte(tt.reply)); string(got) != tt.want {
			t.Errorf("normalise(%s, %q) = %q, want %q", tt.cmd, tt.reply, got, tt.want)
		}
	}
}

func TestFormatCommandRoundTrip(t *testing.T) {
	args := argv("SET", "plain", "", "with space", "q\"uote", "it's", "back\\slash", "\x00\xff\r\n\t", "#")
	got, ok := proto.SplitArgs([]byte(formatCommand(args)))
	if !ok || !slices.EqualFunc(got, args, bytes.Equal) {
		t.Fatalf("SplitArgs(formatCommand(%q)) = %q, %v", args, got, ok)
	}
}

// TestCommandIntrospectionMatchesRedis compares, for every command
// presenced and redis-server both have, COMMAND INFO up to the key
// specifications (which presenced leaves empty: name, arity, flags, key
// positions and ACL categories, in Redis's order) and COMMAND DOCS
// field by field, a container's subcommands apart; and COMMAND LIST's
// filters among those commands.
func TestCommandIntrospectionMatchesRedis(t *testing.T) {
	d := newDiffer(t)
	do := func(target *diffTarget, args ...string) []byte {
		reply, err := target.do(argv(args...))
		if err != nil {
			t.Fatal(err)
		}
		return reply
	}
	elements := func(target *diffTarget, what string, raw []byte) [][]byte {
		_, elems, ok := arrayElements(raw)
		if !ok {
			t.Fatalf("%s: %s: %q is no array", target.name, what, raw)
		}
		return elems
	}
	names := func(target *diffTarget, filter ...string) map[string]bool {
		out := map[string]bool{}
		for _, e := range elements(target, "COMMAND LIST", do(target, append([]string{"COMMAND", "LIST"}, filter...)...)) {
			_, name, _ := bytes.Cut(e, []byte("\r\n"))
			out[string(bytes.TrimSuffix(name, []byte("\r\n")))] = true
		}
		return out
	}
	theirs, ours := names(d.ref), names(d.sut)
	var shared []string
	for name := range ours {
		if theirs[name] {
			shared = append(shared, name)
		}
	}
	if len(shared) < 100 {
		t.Fatalf("only %d commands in common", len(shared))
	}
	info := func(target *diffTarget, name string) [][]byte {
		outer := elements(target, "COMMAND INFO "+name, do(target, "COMMAND", "INFO", name))
		if len(outer) != 1 {
			t.Fatalf("%s: COMMAND INFO %s: %q", target.name, name, outer)
		}
		fields := elements(target, "COMMAND INFO "+name, outer[0])
		if len(fields) != 10 {
			t.Fatalf("%s: COMMAND INFO %s: %q", target.name, name, fields)
		}
		// Not the tips and key specifications presenced leaves out, nor
		// the subcommands, compared one by one; but whether there are
		// any.
		return append(fields[:7], fields[9][:1])
	}
	// Redis 7.0 documents CONFIG GET's, PSUBSCRIBE's and MODULE LOADEX's
	// (ARGS) repeated argument as a block of one argument; presenced, as
	// the argument repeated.
	oddArguments := map[string]bool{"config|get": true, "psubscribe": true, "module|loadex": true}
	docs := func(target *diffTarget, name string) map[string]string {
		outer := elements(target, "COMMAND DOCS "+name, do(target, "COMMAND", "DOCS", name))
		if len(outer) != 2 {
			t.Fatalf("%s: COMMAND DOCS %s: %q", target.name, name, outer)
		}
		fields := elements(target, "COMMAND DOCS "+name, outer[1])
		out := map[string]string{}
		for i := 0; i+1 < len(fields); i += 2 {
			out[string(fields[i])] = string(fields[i+1])
		}
		delete(out, "$11\r\nsubcommands\r\n")
		if oddArguments[name] {
			delete(out, "$9\r\narguments\r\n")
		}
		return out
	}
	for _, proto := range []string{"2", "3"} {
		do(d.ref, "HELLO", proto)
		do(d.sut, "HELLO", proto)
		for _, name := range shared {
			if got, want := info(d.sut, name), info(d.ref, name); !slices.EqualFunc(got, want, bytes.Equal) {
				t.Errorf("RESP%s: COMMAND INFO %s: %q, redis-server: %q", proto, name, got, want)
			}
			if got, want := docs(d.sut, name), docs(d.ref, name); !maps.Equal(got, want) {
				t.Errorf("RESP%s: COMMAND DOCS %s: %q, redis-server: %q", proto, name, got, want)
			}
		}
	}
	// COMMAND LIST's filters pick the same commands among those both
	// have.
	for _, filter := range [][]string{
		{"ACLCAT", "transaction"}, {"ACLCAT", "Connection"}, {"ACLCAT", "keyspace"}, {"ACLCAT", "dangerous"},
		{"ACLCAT", "read"}, {"ACLCAT", "nosuch"}, {"MODULE", "x"}, {"PATTERN", "*bit*"},
	} {
		args := append([]string{"FILTERBY"}, filter...)
		got, want := names(d.sut, args...), names(d.ref, args...)
		maps.DeleteFunc(got, func(name string, _ bool) bool { return !theirs[name] })
		maps.DeleteFunc(want, func(name string, _ bool) bool { return !ours[name] })
		if !maps.Equal(got, want) {
			t.Errorf("COMMAND LIST FILTERBY %s: %v, redis-server: %v", filter, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
		}
	}
}

// TestCommandGetKeysMatchesRedis asks both servers for the keys of every
// line of the testdata/diff scripts whose command redis-server has too,
// and of calls at the edges (MIGRATE's forms, unknown commands and
// subcommands, wrong arities), and compares the replies.
func TestCommandGetKeysMatchesRedis(t *testing.T) {
	d := newDiffer(t)
	theirs := map[string]bool{}
	_, names, ok := arrayElements(mustDo(t, d.ref, argv("COMMAND", "LIST")))
	if !ok {
		t.Fatal("COMMAND LIST of redis-server is no array")
	}
	for _, n := range names {
		theirs[bulkBody(t, string(n))] = true
	}
	files, err := filepath.Glob(filepath.Join("testdata", "diff", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in testdata/diff: %v", err)
	}
	var calls [][][]byte
	for _, file := range files {
		cmds, err := readScript(file)
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, cmds...)
	}
	for _, line := range [][]string{
		{"migrate", "h", "1", "", "0", "10", "KEYS", "a", "b"}, {"migrate", "h", "1", "", "0", "10"},
		{"migrate", "h", "1", "k", "0", "10", "KEYS", "a"}, {"migrate", "h", "1", "", "0", "10", "AUTH", "keys", "KEYS", "x"},
		{"migrate", "h", "1", "", "0", "10", "AUTH2", "u", "keys", "COPY", "keys", "y"}, {"migrate", "h", "1", "", "0", "10", "KEYS"},
		{"MIGRATE", "h", "1", "k", "0", "10", "copy", "replace"}, {"nosuch", "a"}, {"get", "a", "b"}, {"GeT", "a"},
		{"object", "nosuch", "k"}, {"object", "encoding", "k"}, {"client", "list"}, {"mset", "a", "1", "b"},
		{"command", "getkeys", "get", "a"}, {"bitop", "and", "d", "a", "b"}, {"lcs", "a", "b", "IDX"},
	} {
		calls = append(calls, argv(line...))
	}
	compared := 0
	for _, call := range calls {
		if len(call) == 0 || (proto.Lookup(call[0]) != nil && !theirs[strings.ToLower(string(call[0]))]) {
			continue // a command of presenced's own
		}
		if strings.EqualFold(string(call[0]), "pfmerge") && len(call) == 2 {
			// Redis 7.0 finds no keys in PFMERGE without source keys,
			// whose key specification starts past the end; presenced
			// gives the destination.
			continue
		}
		args := append(argv("COMMAND", "GETKEYS"), call...)
		if got, want := mustDo(t, d.sut, args), mustDo(t, d.ref, args); !bytes.Equal(got, want) {
			t.Errorf("%s: %q, redis-server: %q", formatCommand(args), got, want)
		}
		compared++
	}
	if compared < 500 {
		t.Fatalf("only %d calls compared", compared)
	}
}
