package history

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseRetention(t *testing.T) {
	tiers, err := ParseRetention("1m:2d, 1h:90d")
	if err != nil {
		t.Fatal(err)
	}
	want := []Tier{{time.Minute, 48 * time.Hour}, {time.Hour, 90 * 24 * time.Hour}}
	if len(tiers) != 2 || tiers[0] != want[0] || tiers[1] != want[1] {
		t.Fatalf("got %v", tiers)
	}
	if got := FormatRetention(tiers); got != "1m:2d,1h:90d" {
		t.Fatalf("FormatRetention = %q", got)
	}
	if got := FormatRetention([]Tier{{1500 * time.Millisecond, 90 * time.Second}}); got != "1500ms:90s" {
		t.Fatalf("FormatRetention = %q", got)
	}
	for _, bad := range []string{"", "1m", "1m:", ":2d", "0m:2d", "1x:2d", "-1m:2d", "1h:1m", "1m:2d,1m:1d",
		"1h:2d,1m:90d", "1m:2d,,1h:90d", "1.5m:2d", "99999999999999999d:1d"} {
		if _, err := ParseRetention(bad); err == nil {
			t.Errorf("ParseRetention(%q) accepted", bad)
		}
	}
}

func TestRangeErrorText(t *testing.T) {
	for _, c := range []struct {
		e    RangeError
		want string
	}{
		{RangeError{1700000000000, 1700000100000, 1700003600000}, "history: 1700000000 is before the oldest point held (1700000100 .. 1700003600)"},
		{RangeError{1700009000500, 1700000100000, 1700003600100}, "history: 1700009000.500 is after the newest point held (1700000100 .. 1700003600.100)"},
		{RangeError{5000, 0, 0}, "history: 5 is after the newest point held (nothing held yet)"},
	} {
		if got := c.e.Error(); got != c.want {
			t.Errorf("got %q\nwant %q", got, c.want)
		}
	}
	future := &RangeError{T: 10, Oldest: 1, Newest: 5}
	past := &RangeError{T: 0, Oldest: 1, Newest: 5}
	if !errors.Is(future, ErrFuture) || errors.Is(past, ErrFuture) {
		t.Fatal("errors.Is(ErrFuture) wrong")
	}
	if FormatTime(-1500) != "-1.500" || FormatTime(-500) != "-0.500" || FormatTime(2000) != "2" {
		t.Fatalf("FormatTime: %s %s %s", FormatTime(-1500), FormatTime(-500), FormatTime(2000))
	}
	if strings.Contains(ErrTooManySamples.Error(), "%") {
		t.Fatal(ErrTooManySamples)
	}
}

func TestConfigValidate(t *testing.T) {
	cfg := DefaultConfig("x.db")
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, mutate := range []func(*Config){
		func(c *Config) { c.Path = "" },
		func(c *Config) { c.FullEvery = 0 },
		func(c *Config) { c.CacheBytes = -1 },
		func(c *Config) { c.Retention = nil },
	} {
		c := DefaultConfig("x.db")
		mutate(&c)
		if c.Validate() == nil {
			t.Errorf("accepted %+v", c)
		}
	}
}
