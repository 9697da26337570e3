package store

import (
	"fmt"
	"math/rand"
	"strconv"
	"testing"
	"time"
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
			}
			batch = append(batch, bmCommand(args...))
		}
		at := int64(now + i)
		before := snapshotKeys(s, at, keys)
		var got Replies
		ok := s.ReadUnchanged(batch, at, &got)
		var want Replies
		s.Apply(batch, at, &want)
		if !ok {
			declined++
			if got.Len() != 0 || len(got.Ends) != 0 {
				t.Fatalf("batch %d: declined but wrote %q", i, got.B)
			}
			continue
		}
		answered++
		if string(got.B) != string(want.B) {
			t.Fatalf("batch %d %s: answered %q, applying answers %q", i, describe(batch), got.B, want.B)
		}
		if after := snapshotKeys(s, at, keys); after != before {
			t.Fatalf("batch %d %s: answered as unchanged, but applying changed %s into %s", i, describe(batch), before, after)
		}
	}
	if answered < 100 || declined < 100 {
		t.Fatalf("answered %d batches, declined %d: the test does not exercise both", answered, declined)
	}
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
		declined <- !s.ReadUnchanged([]Command{bmCommand("SETBIT", "online:1", "5", "1")}, now, &out) &&
			!s.ReadUnchanged([]Command{bmCommand("BITSETEX", "armed", "100", "5")}, now, &out)
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
	if !s.ReadUnchanged([]Command{bmCommand("SETBIT", "online:1", "5", "1")}, now, &out) || string(out.B) != ":1\r\n" {
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
		if s.ReadUnchanged(batch, 1, &out) || len(out.B) != 0 {
			t.Fatalf("%v: answered as unchanged: %q", batch, out.B)
		}
	}
}
