package store

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// TestBlockQueue checks the queue against a multiset of items: a drain at
// due yields exactly the items due before it, least first (a partial
// drain, the least of them: see blockQueue.pop), items pushed while draining
// wait for a later drain, and first and len agree with the model. It runs
// with a calendar from the start, one that comes later, and none.
func TestBlockQueue(t *testing.T) {
	for _, minItems := range []int{1, 64, 1 << 30} {
		t.Run("calendarMin"+strconv.Itoa(minItems), func(t *testing.T) {
			defer func(m int) { calendarMin = m }(calendarMin)
			calendarMin = minItems
			rnd := rand.New(rand.NewPCG(7, uint64(minItems)))
			var q blockQueue
			var model []blockItem
			now := int64(1_000_000)
			// bound picks a bound: mostly within a TTL ahead, sometimes past
			// the calendar's window or before its start.
			bound := func(from int64) int64 {
				switch rnd.IntN(20) {
				case 0:
					return from + calSlots + rnd.Int64N(10*calSlots)
				case 1:
					return from - rnd.Int64N(50)
				}
				return from + rnd.Int64N(1200)
			}
			for step := range 30000 {
				switch r := rnd.IntN(100); {
				case r < 60:
					it := blockItem{at: bound(now), id: uint32(rnd.IntN(100))}
					q.push(it)
					model = append(model, it)
				case r < 98:
					now += rnd.Int64N(4)
					if rnd.IntN(100) == 0 {
						now += rnd.Int64N(3 * calSlots)
					}
					// Drain, or pop a few as a sweep whose budget ran out
					// does: either way the least passed items, in order.
					limit := math.MaxInt
					if rnd.IntN(3) == 0 {
						limit = rnd.IntN(20)
					}
					var got, pushed []blockItem
					for len(got) < limit {
						it, ok := q.pop(now)
						if !ok {
							break
						}
						got = append(got, it)
						if rnd.IntN(2) == 0 { // re-queued, as a swept block is
							it := blockItem{at: now + rnd.Int64N(1200), id: it.id}
							q.push(it)
							pushed = append(pushed, it)
						}
					}
					model = sortItems(model)
					due := 0
					for due < len(model) && passed(model[due].at, now) {
						due++
					}
					want := model[:min(due, limit)]
					if !slices.Equal(got, want) {
						t.Fatalf("step %d: drain at %d got %v, want %v", step, now, got, want)
					}
					model = append(slices.Delete(model, 0, len(want)), pushed...)
				case r < 99:
					c := q.clone()
					if !slices.Equal(sortItems(collectItems(&c)), sortItems(model)) {
						t.Fatalf("step %d: the clone's items differ", step)
					}
				default:
					q.reset()
					model = model[:0]
				}
				checkQueue(t, step, &q, model)
			}
			if minItems == 1 && q.cal == nil {
				t.Fatal("no calendar")
			}
		})
	}
}

func checkQueue(t *testing.T, step int, q *blockQueue, model []blockItem) {
	t.Helper()
	if q.len() != len(model) {
		t.Fatalf("step %d: len %d, want %d", step, q.len(), len(model))
	}
	at, ok := q.first()
	if ok != (len(model) > 0) {
		t.Fatalf("step %d: first reports %v with %d items", step, ok, len(model))
	}
	if ok && at != slices.MinFunc(model, cmpItems).at {
		t.Fatalf("step %d: first %d, want %d", step, at, slices.MinFunc(model, cmpItems).at)
	}
	if !slices.Equal(sortItems(collectItems(q)), sortItems(model)) {
		t.Fatalf("step %d: the queue's items differ from the model's", step)
	}
}

func collectItems(q *blockQueue) []blockItem {
	var items []blockItem
	for it := range q.all() {
		items = append(items, it)
	}
	return items
}

func cmpItems(a, b blockItem) int {
	return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.id, b.id))
}

func sortItems(items []blockItem) []blockItem {
	items = slices.Clone(items)
	slices.SortFunc(items, cmpItems)
	return items
}
