package store

import (
	"fmt"
	"math/rand"
	"strconv"
	"testing"
)

// TestApplyEachIsApply checks that applying batches with ApplyEach leaves
// the same state and replies as applying their concatenation with Apply,
// TTLs that end within the batches included.
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
				switch rnd.Intn(5) {
				case 0:
					c = bmCommand("SETBIT", k, strconv.Itoa(rnd.Intn(40)), "1")
				case 1:
					c = bmCommand("SET", k, "v", "PX", strconv.Itoa(1+rnd.Intn(20)))
				case 2:
					c = bmCommand("PEXPIREAT", k, strconv.FormatInt(now-int64(rnd.Intn(3)), 10))
				case 3:
					c = bmCommand("INCR", "n")
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
	if each.Digest() != whole.Digest() {
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
