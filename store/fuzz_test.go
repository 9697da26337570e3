package store

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/presenced/presenced/proto"
	"github.com/presenced/presenced/server/redisserver"
)

// fuzzNames are the commands the store executes, plus one it does not.
var fuzzNames = func() []string {
	var names []string
	for _, spec := range proto.Commands {
		if Handles(spec) {
			names = append(names, spec.Name)
		}
	}
	return append(names, "nosuchcommand")
}()

// fuzzWords are the arguments a fuzzed command picks from: keys, small
// integers and offsets (valid and not), keywords, patterns, encodings and
// floats. New words go at the end, so that the corpus keeps its meaning.
var fuzzWords = []string{
	"k0", "k1", "k2", "k3",
	"0", "1", "2", "3", "7", "8", "15", "16", "100", "1000", "65536", "1048575",
	"-1", "-2", "-100", "4294967296", "9223372036854775807", "-9223372036854775808",
	"01", "+1", "x", "", "1.5",
	"NX", "XX", "GT", "LT", "EX", "PX", "EXAT", "PXAT", "KEEPTTL", "PERSIST", "GET",
	"BYTE", "BIT", "AND", "OR", "XOR", "NOT", "SET", "INCRBY", "OVERFLOW", "WRAP", "SAT", "FAIL",
	"u1", "i1", "u8", "i8", "i16", "u63", "i64", "u64", "#1", "#-1",
	"MATCH", "COUNT", "TYPE", "string", "REPLACE", "DB", "ASYNC", "SYNC", "*", "k?", "[k]*",
	"ENCODING", "REFCOUNT", "FREQ", "IDLETIME", "HELP", "1700000000", "1700000000000",
	"LIMIT", "k*", "300", "7000", "30000", "PURGE", "INFO",
	"1e3", "-0.5", "0x1p3", "inf", "1e4932", "IDX", "LEN", "MINMATCHLEN", "WITHMATCHLEN",
}

// fuzzStep is one command of a fuzzed program, with the database, whether
// it goes through Read, and how far time moves before it.
type fuzzStep struct {
	cmd     Command
	read    bool
	advance int64
}

// decodeProgram turns fuzz input into commands. Each command is a head
// byte (bit 0: database 0 or 1; bit 1: Read rather than Apply; bits 2-7:
// time to move, in quarter seconds), a command name index, an argument
// count, then per argument a byte: below 0xf0 an index in fuzzWords,
// else 0xf0 plus the length of raw bytes that follow.
func decodeProgram(data []byte) []fuzzStep {
	var steps []fuzzStep
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	for len(data) > 0 && len(steps) < 64 {
		head := next()
		args := [][]byte{[]byte(fuzzNames[int(next())%len(fuzzNames)])}
		for n := int(next()) % 12; n > 0; n-- {
			w := next()
			if w < 0xf0 {
				args = append(args, []byte(fuzzWords[int(w)%len(fuzzWords)]))
				continue
			}
			size := min(int(w&0x0f), len(data))
			args = append(args, append([]byte(nil), data[:size]...))
			data = data[size:]
		}
		boundOffsets(args)
		steps = append(steps, fuzzStep{
			cmd:     Command{DB: int(head & 1), Args: args},
			read:    head&2 != 0,
			advance: int64(head>>2) * 250,
		})
	}
	return steps
}

// maxFuzzOffset bounds the offsets of the commands that grow a string, so
// that no fuzzed string reaches hundreds of MB; the value tests cover the
// large offsets.
const maxFuzzOffset = 1 << 16

// boundOffsets replaces, in commands that grow strings, offsets beyond
// maxFuzzOffset (also "#n" ones) by one that is out of range.
func boundOffsets(args [][]byte) {
	switch string(bytes.ToLower(args[0])) {
	case "setbit", "setrange", "bitfield", "bitsetex", "bitpsetex":
	default:
		return
	}
	for i, a := range args[1:] {
		if v, err := strconv.ParseInt(strings.TrimPrefix(string(a), "#"), 10, 64); err == nil && v > maxFuzzOffset {
			args[i+1] = []byte("9223372036854775807")
		}
	}
}

// encodeProgram is the inverse of decodeProgram for seeds: each command is
// written as words, run in database 0 through Apply, one second apart.
func encodeProgram(cmds ...string) []byte {
	var b []byte
	for _, c := range cmds {
		words := strings.Fields(c)
		b = append(b, 4<<2, byte(slices.Index(fuzzNames, words[0])), byte(len(words)-1))
		for _, w := range words[1:] {
			if i := slices.Index(fuzzWords, w); i >= 0 {
				b = append(b, byte(i))
			} else {
				b = append(b, 0xf0|byte(len(w)))
				b = append(b, w...)
			}
		}
	}
	return b
}

// fuzzRun executes one command and checks it got exactly one well-formed
// reply; it returns the reply.
func fuzzRun(t *testing.T, s *Store, cmd Command, now int64, read bool) []byte {
	t.Helper()
	var out Replies
	if read {
		s.Read([]Command{cmd}, now, &out)
	} else {
		s.Apply([]Command{cmd}, now, &out)
	}
	if len(out.Ends) != 1 || out.Ends[0] != len(out.B) {
		t.Fatalf("%q: %d replies, ends %v, %d bytes", cmd.Args, len(out.Ends), out.Ends, len(out.B))
	}
	reply, err := redisserver.ReadReply(bufio.NewReader(bytes.NewReader(out.B)))
	if err != nil || len(reply) != len(out.B) {
		t.Fatalf("%q: reply %q is not one RESP reply (%d bytes read, %v)", cmd.Args, out.B, len(reply), err)
	}
	return out.B
}

// fuzzReadArray runs a read command whose reply is an array of bulk strings.
func fuzzReadArray(t *testing.T, s *Store, db int, now int64, args ...string) []string {
	t.Helper()
	cmd := Command{DB: db}
	for _, a := range args {
		cmd.Args = append(cmd.Args, []byte(a))
	}
	reply := fuzzRun(t, s, cmd, now, true)
	var p proto.Parser
	items, _, err := p.Parse(reply, proto.Limits{MaxBulkLen: 1 << 40})
	if err != nil || reply[0] != '*' {
		t.Fatalf("%q: reply %q is not an array", args, reply)
	}
	return fuzzStrs(items)
}

func fuzzStrs(b [][]byte) []string {
	out := make([]string, len(b))
	for i, x := range b {
		out[i] = string(x)
	}
	sort.Strings(out)
	return out
}

// fuzzDump describes the state of database db: each key with the SHA-256
// of its value and its deadline.
func fuzzDump(t *testing.T, s *Store, db int, now int64) string {
	var b bytes.Buffer
	for _, k := range fuzzReadArray(t, s, db, now, "keys", "*") {
		get := fuzzRun(t, s, Command{DB: db, Args: [][]byte{[]byte("get"), []byte(k)}}, now, true)
		ttl := fuzzRun(t, s, Command{DB: db, Args: [][]byte{[]byte("pexpiretime"), []byte(k)}}, now, true)
		fmt.Fprintf(&b, "%q=%x %q\n", k, sha256.Sum256(get), ttl)
	}
	return b.String()
}

// fuzzCheckConsistent checks that DBSIZE, KEYS * and EXISTS agree, and
// that the keyspace info counts at least the live keys: a key written
// with a deadline already past (SET k v EXAT 1) stays stored, as in
// Redis, until expiry reclaims it. After a tick at now (ticked) no
// expired key may remain, so the info counts exactly the live keys.
func fuzzCheckConsistent(t *testing.T, s *Store, now int64, ticked bool) {
	t.Helper()
	info := map[int]KeyspaceInfo{}
	for _, ks := range s.Keyspace() {
		info[ks.DB] = ks
	}
	for db := 0; db < 2; db++ {
		keys := fuzzReadArray(t, s, db, now, "keys", "*")
		size := fuzzRun(t, s, Command{DB: db, Args: [][]byte{[]byte("dbsize")}}, now, true)
		if want := fmt.Sprintf(":%d\r\n", len(keys)); string(size) != want {
			t.Fatalf("db %d: DBSIZE %q, KEYS * has %d keys", db, size, len(keys))
		}
		in := info[db]
		if in.Keys < len(keys) || (ticked && in.Keys != len(keys)) || in.Expires > in.Keys || in.Expires < 0 {
			t.Fatalf("db %d: keyspace info %+v, KEYS * has %d keys (after a tick: %v)", db, in, len(keys), ticked)
		}
		for _, k := range keys {
			ex := fuzzRun(t, s, Command{DB: db, Args: [][]byte{[]byte("exists"), []byte(k)}}, now, true)
			if string(ex) != ":1\r\n" {
				t.Fatalf("db %d: KEYS * lists %q, EXISTS says %q", db, k, ex)
			}
		}
	}
}

// fuzzSeeds are command sequences a presence service and its tools send.
var fuzzSeeds = [][]string{
	{"setbit k0 1000 1", "setbit k0 7 1", "bitcount k0", "bitcount k0 0 -1 BIT", "bitpos k0 1 0 -1 BYTE", "getbit k0 1000", "strlen k0", "get k0"},
	{"setbit k0 100 1", "setbit k1 3 1", "bitop OR k2 k0 k1", "bitop AND k3 k0 k1", "bitop NOT k3 k2", "bitop XOR k2 k2 k3", "bitcount k2"},
	{"set k0 hello", "append k0 world", "setbit k0 0 1", "getrange k0 1 -2", "setrange k0 100 x", "get k0", "type k0", "object ENCODING k0"},
	{"set k0 1 EX 1", "expire k1 10", "setbit k1 1 1", "expire k1 2 NX", "pexpire k1 5000 GT", "ttl k1", "persist k1", "pttl k1", "expiretime k0"},
	{"bitfield k0 SET u8 0 255 GET i8 0", "bitfield k0 OVERFLOW SAT INCRBY u8 0 100", "bitfield k0 OVERFLOW FAIL INCRBY i16 #1 -100", "bitfield_ro k0 GET u63 0"},
	{"mset k0 1 k1 2", "incr k0", "incrby k1 -100", "decrby k0 9223372036854775807", "mget k0 k1 k2", "msetnx k2 x k3 y", "getdel k0", "getex k1 PX 100"},
	{"set k0 x", "rename k0 k1", "copy k1 k2", "copy k1 k3 DB 1", "move k2 1", "swapdb 0 1", "keys *", "scan 0 MATCH k? COUNT 100", "randomkey", "flushdb", "dbsize"},
	{"bitsetex k0 1 7 8 100", "bitpsetex k0 300 7 65536", "bitttl k0 7", "bitpttl k0 8", "bitrecent k0 1 LIMIT 2",
		"setbit k0 7 0", "bitttlrules k* 1", "setbit k1 3 1", "bitfield k1 SET u8 0 255", "bitpttl k1 3", "bitttlrules"},
	{"bitpsetex k0 7000 1 2 3", "rename k0 k1", "copy k1 k2", "move k2 1", "setrange k1 0 x", "append k1 x", "bitrecent k1 0", "swapdb 0 1", "bitpsetex k1 30000 1000"},
	{"set k0 ohmytext", "set k1 mynewtext", "lcs k0 k1 IDX MINMATCHLEN 2 WITHMATCHLEN", "lcs k1 k2 LEN", "lcs k0 k1"},
	{"set k0 10.5", "incrbyfloat k0 0.1", "incrbyfloat k1 1e3", "incrbyfloat k0 inf", "incrbyfloat k1 1e4932", "get k0", "object ENCODING k1"},
	{"setbit k0 65536 1", "set k1 x GET", "set k1 y NX GET", "set k1 z XX KEEPTTL", "setex k2 100 v", "psetex k3 1 v", "getset k2 w", "setnx k2 v", "del k0 k1 k2 k3"},
}

// FuzzApply runs command sequences built from the input on two stores:
// every command gets one well-formed reply, the keyspace stays
// consistent, a Read changes nothing, and Apply is deterministic.
func FuzzApply(f *testing.F) {
	for _, name := range fuzzNames {
		f.Add(encodeProgram("setbit k0 7 1", "set k1 100", name+" k0 1 2", name+" k1"))
	}
	for _, seed := range fuzzSeeds {
		f.Add(encodeProgram(seed...))
	}
	f.Add(encodeProgram("set k0 v EXAT 15", "touch k0")) // found by fuzzing
	f.Fuzz(func(t *testing.T, data []byte) {
		a, b := New(), New()
		a.SetHistory(&recordingSink{}, HistoryConfig{Interval: 1000}) // recording must not change the state
		now := int64(1_700_000_000_000)
		var lastRead Command // the read before, read again with the next
		for _, st := range decodeProgram(data) {
			now += st.advance
			read := st.read
			if spec := proto.Lookup(st.cmd.Args[0]); spec == nil || spec.Flags&proto.Write != 0 {
				read = false
			}
			before := ""
			if read {
				before = fuzzDump(t, a, 0, now) + fuzzDump(t, a, 1, now)
			}
			ra := fuzzRun(t, a, st.cmd, now, read)
			if read {
				if lastRead.Args != nil {
					fuzzCheckBatch(t, a, []Command{lastRead, st.cmd}, now)
				}
				lastRead = st.cmd
				if after := fuzzDump(t, a, 0, now) + fuzzDump(t, a, 1, now); after != before {
					t.Fatalf("Read %q changed the store:\n%s\nbecame\n%s", st.cmd.Args, before, after)
				}
				continue
			}
			rb := fuzzRun(t, b, st.cmd, now, false)
			name := string(bytes.ToLower(st.cmd.Args[0]))
			if !bytes.Equal(ra, rb) && name != "randomkey" && name != "scan" {
				t.Fatalf("%q: replies differ between stores: %q and %q", st.cmd.Args, ra, rb)
			}
			fuzzCheckConsistent(t, a, now, false)
			for _, s := range []*Store{a, b} {
				s.Apply(nil, now, &Replies{}) // a tick
			}
			fuzzCheckConsistent(t, a, now, true)
			fuzzCheckTimers(t, a)
		}
		if a.Digest() != b.Digest() {
			t.Fatalf("stores differ after the same commands")
		}
		for db := 0; db < 2; db++ {
			if da, db2 := fuzzDump(t, a, db, now), fuzzDump(t, b, db, now); da != db2 {
				t.Fatalf("stores differ after the same commands:\n%s\n%s", da, db2)
			}
		}
	})
}

// fuzzCheckBatch checks that reading cmds in one batch replies what
// reading them one at a time does (a run of GETBITs is read together).
func fuzzCheckBatch(t *testing.T, s *Store, cmds []Command, now int64) {
	t.Helper()
	for _, cmd := range cmds {
		if bytes.EqualFold(cmd.Args[0], []byte("randomkey")) {
			return
		}
	}
	want := readEach(s, cmds, now)
	var got Replies
	s.Read(cmds, now, &got)
	if !bytes.Equal(got.B, want.B) || !slices.Equal(got.Ends, want.Ends) {
		t.Fatalf("a batch of %d reads replies %q (ends %v), one at a time %q (ends %v)", len(cmds), got.B, got.Ends, want.B, want.Ends)
	}
}

// fuzzCheckTimers checks the invariants of every key's bit timers.
func fuzzCheckTimers(t *testing.T, s *Store) {
	t.Helper()
	s.mu.RLock()
	defer s.mu.RUnlock()
	for db, d := range s.mu.dbs {
		for _, e := range d.keys {
			checkTimerInvariants(t, s, db, e)
		}
	}
}

func TestFuzzProgramRoundTrip(t *testing.T) {
	for _, seed := range fuzzSeeds {
		steps := decodeProgram(encodeProgram(seed...))
		if len(steps) != len(seed) {
			t.Fatalf("%q decodes to %d commands", seed, len(steps))
		}
		for i, st := range steps {
			if got := string(bytes.Join(st.cmd.Args, []byte(" "))); got != seed[i] || st.read || st.cmd.DB != 0 {
				t.Errorf("%q decodes to %q (read %v, db %d)", seed[i], got, st.read, st.cmd.DB)
			}
		}
	}
}

// FuzzBitrestore feeds BITRESTORE arbitrary payloads: it replies an error
// or stores exactly the bitmap the payload holds, and never panics.
func FuzzBitrestore(f *testing.F) {
	for _, bits := range [][]uint32{nil, {0}, {1, 9, 100000}, {1<<32 - 1}} {
		bm := roaring.BitmapOf(bits...)
		bm.RunOptimize()
		b, _ := bm.ToBytes()
		f.Add(b)
	}
	dense := roaring.New()
	dense.AddRange(0, 70000)
	b, _ := dense.ToBytes()
	f.Add(b)
	f.Fuzz(func(t *testing.T, p []byte) {
		s := New()
		cmd := Command{Args: [][]byte{[]byte("BITRESTORE"), []byte("k"), []byte("536870912"), p}}
		reply := string(fuzzRun(t, s, cmd, testNow, false))
		want := roaring.New()
		_, err := want.ReadFrom(bytes.NewReader(p))
		switch reply {
		case ":1\r\n":
			if err != nil {
				t.Fatalf("stored a payload roaring rejects: %v", err)
			}
			s.mu.RLock()
			got := s.mu.dbs[0].keys["k"].v.bm
			s.mu.RUnlock()
			if !got.Equals(want) || got.Validate() != nil {
				t.Fatalf("stored %v, payload holds %v", got, want)
			}
		case "-" + errBadPayload + "\r\n":
		default:
			t.Fatalf("reply %q", reply)
		}
	})
}
