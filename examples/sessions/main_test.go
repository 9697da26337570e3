package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/presenced/presenced/server/servertest"
)

func TestBothWaysAgree(t *testing.T) {
	ctx := context.Background()
	rdb := servertest.Client(t)
	s := &Sessions{rdb: rdb, ttl: 1 * time.Second}
	online := map[int64]bool{}
	sent := map[int64]time.Time{} // when each login was sent
	for id := int64(0); id < 500; id += 3 {
		sent[id] = time.Now()
		if err := s.Login(ctx, id, "user"); err != nil {
			t.Fatal(err)
		}
		online[id] = true
	}
	for id := int64(0); id < 500; id += 7 {
		if online[id] {
			if err := s.Logout(ctx, id); err != nil {
				t.Fatal(err)
			}
			delete(online, id)
		}
	}
	var want []int64
	for id := range online {
		want = append(want, id)
	}
	slices.Sort(want)
	check := func(want []int64) {
		t.Helper()
		byKeys, err := s.OnlineByKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(byKeys)
		n, ids, err := s.Online(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(byKeys, want) || !slices.Equal(ids, want) || n != int64(len(want)) {
			t.Fatalf("SCAN found %d users, BITCOUNT %d, BITSCAN %d; want %d", len(byKeys), n, len(ids), len(want))
		}
	}
	check(want)

	// Users who stay active keep both their key and their bit; the others
	// lose both one TTL after their last activity, their login: not before
	// a TTL after the last of those logins was sent.
	active := want[:10]
	var lastLogin time.Time
	for _, id := range want[len(active):] {
		if sent[id].After(lastLogin) {
			lastLogin = sent[id]
		}
	}
	start := time.Now()
	for {
		for _, id := range active {
			if err := s.Touch(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		n, _, err := s.Online(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == int64(len(active)) {
			break
		}
		if time.Since(start) > 10*s.ttl {
			t.Fatalf("%d users online %v after the inactive ones' last activity", n, time.Since(start))
		}
		time.Sleep(50 * time.Millisecond) // activity interval of the active users
	}
	if time.Since(lastLogin) < s.ttl {
		t.Fatalf("inactive users went offline %v after the last of their logins was sent, before their %v TTL", time.Since(lastLogin), s.ttl)
	}
	check(active)
}
