package store

import (
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"slices"
	"strconv"
	"testing"
)

// TestApplyEachIsApply checks that applying batches with ApplyEach leaves
// the same state, WATCH's versions included, and replies as applying
// their concatenation with Apply, TTLs that end within the batches and
// transactions after WATCH included.
func TestApplyEachIsApply(t *testing.T) {
	rnd := rand.New(rand.NewSource(2))
	each, whole := New(), New()
	keys := []string{"a", "b", "c"}
	for i := range 500 {
		now := int64(1_000_000 + i*7)
		var batches [][]Command
		for range 1 + rnd.Intn(4) {
			var b []Command
			for range rnd.Intn(4) {
				k := keys[rnd.Intn(len(keys))]
				var c Command
				switch rnd.Intn(6) {
				case 0:
					c = bmCommand("SETBIT", k, strconv.Itoa(rnd.Intn(40)), "1")
				case 1:
					c = bmCommand("SET", k, "v", "PX", strconv.Itoa(1+rnd.Intn(20)))
				case 2:
					c = bmCommand("PEXPIREAT", k, strconv.FormatInt(now-int64(rnd.Intn(3)), 10))
				case 3:
					c = bmCommand("INCR", "n")
				case 4:
					// A transaction after WATCH: the check of the
					// key's version as it is now, then a SET.
					db := rnd.Intn(2)
					set := bmCommand("SET", k, strconv.Itoa(i))
					set.DB = db
					b = append(b, WatchCheck(1, []Watched{each.Watch(db, []byte(k))}), set)
					continue
				default:
					c = bmCommand("BITCOUNT", k)
				}
				c.DB = rnd.Intn(2)
				b = append(b, c)
			}
			batches = append(batches, b)
		}
		checkApplyEach(t, i, each, whole, now, batches)
	}
}

// checkApplyEach applies batches at now to each with ApplyEach and their
// concatenation to whole with Apply, and fails the test unless the
// replies and the resulting states are the same.
func checkApplyEach(t *testing.T, step int, each, whole *Store, now int64, batches [][]Command) {
	t.Helper()
	var all []Command
	outs := make([]*Replies, len(batches))
	for j, b := range batches {
		all = append(all, b...)
		outs[j] = new(Replies)
	}
	each.ApplyEach(now, batches, outs, nil)
	var want Replies
	whole.Apply(all, now, &want)
	got := ""
	for _, o := range outs {
		got += string(o.B)
	}
	if got != string(want.B) {
		t.Fatalf("step %d: ApplyEach replies %q, Apply %q", step, got, want.B)
	}
	if each.Snapshot().ReplicaDigest() != whole.Snapshot().ReplicaDigest() {
		t.Fatalf("step %d: states differ", step)
	}
}

// TestApplyEachAnswersEachBatch checks that ApplyEach reports each batch
// as soon as its replies are complete, in order, before it applies the
// next one.
func TestApplyEachAnswersEachBatch(t *testing.T) {
	s := New()
	batches := [][]Command{
		{bmCommand("SETBIT", "k", "1", "1"), bmCommand("SETBIT", "k", "1", "1")},
		{bmCommand("GETBIT", "k", "1")},
		{bmCommand("SETBIT", "k", "2", "1")},
	}
	outs := []*Replies{{}, {}, {}}
	var done []int
	s.ApplyEach(1000, batches, outs, func(i int) {
		done = append(done, i)
		if len(outs[i].Ends) != len(batches[i]) {
			t.Errorf("batch %d reported with %d of its %d replies", i, len(outs[i].Ends), len(batches[i]))
		}
		if i+1 < len(outs) && outs[i+1].Len() != 0 {
			t.Errorf("batch %d reported after batch %d was applied", i, i+1)
		}
	})
	if fmt.Sprint(done) != "[0 1 2]" {
		t.Fatalf("batches reported %v", done)
	}
}

// TestHeartbeatRunsAreCommands checks that a pipeline in which one-offset
// BITSETEX and BITPSETEX commands, or SETBITs to 1 under bit-TTL rules or
// not, follow each other on one key, as heartbeats do, applied as one
// batch (where execAll applies such runs together), gives the replies,
// events, history and state of the same commands applied one at a time:
// bad offsets, values and TTLs inside runs, rules that change between
// runs, runs that create their key or find it expired, runs broken by
// other commands on the key or in databases that do not exist, runs
// over many containers, and heartbeats on keys at random included. Run as
// one batch or as a batch per command in one Apply, as a leader and its
// followers apply an entry, the keys' versions are the same too.
func TestHeartbeatRunsAreCommands(t *testing.T) {
	rnd := rand.New(rand.NewSource(3))
	batched, single, split := New(), New(), New()
	var gotEvents, wantEvents []string
	sinkTo := func(events *[]string) EventSink {
		return func(db int, key []byte, kind EventKind, off uint64) {
			*events = append(*events, fmt.Sprint(db, string(key), kind, off))
		}
	}
	batched.SetEventSink(sinkTo(&gotEvents))
	single.SetEventSink(sinkTo(&wantEvents))
	gotHist, wantHist := &recordingSink{}, &recordingSink{}
	batched.SetHistory(gotHist, HistoryConfig{Interval: 1000})
	single.SetHistory(wantHist, HistoryConfig{Interval: 1000})
	offsets := []string{"1", "2", "3", "70", "5000", "-1", "x", "4294967296", "0"}
	ttls := []string{"1", "5", "90", "0", "-3", "y", "9223372036854775807"}
	runs, setbitRuns := 0, 0
	for i := range 400 {
		now := int64(1_000_000 + i*700)
		var b []Command
		for len(b) < 200 {
			key := []string{"a", "b"}[rnd.Intn(2)]
			db := rnd.Intn(2)
			switch rnd.Intn(12) {
			case 0:
				b = append(b, bmCommand("DEL", key))
			case 1:
				b = append(b, bmCommand("SET", key, "v", "PX", strconv.Itoa(1+rnd.Intn(2000))))
			case 2:
				b = append(b, bmCommand("BITSETEX", key, "1", "7", "8"))
			case 3:
				b = append(b, bmCommand("SETBIT", key, strconv.Itoa(rnd.Intn(100_000)), "0"))
			case 5:
				// Rules come and go: SETBIT 1 on a key a rule covers arms
				// the bit.
				rules := [][]string{{}, {"a", "30"}, {"*", "2"}, {"b", "60", "a", "1"}}[rnd.Intn(4)]
				b = append(b, bmCommand(append([]string{"BITTTLRULES"}, rules...)...))
			case 6:
				space := []int{100_000, 10_000_000}[rnd.Intn(2)]
				n := 1 + rnd.Intn(70)
				for range n {
					off, val := strconv.Itoa(rnd.Intn(space)), "1"
					switch rnd.Intn(30) {
					case 0:
						off = offsets[5+rnd.Intn(3)]
					case 1:
						val = []string{"0", "01", "x"}[rnd.Intn(3)]
					}
					cmd := bmCommand("SETBIT", key, off, val)
					cmd.DB = db
					b = append(b, cmd)
				}
				setbitRuns += min(n-1, 1)
			case 4:
				// One-offset heartbeats on keys and databases at random,
				// bad ones among them: windows warmArms reads ahead of.
				for range 1 + rnd.Intn(10) {
					cmd := bmCommand("BITSETEX", []string{"a", "b"}[rnd.Intn(2)], "30", strconv.Itoa(rnd.Intn(100_000)))
					cmd.DB = []int{0, 1, -1, NumDBs}[rnd.Intn(4)]
					b = append(b, cmd)
				}
				db = b[len(b)-1].DB
			default:
				name := []string{"BITSETEX", "bitpsetex"}[rnd.Intn(2)]
				ttl := ttls[rnd.Intn(len(ttls))]
				switch rnd.Intn(6) {
				case 0:
					// Valid, but past the latest deadline the timers keep.
					name, ttl = "bitpsetex", strconv.FormatInt(math.MaxInt64-now-3, 10)
				case 1, 2, 3:
					ttl = "90"
				}
				n := 1 + rnd.Intn(70)
				allBad := rnd.Intn(8) == 0
				for range n {
					off := offsets[5+rnd.Intn(3)]
					if !allBad {
						off = offsets[rnd.Intn(len(offsets))]
						if rnd.Intn(4) > 0 {
							off = strconv.Itoa(rnd.Intn(100_000))
						}
					}
					cmd := bmCommand(name, key, ttl, off)
					cmd.DB = db
					b = append(b, cmd)
				}
				runs += min(n-1, 1)
			}
			b[len(b)-1].DB = db
			if rnd.Intn(20) == 0 {
				b[len(b)-1].DB = []int{-1, NumDBs}[rnd.Intn(2)]
			}
		}
		var want Replies
		for _, cmd := range b {
			single.Apply([]Command{cmd}, now, &want)
		}
		got := new(Replies)
		batched.ApplyEach(now, [][]Command{b}, []*Replies{got}, nil)
		if string(got.B) != string(want.B) {
			t.Fatalf("step %d: batched replies %q, one at a time %q", i, got.B, want.B)
		}
		if len(got.Ends) != len(b) {
			t.Fatalf("step %d: %d reply ends for %d commands", i, len(got.Ends), len(b))
		}
		if !slices.Equal(gotEvents, wantEvents) {
			t.Fatalf("step %d: batched events %v, one at a time %v", i, gotEvents, wantEvents)
		}
		if batched.Digest() != single.Digest() {
			t.Fatalf("step %d: states differ", i)
		}
		each, outs := make([][]Command, len(b)), make([]*Replies, len(b))
		for j, cmd := range b {
			each[j], outs[j] = []Command{cmd}, new(Replies)
		}
		split.ApplyEach(now, each, outs, nil)
		if batched.Snapshot().ReplicaDigest() != split.Snapshot().ReplicaDigest() {
			t.Fatalf("step %d: the keys' versions depend on how the commands ran", i)
		}
		if !reflect.DeepEqual(gotHist.calls, wantHist.calls) {
			t.Fatalf("step %d: batched history %v, one at a time %v", i, gotHist.calls, wantHist.calls)
		}
	}
	if runs < 1000 || setbitRuns < 300 {
		t.Fatalf("only %d runs of heartbeats and %d of SETBITs", runs, setbitRuns)
	}
}
