// Command heartbeats is the sharded-bitmap presence workflow that many
// Redis deployments run, unchanged, against presenced: gateways report
// each user's heartbeat as SETBIT online:bitmap:<id % 10> <id / 10> 1, a
// job sums the shards' BITCOUNTs into online:total every few seconds,
// per-dimension keys (region, device) answer questions such as "how
// many users in Beijing are on mobile", and a HyperLogLog of the same
// heartbeats cross-checks the total.
//
// What changes with presenced is what the deployment no longer needs: a
// bit-TTL rule (CONFIG SET bit-ttl "online:* 90") makes every SETBIT arm
// that user's own 90 s deadline, so a user whose app crashed drops offline
// one TTL after the last heartbeat while everyone else stays — no
// sorted-set of last-seen times and no cleanup job — and BITOPCOUNT counts
// an intersection without writing a BITOP result key.
//
//	go run ./examples/heartbeats -addr 127.0.0.1:6379 -users 100000
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// shards is the number of bitmap keys the ids are spread over, as in the
// Redis recipe: user id -> key online:bitmap:<id % shards>, offset id / shards.
const shards = 10

// Presence reports heartbeats and answers counts.
type Presence struct {
	rdb *redis.Client
}

// Configure installs the bit-TTL rule: a heartbeat keeps a user online
// for ttl after it. Every node of a cluster gets the rule through the log.
func (p *Presence) Configure(ctx context.Context, ttl time.Duration) error {
	rule := "online:* " + strconv.Itoa(int(ttl/time.Second))
	return p.rdb.ConfigSet(ctx, "bit-ttl", rule).Err()
}

// Beat reports one heartbeat of user id, seen in region on device: the
// Redis client code of the recipe, one pipelined round trip.
func (p *Presence) Beat(ctx context.Context, id uint64, region, device string) error {
	return p.mark(ctx, id, region, device, 1)
}

// Logout takes user id offline at once.
func (p *Presence) Logout(ctx context.Context, id uint64, region, device string) error {
	return p.mark(ctx, id, region, device, 0)
}

// mark sets user id's bits in its shard and dimension keys to bit.
func (p *Presence) mark(ctx context.Context, id uint64, region, device string, bit int) error {
	_, err := p.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.SetBit(ctx, shardKey(id), int64(id/shards), bit)
		pipe.SetBit(ctx, "online:region:"+region, int64(id), bit)
		pipe.SetBit(ctx, "online:device:"+device, int64(id), bit)
		if bit == 1 {
			pipe.PFAdd(ctx, "online:hll", id)
		}
		return nil
	})
	return err
}

// Aggregate is the recipe's periodic job: the sum of the shards'
// BITCOUNTs, published as online:total for 15 s.
func (p *Presence) Aggregate(ctx context.Context) (int64, error) {
	cmds, err := p.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for s := range shards {
			pipe.BitCount(ctx, "online:bitmap:"+strconv.Itoa(s), nil)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	var total int64
	for _, c := range cmds {
		total += c.(*redis.IntCmd).Val()
	}
	return total, p.rdb.Set(ctx, "online:total", total, 15*time.Second).Err()
}

// CrossCheck is the recipe's check of the total against a HyperLogLog of
// the heartbeats: the number of distinct users seen, which, while nobody
// has dropped offline, agrees with the total to within HyperLogLog's
// standard error of 0.81%.
func (p *Presence) CrossCheck(ctx context.Context) (int64, error) {
	return p.rdb.PFCount(ctx, "online:hll").Result()
}

// OnlineIn counts the users online in region on device: the BITOP AND +
// BITCOUNT of the recipe, as one command that writes nothing.
func (p *Presence) OnlineIn(ctx context.Context, region, device string) (int64, error) {
	return p.rdb.Do(ctx, "BITOPCOUNT", "AND", "online:region:"+region, "online:device:"+device).Int64()
}

func shardKey(id uint64) string {
	return "online:bitmap:" + strconv.FormatUint(id%shards, 10)
}

var (
	regions = []string{"beijing", "shanghai", "shenzhen"}
	devices = []string{"mobile", "desktop"}
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "presenced address")
	users := flag.Int("users", 100000, "users to simulate")
	ttl := flag.Duration("ttl", 90*time.Second, "how long a heartbeat keeps a user online")
	flag.Parse()
	ctx := context.Background()
	p := &Presence{rdb: redis.NewClient(&redis.Options{Addr: *addr})}
	if err := p.Configure(ctx, *ttl); err != nil {
		log.Fatal(err)
	}
	for i := range *users {
		id := rand.Uint64N(100_000_000)
		if err := p.Beat(ctx, id, regions[i%len(regions)], devices[i%len(devices)]); err != nil {
			log.Fatal(err)
		}
	}
	total, err := p.Aggregate(ctx)
	if err != nil {
		log.Fatal(err)
	}
	mobile, err := p.OnlineIn(ctx, "beijing", "mobile")
	if err != nil {
		log.Fatal(err)
	}
	seen, err := p.CrossCheck(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("online: %d (online:total for 15 s; seen, by HyperLogLog: %d); beijing on mobile: %d; each drops offline %v after its last heartbeat\n", total, seen, mobile, *ttl)
}
