package server

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// settings holds the configuration that CONFIG SET may change while the
// server runs. Readers load it without locking; writers copy, change and
// swap it.
type settings struct {
	p  atomic.Pointer[Config]
	mu sync.Mutex // serializes writers
}

func (st *settings) init(c Config) { st.p.Store(&c) }

// config returns the current configuration.
func (st *settings) config() Config { return *st.p.Load() }

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
// changeable by CONFIG SET.
type parameter struct {
	name string
	get  func(*Config) string
	set  func(*Config, string) bool
}

// parameters are the settings CONFIG knows, in the order CONFIG GET *
// lists them.
var parameters = []parameter{
	{name: "bind", get: func(c *Config) string { return c.Bind }},
	{name: "port", get: func(c *Config) string { return strconv.Itoa(c.Port) }},
	{name: "dir", get: func(c *Config) string { return c.Dir }},
	{name: "databases", get: func(*Config) string { return "16" }},
	{name: "requirepass",
		get: func(c *Config) string { return c.RequirePass },
		set: func(c *Config, v string) bool { c.RequirePass = v; return true }},
	{name: "proto-max-bulk-len",
		get: func(c *Config) string { return strconv.FormatInt(c.MaxBulkLen, 10) },
		set: func(c *Config, v string) bool { return parseMemory(v, &c.MaxBulkLen) }},
	{name: "client-query-buffer-limit",
		get: func(c *Config) string { return strconv.FormatInt(c.QueryBufferLimit, 10) },
		set: func(c *Config, v string) bool { return parseMemory(v, &c.QueryBufferLimit) }},
	{name: "maxclients",
		get: func(c *Config) string { return strconv.Itoa(c.MaxClients) },
		set: func(c *Config, v string) bool {
			n, err := strconv.Atoi(v)
			c.MaxClients = n
			return err == nil
		}},
	{name: "hz",
		get: func(c *Config) string { return strconv.FormatInt(int64(1e9/c.TickInterval.Nanoseconds()), 10) }},
	{name: "save", get: func(*Config) string { return "" }},
	{name: "appendonly", get: func(*Config) string { return "no" }},
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
