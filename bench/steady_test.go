package main

import "testing"

// TestSteadyPlan checks the plan's count of live users against a replay
// of its heartbeats: each id's last heartbeat, kept in a map.
func TestSteadyPlan(t *testing.T) {
	for _, c := range []struct{ space, online, leave, ticks uint64 }{
		{1000, 300, 3, 30}, {1000, 300, 0, 30}, {997, 500, 50, 7}, {64, 64, 0, 5},
	} {
		p := steadyPlan{perm: newPermutation(c.space, 1), online: c.online, leave: c.leave, ticks: c.ticks}
		last := map[uint32]uint64{}
		const ttl = 3 * 7
		for k := range uint64(6 * c.ticks) {
			ids := p.due(k, nil)
			for _, id := range ids {
				if _, ok := last[id]; !ok && k >= c.ticks && c.leave == 0 {
					t.Fatalf("%+v: id %d first heartbeats at tick %d, after the first cycle, with no churn", c, id, k)
				}
				last[id] = k
			}
			var want uint64
			for _, l := range last {
				if l+ttl >= k+1 {
					want++
				}
			}
			if got := p.alive(k+1, ttl); got != want {
				t.Fatalf("%+v: %d alive at tick %d, want %d", c, got, k+1, want)
			}
		}
		if c.leave == 0 && uint64(len(last)) != c.online {
			t.Fatalf("%+v: %d ids heartbeat, want %d", c, len(last), c.online)
		}
	}
}
