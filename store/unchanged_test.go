package store

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/presenced/presenced/internal/bitprobe"
)

// TestReadUnchanged checks ReadUnchanged against applying: whenever it
// answers a batch, applying the batch gives the same replies and leaves
// every key's bytes and TTL as they were; when it declines, it wrote
// nothing. Both outcomes must occur. Setting an armed bit to 1 (which
// drops its deadline) or a bit of a key a bit-TTL rule covers (which
// re-arms it) is a change.
func TestReadUnchanged(t *testing.T) {
	rnd := rand.New(rand.NewSource(1))
	s := New()
	keys := []string{"bm", "raw", "ttl", "missing", "armed", "ruled"}
	const now = 1_000_000
	do(s, now, "SET raw \x05\x80")
	do(s, now, "SETBIT ttl 3 1")
	do(s, now, "PEXPIRE ttl 500")
	do(s, now, "BITTTLRULES ruled 100")
	do(s, now, "SETBIT ruled 20 1")
	do(s, now, "BITSETEX armed 100 1 2 5 8 13 21")
	do(s, now, "SETBIT armed 23 0")
	answered, declined := 0, 0
	for i := range 3000 {
		var batch []Command
		for range 1 + rnd.Intn(4) {
			args := []string{"SETBIT", keys[rnd.Intn(len(keys))], strconv.Itoa(rnd.Intn(24)), strconv.Itoa(rnd.Intn(2))}
			switch rnd.Intn(20) {
			case 0:
				args[0] = "GETBIT"
				args = args[:3]
			case 1:
				args[2] = "-1"
			case 2:
				args[3] = "01"
			case 3:
				args[0] = "SETRANGE" // four arguments, but no SETBIT
			}
			batch = append(batch, bmCommand(args...))
		}
		at := int64(now + i)
		if checkUnchanged(t, s, batch, at, func() string { return snapshotKeys(s, at, keys) }) {
			answered++
		} else {
			declined++
		}
	}
	if answered < 100 || declined < 100 {
		t.Fatalf("answered %d batches, declined %d: the test does not exercise both", answered, declined)
	}
}

// TestReadUnchangedRuns checks ReadUnchanged against applying, as
// TestReadUnchanged does, on pipelines of heartbeats: runs of SETBITs to 1
// on one key, long and short, of bits set and, here and there, a bit that
// is not set, beyond the string, armed, or a command that breaks the run
// (another key or database, a bad offset, a 0). The key is large enough
// for array and bitmap containers; a key a bit-TTL rule covers is never
// unchanged.
func TestReadUnchangedRuns(t *testing.T) {
	rnd := rand.New(rand.NewSource(2))
	s := New()
	const now, length = 1_000_000, 300_000 // bits
	set := func(key string, offs ...int) {
		batch := make([]Command, len(offs))
		for i, off := range offs {
			batch[i] = bmCommand("SETBIT", key, strconv.Itoa(off), "1")
		}
		s.Apply(batch, now, &Replies{})
	}
	var offs []int // set in "bm": multiples of 3 below 150,000, of 97 above
	for off := 0; off < length; off += 3 {
		if off < length/2 || off%97 == 0 {
			offs = append(offs, off)
		}
	}
	set("bm", offs...)
	set("bm", length-1)
	set("ruled", offs...)
	do(s, now, "BITTTLRULES ruled 100")
	armed := []int{offs[77], offs[len(offs)-77]}
	answered, declined := 0, 0
	for range 600 {
		do(s, now+1, fmt.Sprint("BITSETEX bm 100 ", armed[0], " ", armed[1])) // again, if a batch dropped them
		var batch []Command
		for range 1 + rnd.Intn(3) {
			key := "bm"
			if rnd.Intn(6) == 0 {
				key = "ruled"
			}
			for range 1 + rnd.Intn([]int{3, 70, 150}[rnd.Intn(3)]) {
				batch = append(batch, bmCommand("SETBIT", key, strconv.Itoa(offs[rnd.Intn(len(offs))]), "1"))
			}
		}
		for j := range batch {
			cmd := &batch[j]
			switch rnd.Intn(800) {
			case 0:
				cmd.Args[2] = []byte(strconv.Itoa(1 + 3*rnd.Intn(length/6))) // not set
			case 1:
				cmd.Args[2] = []byte(strconv.Itoa(length + rnd.Intn(100))) // beyond
			case 2:
				cmd.Args[2] = []byte(strconv.Itoa(armed[rnd.Intn(2)]))
			case 3:
				cmd.Args[1] = []byte("other")
			case 4:
				cmd.DB = []int{1, NumDBs}[rnd.Intn(2)]
			case 5:
				cmd.Args[2] = []byte("-1")
			case 6:
				cmd.Args[3] = []byte("0")
			}
		}
		if rnd.Intn(20) == 0 { // the first of a run is checked before the rest
			batch[0].Args[2] = []byte(strconv.Itoa(armed[rnd.Intn(2)]))
		}
		if checkUnchanged(t, s, batch, now+1, func() string { return strconv.FormatUint(s.Digest(), 16) }) {
			answered++
		} else {
			declined++
		}
	}
	if answered < 100 || declined < 100 {
		t.Fatalf("answered %d batches, declined %d: the test does not exercise both", answered, declined)
	}
}

// TestReadUnchangedRunGroups checks runs of heartbeats around the groups
// that a run is read in (bitprobe.Group): runs of every length near a
// multiple of it, all set or with one bit not set at a group's edges,
// alone or followed by a SETBIT to 0 that changes nothing.
func TestReadUnchangedRunGroups(t *testing.T) {
	s := New()
	const now, set, unset = 1_000_000, 1_000, 5_000 // bits 0..set-1 and 2*unset are set
	batch := []Command{bmCommand("SETBIT", "bm", strconv.Itoa(2*unset), "1")}
	for off := range set {
		batch = append(batch, bmCommand("SETBIT", "bm", strconv.Itoa(off), "1"))
	}
	s.Apply(batch, now, &Replies{})
	g := bitprobe.Group
	for _, n := range []int{1, g - 1, g, g + 1, 2*g - 1, 2 * g, 2*g + 1, probeChunk - 1, probeChunk, probeChunk + 1, 2*probeChunk + 3} {
		for _, newBit := range []int{-1, 0, g - 1, g, g + 1, n - 1} {
			for _, followed := range []bool{false, true} {
				if newBit >= n {
					continue
				}
				batch = batch[:0]
				for i := range n {
					off := i * 7 % set
					if i == newBit {
						off = unset + i
					}
					batch = append(batch, bmCommand("SETBIT", "bm", strconv.Itoa(off), "1"))
				}
				if followed {
					batch = append(batch, bmCommand("SETBIT", "bm", strconv.Itoa(unset), "0"))
				}
				if got, want := checkUnchanged(t, s, batch, now, func() string { return strconv.FormatUint(s.Digest(), 16) }), newBit < 0; got != want {
					t.Fatalf("%d SETBITs, bit %d new, followed %v: answered %v, want %v", n, newBit, followed, got, want)
				}
				if newBit >= 0 {
					do(s, now, fmt.Sprint("SETBIT bm ", unset+newBit, " 0")) // applying set it
				}
			}
		}
	}
}

// checkUnchanged reads batch with ReadUnchanged, then applies it, at time
// at, and checks that they agree: if ReadUnchanged answered, applying
// replies the same and leaves state as it was; if it declined, it wrote
// nothing. It reports whether ReadUnchanged answered.
func checkUnchanged(t *testing.T, s *Store, batch []Command, at int64, state func() string) bool {
	t.Helper()
	before := state()
	var got Replies
	ok := answersUnchanged(s, batch, at, &got)
	var want Replies
	s.Apply(batch, at, &want)
	if !ok {
		if got.Len() != 0 || len(got.Ends) != 0 {
			t.Fatalf("%s: declined but wrote %q", describe(batch), got.B)
		}
		return false
	}
	if string(got.B) != string(want.B) || len(got.Ends) != len(batch) {
		t.Fatalf("%s: answered %q (%d replies), applying answers %q", describe(batch), got.B, len(got.Ends), want.B)
	}
	if after := state(); after != before {
		t.Fatalf("%s: answered as unchanged, but applying changed %s into %s", describe(batch), before, after)
	}
	return true
}

// snapshotKeys describes the bytes and TTLs of keys at time now.
func snapshotKeys(s *Store, now int64, keys []string) string {
	out := ""
	for _, k := range keys {
		out += k + "=" + execAt(s, now, 0, []byte("GET"), []byte(k)) + execAt(s, now, 0, []byte("PTTL"), []byte(k))
		for off := range 24 {
			out += execAt(s, now, 0, []byte("BITPTTL"), []byte(k), []byte(strconv.Itoa(off)))
		}
		out += " "
	}
	return out
}

func describe(batch []Command) string {
	out := ""
	for _, c := range batch {
		out += fmt.Sprintf("%q ", c.Args)
	}
	return out
}

// TestReadUnchangedDeclinesChangesWithoutTheLock checks that a batch
// known to change the store, a BITSETEX or a SETBIT that a bit-TTL rule
// re-arms, is declined without waiting for the lock: an Apply holds it
// while its callers' next batches come in.
func TestReadUnchangedDeclinesChangesWithoutTheLock(t *testing.T) {
	s := New()
	const now = 1_000_000
	do(s, now, "BITTTLRULES online:* 100")
	do(s, now, "SETBIT online:1 5 1")
	do(s, now, "BITSETEX armed 100 5")
	s.mu.Lock()
	declined := make(chan bool)
	go func() {
		var out Replies
		declined <- !answersUnchanged(s, []Command{bmCommand("SETBIT", "online:1", "5", "1")}, now, &out) &&
			!answersUnchanged(s, []Command{bmCommand("BITSETEX", "armed", "100", "5")}, now, &out)
	}()
	select {
	case ok := <-declined:
		s.mu.Unlock()
		if !ok {
			t.Fatal("a batch that re-arms a bit was answered as unchanged")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadUnchanged waited for the write lock")
	}
	// Once the rules are gone the same SETBIT changes nothing.
	do(s, now, "BITTTLRULES")
	do(s, now, "SETBIT online:1 5 1")
	var out Replies
	if !answersUnchanged(s, []Command{bmCommand("SETBIT", "online:1", "5", "1")}, now, &out) || string(out.B) != ":1\r\n" {
		t.Fatalf("SETBIT of a set bit without rules: declined, or answered %q", out.B)
	}
}

// TestReadUnchangedDeclinesEmptyCommands checks that a command without
// arguments, alone or after a SETBIT, is declined rather than read.
func TestReadUnchangedDeclinesEmptyCommands(t *testing.T) {
	s := New()
	do(s, 1, "SETBIT k 5 1")
	var out Replies
	for _, batch := range [][]Command{{{}}, {bmCommand("SETBIT", "k", "5", "1"), {DB: 0}}} {
		if answersUnchanged(s, batch, 1, &out) || len(out.B) != 0 {
			t.Fatalf("%v: answered as unchanged: %q", batch, out.B)
		}
	}
}

// answersUnchanged reports whether s.ReadUnchanged answered cmds, with a
// store that is current.
func answersUnchanged(s *Store, cmds []Command, now int64, out *Replies) bool {
	ok, err := s.ReadUnchanged(cmds, now, out, func() error { return nil })
	return ok && err == nil
}

// TestChangesCountWrites checks that Changes moves with every way the
// store can change, stays put across reads, and that answerUnchanged
// returns the count its answer was read at.
func TestChangesCountWrites(t *testing.T) {
	s := New()
	do(s, 1, "SETBIT k 5 1")
	var out Replies
	before := s.Changes()
	s.Read([]Command{bmCommand("GETBIT", "k", "5")}, 1, &out)
	at, ok := s.answerUnchanged([]Command{bmCommand("SETBIT", "k", "5", "1")}, 1, &out)
	if !ok || at != before || s.Changes() != before {
		t.Fatalf("reads moved Changes from %d to %d, or answerUnchanged answered %v at %d", before, s.Changes(), ok, at)
	}
	snap := s.Snapshot()
	var buf bytes.Buffer
	if _, err := snap.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(){
		"Apply":      func() { do(s, 2, "SETBIT k 6 1") },
		"ApplyEach":  func() { s.ApplyEach(3, [][]Command{{bmCommand("SETBIT", "k", "7", "1")}}, []*Replies{{}}, nil) },
		"a tick":     func() { s.Apply(nil, 4, &Replies{}) },
		"Restore":    func() { s.Restore(bytes.NewReader(buf.Bytes())) },
		"LoadBitmap": func() { s.LoadBitmap(0, "past", roaring.BitmapOf(1, 2), 1) },
		"Compact":    func() { s.Compact() },
		"SetHistory": func() { s.SetHistory(nil, HistoryConfig{}) },
	} {
		was := s.Changes()
		change()
		if s.Changes() == was {
			t.Errorf("%s left Changes at %d", name, was)
		}
	}
}

// TestReadUnchangedChecksAgainAfterAChange checks what ReadUnchanged
// answers when the store changes while it makes the store current (an
// Apply that the read barrier waited for): the batch is checked against
// the new state. A failing barrier leaves nothing in out.
func TestReadUnchangedChecksAgainAfterAChange(t *testing.T) {
	heartbeat := []Command{bmCommand("SETBIT", "k", "5", "1"), bmCommand("SETBIT", "k", "9", "1")}
	for _, tc := range []struct {
		name      string
		meanwhile string // applied by the barrier, if not empty
		fails     bool
		want      string // the replies, empty when declined
	}{
		{name: "nothing applied", want: ":1\r\n:1\r\n"},
		{name: "another key changed", meanwhile: "SETBIT other 5 0", want: ":1\r\n:1\r\n"},
		{name: "the bit cleared", meanwhile: "SETBIT k 9 0"},
		{name: "the key deleted", meanwhile: "DEL k"},
		{name: "a rule now covers the key", meanwhile: "BITTTLRULES k 90"},
		{name: "the barrier failed", fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New()
			do(s, 1, "SETBIT k 5 1")
			do(s, 1, "SETBIT k 9 1")
			out := Replies{}
			out.Int(7) // a reply before the batch's, which must stay
			out.Ends = append(out.Ends, out.Len())
			barrierErr := errors.New("no leader")
			ok, err := s.ReadUnchanged(heartbeat, 2, &out, func() error {
				if tc.meanwhile != "" {
					do(s, 2, tc.meanwhile)
				}
				if tc.fails {
					return barrierErr
				}
				return nil
			})
			if tc.fails != (err == barrierErr) {
				t.Fatalf("error %v", err)
			}
			if got := string(out.B[len(":7\r\n"):]); ok != (tc.want != "") || got != tc.want || len(out.Ends) != 1+strings.Count(tc.want, "\r\n") {
				t.Fatalf("answered %v with %q (%d ends), want %q", ok, got, len(out.Ends), tc.want)
			}
		})
	}
}

// BenchmarkReadUnchanged checks batches of 64 heartbeats on a key of 16M
// ids in 100M: of users online (all set, answered), and of random ids
// (declined, mostly at the first; one in six past it).
func BenchmarkReadUnchanged(b *testing.B) {
	s := New()
	const space, ids = 100_000_000, 16_000_000
	rnd := rand.New(rand.NewSource(1))
	online := make([]int, 0, ids)
	for len(online) < ids {
		var batch []Command
		for range 4096 {
			off := rnd.Intn(space)
			online = append(online, off)
			batch = append(batch, bmCommand("SETBIT", "hb", strconv.Itoa(off), "1"))
		}
		s.Apply(batch, 1, &Replies{})
	}
	for _, bc := range []struct {
		name string
		id   func() int
	}{
		{"online", func() int { return online[rnd.Intn(len(online))] }},
		{"random", func() int { return rnd.Intn(space) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			batches := make([][]Command, 256)
			for i := range batches {
				for range 64 {
					batches[i] = append(batches[i], bmCommand("SETBIT", "hb", strconv.Itoa(bc.id()), "1"))
				}
			}
			var out Replies
			b.ResetTimer()
			for i := range b.N {
				out.B, out.Ends = out.B[:0], out.Ends[:0]
				answersUnchanged(s, batches[i%len(batches)], 1, &out)
			}
		})
	}
}

// TestReadUnchangedHyperLogLogs checks ReadUnchanged on PFCOUNTs and
// PFADDs against applying them, as TestReadUnchanged does on SETBITs: it
// answers a PFCOUNT of one key whose count is cached, in a value already
// its own raw string or in bitmap form, and of a key missing or no
// HyperLogLog, and a PFADD of elements counted already; it declines one
// that would compute the count and cache it, raise a register, or make
// the value a raw string, and applying such a batch then changes the key.
func TestReadUnchangedHyperLogLogs(t *testing.T) {
	rnd := rand.New(rand.NewSource(2))
	s := New()
	const now = 1_000_000
	keys := []string{"h", "short", "bits", "plain", "missing", "corrupt"}
	do(s, now, "PFADD h a b c")
	do(s, now, "SET short HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff")
	for i, b := range newHLL() {
		for bit := range 8 {
			if b&(0x80>>bit) != 0 {
				do(s, now, "SETBIT bits "+strconv.Itoa(8*i+bit)+" 1")
			}
		}
	}
	do(s, now, "SET plain hello")
	do(s, now, "SET corrupt HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x40\x63")
	state := func() string {
		out := ""
		for _, k := range keys {
			out += fmt.Sprint(k, "=", do(s, now, "GET "+k), do(s, now, "OBJECT ENCODING "+k), s.Watch(0, []byte(k)).Version, " ")
		}
		return out
	}
	// The HyperLogLog SET whole is an embstr, made raw by a count: a
	// change, though the count was cached; the next count is none.
	short := []Command{bmCommand("PFCOUNT", "short")}
	if checkUnchanged(t, s, short, now, state) || !checkUnchanged(t, s, short, now, state) {
		t.Fatal("PFCOUNT of an embstr HyperLogLog answered as unchanged, or of a raw one declined")
	}
	answered, declined := 0, 0
	for i := range 400 {
		if rnd.Intn(4) == 0 {
			do(s, now, "PFADD "+keys[rnd.Intn(2)]+" "+strconv.Itoa(rnd.Intn(1000)))
		}
		var batch []Command
		pfadd := rnd.Intn(2) == 0
		for range 1 + rnd.Intn(3) {
			key := keys[rnd.Intn(len(keys))]
			if !pfadd {
				batch = append(batch, bmCommand("PFCOUNT", key))
				continue
			}
			if key == "bits" {
				key = "h" // stays in bitmap form, for the check at the end
			}
			args := []string{"PFADD", key}
			for range rnd.Intn(3) {
				args = append(args, strconv.Itoa(rnd.Intn(1200)))
			}
			batch = append(batch, bmCommand(args...))
		}
		if checkUnchanged(t, s, batch, int64(now+i), state) {
			answered++
		} else {
			declined++
		}
	}
	if answered < 50 || declined < 50 {
		t.Fatalf("answered %d batches, declined %d: the test does not exercise both", answered, declined)
	}
	if got := do(s, now, "OBJECT ENCODING bits"); got != "$7\r\nroaring\r\n" {
		t.Fatalf("a HyperLogLog in bitmap form, counted, is %q", got)
	}
}
