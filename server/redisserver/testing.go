package redisserver

import (
	"errors"
	"os"
)

// TB is the part of testing.TB that StartForTest and RequireProgram use.
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
	return startForTest(tb, opts, tb.Skip)
}

// StartIfInstalled is StartForTest for a test that checks more than
// agreement with Redis: without redis-server it returns nil, and the test
// goes on with its other checks. Under CI=true a missing redis-server
// still fails the test.
func StartIfInstalled(tb TB, opts Options) *Process {
	tb.Helper()
	return startForTest(tb, opts, func(...any) {})
}

// startForTest starts a server for tb and calls missing when redis-server
// is not installed outside CI.
func startForTest(tb TB, opts Options, missing func(...any)) *Process {
	tb.Helper()
	p, err := Start(opts)
	if err != nil {
		skipOrFail(tb, err, missing)
		return nil
	}
	tb.Cleanup(func() { p.Close() })
	return p
}

// RequireProgram returns the path of the program name (a path, or a name
// looked up on PATH) that a test needs. Without it the test is skipped,
// unless CI is "true": CI installs what the tests need, so a missing
// program there is a failure. After a skip or failure that returns, as a
// fake TB's may, the path is "".
func RequireProgram(tb TB, name string) string {
	tb.Helper()
	path, err := lookPath(name)
	if err != nil {
		skipOrFail(tb, err, tb.Skip)
	}
	return path
}

// skipOrFail calls skip when err is ErrNotInstalled outside CI, and fails
// the test otherwise.
func skipOrFail(tb TB, err error, skip func(...any)) {
	tb.Helper()
	if errors.Is(err, ErrNotInstalled) && os.Getenv("CI") != "true" {
		skip(err)
	} else {
		tb.Fatal(err)
	}
}
