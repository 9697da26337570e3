package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	replica "github.com/presenced/presenced/cluster"
	"github.com/presenced/presenced/store"
)

// The log alone: a pipeline-1 row's writes reach presenced's log only
// after a round trip through the sockets, on the cores the load generator
// shares. To tell the log's share of a row from the round trip's, the
// modes group also feeds a node's log (the same cluster package, group
// commit and raft stores the server runs) from writers inside this
// process, as many as the row's connections, each applying one SETBIT at
// a time: with no round trip between a write's reply and the next write.

// logAloneSpec is one measurement of the log alone.
type logAloneSpec struct {
	appendOnly bool
	fsync      string // replica.FsyncAlways, FsyncEverySec or FsyncNo
	writers    int
	duration   time.Duration
	space      uint64 // the SETBITs' random offsets are below it
	seed       uint64
}

// logAloneRate is what a measurement of the log alone found.
type logAloneRate struct {
	perSecond float64 // commands applied a second
	perEntry  float64 // commands a log entry carried
}

// measureLogAlone opens a one-node cluster as specified in a fresh
// directory under the system's temporary one and measures it.
func measureLogAlone(spec logAloneSpec) (logAloneRate, error) {
	dir, err := os.MkdirTemp("", "bench-log-alone-")
	if err != nil {
		return logAloneRate{}, err
	}
	defer os.RemoveAll(dir)
	cfg := replica.DefaultConfig()
	cfg.Dir, cfg.RaftAddr = dir, "127.0.0.1:0"
	cfg.AppendOnly, cfg.AppendFsync = spec.appendOnly, spec.fsync
	cfg.LogOutput = io.Discard
	n, err := replica.Open(cfg, replica.FromStore(store.New()), nil)
	if err != nil {
		return logAloneRate{}, err
	}
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := n.WaitLeader(ctx); err != nil {
		return logAloneRate{}, err
	}
	if err := n.Tick(ctx); err != nil {
		return logAloneRate{}, err
	}
	return applyFromWriters(n, spec)
}

// applyFromWriters runs spec's writers against n until spec's duration
// has passed, and reports their rate.
func applyFromWriters(n *replica.Node, spec logAloneSpec) (logAloneRate, error) {
	before := n.Stats()
	var (
		applied  atomic.Int64
		firstErr error
		once     sync.Once
		wg       sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(spec.duration)
	for w := range spec.writers {
		wg.Add(1)
		go func(ids idSource) {
			defer wg.Done()
			cmd := []store.Command{{Args: [][]byte{[]byte("SETBIT"), []byte(heartbeatKey), nil, []byte("1")}}}
			var out store.Replies
			var offset []byte
			for time.Now().Before(deadline) {
				offset = strconv.AppendUint(offset[:0], ids.next(), 10)
				cmd[0].Args[2] = offset
				out.Reset()
				if err := n.Apply(cmd, &out); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				applied.Add(1)
			}
		}(newRandomIDs(spec.seed, uint64(w), spec.space))
	}
	wg.Wait()
	took := time.Since(start)
	if firstErr != nil {
		return logAloneRate{}, fmt.Errorf("the log alone: %w", firstErr)
	}
	after := n.Stats()
	entries, commands := after.Entries-before.Entries, after.Commands-before.Commands
	if entries == 0 || commands != uint64(applied.Load()) {
		return logAloneRate{}, fmt.Errorf("the log alone: %d writes applied, %d commands committed in %d entries", applied.Load(), commands, entries)
	}
	return logAloneRate{
		perSecond: float64(commands) / took.Seconds(),
		perEntry:  float64(commands) / float64(entries),
	}, nil
}
