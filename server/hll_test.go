package server

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestHyperLogLogGrowthMatchesRedis grows HyperLogLogs from empty until
// they turn dense, a few elements at a time, and merges one into another
// on the way, comparing every reply and the strings' bytes after each
// step with redis-server's: the sparse opcodes presenced writes, split
// and merged as each register rises, must be Redis's own.
func TestHyperLogLogGrowthMatchesRedis(t *testing.T) {
	d := newDiffer(t)
	for seed := range uint64(4) {
		r := rand.New(rand.NewPCG(seed, 0x686c6c))
		var cmds [][][]byte
		for added := 0; added < 8000; {
			key := []string{"h", "g"}[r.IntN(2)]
			args := []string{"PFADD", key}
			for range 1 + r.IntN(6) {
				args = append(args, strconv.FormatUint(r.Uint64(), 36))
				added++
			}
			cmds = append(cmds, argv(args...), argv("GET", key))
			switch r.IntN(40) {
			case 0:
				cmds = append(cmds, argv("PFCOUNT", key), argv("GET", key), argv("PFCOUNT", "h", "g"))
			case 1:
				cmds = append(cmds, argv("PFMERGE", "m", "h", "g"), argv("GET", "m"), argv("PFCOUNT", "m"))
			}
		}
		d.run(fmt.Sprintf("seed %d", seed), cmds, true)
		if t.Failed() {
			return
		}
	}
}
