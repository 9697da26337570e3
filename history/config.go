package history

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Tier is one retention tier. Snapshots older than the previous tier's Keep
// (or any age, for the first tier) are thinned to one per Step: the snapshot
// that holds the state at each multiple of Step is kept, the others are
// dropped. Snapshots and counts older than the last tier's Keep are dropped,
// except the one that still holds the state at the oldest retained time.
type Tier struct {
	Step time.Duration // spacing of the snapshots kept in this tier
	Keep time.Duration // age up to which this tier applies
}

// String formats the tier the way ParseRetention reads it, e.g. "1h:90d".
func (t Tier) String() string {
	return formatDuration(t.Step) + ":" + formatDuration(t.Keep)
}

// FormatRetention formats tiers the way ParseRetention reads them.
func FormatRetention(tiers []Tier) string {
	parts := make([]string, len(tiers))
	for i, t := range tiers {
		parts[i] = t.String()
	}
	return strings.Join(parts, ",")
}

var units = []struct {
	suffix string
	d      time.Duration
}{
	{"ms", time.Millisecond}, {"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second},
}

func formatDuration(d time.Duration) string {
	for _, u := range []int{1, 2, 3, 4, 0} {
		if d%units[u].d == 0 {
			return strconv.FormatInt(int64(d/units[u].d), 10) + units[u].suffix
		}
	}
	return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
}

// parseDuration reads a positive whole number followed by one of the units
// ms, s, m, h, d.
func parseDuration(s string) (time.Duration, error) {
	for _, u := range units {
		num, ok := strings.CutSuffix(s, u.suffix)
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n <= 0 || n > int64(1<<62)/int64(u.d) {
			break
		}
		return time.Duration(n) * u.d, nil
	}
	return 0, fmt.Errorf("history: bad duration %q (want a positive number with a unit ms, s, m, h or d)", s)
}

// ParseRetention reads tiers written as "step:keep" pairs separated by
// commas, e.g. "1m:2d,1h:90d". Units are ms, s, m, h and d. Each tier must
// keep longer than the one before it with a step at least as long, and a
// tier's Keep must be at least its Step.
func ParseRetention(s string) ([]Tier, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("history: empty retention")
	}
	var tiers []Tier
	for _, part := range strings.Split(s, ",") {
		step, keep, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, fmt.Errorf("history: bad retention tier %q (want step:keep, e.g. 1h:90d)", part)
		}
		var t Tier
		var err error
		if t.Step, err = parseDuration(step); err != nil {
			return nil, err
		}
		if t.Keep, err = parseDuration(keep); err != nil {
			return nil, err
		}
		tiers = append(tiers, t)
	}
	if err := validateTiers(tiers); err != nil {
		return nil, err
	}
	return tiers, nil
}

func validateTiers(tiers []Tier) error {
	if len(tiers) == 0 {
		return errors.New("history: no retention tier")
	}
	for i, t := range tiers {
		if t.Step < time.Millisecond || t.Keep < t.Step {
			return fmt.Errorf("history: retention tier %s keeps less than one step", t)
		}
		if i > 0 && (t.Keep <= tiers[i-1].Keep || t.Step < tiers[i-1].Step) {
			return fmt.Errorf("history: retention tier %s must keep longer, with a step at least as long, than %s", t, tiers[i-1])
		}
	}
	return nil
}

// Config configures a History.
type Config struct {
	// Path is the bbolt file, e.g. <dir>/history.db. It is created if missing.
	Path string
	// Retention lists the tiers, shortest Keep first. Counts are kept for
	// the longest Keep.
	Retention []Tier
	// FullEvery bounds a key's chain of snapshots: a full bitmap is written
	// at least every FullEvery snapshots of a key; the others are stored as
	// the XOR against the previous snapshot when that is smaller.
	FullEvery int
	// CacheBytes bounds the cache of reconstructed bitmaps (0 = no cache).
	CacheBytes int64
	// QueueBytes bounds the recorded data waiting for the writer; recording
	// blocks while more than this is queued.
	QueueBytes int64
	// LockTimeout bounds the wait for the file lock held by another process.
	LockTimeout time.Duration
}

// Defaults used by DefaultConfig.
const (
	DefaultRetention  = "1m:2d,1h:90d"
	DefaultFullEvery  = 32
	DefaultCacheBytes = 256 << 20
	DefaultQueueBytes = 256 << 20
)

// DefaultConfig returns the default configuration for the file at path.
func DefaultConfig(path string) Config {
	tiers, _ := ParseRetention(DefaultRetention)
	return Config{
		Path:        path,
		Retention:   tiers,
		FullEvery:   DefaultFullEvery,
		CacheBytes:  DefaultCacheBytes,
		QueueBytes:  DefaultQueueBytes,
		LockTimeout: 5 * time.Second,
	}
}

// Validate reports a configuration that Open cannot use.
func (c *Config) Validate() error {
	if c.Path == "" {
		return errors.New("history: no file path")
	}
	if c.FullEvery < 1 {
		return errors.New("history: FullEvery must be at least 1")
	}
	if c.CacheBytes < 0 || c.QueueBytes < 0 {
		return errors.New("history: CacheBytes and QueueBytes must not be negative")
	}
	return validateTiers(c.Retention)
}

// keepMs returns the longest Keep in milliseconds: how far back anything is held.
func (c *Config) keepMs() int64 {
	return c.Retention[len(c.Retention)-1].Keep.Milliseconds()
}

// sortedTiers returns a copy of the tiers ordered by Keep.
func sortedTiers(t []Tier) []Tier {
	out := append([]Tier(nil), t...)
	sort.Slice(out, func(i, j int) bool { return out[i].Keep < out[j].Keep })
	return out
}
