package cluster

import (
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/presenced/presenced/store"
)

// BenchmarkApply measures group commit on a one-node cluster: many
// goroutines each apply batches of SETBITs (a client's pipeline) in every
// persistence mode. It reports commands per second and commands per log
// entry.
func BenchmarkApply(b *testing.B) {
	modes := []struct {
		name       string
		appendOnly bool
		fsync      string
	}{
		{"appendonly=no", false, FsyncAlways},
		{"appendfsync=always", true, FsyncAlways},
		{"appendfsync=everysec", true, FsyncEverySec},
	}
	for _, m := range modes {
		for _, pipeline := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/pipeline=%d", m.name, pipeline), func(b *testing.B) {
				cfg := testConfig("solo")
				cfg.Bootstrap = true
				cfg.AppendOnly = m.appendOnly
				cfg.AppendFsync = m.fsync
				cfg.Dir = b.TempDir()
				cfg.RaftAddr = "127.0.0.1:0"
				n, err := Open(cfg, FromStore(store.New()), nil)
				if err != nil {
					b.Fatal(err)
				}
				defer n.Close()
				waitReady(b, n)
				var next atomic.Int64
				before := n.Stats()
				b.SetParallelism(50)
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					cmds := make([]store.Command, pipeline)
					var out store.Replies
					for pb.Next() {
						for i := range cmds {
							cmds[i] = cmd(0, "SETBIT", "online", strconv.FormatInt(next.Add(1), 10), "1")
						}
						out.Reset()
						if err := n.Apply(cmds, &out); err != nil {
							b.Error(err)
							return
						}
					}
				})
				s := n.Stats()
				b.ReportMetric(float64(b.N*pipeline)/b.Elapsed().Seconds(), "cmds/s")
				b.ReportMetric(float64(s.Commands-before.Commands)/float64(max(1, s.Entries-before.Entries)), "cmds/entry")
			})
		}
	}
}

// BenchmarkDecodeEntry measures decoding an entry of 3,200 heartbeats
// (SETBIT key <random offset> 1), as a follower does for each entry it
// applies.
func BenchmarkDecodeEntry(b *testing.B) {
	cmds := make([]store.Command, 3200)
	for i := range cmds {
		cmds[i] = cmd(0, "SETBIT", "online:bitmap:0", strconv.Itoa(i*31337%100_000_000), "1")
	}
	data := encode(1767225600000, cmds)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeEntry(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSnapshotInMemory writes a 64 MB snapshot in 64 KB writes (as
// the store's encoder flushes) into memSnapshots and, for comparison,
// raft's InmemSnapshotStore, and reads it back.
func BenchmarkSnapshotInMemory(b *testing.B) {
	const size, write = 64 << 20, 64 << 10
	buf := make([]byte, write)
	for _, s := range []struct {
		name  string
		store func() raft.SnapshotStore
	}{
		{"memSnapshots", func() raft.SnapshotStore { return newMemSnapshots() }},
		{"raft.InmemSnapshotStore", func() raft.SnapshotStore { return raft.NewInmemSnapshotStore() }},
	} {
		b.Run(s.name, func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				snaps := s.store()
				sink, err := snaps.Create(1, 1, 1, raft.Configuration{}, 0, nil)
				if err != nil {
					b.Fatal(err)
				}
				for range size / write {
					sink.Write(buf)
				}
				if err := sink.Close(); err != nil {
					b.Fatal(err)
				}
				_, rc, err := snaps.Open(sink.ID())
				if err != nil {
					b.Fatal(err)
				}
				if n, err := io.Copy(io.Discard, rc); n != size || err != nil {
					b.Fatalf("read %d bytes of %d: %v", n, size, err)
				}
			}
		})
	}
}
