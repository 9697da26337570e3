package cluster

import (
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// timedLogs is a raft.LogStore that counts the writes to its store and the
// time they took. The leader writes each entry to its log before it sends
// it to the followers, and a follower before it acknowledges it: with
// --appendfsync always, the flushes of these writes are part of every
// write's latency, one after the other.
type timedLogs struct {
	raft.LogStore
	writes  atomic.Uint64
	nanos   atomic.Int64
	written func(time.Duration)   // Config.LogWritten, if set
	failed  atomic.Pointer[error] // the last write's error; nil once a write succeeds
}

// StoreLog implements raft.LogStore.
func (t *timedLogs) StoreLog(l *raft.Log) error {
	return t.StoreLogs([]*raft.Log{l})
}

// StoreLogs implements raft.LogStore.
func (t *timedLogs) StoreLogs(logs []*raft.Log) error {
	start := time.Now()
	err := t.LogStore.StoreLogs(logs)
	took := time.Since(start)
	t.nanos.Add(int64(took))
	t.writes.Add(1)
	if t.written != nil {
		t.written(took)
	}
	if err != nil {
		t.failed.Store(&err)
	} else if t.failed.Load() != nil {
		t.failed.Store(nil)
	}
	return err
}

// failure returns the error of the last write, if it failed.
func (t *timedLogs) failure() error {
	if err := t.failed.Load(); err != nil {
		return *err
	}
	return nil
}

// stats returns the writes so far and the time they took in all.
func (t *timedLogs) stats() (writes uint64, took time.Duration) {
	return t.writes.Load(), time.Duration(t.nanos.Load())
}
