package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/presenced/presenced/cluster"
	"github.com/presenced/presenced/store"
)

// The bit-TTL rules live in the store, not in Config: they change through
// the log (the store's BITTTLRULES command), so every replica arms the
// same deadlines. CONFIG SET bit-ttl and the --bit-ttl flag both send
// that command; CONFIG GET bit-ttl reads the store.

// bitTTLName is the rules' CONFIG parameter name.
const bitTTLName = "bit-ttl"

// bitTTLValue is CONFIG GET bit-ttl: "<pattern> <seconds>" pairs in
// matching order, space-separated.
func (s *Server) bitTTLValue() string {
	var b strings.Builder
	for i, r := range s.store.BitTTLRules() {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s %d", r.Pattern, r.TTL/1000)
	}
	return b.String()
}

// ParseBitTTL parses a CONFIG SET bit-ttl value, "<pattern> <seconds>"
// pairs separated by spaces (an empty value: no rules), or says why it is
// refused.
func ParseBitTTL(v string) ([]store.BitTTLRule, error) {
	f := strings.Fields(v)
	if len(f)%2 != 0 {
		return nil, errors.New("bit-ttl must be pairs of <pattern> <seconds>")
	}
	rules := make([]store.BitTTLRule, 0, len(f)/2)
	for i := 0; i < len(f); i += 2 {
		secs, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil || secs <= 0 {
			return nil, fmt.Errorf("invalid TTL %q for pattern %q: want a positive number of seconds", f[i+1], f[i])
		}
		rules = append(rules, store.BitTTLRule{Pattern: f[i], TTL: secs * 1000})
	}
	return rules, nil
}

// ParseBitTTLFlag parses one --bit-ttl flag value, "<pattern>=<ttl>"
// where ttl is whole seconds with or without an "s" ("90", "90s") or a
// duration such as "2m".
func ParseBitTTLFlag(v string) (store.BitTTLRule, error) {
	pat, ttl, ok := strings.Cut(v, "=")
	if !ok || pat == "" {
		return store.BitTTLRule{}, fmt.Errorf("--bit-ttl %q: want <pattern>=<seconds>, e.g. 'online:*=90s'", v)
	}
	if _, err := strconv.ParseUint(ttl, 10, 64); err == nil {
		ttl += "s" // plain seconds
	}
	d, err := time.ParseDuration(ttl)
	if err != nil || d < time.Second || d%time.Second != 0 {
		return store.BitTTLRule{}, fmt.Errorf("--bit-ttl %q: the TTL must be whole seconds, at least 1s", v)
	}
	return store.BitTTLRule{Pattern: pat, TTL: d.Milliseconds()}, nil
}

// setBitTTL replaces the bit-TTL rules through the log.
func (s *Server) setBitTTL(rules []store.BitTTLRule) error {
	args := [][]byte{[]byte("bitttlrules")}
	for _, r := range rules {
		args = append(args, []byte(r.Pattern), strconv.AppendInt(nil, r.TTL/1000, 10))
	}
	var out store.Replies
	if err := s.node.Apply([]store.Command{{Args: args}}, &out); err != nil {
		return err
	}
	if reply := out.Reply(0); reply[0] == '-' {
		return storeError(strings.TrimSpace(string(reply[1:])))
	}
	return nil
}

// storeError is an error reply of the store, code first.
type storeError string

func (e storeError) Error() string { return string(e) }

// RedisError returns the reply's text.
func (e storeError) RedisError() string { return string(e) }

// SetBitTTL replaces the bit-TTL rules through the log, as CONFIG SET
// bit-ttl does, retrying while no leader is reachable until ctx ends or
// the server closes. The --bit-ttl flag's rules are installed this way at
// start: like redis.conf, the flags win over an earlier CONFIG SET.
func (s *Server) SetBitTTL(ctx context.Context, rules []store.BitTTLRule) error {
	for {
		err := s.setBitTTL(rules)
		if err == nil || !errors.Is(err, cluster.ErrNoLeader) && !errors.Is(err, cluster.ErrNotLeader) && !errors.Is(err, cluster.ErrRemoved) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-s.quit:
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
