package server

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/presenced/presenced/cluster"
	"github.com/presenced/presenced/history"
	"github.com/presenced/presenced/proto"
	"github.com/presenced/presenced/store"
)

// Config is the configuration of a server.
type Config struct {
	// Bind is the address to listen on. The default, 127.0.0.1, serves
	// only local clients, as redis-server's default does.
	Bind string
	// Port is the TCP port; 0 picks a free one (see Server.Addr).
	Port int
	// UnixSocket is unixsocket: the path of a unix socket that serves
	// clients too, "" for none; UnixSocketPerm, unixsocketperm, its
	// permissions (0: as the umask leaves them).
	UnixSocket     string
	UnixSocketPerm os.FileMode
	// TLS, when set, opens a port that serves clients over TLS.
	TLS *TLSConfig
	// Dir is the data directory.
	Dir string
	// RequirePass, when set, is the default user's password: clients must
	// AUTH before any command but AUTH, HELLO, QUIT and RESET.
	RequirePass string
	// MaxBulkLen is proto-max-bulk-len: the largest argument accepted.
	MaxBulkLen int64
	// QueryBufferLimit is client-query-buffer-limit: a client whose
	// unprocessed input grows past it is disconnected.
	QueryBufferLimit int64
	// MaxClients is the most connections served at once.
	MaxClients int
	// SlowlogSlowerThan is slowlog-log-slower-than: the least time, in
	// microseconds, a command takes to enter the slow log (0: every
	// command; negative: none).
	SlowlogSlowerThan int64
	// SlowlogMaxLen is slowlog-max-len: the most entries the slow log
	// keeps, the newest.
	SlowlogMaxLen int64
	// LatencyTracking is latency-tracking: whether each command's times
	// are kept for LATENCY HISTOGRAM and INFO latencystats (see
	// latency.go).
	LatencyTracking bool
	// LatencyPercentiles is latency-tracking-info-percentiles: the
	// percentiles of each command's times INFO latencystats reports.
	LatencyPercentiles []float64
	// LatencyMonitorThreshold is latency-monitor-threshold: the least
	// time, in milliseconds, a command takes to be a latency event for
	// LATENCY (see latencymonitor.go); 0 records none.
	LatencyMonitorThreshold int64
	// TrackingTableMaxKeys is tracking-table-max-keys: the most keys
	// CLIENT TRACKING remembers for the clients that read them; past it,
	// the server invalidates keys to make room (0: no bound).
	TrackingTableMaxKeys int64
	// Cluster configures the server's raft node: its identity, peers,
	// persistence (appendonly, appendfsync) and timing.
	Cluster cluster.Config
	// History configures the recorded past of the bitmaps, kept in
	// Dir/history.db.
	History HistoryConfig
	// NotifyKeyspaceEvents is notify-keyspace-events: the keyspace
	// notifications published, as flags (see keyspace.go); 0, none, by
	// default.
	NotifyKeyspaceEvents int
	// MasterName is the name of the master SENTINEL answers for: a
	// client built for Sentinel asks for the master by this name, as it
	// was configured with Sentinel (see sentinel.go).
	MasterName string
	// AnnounceIP, AnnouncePort and AnnounceTLSPort, Redis's
	// cluster-announce-ip, -port and -tls-port, are the host and ports
	// other nodes tell clients to reach this node at (CLUSTER, SENTINEL,
	// RAFT INFO), where they differ from the listeners' (behind NAT or a
	// container's port mapping); empty or 0: the listeners'.
	AnnounceIP                    string
	AnnouncePort, AnnounceTLSPort int
	// ClusterEnabled is cluster-enabled: whether the node answers CLUSTER
	// and ASKING as a node of Redis Cluster does (see clustermode.go),
	// rather than as a Redis server without cluster support.
	ClusterEnabled bool
	// MetricsKeys are glob patterns of the keys whose set bits Collector
	// reports, e.g. "online:bitmap:*" (see store.Store.BitCounts for what
	// a pattern costs).
	MetricsKeys []string
}

// HistoryConfig configures what the server records of the past of its
// bitmaps, and for how long. Every node of a cluster should be given the
// same.
type HistoryConfig struct {
	// Enabled turns recording, and the commands that read the past, on.
	Enabled bool
	// Interval is the time between two bitmap snapshots of a key that
	// changed: membership in the past is known at this resolution (counts
	// at every 100 ms tick). A positive multiple of 100 ms.
	Interval time.Duration
	// Retention lists the tiers of snapshots kept (see
	// history.ParseRetention); counts are kept for the longest.
	Retention []history.Tier
	// Keys are glob patterns of the keys recorded; empty records every key.
	Keys []string
}

// historyFile names the history's file in the data directory.
const historyFile = "history.db"

// DefaultHistoryConfig returns the history presenced starts with: a
// snapshot a minute, kept for two days, then one an hour for 90 days.
func DefaultHistoryConfig() HistoryConfig {
	tiers, _ := history.ParseRetention(history.DefaultRetention)
	return HistoryConfig{Enabled: true, Interval: time.Minute, Retention: tiers}
}

// Validate reports the first setting that cannot work, in plain words.
func (c HistoryConfig) Validate() error {
	tick := time.Duration(store.HistoryTick) * time.Millisecond
	switch {
	case !c.Enabled:
		return nil
	case c.Interval < tick || c.Interval%tick != 0:
		return fmt.Errorf("server: history interval %v is not a positive multiple of %v", c.Interval, tick)
	case len(c.Retention) == 0:
		return errors.New("server: history retention must have a tier")
	}
	return nil
}

// DefaultConfig returns the configuration `presenced` starts with.
func DefaultConfig() Config {
	return Config{
		Bind:                 "127.0.0.1",
		Port:                 6379,
		Dir:                  "./data",
		MaxBulkLen:           proto.DefaultMaxBulkLen,
		QueryBufferLimit:     1 << 30,
		MaxClients:           10000,
		SlowlogSlowerThan:    10000,
		SlowlogMaxLen:        128,
		TrackingTableMaxKeys: 1000000,
		LatencyTracking:      true,
		LatencyPercentiles:   []float64{50, 99, 99.9},
		Cluster:              cluster.DefaultConfig(),
		History:              DefaultHistoryConfig(),
		MasterName:           "mymaster",
	}
}

// Validate reports the first setting that cannot work, in plain words.
func (c Config) Validate() error {
	switch {
	case c.Port < 0 || c.Port > 65535:
		return fmt.Errorf("server: port %d is not between 0 and 65535", c.Port)
	case c.Dir == "":
		return errors.New("server: dir must be set")
	case c.MaxBulkLen < 1<<20:
		return errors.New("server: proto-max-bulk-len must be at least 1mb")
	case c.QueryBufferLimit < 1<<20:
		return errors.New("server: client-query-buffer-limit must be at least 1mb")
	case c.MaxClients < 1:
		return errors.New("server: maxclients must be at least 1")
	case c.SlowlogSlowerThan < -1:
		return errors.New("server: slowlog-log-slower-than must be at least -1")
	case c.SlowlogMaxLen < 0:
		return errors.New("server: slowlog-max-len must not be negative")
	case c.TrackingTableMaxKeys < 0:
		return errors.New("server: tracking-table-max-keys must not be negative")
	case c.AnnouncePort < 0 || c.AnnouncePort > 65535 || c.AnnounceTLSPort < 0 || c.AnnounceTLSPort > 65535:
		return errors.New("server: cluster-announce-port and cluster-announce-tls-port must be between 0 and 65535")
	case c.MasterName == "" || strings.ContainsAny(c.MasterName, " \t\r\n"):
		return fmt.Errorf("server: master name %q must be a word", c.MasterName)
	}
	if err := c.History.Validate(); err != nil {
		return err
	}
	if c.TLS != nil {
		if err := c.TLS.Validate(); err != nil {
			return err
		}
	}
	return c.Cluster.Validate()
}
