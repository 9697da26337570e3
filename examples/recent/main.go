// Command recent answers "who was active recently, newest first" — the
// sorted-set workflow of many Redis deployments — with presenced's
// per-bit deadlines.
//
// The Redis recipe keeps one sorted set scored by last-active time:
// ZADD online:users <now> <id> on every request, ZREVRANGEBYSCORE
// online:users +inf <now-300> LIMIT 0 20 for the newest active users,
// ZCOUNT for how many, and a ZREMRANGEBYSCORE job to drop users idle for
// longer than the window: some 100 bytes per user and a cleanup job.
//
// With presenced: BITSETEX online:active 300 <id> on every request (the
// user's bit lives for 300 s after the last one, no cleanup job),
// BITRECENT online:active <seconds> LIMIT 20 for the count and the newest
// active users of the last <seconds>, and BITSCAN to page through all of
// them by id.
//
//	go run ./examples/recent -addr 127.0.0.1:6379
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

const activeKey = "online:active"

// Activity records requests and answers recency questions.
type Activity struct {
	rdb    *redis.Client
	window time.Duration // how long a request keeps a user active
}

// Seen records a request of each of ids, in one command.
func (a *Activity) Seen(ctx context.Context, ids ...int64) (joined int64, err error) {
	args := []any{"BITSETEX", activeKey, int64(a.window / time.Second)}
	for _, id := range ids {
		args = append(args, id)
	}
	return a.rdb.Do(ctx, args...).Int64()
}

// Recent returns how many users were active within the last d, and up to
// limit of them, most recent first.
func (a *Activity) Recent(ctx context.Context, d time.Duration, limit int) (int64, []int64, error) {
	reply, err := a.rdb.Do(ctx, "BITRECENT", activeKey, int64(d/time.Second), "LIMIT", limit).Slice()
	if err != nil {
		return 0, nil, err
	}
	var ids []int64
	for _, v := range reply[1].([]any) {
		ids = append(ids, v.(int64))
	}
	return reply[0].(int64), ids, nil
}

// Page returns up to count active users with ids above the cursor's, and
// the cursor of the next page ("0" after the last).
func (a *Activity) Page(ctx context.Context, cursor string, count int) ([]int64, string, error) {
	reply, err := a.rdb.Do(ctx, "BITSCAN", activeKey, cursor, "COUNT", count).Slice()
	if err != nil {
		return nil, "", err
	}
	var ids []int64
	for _, v := range reply[1].([]any) {
		id, err := strconv.ParseInt(v.(string), 10, 64)
		if err != nil {
			return nil, "", err
		}
		ids = append(ids, id)
	}
	return ids, reply[0].(string), nil
}

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "presenced address")
	flag.Parse()
	ctx := context.Background()
	a := &Activity{rdb: redis.NewClient(&redis.Options{Addr: *addr}), window: 5 * time.Minute}
	for id := int64(1); id <= 50; id++ {
		if _, err := a.Seen(ctx, id*37%1000); err != nil {
			log.Fatal(err)
		}
	}
	n, newest, err := a.Recent(ctx, time.Minute, 5)
	if err != nil {
		log.Fatal(err)
	}
	page, next, err := a.Page(ctx, "0", 10)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("active in the last minute: %d, newest first: %v; first page by id: %v (next cursor %s)\n", n, newest, page, next)
}
