package redisserver

import (
	"errors"
	"os"
)

// TB is the part of testing.TB that StartForTest uses.
type TB interface {
	Helper()
	Skip(args ...any)
	Fatal(args ...any)
	Cleanup(func())
}

// StartForTest starts a server for a test or benchmark and stops it when
// the test ends. Without redis-server it skips the test, unless the
// environment variable CI is "true": there a missing referee is a failure.
func StartForTest(tb TB, opts Options) *Process {
	tb.Helper()
	p, err := Start(opts)
	if err != nil {
		if errors.Is(err, ErrNotInstalled) && os.Getenv("CI") != "true" {
			tb.Skip(err)
		} else {
			tb.Fatal(err)
		}
		return nil
	}
	tb.Cleanup(func() { p.Close() })
	return p
}
