package cluster

import "github.com/hashicorp/raft"

// memLogs is the log store of a node whose log is kept in memory
// (AppendOnly off): raft's InmemStore, given copies of the entries to
// store. The leader hands its log store each entry inside the future of
// its proposal, with the future's error channel and response; InmemStore
// keeps the pointers it is given, so it would keep every future for as
// long as it holds the entry, some 300 bytes more an entry than its copy
// (twice the entry's own bytes for a few single SETBITs), all of it for
// the collector to walk. The copies of one call share an allocation,
// freed once the log has dropped all of them (it drops the oldest first).
type memLogs struct{ *raft.InmemStore }

// StoreLog implements raft.LogStore.
func (m memLogs) StoreLog(l *raft.Log) error {
	return m.StoreLogs([]*raft.Log{l})
}

// StoreLogs implements raft.LogStore, storing copies of logs (their
// data shared: raft does not change an entry's data once proposed).
func (m memLogs) StoreLogs(logs []*raft.Log) error {
	copies := make([]raft.Log, len(logs))
	stored := make([]*raft.Log, len(logs))
	for i, l := range logs {
		copies[i] = *l
		stored[i] = &copies[i]
	}
	return m.InmemStore.StoreLogs(stored)
}
