package server

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Redis has no BITOPCOUNT and no BITSCAN, but they mirror commands it has:
// BITOPCOUNT op keys... must reply what BITOP op dest keys... followed by
// BITCOUNT dest replies on a real redis-server, errors included, and
// BITSCAN checks its cursor and options as SSCAN does. These tests drive
// presenced and redis-server side by side with those pairs.

// presenceDiff is a redis-server and a presenced to compare.
type presenceDiff struct{ *differ }

func newPresenceDiff(t *testing.T) *presenceDiff {
	t.Helper()
	return &presenceDiff{newDiffer(t)}
}

func (p *presenceDiff) do(d *diffTarget, args [][]byte) []byte {
	p.t.Helper()
	reply, err := d.do(args)
	if err != nil {
		p.t.Fatalf("%s: %v", formatCommand(args), err)
	}
	return reply
}

// bitopcountDest is the redis-server key that BITOP writes to stand in
// for BITOPCOUNT; the generated commands never use it otherwise.
const bitopcountDest = "presence:bitopcount"

// TestPresenceDiffBitopcount runs seeded sequences of writes (SET, APPEND,
// SETRANGE, SETBIT, BITOP, DEL) on both servers, comparing their replies,
// interleaved with BITOPCOUNT on presenced against BITOP + BITCOUNT on
// redis-server. The operations are Redis 7's: AND, OR, XOR and NOT, in any
// case, with wrong numbers of keys and unknown names now and then.
func TestPresenceDiffBitopcount(t *testing.T) {
	p := newPresenceDiff(t)
	seqs := 300
	if testing.Short() {
		seqs = 30
	}
	for seed := range uint64(seqs) {
		p.bitopcountSequence(seed)
	}
}

// bitopcountSequence runs the sequence of seed from an empty keyspace and
// stops at its first mismatch, printing the commands that led to it.
func (p *presenceDiff) bitopcountSequence(seed uint64) {
	p.t.Helper()
	g := &gen{r: rand.New(rand.NewPCG(seed, 0x6269746f70636e74))}
	for _, d := range []*diffTarget{p.ref, p.sut} {
		p.do(d, argv("FLUSHALL"))
	}
	var history []string
	fail := func(cmd, refReply, sutReply string) {
		p.t.Errorf("seed %d: replies differ\ncommand:   %s\nredis:     %s\npresenced: %s\nafter FLUSHALL and:\n    %s",
			seed, cmd, refReply, sutReply, strings.Join(history, "\n    "))
	}
	for range 20 + g.r.IntN(40) {
		if g.chance(50) {
			args := argv(genPresenceWrite(g)...)
			history = append(history, formatCommand(args))
			if ref, sut := p.do(p.ref, args), p.do(p.sut, args); !bytes.Equal(ref, sut) {
				fail(formatCommand(args), clip(ref), clip(sut))
				return
			}
			continue
		}
		op, keys := genBitopcount(g)
		count := argv(append([]string{"BITOPCOUNT", op}, keys...)...)
		history = append(history, formatCommand(count))
		want := p.do(p.ref, argv(append([]string{"BITOP", op, bitopcountDest}, keys...)...))
		if want[0] != '-' {
			want = p.do(p.ref, argv("BITCOUNT", bitopcountDest))
		}
		if got := p.do(p.sut, count); !bytes.Equal(got, want) {
			fail(formatCommand(count), "BITOP + BITCOUNT "+clip(want), clip(got))
			return
		}
	}
}

// genPresenceWrite writes a key of the pool: raw strings of every length
// (long ones span several bitmap containers), bits, BITOP results, or
// nothing.
func genPresenceWrite(g *gen) []string {
	k := g.key()
	switch g.r.IntN(7) {
	case 0, 1:
		return cmd("SET", k, g.value())
	case 2:
		return cmd("APPEND", k, g.value())
	case 3:
		return cmd("SETRANGE", k, g.between(0, 2000), g.value())
	case 4:
		return genBitop(g)
	case 5:
		return cmd("DEL", k)
	}
	return cmd("SETBIT", k, g.bitOffset(true), g.pick("0", "1", "1"))
}

// genBitopcount returns a BITOPCOUNT operation and its source keys.
// Redis 8's DIFF, DIFF1, ANDOR and ONE are left out: the reference is
// Redis 7, which rejects them (the store's tests check them against a
// model).
func genBitopcount(g *gen) (string, []string) {
	op := g.pick("AND", "OR", "XOR", "NOT", "and", "Or", "xor", "not")
	if g.chance(5) {
		op = g.pick("NAND", "", "ANDX", "NOTT")
	}
	keys := g.keys()
	if strings.EqualFold(op, "not") && g.chance(80) {
		keys = keys[:1]
	}
	return op, keys
}

// TestPresenceDiffBitscanErrors compares BITSCAN's checks with SSCAN's:
// for the same cursor and options, BITSCAN on a bitmap must fail exactly
// when SSCAN on a set fails, with the same error, and on a missing key
// the replies must be identical (SSCAN checks the cursor, then replies an
// empty page for a missing key without looking at the options). MATCH is
// left out: SSCAN takes it, BITSCAN does not.
func TestPresenceDiffBitscanErrors(t *testing.T) {
	p := newPresenceDiff(t)
	for _, d := range []*diffTarget{p.ref, p.sut} {
		p.do(d, argv("FLUSHALL"))
	}
	p.do(p.ref, argv("SADD", "k", "a", "b", "c"))
	for _, off := range []string{"1", "5", "9", "100", "70000"} {
		p.do(p.sut, argv("SETBIT", "k", off, "1"))
	}
	cursors := []string{"0", "", "5", "+5", "-1", "007", "18446744073709551615", "-18446744073709551615",
		"18446744073709551616", "-18446744073709551616", "abc", " 1", "1 ", "0x10", "1.5", "-", "+", "1e3"}
	options := [][]string{{"COUNT", "5"}, {"count", "1"}, {"Count", "9223372036854775807"}, {"COUNT", "0"},
		{"COUNT", "-1"}, {"COUNT", "abc"}, {"COUNT", "1.5"}, {"COUNT", ""}, {"COUNT", "9223372036854775808"},
		{"COUNT", "-9223372036854775808"}, {"COUNT"}, {"FOO", "1"}, {"TYPE", "string"}, {"NOCOUNT"}, {"COUNTS", "2"}}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		tail := []string{cursors[r.IntN(len(cursors))]}
		if i < len(cursors) {
			tail[0] = cursors[i]
		}
		for range r.IntN(4) {
			tail = append(tail, options[r.IntN(len(options))]...)
		}
		for _, key := range []string{"k", "nokey"} {
			sscan := argv(append([]string{"SSCAN", key}, tail...)...)
			bitscan := argv(append([]string{"BITSCAN", key}, tail...)...)
			want, got := p.do(p.ref, sscan), p.do(p.sut, bitscan)
			same := bytes.Equal(got, want)
			if key == "k" && want[0] != '-' {
				same = bytes.HasPrefix(got, []byte("*2\r\n"))
			}
			if !same {
				t.Fatalf("%s: %s\n%s: %s", formatCommand(sscan), clip(want), formatCommand(bitscan), clip(got))
			}
		}
	}
}

// TestBitscanGoRedisWhileChanging scans a bitmap page by page with
// go-redis's ScanCmd, which parses BITSCAN's replies as it does SSCAN's,
// while another goroutine keeps setting and clearing other bits: every
// bit set throughout must come back exactly once, offsets ascending, and
// nothing but bits that were set at some point. A full scan with the
// ScanCmd iterator after the writer stops must list exactly the set bits.
func TestBitscanGoRedisWhileChanging(t *testing.T) {
	srv := startServer(t)
	ctx := context.Background()
	rdb, writer := newGoRedis(t, srv), newGoRedis(t, srv)
	const key = "online"
	r := rand.New(rand.NewPCG(3, 4))
	stable, volatile := map[int64]bool{}, []int64{}
	for range 3000 {
		off := r.Int64N(1 << 20)
		if r.IntN(2) == 0 {
			stable[off] = true
		} else {
			volatile = append(volatile, off)
		}
	}
	volatile = slices.DeleteFunc(volatile, func(off int64) bool { return stable[off] })
	pipe := rdb.Pipeline()
	for off := range stable {
		pipe.SetBit(ctx, key, off, 1)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}

	// The writer flips random volatile bits in batches and reports each
	// batch, so that the scanner can wait for changes between its pages.
	stop, flipped, done := make(chan struct{}), make(chan struct{}, 1), make(chan error, 1)
	go func() {
		wr := rand.New(rand.NewPCG(5, 6))
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			pipe := writer.Pipeline()
			for range 20 {
				pipe.SetBit(ctx, key, volatile[wr.IntN(len(volatile))], wr.IntN(2))
			}
			if _, err := pipe.Exec(ctx); err != nil {
				done <- err
				return
			}
			select {
			case flipped <- struct{}{}:
			default:
			}
		}
	}()

	isVolatile := map[int64]bool{}
	for _, off := range volatile {
		isVolatile[off] = true
	}
	seen := map[int64]int{}
	last, cursor, pages := int64(-1), uint64(0), 0
	for {
		select { // wait for bits to change since the last page
		case <-flipped:
		case err := <-done:
			t.Fatalf("writer: %v", err)
		}
		scan := redis.NewScanCmd(ctx, rdb.Process, "bitscan", key, cursor, "count", 1+r.IntN(40))
		_ = rdb.Process(ctx, scan)
		page, next, err := scan.Result()
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, s := range page {
			off, err := strconv.ParseInt(s, 10, 64)
			if err != nil || off <= last || !(stable[off] || isVolatile[off]) {
				t.Fatalf("page %d: offset %q after %d (error %v)", pages, s, last, err)
			}
			last = off
			seen[off]++
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for off := range stable {
		if seen[off] != 1 {
			t.Fatalf("offset %d, set throughout, seen %d times in %d pages", off, seen[off], pages)
		}
	}

	// With the writer stopped, a full scan lists exactly the set bits.
	var want []string
	for i, b := range []byte(rdb.Get(ctx, key).Val()) {
		for j := range 8 {
			if b&(0x80>>j) != 0 {
				want = append(want, strconv.Itoa(i*8+j))
			}
		}
	}
	full := redis.NewScanCmd(ctx, rdb.Process, "bitscan", key, 0, "count", 100)
	_ = rdb.Process(ctx, full)
	var got []string
	for it := full.Iterator(); it.Next(ctx); {
		got = append(got, it.Val())
	}
	if err := full.Err(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("full scan: %d offsets, want %d", len(got), len(want))
	}
}
