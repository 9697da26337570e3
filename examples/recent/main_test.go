package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/presenced/presenced/server/servertest"
)

func TestNewestFirstAndPages(t *testing.T) {
	ctx := context.Background()
	rdb := servertest.Client(t)
	a := &Activity{rdb: rdb, window: time.Minute}

	// waitPast returns once the server's clock is more than d past the
	// moment user id was last seen, judging by the bit's remaining TTL.
	waitPast := func(id int64, d time.Duration) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			ms, err := rdb.Do(ctx, "BITPTTL", activeKey, id).Int64()
			if err != nil {
				t.Fatal(err)
			}
			if time.Duration(ms)*time.Millisecond < a.window-d {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("BITPTTL of %d stays at %d ms", id, ms)
			}
			time.Sleep(20 * time.Millisecond) // polling the server's clock
		}
	}
	if joined, err := a.Seen(ctx, 1, 2, 3, 2); err != nil || joined != 3 {
		t.Fatalf("first requests: %d joined, %v; want 3", joined, err)
	}
	waitPast(1, 200*time.Millisecond)
	if joined, err := a.Seen(ctx, 4); err != nil || joined != 1 {
		t.Fatalf("user 4: %d joined, %v", joined, err)
	}
	waitPast(4, 200*time.Millisecond)
	if joined, err := a.Seen(ctx, 2); err != nil || joined != 0 {
		t.Fatalf("user 2 again: %d joined, %v; want 0", joined, err)
	}

	n, ids, err := a.Recent(ctx, a.window, 10)
	if err != nil || n != 4 || !slices.Equal(ids, []int64{2, 4, 1, 3}) {
		t.Fatalf("recent: %d %v, %v; want 4 [2 4 1 3]", n, ids, err)
	}
	n, ids, err = a.Recent(ctx, a.window, 2)
	if err != nil || n != 4 || !slices.Equal(ids, []int64{2, 4}) {
		t.Fatalf("recent, limit 2: %d %v, %v; want 4 [2 4]", n, ids, err)
	}
	waitPast(2, 1100*time.Millisecond)
	if _, err := a.Seen(ctx, 3); err != nil {
		t.Fatal(err)
	}
	n, ids, err = a.Recent(ctx, time.Second, 10)
	if err != nil || n != 1 || !slices.Equal(ids, []int64{3}) {
		t.Fatalf("recent within 1s: %d %v, %v; want 1 [3]", n, ids, err)
	}

	var all []int64
	cursor := "0"
	for pages := 0; ; pages++ {
		page, next, err := a.Page(ctx, cursor, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 3 || pages > 4 {
			t.Fatalf("page %d: %v", pages, page)
		}
		all = append(all, page...)
		if cursor = next; cursor == "0" {
			break
		}
	}
	if !slices.Equal(all, []int64{1, 2, 3, 4}) {
		t.Fatalf("pages list %v, want [1 2 3 4]", all)
	}
}
