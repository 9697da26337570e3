// Command sessions is the one-key-per-user presence workflow, unchanged,
// against presenced, next to what presenced offers instead.
//
// The Redis recipe: SETEX online:uid:<id> 1800 <name> at login, EXPIRE to
// refresh on activity, DEL at logout, and KEYS or SCAN online:uid:* to
// count and list who is online — a walk over the whole keyspace, and a
// key of some 100 bytes per user.
//
// With presenced: BITSETEX online:sessions 1800 <id> arms the user's own
// deadline in one bitmap (and refreshes it), SETBIT ... 0 logs out,
// BITCOUNT counts in microseconds, and BITSCAN lists the online ids.
//
//	go run ./examples/sessions -addr 127.0.0.1:6379
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sessions keeps each user's session both ways: the Redis recipe's key
// per user and presenced's bit per user.
type Sessions struct {
	rdb *redis.Client
	ttl time.Duration
}

const (
	keyPrefix = "online:uid:"
	bitmapKey = "online:sessions"
)

// Login starts user id's session.
func (s *Sessions) Login(ctx context.Context, id int64, name string) error {
	_, err := s.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.SetEx(ctx, keyPrefix+strconv.FormatInt(id, 10), name, s.ttl)
		pipe.Do(ctx, "BITSETEX", bitmapKey, int64(s.ttl/time.Second), id)
		return nil
	})
	return err
}

// Touch refreshes user id's session on activity.
func (s *Sessions) Touch(ctx context.Context, id int64) error {
	_, err := s.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Expire(ctx, keyPrefix+strconv.FormatInt(id, 10), s.ttl)
		pipe.Do(ctx, "BITSETEX", bitmapKey, int64(s.ttl/time.Second), id)
		return nil
	})
	return err
}

// Logout ends user id's session.
func (s *Sessions) Logout(ctx context.Context, id int64) error {
	_, err := s.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Del(ctx, keyPrefix+strconv.FormatInt(id, 10))
		pipe.SetBit(ctx, bitmapKey, id, 0)
		return nil
	})
	return err
}

// OnlineByKeys counts and lists the online users the Redis way: SCAN over
// every key matching online:uid:*.
func (s *Sessions) OnlineByKeys(ctx context.Context) ([]int64, error) {
	var ids []int64
	iter := s.rdb.Scan(ctx, 0, keyPrefix+"*", 100).Iterator()
	for iter.Next(ctx) {
		id, err := strconv.ParseInt(strings.TrimPrefix(iter.Val(), keyPrefix), 10, 64)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, iter.Err()
}

// Online counts the online users with BITCOUNT and lists them with
// BITSCAN, ascending.
func (s *Sessions) Online(ctx context.Context) (int64, []int64, error) {
	n, err := s.rdb.BitCount(ctx, bitmapKey, nil).Result()
	if err != nil {
		return 0, nil, err
	}
	var ids []int64
	cursor := "0"
	for {
		reply, err := s.rdb.Do(ctx, "BITSCAN", bitmapKey, cursor, "COUNT", 100).Slice()
		if err != nil {
			return 0, nil, err
		}
		cursor = reply[0].(string)
		for _, off := range reply[1].([]any) {
			id, err := strconv.ParseInt(off.(string), 10, 64)
			if err != nil {
				return 0, nil, err
			}
			ids = append(ids, id)
		}
		if cursor == "0" {
			return n, ids, nil
		}
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "presenced address")
	flag.Parse()
	ctx := context.Background()
	s := &Sessions{rdb: redis.NewClient(&redis.Options{Addr: *addr}), ttl: 30 * time.Minute}
	for id, name := range []string{"ada", "grace", "edsger", "barbara"} {
		if err := s.Login(ctx, int64(id*1000), name); err != nil {
			log.Fatal(err)
		}
	}
	if err := s.Logout(ctx, 2000); err != nil {
		log.Fatal(err)
	}
	byKeys, err := s.OnlineByKeys(ctx)
	if err != nil {
		log.Fatal(err)
	}
	n, ids, err := s.Online(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("SCAN online:uid:* finds %d users; BITCOUNT says %d, BITSCAN lists %v\n", len(byKeys), n, ids)
}
