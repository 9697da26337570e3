package server

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/presenced/presenced/store"
)

// settings holds the configuration that CONFIG SET may change while the
// server runs. Readers load it without locking; writers copy, change and
// swap it.
type settings struct {
	p  atomic.Pointer[Config]
	mu sync.Mutex // serializes writers
}

func (st *settings) init(c Config) { st.p.Store(&c) }

// config returns a copy of the current configuration.
func (st *settings) config() Config { return *st.p.Load() }

// current returns the current configuration itself, without config's
// copy of the whole of it, for the reads of every request: callers must
// not change it.
func (st *settings) current() *Config { return st.p.Load() }

// update applies f to a copy of the configuration and installs the copy
// if f and Validate accept it.
func (st *settings) update(f func(*Config) error) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	c := *st.p.Load()
	if err := f(&c); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return err
	}
	st.p.Store(&c)
	return nil
}

// parameter is one setting visible to CONFIG GET and, unless set is nil,
// changeable by CONFIG SET. set returns why a value is refused, in
// Redis's words, or "".
type parameter struct {
	name string
	get  func(*Config) string
	set  func(*Config, string) string
}

// parameters are the settings CONFIG knows, in the order CONFIG GET *
// lists them.
var parameters = []parameter{
	{name: "bind", get: func(c *Config) string { return c.Bind }},
	{name: "port", get: func(c *Config) string { return strconv.Itoa(c.Port) }},
	{name: "dir", get: func(c *Config) string { return c.Dir }},
	{name: "enable-module-command", get: func(*Config) string { return "no" }},
	{name: "unixsocket", get: func(c *Config) string { return c.UnixSocket }},
	{name: "unixsocketperm", get: func(c *Config) string { return strconv.FormatUint(uint64(c.UnixSocketPerm), 8) }},
	{name: "tls-port", get: func(c *Config) string { return strconv.Itoa(c.tlsSetting().Port) }},
	{name: "tls-cert-file", get: func(c *Config) string { return c.tlsSetting().CertFile },
		set: tlsSetter(func(c *TLSConfig, v string) string { c.CertFile = v; return "" })},
	{name: "tls-key-file", get: func(c *Config) string { return c.tlsSetting().KeyFile },
		set: tlsSetter(func(c *TLSConfig, v string) string { c.KeyFile = v; return "" })},
	{name: "tls-ca-cert-file", get: func(c *Config) string { return c.tlsSetting().CACertFile },
		set: tlsSetter(func(c *TLSConfig, v string) string { c.CACertFile = v; return "" })},
	{name: "tls-auth-clients", get: func(c *Config) string { return c.tlsSetting().AuthClients },
		set: tlsSetter(func(c *TLSConfig, v string) string {
			switch v = strings.ToLower(v); v {
			case "yes", "no", "optional":
				c.AuthClients = v
				return ""
			}
			return "argument(s) must be one of the following: no, yes, optional"
		})},
	{name: "tls-cluster", get: func(c *Config) string { return yesNo(c.tlsSetting().Cluster) }},
	{name: "cluster-enabled", get: func(c *Config) string { return yesNo(c.ClusterEnabled) }},
	{name: "cluster-announce-ip",
		get: func(c *Config) string { return c.AnnounceIP },
		set: func(c *Config, v string) string { c.AnnounceIP = v; return "" }},
	{name: "cluster-announce-port",
		get: func(c *Config) string { return strconv.Itoa(c.AnnouncePort) },
		set: intSetter(0, 65535, func(c *Config, n int64) { c.AnnouncePort = int(n) })},
	{name: "cluster-announce-tls-port",
		get: func(c *Config) string { return strconv.Itoa(c.AnnounceTLSPort) },
		set: intSetter(0, 65535, func(c *Config, n int64) { c.AnnounceTLSPort = int(n) })},
	{name: "databases", get: func(*Config) string { return "16" }},
	{name: "requirepass",
		get: func(c *Config) string { return c.RequirePass },
		set: func(c *Config, v string) string { c.RequirePass = v; return "" }},
	{name: "proto-max-bulk-len",
		get: func(c *Config) string { return strconv.FormatInt(c.MaxBulkLen, 10) },
		set: memorySetter(func(c *Config) *int64 { return &c.MaxBulkLen })},
	{name: "client-query-buffer-limit",
		get: func(c *Config) string { return strconv.FormatInt(c.QueryBufferLimit, 10) },
		set: memorySetter(func(c *Config) *int64 { return &c.QueryBufferLimit })},
	{name: "maxclients",
		get: func(c *Config) string { return strconv.Itoa(c.MaxClients) },
		set: intSetter(1, 1<<32-1, func(c *Config, n int64) { c.MaxClients = int(n) })},
	{name: "slowlog-log-slower-than",
		get: func(c *Config) string { return strconv.FormatInt(c.SlowlogSlowerThan, 10) },
		set: intSetter(-1, 1<<63-1, func(c *Config, n int64) { c.SlowlogSlowerThan = n })},
	{name: "slowlog-max-len",
		get: func(c *Config) string { return strconv.FormatInt(c.SlowlogMaxLen, 10) },
		set: intSetter(0, 1<<63-1, func(c *Config, n int64) { c.SlowlogMaxLen = n })},
	{name: "notify-keyspace-events",
		get: func(c *Config) string { return formatKeyspaceEvents(c.NotifyKeyspaceEvents) },
		set: func(c *Config, v string) string {
			flags, ok := parseKeyspaceEvents(v)
			if !ok {
				return "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
			}
			c.NotifyKeyspaceEvents = flags
			return ""
		}},
	{name: "latency-tracking",
		get: func(c *Config) string { return yesNo(c.LatencyTracking) },
		set: func(c *Config, v string) string {
			switch strings.ToLower(v) {
			case "yes":
				c.LatencyTracking = true
			case "no":
				c.LatencyTracking = false
			default:
				return "argument must be 'yes' or 'no'"
			}
			return ""
		}},
	{name: "latency-tracking-info-percentiles",
		get: func(c *Config) string {
			var ps []string
			for _, p := range c.LatencyPercentiles {
				ps = append(ps, formatPercentile(p))
			}
			return strings.Join(ps, " ")
		},
		set: func(c *Config, v string) string {
			ps, msg := parsePercentiles(v)
			if msg == "" {
				c.LatencyPercentiles = ps
			}
			return msg
		}},
	{name: "latency-monitor-threshold",
		get: func(c *Config) string { return strconv.FormatInt(c.LatencyMonitorThreshold, 10) },
		set: intSetter(0, 1<<63-1, func(c *Config, n int64) { c.LatencyMonitorThreshold = n })},
	{name: "tracking-table-max-keys",
		get: func(c *Config) string { return strconv.FormatInt(c.TrackingTableMaxKeys, 10) },
		set: intSetter(0, 1<<63-1, func(c *Config, n int64) { c.TrackingTableMaxKeys = n })},
	{name: "hz", get: func(c *Config) string { return strconv.Itoa(c.hz()) }},
	// presenced sets no memory limit, evicts nothing and keeps idle
	// clients, as Redis does by default.
	{name: "maxmemory", get: func(*Config) string { return "0" }},
	{name: "maxmemory-policy", get: func(*Config) string { return "noeviction" }},
	{name: "timeout", get: func(*Config) string { return "0" }},
	{name: "hll-sparse-max-bytes", get: func(*Config) string { return strconv.Itoa(store.HLLSparseMaxBytes) }},
	{name: "save", get: func(*Config) string { return "" }},
	{name: "appendonly", get: func(c *Config) string { return yesNo(c.Cluster.AppendOnly) }},
	{name: "appendfsync", get: func(c *Config) string { return c.Cluster.AppendFsync }},
}

// intSetter sets an integer in [lo, hi] with set, as Redis bounds its
// numeric parameters.
func intSetter(lo, hi int64, set func(*Config, int64)) func(*Config, string) string {
	return func(c *Config, v string) string {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return "argument couldn't be parsed into an integer"
		}
		if msg := checkRange(n, lo, hi); msg != "" {
			return msg
		}
		set(c, n)
		return ""
	}
}

// memorySetter sets a memory amount of at least 1mb, as Redis bounds
// proto-max-bulk-len and client-query-buffer-limit.
func memorySetter(field func(*Config) *int64) func(*Config, string) string {
	return func(c *Config, v string) string {
		var n int64
		if !parseMemory(v, &n) {
			return "argument must be a memory value"
		}
		if msg := checkRange(n, 1<<20, 1<<63-1); msg != "" {
			return msg
		}
		*field(c) = n
		return ""
	}
}

// checkRange returns Redis's complaint about n outside [lo, hi], or "".
func checkRange(n, lo, hi int64) string {
	if n < lo || n > hi {
		return fmt.Sprintf("argument must be between %d and %d inclusive", lo, hi)
	}
	return ""
}

func findParameter(name string) *parameter {
	for i := range parameters {
		if strings.EqualFold(parameters[i].name, name) {
			return &parameters[i]
		}
	}
	return nil
}

// parseMemory parses a memory amount as redis.conf writes it: bytes, or a
// number with a k, kb, m, mb, g or gb suffix (any case).
func parseMemory(s string, out *int64) bool {
	units := []struct {
		suffix string
		mul    int64
	}{{"kb", 1024}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1000}, {"m", 1000 * 1000}, {"g", 1000 * 1000 * 1000}}
	ls := strings.ToLower(s)
	mul := int64(1)
	for _, u := range units {
		if strings.HasSuffix(ls, u.suffix) {
			ls, mul = strings.TrimSuffix(ls, u.suffix), u.mul
			break
		}
	}
	n, err := strconv.ParseInt(ls, 10, 64)
	if err != nil || n < 0 || n > (1<<63-1)/mul {
		return false
	}
	*out = n * mul
	return true
}

// hz is Redis's name for how often the server does its periodic work:
// here, how often the leader ticks.
func (c *Config) hz() int { return int(time.Second / c.Cluster.TickInterval) }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
