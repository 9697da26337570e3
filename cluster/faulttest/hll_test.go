//go:build unix

package faulttest

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

// hllUniverseSize is how many elements the HyperLogLog keys of the
// workload are built from.
const hllUniverseSize = 24

// hllUniverse finds, through rdb, elements that make a HyperLogLog's
// replies a function of the set of elements added, so that the model can
// hold that set: each element sets a register of its own to 1. Then
// PFADD changes a register, and replies 1, exactly when it adds an
// element not added before (or creates the key), and PFCOUNT depends on
// the number of elements added alone; it checks that the count is that
// number, for every size up to the universe's, as the model expects.
func hllUniverse(t testing.TB, rdb *redis.Client) []string {
	ctx := context.Background()
	var elems []string
	taken := map[int]bool{}
	for i := 0; len(elems) < hllUniverseSize; i++ {
		if i == 64*hllUniverseSize {
			t.Fatalf("found %d of %d elements that set registers of their own to 1", len(elems), hllUniverseSize)
		}
		e, key := fmt.Sprintf("m%d", i), fmt.Sprintf("hll-probe:%d", i)
		regs, err := probeRegisters(ctx, rdb, key, e)
		if err != nil {
			t.Fatalf("probing %s: %v", e, err)
		}
		if reg, ok := soleRegister(regs, 1); ok && !taken[reg] {
			taken[reg] = true
			elems = append(elems, e)
		}
	}
	for n, e := range elems {
		if err := rdb.PFAdd(ctx, "hll-probe:all", e).Err(); err != nil {
			t.Fatal(err)
		}
		if got, err := rdb.PFCount(ctx, "hll-probe:all").Result(); err != nil || got != int64(n+1) {
			t.Fatalf("PFCOUNT of the first %d elements of the universe: %d, %v", n+1, got, err)
		}
	}
	return elems
}

// probeRegisters adds e to the new HyperLogLog key and returns its
// registers.
func probeRegisters(ctx context.Context, rdb *redis.Client, key, e string) ([]int64, error) {
	if err := rdb.PFAdd(ctx, key, e).Err(); err != nil {
		return nil, err
	}
	return rdb.Do(ctx, "PFDEBUG", "GETREG", key).Int64Slice()
}

// soleRegister returns the one register of regs that is not 0, if it
// holds value.
func soleRegister(regs []int64, value int64) (int, bool) {
	reg := -1
	for i, r := range regs {
		if r != 0 {
			if reg >= 0 {
				return 0, false
			}
			reg = i
		}
	}
	return reg, reg >= 0 && regs[reg] == value
}
