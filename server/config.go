package server

import (
	"errors"
	"fmt"

	"github.com/presenced/presenced/cluster"
	"github.com/presenced/presenced/proto"
)

// Config is the configuration of a server.
type Config struct {
	// Bind is the address to listen on. The default, 127.0.0.1, serves
	// only local clients, as redis-server's default does.
	Bind string
	// Port is the TCP port; 0 picks a free one (see Server.Addr).
	Port int
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
	// Cluster configures the server's raft node: its identity, peers,
	// persistence (appendonly, appendfsync) and timing.
	Cluster cluster.Config
}

// DefaultConfig returns the configuration `presenced` starts with.
func DefaultConfig() Config {
	return Config{
		Bind:             "127.0.0.1",
		Port:             6379,
		Dir:              "./data",
		MaxBulkLen:       proto.DefaultMaxBulkLen,
		QueryBufferLimit: 1 << 30,
		MaxClients:       10000,
		Cluster:          cluster.DefaultConfig(),
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
	}
	return c.Cluster.Validate()
}
