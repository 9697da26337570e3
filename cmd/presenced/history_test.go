//go:build linux

package main

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// historyNewest returns HISTORY INFO's newest_ms.
func historyNewest(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	info, err := rdb.Do(context.Background(), "HISTORY", "INFO").Text()
	if err != nil {
		t.Fatal("HISTORY INFO:", err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "newest_ms:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("HISTORY INFO newest_ms %q", v)
			}
			return n
		}
	}
	t.Fatalf("HISTORY INFO has no newest_ms: %q", info)
	return 0
}

// recordedBoundary returns a snapshot boundary (a multiple of step ms)
// after everything written so far, once the node recorded it.
func recordedBoundary(t *testing.T, rdb *redis.Client, step int64) int64 {
	t.Helper()
	b := (time.Now().UnixMilli()/step + 1) * step
	deadline := time.Now().Add(startTimeout)
	for backoff := time.Millisecond; historyNewest(t, rdb) < b; backoff = min(2*backoff, 20*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("history did not record %d", b)
		}
		<-time.After(backoff) // polling the node's progress
	}
	return b
}

// pastState is what a node answered about the past at a boundary.
type pastState struct {
	at      string // ATMS argument
	count   int64
	members []int64
}

// readPast reads online's count and GETBITS of offs at s.at.
func readPast(t *testing.T, rdb *redis.Client, at string, offs []any) pastState {
	t.Helper()
	ctx := context.Background()
	n, err := rdb.Do(ctx, "BITCOUNT", "online", "ATMS", at).Int64()
	if err != nil {
		t.Fatal("BITCOUNT ATMS:", err)
	}
	bits, err := rdb.Do(ctx, append(append([]any{"GETBITS", "online"}, offs...), "ATMS", at)...).Int64Slice()
	if err != nil {
		t.Fatal("GETBITS ATMS:", err)
	}
	return pastState{at, n, bits}
}

// TestRestartKeepsHistory records history with --history-keys limiting
// it to online:*, stops the node with SIGTERM and then SIGKILL: after
// each restart it answers for the past as before.
func TestRestartKeepsHistory(t *testing.T) {
	n := newNode(t, "n1", "--history-interval", "200ms", "--history-retention", "200ms:1h",
		"--history-keys", "online", "--history-keys", "other,online:*")
	p := n.start(t)
	ctx := context.Background()
	rdb := p.client(0)
	offs := []any{1, 2, 3, 1000}
	var seen []pastState
	write := func(bits ...int) {
		t.Helper()
		for _, b := range bits {
			if err := rdb.SetBit(ctx, "online", int64(b), 1).Err(); err != nil {
				t.Fatal(err)
			}
			if err := rdb.SetBit(ctx, "unrecorded", int64(b), 1).Err(); err != nil {
				t.Fatal(err)
			}
		}
		at := strconv.FormatInt(recordedBoundary(t, rdb, 200), 10)
		s := readPast(t, rdb, at, offs)
		if s.count != int64(len(seen)+1)*int64(len(bits)) {
			t.Fatalf("BITCOUNT online ATMS %s = %d after %d writes", at, s.count, (len(seen)+1)*len(bits))
		}
		seen = append(seen, s)
	}
	check := func() {
		t.Helper()
		for _, s := range seen {
			if got := readPast(t, rdb, s.at, offs); got.count != s.count || !slices.Equal(got.members, s.members) {
				t.Errorf("at %s after the restart: %+v, before %+v", s.at, got, s)
			}
		}
		if n, err := rdb.Do(ctx, "BITCOUNT", "unrecorded", "ATMS", seen[0].at).Int64(); err != nil || n != 0 {
			t.Errorf("a key --history-keys leaves out: BITCOUNT ATMS %d, %v", n, err)
		}
	}
	write(1)
	p.stop()
	p = n.start(t)
	rdb = p.client(0)
	check()
	write(2)
	p.kill(syscall.SIGKILL)
	p = n.start(t)
	rdb = p.client(0)
	check()
	write(3)
}

// TestBadHistoryFlags checks that bad --history-* values are refused
// with a message naming the flag.
func TestBadHistoryFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range [][]string{
		{"--history-interval", "150ms"},
		{"--history-interval", "0s"},
		{"--history-interval", "-1m"},
		{"--history-interval", "soon"},
		{"--history-retention", "1m"},
		{"--history-retention", "1m:2x"},
		{"--history-retention", "1h:2d,1m:90d"},
		{"--history-keys", ""},
		{"--history-keys", "a,,b"},
	} {
		out := refuse(t, append([]string{"--dir", dir, "--raft-addr", "127.0.0.1:0", "--port", "0"}, tc...)...)
		if !strings.Contains(out, tc[0]+" "+strconv.Quote(tc[1])) {
			t.Errorf("%q: output does not name the flag and value:\n%s", tc, out)
		}
	}
}
