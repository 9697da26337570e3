package server

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/presenced/presenced/proto"
)

// Collector returns a Prometheus collector of the node's figures: what
// INFO reports of its clients, commands, errors, keyspace and replication,
// raft's log counters that RAFT INFO reports, and the set bits of the keys
// Config.MetricsKeys names. It reads them as it is scraped: commands pay
// nothing for it.
func (s *Server) Collector() prometheus.Collector { return metricsCollector{s} }

type metricsCollector struct{ s *Server }

// metric describes one of the collector's metrics.
func metric(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("presenced_"+name, help, labels, nil)
}

var (
	mClients     = metric("connected_clients", "Client connections open (INFO connected_clients).")
	mConnections = metric("connections_received_total", "Client connections accepted (INFO total_connections_received).")
	mRejected    = metric("rejected_connections_total", "Connections refused for maxclients (INFO rejected_connections).")
	mCalls       = metric("commands_total", "Calls of a command (INFO commandstats calls).", "command")
	mCallTime    = metric("command_seconds_total", "Time spent in a command, a write's commit included (INFO commandstats usec).", "command")
	mFailed      = metric("command_failed_total", "Calls of a command that answered an error (INFO commandstats failed_calls).", "command")
	mRefused     = metric("command_rejected_total", "Calls of a command refused before it ran (INFO commandstats rejected_calls).", "command")
	mErrors      = metric("error_replies_total", "Error replies by error code (INFO errorstats).", "code")
	mExpired     = metric("expired_keys_total", "Keys removed because their TTL passed (INFO expired_keys).")
	mHits        = metric("keyspace_hits_total", "Lookups of a key to read it that found it (INFO keyspace_hits).")
	mMisses      = metric("keyspace_misses_total", "Lookups of a key to read it that did not find it (INFO keyspace_misses).")
	mKeys        = metric("keys", "Keys in a database (INFO keyspace keys).", "db")
	mKeysTTL     = metric("keys_with_ttl", "Keys with a TTL in a database (INFO keyspace expires).", "db")
	mChannels    = metric("pubsub_channels", "Channels with a subscriber on this node.")
	mPatterns    = metric("pubsub_patterns", "Patterns subscribed to on this node.")
	mBits        = metric("bits", "Set bits of a key that --metrics-keys names, as BITCOUNT key counts them.", "db", "key")
	mLeader      = metric("raft_leader", "1 while this node leads its cluster, else 0.")
	mTerm        = metric("raft_term", "The current raft term.")
	mCommit      = metric("raft_commit_index", "The index of the latest log entry known committed.")
	mApplied     = metric("raft_applied_index", "The index of the latest log entry applied to the store.")
	mLast        = metric("raft_last_index", "The index of the latest entry of this node's log.")
	mQueued      = metric("raft_queued_batches", "Batches of writes waiting for a log entry.")
	mLag         = metric("raft_follower_lag_entries", "On the leader: committed entries a follower has not applied yet, -1 when it did not answer.", "node_id")
	mEntries     = metric("raft_entries_total", "Log entries this node proposed, ticks included.")
	mBatches     = metric("raft_batches_total", "Batches of writes committed through this node.")
	mCommands    = metric("raft_commands_total", "Commands committed through this node.")
	mLogWrites   = metric("raft_log_writes_total", "Writes to this node's raft log.")
	mLogTime     = metric("raft_log_write_seconds_total", "Time the writes to this node's raft log took, flushes included.")
	mCommitted   = metric("raft_entries_committed_total", "Entries this node proposed and applied.")
	mEntryTime   = metric("raft_entry_seconds_total", "Time from proposing an entry to applying it, summed over the entries this node proposed.")
	mRestores    = metric("raft_snapshot_restores_total", "Snapshots restored into the store: at start, and to catch up with the leader.")
	mLogFailing  = metric("raft_log_write_failing", "1 while the latest write to this node's raft log failed (a full disk, say; INFO aof_last_write_status:err), else 0.")
	mRelayed     = metric("pubsub_relayed_total", "PUBLISH and SPUBLISH messages of this node's clients relayed to another member, once per member.")
	mRelayDrops  = metric("pubsub_relay_dropped_total", "PUBLISH and SPUBLISH messages of this node's clients that a member missed.")
)

// Describe sends the descriptions of every metric the collector reports.
func (m metricsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{mClients, mConnections, mRejected, mCalls, mCallTime, mFailed, mRefused,
		mErrors, mExpired, mHits, mMisses, mKeys, mKeysTTL, mChannels, mPatterns, mBits, mLeader, mTerm, mCommit, mApplied, mLast,
		mQueued, mLag, mEntries, mBatches, mCommands, mLogWrites, mLogTime, mCommitted, mEntryTime, mRestores, mLogFailing,
		mRelayed, mRelayDrops} {
		ch <- d
	}
}

// Collect reads the node's figures.
func (m metricsCollector) Collect(ch chan<- prometheus.Metric) {
	s := m.s
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}

	gauge(mClients, float64(len(s.clientList())))
	counter(mConnections, float64(s.stats.connections.Load()))
	counter(mRejected, float64(s.stats.rejected.Load()))
	for i, t := range s.commandTotals() {
		if t.calls == 0 && t.rejected == 0 {
			continue
		}
		name := proto.Counted[i].FullName()
		counter(mCalls, float64(t.calls), name)
		counter(mCallTime, float64(t.usec)/1e6, name)
		counter(mFailed, float64(t.failed), name)
		counter(mRefused, float64(t.rejected), name)
	}
	s.stats.errs.Lock()
	for code, n := range s.stats.errs.byCode {
		counter(mErrors, float64(n), code)
	}
	s.stats.errs.Unlock()
	counter(mExpired, float64(s.store.Stats().ExpiredKeys))
	lookups := s.store.Lookups()
	counter(mHits, float64(lookups.Hits))
	counter(mMisses, float64(lookups.Misses))
	for _, k := range s.store.Keyspace() {
		db := strconv.Itoa(k.DB)
		gauge(mKeys, float64(k.Keys), db)
		gauge(mKeysTTL, float64(k.Expires), db)
	}
	subs := s.pubsub.counts()
	gauge(mChannels, float64(subs[channelSub]))
	gauge(mPatterns, float64(subs[patternSub]))
	if keys := s.settings.config().MetricsKeys; len(keys) > 0 {
		for _, k := range s.store.BitCounts(keys) {
			gauge(mBits, float64(k.Bits), strconv.Itoa(k.DB), k.Key)
		}
	}

	node := s.node
	st := node.Stats()
	leader := 0.0
	if node.IsLeader() {
		leader = 1
		for _, f := range s.followers() {
			lag := float64(int64(st.CommitIndex) - int64(f.Applied))
			if f.Err != nil {
				lag = -1
			}
			gauge(mLag, lag, f.ID)
		}
	}
	gauge(mLeader, leader)
	gauge(mTerm, float64(st.Term))
	gauge(mCommit, float64(st.CommitIndex))
	gauge(mApplied, float64(node.Applied()))
	gauge(mLast, float64(st.LastIndex))
	gauge(mQueued, float64(st.Queued))
	counter(mEntries, float64(st.Entries))
	counter(mBatches, float64(st.Batches))
	counter(mCommands, float64(st.Commands))
	counter(mLogWrites, float64(st.LogWrites))
	counter(mLogTime, st.LogWriteTime.Seconds())
	counter(mCommitted, float64(st.EntriesCommitted))
	counter(mEntryTime, st.EntryTime.Seconds())
	counter(mRestores, float64(st.Restores))
	failing := 0.0
	if node.LogFailure() != nil {
		failing = 1
	}
	gauge(mLogFailing, failing)
	counter(mRelayed, float64(st.Relayed))
	counter(mRelayDrops, float64(st.RelayDropped))
}
