// Package servertest starts an in-process presenced server for the tests
// of other packages (the examples, for instance): a one-node cluster on
// free loopback ports, its raft log in memory, quick to elect itself.
package servertest

import (
	"io"
	"testing"
	"time"

	"github.com/presenced/presenced/server"
	"github.com/redis/go-redis/v9"
)

// Start starts a server for the length of the test, with the default
// configuration changed by opts, and returns it once it accepts
// connections; Addr gives its client address.
func Start(tb testing.TB, opts ...func(*server.Config)) *server.Server {
	tb.Helper()
	cfg := server.DefaultConfig()
	cfg.Port = 0
	cfg.Dir = tb.TempDir()
	c := &cfg.Cluster
	c.NodeID = "test"
	c.RaftAddr = "127.0.0.1:0"
	c.Dir = cfg.Dir
	c.AppendOnly = false
	c.HeartbeatTimeout = 50 * time.Millisecond
	c.ElectionTimeout = 50 * time.Millisecond
	c.LeaderLeaseTimeout = 50 * time.Millisecond
	c.LogOutput = io.Discard
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := server.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		srv.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() { srv.Close() })
	return srv
}

// Client starts a server as Start does and returns a go-redis client of
// it; both end with the test.
func Client(tb testing.TB, opts ...func(*server.Config)) *redis.Client {
	tb.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: Start(tb, opts...).Addr()})
	tb.Cleanup(func() { rdb.Close() })
	return rdb
}
