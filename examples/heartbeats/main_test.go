package main

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/presenced/presenced/server/servertest"
)

func TestHeartbeatsExpireOnTheirOwn(t *testing.T) {
	ctx := context.Background()
	rdb := servertest.Client(t)
	p := &Presence{rdb: rdb}
	const ttl = time.Second
	if err := p.Configure(ctx, ttl); err != nil {
		t.Fatal(err)
	}
	type user struct {
		id             uint64
		region, device string
	}
	users := []user{
		{7, "beijing", "mobile"}, {12, "beijing", "desktop"}, {23, "shanghai", "mobile"},
		{1000007, "beijing", "mobile"}, {99999999, "shenzhen", "mobile"},
	}
	// The server stamps a heartbeat with its clock after this, so no
	// deadline falls before sent+ttl.
	sent := time.Now()
	for _, u := range users {
		if err := p.Beat(ctx, u.id, u.region, u.device); err != nil {
			t.Fatal(err)
		}
	}
	if total, err := p.Aggregate(ctx); err != nil || total != 5 {
		t.Fatalf("online after the heartbeats: %d, %v; want 5", total, err)
	}
	if got, err := rdb.Get(ctx, "online:total").Int64(); err != nil || got != 5 {
		t.Fatalf("online:total = %d, %v", got, err)
	}
	if ttl, err := rdb.TTL(ctx, "online:total").Result(); err != nil || ttl <= 0 || ttl > 15*time.Second {
		t.Fatalf("online:total TTL %v, %v", ttl, err)
	}
	if n, err := p.OnlineIn(ctx, "beijing", "mobile"); err != nil || n != 2 {
		t.Fatalf("beijing on mobile: %d, %v; want 2", n, err)
	}
	if err := p.Logout(ctx, 7, "beijing", "mobile"); err != nil {
		t.Fatal(err)
	}
	if n, err := p.OnlineIn(ctx, "beijing", "mobile"); err != nil || n != 1 {
		t.Fatalf("beijing on mobile after a logout: %d, %v; want 1", n, err)
	}

	// Users 12 and 23 keep beating; the others stop and must drop offline
	// one TTL after their last heartbeat, each on its own.
	stopped := time.Now()
	for {
		for _, u := range users[1:3] {
			if err := p.Beat(ctx, u.id, u.region, u.device); err != nil {
				t.Fatal(err)
			}
		}
		total, err := p.Aggregate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if total == 2 {
			break
		}
		if total != 4 {
			t.Fatalf("online while waiting for expiry: %d, want 4 then 2", total)
		}
		if time.Since(stopped) > 10*ttl {
			t.Fatalf("stopped users still online %v after their last heartbeat", time.Since(stopped))
		}
		time.Sleep(50 * time.Millisecond) // heartbeat interval of the simulated gateways
	}
	if time.Since(sent) < ttl {
		t.Fatalf("users dropped offline %v after their last heartbeat was sent, before the %v TTL", time.Since(sent), ttl)
	}
	for _, u := range users[1:3] {
		if bit, err := rdb.GetBit(ctx, shardKey(u.id), int64(u.id/shards)).Result(); err != nil || bit != 1 {
			t.Fatalf("user %d, still beating, is offline: %d, %v", u.id, bit, err)
		}
	}
	if n, err := p.OnlineIn(ctx, "beijing", "mobile"); err != nil || n != 0 {
		t.Fatalf("beijing on mobile after expiry: %d, %v; want 0", n, err)
	}
}

// TestCrossCheckAgreesWithTheTotal is the recipe's HyperLogLog check:
// while nobody drops offline, the HyperLogLog of the heartbeats counts the
// sum of the shards' BITCOUNTs to within a few of its standard errors,
// however often a user beats.
func TestCrossCheckAgreesWithTheTotal(t *testing.T) {
	ctx := context.Background()
	p := &Presence{rdb: servertest.Client(t)}
	if err := p.Configure(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	const users = 3000
	for i := range users {
		id := uint64(i)*7919 + 3
		for range 1 + i%2 {
			if err := p.Beat(ctx, id, regions[i%len(regions)], devices[i%len(devices)]); err != nil {
				t.Fatal(err)
			}
		}
	}
	total, err := p.Aggregate(ctx)
	if err != nil || total != users {
		t.Fatalf("online: %d, %v; want %d", total, err, users)
	}
	seen, err := p.CrossCheck(ctx)
	if err != nil || math.Abs(float64(seen-total)) > 3*0.0081*users {
		t.Fatalf("the HyperLogLog saw %d users, %v; the total is %d", seen, err, total)
	}
}
