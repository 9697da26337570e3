package server

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// These tests drive presenced with go-redis's typed API and check every
// result against a plain model computed in the test.

// newGoRedis returns a go-redis client of srv, closed when the test ends.
func newGoRedis(tb testing.TB, srv *Server, opts ...func(*redis.Options)) *redis.Client {
	tb.Helper()
	o := &redis.Options{Addr: srv.Addr(), MaxRetries: -1}
	for _, f := range opts {
		f(o)
	}
	rdb := redis.NewClient(o)
	tb.Cleanup(func() { rdb.Close() })
	return rdb
}

// bitString models a Redis string as bit commands see it: bit i is the
// bit of value 0x80>>(i%8) in byte i/8.
type bitString []byte

// set sets bit off to v, growing the string as SETBIT does, and returns
// the bit's old value.
func (b *bitString) set(off int64, v int) int64 {
	old := b.get(off)
	for int64(len(*b)) <= off/8 {
		*b = append(*b, 0)
	}
	mask := byte(0x80 >> (off % 8))
	(*b)[off/8] &^= mask
	if v == 1 {
		(*b)[off/8] |= mask
	}
	return old
}

func (b bitString) get(off int64) int64 {
	if off/8 >= int64(len(b)) {
		return 0
	}
	return int64(b[off/8]>>(7-off%8)) & 1
}

// span converts a BITCOUNT/BITPOS range (start and optional end, in
// bytes or, with unit BIT, bits) into the first and last bit it covers, with Redis's
// rules for negative and out-of-range indexes; ok is false when the
// range is empty.
func (b bitString) span(rng []int64, unit string) (first, last int64, ok bool) {
	size := int64(len(b))
	if unit == redis.BitCountIndexBit {
		size *= 8
	}
	start, end := rng[0], size-1
	if len(rng) > 1 {
		end = rng[1]
	}
	if start < 0 {
		start = max(start+size, 0)
	}
	if end < 0 {
		end = max(end+size, 0)
	}
	end = min(end, size-1)
	if start > end {
		return 0, 0, false
	}
	if unit == redis.BitCountIndexBit {
		return start, end, true
	}
	return start * 8, end*8 + 7, true
}

// count is BITCOUNT of the range (the whole string when rng is empty).
func (b bitString) count(rng []int64, unit string) int64 {
	if len(rng) == 0 {
		rng = []int64{0, -1}
	}
	first, last, ok := b.span(rng, unit)
	n := int64(0)
	for i := first; ok && i <= last; i++ {
		n += b.get(i)
	}
	return n
}

// pos is BITPOS of bit in the range.
func (b bitString) pos(bit int64, rng []int64, unit string) int64 {
	if len(rng) == 0 {
		rng = []int64{0}
	}
	first, last, ok := b.span(rng, unit)
	if !ok {
		return -1
	}
	for i := first; i <= last; i++ {
		if b.get(i) == bit {
			return i
		}
	}
	if bit == 0 && len(rng) < 2 {
		return last + 1 // the string counts as padded with zeros
	}
	return -1
}

// bitop applies op bytewise over srcs padded with zeros to the longest.
func bitop(op func(first byte, rest []byte) byte, srcs ...bitString) bitString {
	n := 0
	for _, s := range srcs {
		n = max(n, len(s))
	}
	out := make(bitString, n)
	rest := make([]byte, len(srcs)-1)
	for i := range out {
		at := func(s bitString) byte {
			if i < len(s) {
				return s[i]
			}
			return 0
		}
		for j, s := range srcs[1:] {
			rest[j] = at(s)
		}
		out[i] = op(at(srcs[0]), rest)
	}
	return out
}

func orAll(bs []byte) (o byte) {
	for _, b := range bs {
		o |= b
	}
	return o
}

// exactlyOne is the bits set in exactly one of bs.
func exactlyOne(bs []byte) byte {
	var once, more byte
	for _, b := range bs {
		more |= once & b
		once ^= b
	}
	return once &^ more
}

// noErr fails the test when a go-redis command failed.
func noErr(tb testing.TB, what string, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
}

func TestGoRedisBitmaps(t *testing.T) {
	ctx := context.Background()
	rdb := newGoRedis(t, startServer(t))
	rng := rand.New(rand.NewPCG(7, 11))
	model := map[string]*bitString{"a": {}, "b": {}, "c": {}}
	limits := map[string]int64{"a": 6000, "b": 2500, "c": 800}
	for key, m := range model {
		for range 400 {
			off, v := rng.Int64N(limits[key]), rng.IntN(2)
			old, err := rdb.SetBit(ctx, key, off, v).Result()
			noErr(t, "SETBIT", err)
			if want := m.set(off, v); old != want {
				t.Fatalf("SETBIT %s %d %d = %d, want %d", key, off, v, old, want)
			}
		}
	}
	for key, m := range model {
		raw, err := rdb.Get(ctx, key).Bytes()
		noErr(t, "GET", err)
		if !slices.Equal(raw, *m) {
			t.Errorf("GET %s: bytes differ from the model:\ngot  %x\nwant %x", key, raw, *m)
		}
		for range 200 {
			off := rng.Int64N(limits[key] + 100)
			if got, err := rdb.GetBit(ctx, key, off).Result(); err != nil || got != m.get(off) {
				t.Errorf("GETBIT %s %d = %d, %v; want %d", key, off, got, err, m.get(off))
			}
		}
		checkCounts(ctx, t, rdb, rng, key, *m)
	}

	ops := []struct {
		name string
		run  func(dest string, keys ...string) *redis.IntCmd
		op   func(first byte, rest []byte) byte
	}{
		{"AND", func(d string, k ...string) *redis.IntCmd { return rdb.BitOpAnd(ctx, d, k...) },
			func(f byte, r []byte) byte {
				for _, b := range r {
					f &= b
				}
				return f
			}},
		{"OR", func(d string, k ...string) *redis.IntCmd { return rdb.BitOpOr(ctx, d, k...) },
			func(f byte, r []byte) byte { return f | orAll(r) }},
		{"XOR", func(d string, k ...string) *redis.IntCmd { return rdb.BitOpXor(ctx, d, k...) },
			func(f byte, r []byte) byte {
				for _, b := range r {
					f ^= b
				}
				return f
			}},
		{"DIFF", func(d string, k ...string) *redis.IntCmd { return rdb.BitOpDiff(ctx, d, k...) },
			func(f byte, r []byte) byte { return f &^ orAll(r) }},
		{"DIFF1", func(d string, k ...string) *redis.IntCmd { return rdb.BitOpDiff1(ctx, d, k...) },
			func(f byte, r []byte) byte { return orAll(r) &^ f }},
		{"ANDOR", func(d string, k ...string) *redis.IntCmd { return rdb.BitOpAndOr(ctx, d, k...) },
			func(f byte, r []byte) byte { return f & orAll(r) }},
		{"ONE", func(d string, k ...string) *redis.IntCmd { return rdb.BitOpOne(ctx, d, k...) },
			func(f byte, r []byte) byte { return exactlyOne(append([]byte{f}, r...)) }},
	}
	for _, op := range ops {
		for _, keys := range [][]string{{"a", "b"}, {"b", "a", "c"}, {"c", "a"}} {
			srcs := make([]bitString, len(keys))
			for i, k := range keys {
				srcs[i] = *model[k]
			}
			want := bitop(op.op, srcs...)
			checkBitop(ctx, t, rdb, fmt.Sprintf("BITOP %s dest %v", op.name, keys), op.run("dest", keys...), want)
		}
	}
	want := bitop(func(f byte, _ []byte) byte { return ^f }, *model["b"])
	checkBitop(ctx, t, rdb, "BITOP NOT dest b", rdb.BitOpNot(ctx, "dest", "b"), want)
	checkCounts(ctx, t, rdb, rng, "dest", want)
}

// checkBitop checks a BITOP's reply (the result's length) and the bytes
// it stored in dest.
func checkBitop(ctx context.Context, t *testing.T, rdb *redis.Client, what string, cmd *redis.IntCmd, want bitString) {
	t.Helper()
	n, err := cmd.Result()
	noErr(t, what, err)
	if n != int64(len(want)) {
		t.Errorf("%s = %d, want %d", what, n, len(want))
	}
	got, err := rdb.Get(ctx, "dest").Bytes()
	noErr(t, what+": GET dest", err)
	if !slices.Equal(got, want) {
		t.Errorf("%s: stored\n%x\nwant\n%x", what, got, want)
	}
}

// checkCounts compares BITCOUNT and BITPOS of key, over random ranges in
// bytes and in bits, with the model m.
func checkCounts(ctx context.Context, t *testing.T, rdb *redis.Client, rng *rand.Rand, key string, m bitString) {
	t.Helper()
	if got, err := rdb.BitCount(ctx, key, nil).Result(); err != nil || got != m.count(nil, redis.BitCountIndexByte) {
		t.Errorf("BITCOUNT %s = %d, %v; want %d", key, got, err, m.count(nil, redis.BitCountIndexByte))
	}
	for range 60 {
		size := int64(len(m))
		unit := redis.BitCountIndexByte
		if rng.IntN(2) == 0 {
			unit, size = redis.BitCountIndexBit, size*8
		}
		start, end := rng.Int64N(2*size+4)-size-2, rng.Int64N(2*size+4)-size-2
		got, err := rdb.BitCount(ctx, key, &redis.BitCount{Start: start, End: end, Unit: unit}).Result()
		if want := m.count([]int64{start, end}, unit); err != nil || got != want {
			t.Errorf("BITCOUNT %s %d %d %s = %d, %v; want %d", key, start, end, unit, got, err, want)
		}
		for bit := range int64(2) {
			got, err := rdb.BitPosSpan(ctx, key, int8(bit), start, end, unit).Result()
			if want := m.pos(bit, []int64{start, end}, unit); err != nil || got != want {
				t.Errorf("BITPOS %s %d %d %d %s = %d, %v; want %d", key, bit, start, end, unit, got, err, want)
			}
			byteStart := start / 8
			got, err = rdb.BitPos(ctx, key, bit, byteStart).Result()
			if want := m.pos(bit, []int64{byteStart}, redis.BitCountIndexByte); err != nil || got != want {
				t.Errorf("BITPOS %s %d %d = %d, %v; want %d", key, bit, byteStart, got, err, want)
			}
		}
	}
	for bit := range int64(2) {
		if got, err := rdb.BitPos(ctx, key, bit).Result(); err != nil || got != m.pos(bit, nil, redis.BitCountIndexByte) {
			t.Errorf("BITPOS %s %d = %d, %v; want %d", key, bit, got, err, m.pos(bit, nil, redis.BitCountIndexByte))
		}
	}
}

// userStates models 2-bit user states (0 offline, 1 mobile, 2 desktop,
// 3 both) stored with BITFIELD u2 at #user.
type userStates map[int64]int64

// bytes is the string holding the states, as BITFIELD lays it out.
func (u userStates) bytes() bitString {
	var b bitString
	for user, st := range u {
		b.set(2*user, int(st>>1))
		b.set(2*user+1, int(st&1))
	}
	return b
}

// incr applies INCRBY with an overflow policy; ok is false when FAIL
// refuses it.
func (u userStates) incr(user, by int64, overflow string) (int64, bool) {
	v := u[user] + by
	switch {
	case v >= 0 && v <= 3:
	case overflow == "WRAP":
		v = ((v % 4) + 4) % 4
	case overflow == "SAT":
		v = min(max(v, 0), 3)
	default:
		return u[user], false
	}
	u[user] = v
	return v, true
}

func TestGoRedisBitFieldUserStates(t *testing.T) {
	ctx := context.Background()
	rdb := newGoRedis(t, startServer(t))
	rng := rand.New(rand.NewPCG(3, 5))
	model := userStates{}
	const users = 300
	for range 1500 {
		user := rng.Int64N(users)
		field := fmt.Sprintf("#%d", user)
		switch rng.IntN(3) {
		case 0:
			st := rng.Int64N(4)
			got, err := rdb.BitField(ctx, "states", "SET", "u2", field, st, "GET", "u2", field).Result()
			want := []int64{model[user], st}
			model[user] = st
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("BITFIELD states SET u2 %s %d GET u2 %s = %v, %v; want %v", field, st, field, got, err, want)
			}
		case 1:
			by, overflow := rng.Int64N(9)-4, []string{"WRAP", "SAT", "FAIL"}[rng.IntN(3)]
			got, err := rdb.BitField(ctx, "states", "OVERFLOW", overflow, "INCRBY", "u2", field, by, "GET", "u2", field).Result()
			// A refused INCRBY replies nil, which go-redis reads as 0.
			reply, ok := model.incr(user, by, overflow)
			if !ok {
				reply = 0
			}
			if want := []int64{reply, model[user]}; err != nil || !slices.Equal(got, want) {
				t.Fatalf("BITFIELD OVERFLOW %s INCRBY u2 %s %d GET u2 %s = %v, %v; want %v", overflow, field, by, field, got, err, want)
			}
		default:
			got, err := rdb.BitFieldRO(ctx, "states", "u2", field).Result()
			if err != nil || !slices.Equal(got, []int64{model[user]}) {
				t.Fatalf("BITFIELD_RO GET u2 %s = %v, %v; want %d", field, got, err, model[user])
			}
		}
	}
	raw, err := rdb.Get(ctx, "states").Bytes()
	noErr(t, "GET states", err)
	// The string is as long as the highest field written, which may be a
	// refused INCRBY's: compare with the model padded to its length.
	want := model.bytes()
	if len(raw) < len(want) || !slices.Equal(bitString(raw), append(want, make(bitString, len(raw)-len(want))...)) {
		t.Errorf("GET states:\n%x\nwant\n%x", raw, want)
	}
	// Users online on desktop (the high bit of the state).
	var desktop int64
	for _, st := range model {
		desktop += st >> 1
	}
	var got int64
	for user := range int64(users) {
		b, err := rdb.GetBit(ctx, "states", 2*user).Result()
		noErr(t, "GETBIT", err)
		got += b
	}
	if got != desktop {
		t.Errorf("desktop users by GETBIT: %d, want %d", got, desktop)
	}
}

func TestGoRedisStringsAndExpiry(t *testing.T) {
	ctx := context.Background()
	rdb := newGoRedis(t, startServer(t))
	noErr(t, "SET EX", rdb.Set(ctx, "online:total", 42, 15*time.Second).Err())
	if v, err := rdb.Get(ctx, "online:total").Int(); err != nil || v != 42 {
		t.Errorf("GET online:total = %d, %v", v, err)
	}
	checkTTL(ctx, t, rdb, "online:total", 14*time.Second, 15*time.Second)
	noErr(t, "SET KEEPTTL", rdb.Set(ctx, "online:total", 43, redis.KeepTTL).Err())
	checkTTL(ctx, t, rdb, "online:total", 14*time.Second, 15*time.Second)
	if v, err := rdb.Get(ctx, "online:total").Result(); err != nil || v != "43" {
		t.Errorf("GET after SET KEEPTTL = %q, %v", v, err)
	}
	noErr(t, "SET", rdb.Set(ctx, "online:total", 44, 0).Err())
	checkTTL(ctx, t, rdb, "online:total", -1, -1)

	if _, err := rdb.SetBit(ctx, "online:bitmap:3", 1234567, 1).Result(); err != nil {
		t.Fatal(err)
	}
	if ok, err := rdb.Expire(ctx, "online:bitmap:3", 1800*time.Second).Result(); err != nil || !ok {
		t.Errorf("EXPIRE = %v, %v", ok, err)
	}
	checkTTL(ctx, t, rdb, "online:bitmap:3", 1799*time.Second, 1800*time.Second)
	if n, err := rdb.BitCount(ctx, "online:bitmap:3", nil).Result(); err != nil || n != 1 {
		t.Errorf("BITCOUNT = %d, %v", n, err)
	}
	if ok, err := rdb.Expire(ctx, "missing", time.Second).Result(); err != nil || ok {
		t.Errorf("EXPIRE missing = %v, %v", ok, err)
	}
	checkTTL(ctx, t, rdb, "missing", -2, -2)
	if _, err := rdb.Get(ctx, "missing").Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("GET missing: %v, want redis.Nil", err)
	}

	if n, err := rdb.Exists(ctx, "online:total", "online:bitmap:3", "missing", "online:total").Result(); err != nil || n != 3 {
		t.Errorf("EXISTS = %d, %v; want 3", n, err)
	}
	if n, err := rdb.Del(ctx, "online:total", "missing").Result(); err != nil || n != 1 {
		t.Errorf("DEL = %d, %v; want 1", n, err)
	}
	if n, err := rdb.Exists(ctx, "online:total").Result(); err != nil || n != 0 {
		t.Errorf("EXISTS after DEL = %d, %v", n, err)
	}
	// A key with a short TTL goes away without being read in between.
	noErr(t, "SET PX", rdb.Set(ctx, "short", 1, 50*time.Millisecond).Err())
	deadline := time.Now().Add(ioTimeout)
	for {
		n, err := rdb.DBSize(ctx).Result()
		noErr(t, "DBSIZE", err)
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("DBSIZE stays %d: the expired key was not removed", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkTTL checks that TTL of key is within [lo, hi] (-1 and -2 as is).
func checkTTL(ctx context.Context, t *testing.T, rdb *redis.Client, key string, lo, hi time.Duration) {
	t.Helper()
	ttl, err := rdb.TTL(ctx, key).Result()
	if err != nil || ttl < lo || ttl > hi {
		t.Errorf("TTL %s = %v, %v; want between %v and %v", key, ttl, err, lo, hi)
	}
}

func TestGoRedisPipelines(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	rdb := newGoRedis(t, srv)
	rng := rand.New(rand.NewPCG(1, 1))
	var model bitString
	pipe := rdb.Pipeline()
	var cmds []*redis.IntCmd
	var want []int64
	for range 600 {
		off := rng.Int64N(100000)
		cmds = append(cmds, pipe.SetBit(ctx, "hb", off, 1))
		want = append(want, model.set(off, 1))
	}
	count := pipe.BitCount(ctx, "hb", nil)
	_, err := pipe.Exec(ctx)
	noErr(t, "pipeline", err)
	for i, c := range cmds {
		if c.Val() != want[i] {
			t.Fatalf("pipelined SETBIT #%d = %d, want %d", i, c.Val(), want[i])
		}
	}
	if count.Val() != model.count(nil, redis.BitCountIndexByte) {
		t.Errorf("pipelined BITCOUNT = %d, want %d", count.Val(), model.count(nil, redis.BitCountIndexByte))
	}

	var set1, set2 *redis.IntCmd
	var tcount *redis.IntCmd
	var incr *redis.IntCmd
	var get *redis.StringCmd
	_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		set1 = p.SetBit(ctx, "tx", 5, 1)
		set2 = p.SetBit(ctx, "tx", 5, 1)
		tcount = p.BitCount(ctx, "tx", nil)
		p.Set(ctx, "n", "x", 0)
		incr = p.Incr(ctx, "n")
		get = p.Get(ctx, "tx")
		return nil
	})
	if err == nil || err.Error() != "ERR value is not an integer or out of range" {
		t.Errorf("TxPipelined error = %v, want INCR's error", err)
	}
	if set1.Val() != 0 || set2.Val() != 1 || tcount.Val() != 1 || get.Val() != "\x04" || incr.Err() == nil {
		t.Errorf("TxPipelined results: %v %v %v %v %q", set1, set2, tcount, incr, get.Val())
	}

	// The transaction went to the server as MULTI ... EXEC.
	_, fields := infoFields(t, dial(t, srv.Addr()).do("INFO", "commandstats"))
	for _, name := range []string{"multi", "exec"} {
		if fields["cmdstat_"+name] == "" || fields["cmdstat_"+name][:len("calls=1,")] != "calls=1," {
			t.Errorf("cmdstat_%s = %q, want one call", name, fields["cmdstat_"+name])
		}
	}
}

func TestGoRedisScanAndSelect(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	rdb := newGoRedis(t, srv)
	db5 := newGoRedis(t, srv, func(o *redis.Options) { o.DB = 5 })
	want := map[string]bool{}
	for i := range 250 {
		k := fmt.Sprintf("user:%d", i)
		want[k] = true
		noErr(t, "SETBIT", rdb.SetBit(ctx, k, int64(i), 1).Err())
		noErr(t, "SET", rdb.Set(ctx, fmt.Sprintf("other:%d", i), i, 0).Err())
	}
	got := map[string]bool{}
	it := rdb.Scan(ctx, 0, "user:*", 20).Iterator()
	for it.Next(ctx) {
		got[it.Val()] = true
	}
	noErr(t, "SCAN", it.Err())
	if !equalSets(got, want) {
		t.Errorf("SCAN MATCH user:* found %d keys, want %d", len(got), len(want))
	}

	noErr(t, "SET in db 5", db5.Set(ctx, "only5", "v", 0).Err())
	if n, err := rdb.Exists(ctx, "only5").Result(); err != nil || n != 0 {
		t.Errorf("EXISTS only5 in db 0 = %d, %v", n, err)
	}
	if n, err := db5.Exists(ctx, "only5", "user:1").Result(); err != nil || n != 1 {
		t.Errorf("EXISTS only5 user:1 in db 5 = %d, %v; want 1", n, err)
	}
	if n, err := db5.DBSize(ctx).Result(); err != nil || n != 1 {
		t.Errorf("DBSIZE of db 5 = %d, %v", n, err)
	}
	got = map[string]bool{}
	it = db5.Scan(ctx, 0, "", 0).Iterator()
	for it.Next(ctx) {
		got[it.Val()] = true
	}
	if !equalSets(got, map[string]bool{"only5": true}) || it.Err() != nil {
		t.Errorf("SCAN of db 5 = %v, %v", got, it.Err())
	}
}

func equalSets(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}
