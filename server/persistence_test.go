package server

import (
	"strconv"
	"testing"
	"time"

	"github.com/presenced/presenced/server/redisserver"
)

// TestSave takes snapshots with SAVE, BGSAVE and BGREWRITEAOF and checks
// what LASTSAVE and INFO persistence report of them, and that a snapshot
// taken so holds the writes: stopped without a snapshot of its own
// (SHUTDOWN NOSAVE), the node has none of them left to replay.
func TestSave(t *testing.T) {
	const writes = 50
	dir := t.TempDir()
	durable := func(c *Config) {
		c.Dir = dir
		c.Cluster = testClusterConfig(dir)
		c.Cluster.AppendOnly = true
		c.Cluster.TickInterval = time.Hour // no entries but the writes
	}
	srv := startServer(t, durable)
	c := dial(t, srv.Addr())
	started := srv.node.SaveStats().Last
	for i := range writes {
		c.expect("+OK\r\n", "SET", "k"+strconv.Itoa(i), strconv.Itoa(i))
	}
	c.expect(":"+strconv.FormatInt(started.Unix(), 10)+"\r\n", "LASTSAVE")
	persistence := func(want map[string]string) {
		t.Helper()
		sections, fields := infoFields(t, c.do("INFO", "persistence"))
		if !equalStrings(sections, []string{"Persistence"}) {
			t.Fatalf("INFO persistence sections %q", sections)
		}
		for k, v := range want {
			if fields[k] != v {
				t.Errorf("INFO %s = %q, want %q", k, fields[k], v)
			}
		}
	}
	persistence(map[string]string{
		"rdb_changes_since_last_save": strconv.Itoa(writes),
		"rdb_saves":                   "0",
		"rdb_last_save_time":          strconv.FormatInt(started.Unix(), 10),
		"rdb_last_bgsave_time_sec":    "-1",
		"rdb_bgsave_in_progress":      "0",
		"aof_enabled":                 "1",
	})

	c.expect("+OK\r\n", "SAVE")
	saved := srv.node.SaveStats()
	if !saved.Last.After(started) || saved.Count != 1 || saved.Failed {
		t.Fatalf("after SAVE: %+v, started %v", saved, started)
	}
	persistence(map[string]string{
		"rdb_changes_since_last_save": "0",
		"rdb_saves":                   "1",
		"aof_rewrites":                "1",
		"rdb_last_save_time":          strconv.FormatInt(saved.Last.Unix(), 10),
		"rdb_last_bgsave_status":      "ok",
		"rdb_last_bgsave_time_sec":    "0",
	})
	// The background saves, each with a write before it.
	for i, bg := range [][]string{{"BGSAVE"}, {"BGSAVE", "SCHEDULE"}, {"BGREWRITEAOF"}} {
		c.expect("+OK\r\n", "SET", "bg", strconv.Itoa(i))
		persistence(map[string]string{"rdb_changes_since_last_save": "1"})
		want := "+" + bgsaveStarted + "\r\n"
		if bg[0] == "BGREWRITEAOF" {
			want = "+" + bgrewriteStarted + "\r\n"
		}
		c.expect(want, bg...)
		waitSaves(t, srv, uint64(i)+2)
	}
	persistence(map[string]string{"rdb_saves": "4", "rdb_changes_since_last_save": "0", "rdb_bgsave_in_progress": "0"})

	c.expect("+OK\r\n", "SET", "last", "1")
	c.expect("+OK\r\n", "SAVE")
	c.send(redisserver.AppendCommand(nil, "SHUTDOWN", "NOSAVE"))
	c.expectClosed()
	<-srv.ShutdownRequested()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if after := entriesAfterSnapshot(t, dir); after > 1 {
		t.Errorf("%d entries after the newest snapshot, want at most the one the restart's election left", after)
	}
	c2 := dial(t, startServer(t, durable).Addr())
	c2.expect("$2\r\n49\r\n", "GET", "k49")
	c2.expect("$1\r\n1\r\n", "GET", "last")
}

// waitSaves waits until the node has persisted n snapshots.
func waitSaves(t *testing.T, srv *Server, n uint64) {
	t.Helper()
	deadline := time.Now().Add(ioTimeout)
	for srv.node.SaveStats().Count < n || srv.saving() {
		if time.Now().After(deadline) {
			t.Fatalf("%d snapshots persisted, want %d", srv.node.SaveStats().Count, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSaveInProgress: while a snapshot is under way, SAVE, BGSAVE and
// BGREWRITEAOF are refused with Redis's errors, and INFO says so.
func TestSaveInProgress(t *testing.T) {
	srv := startServer(t)
	c := dial(t, srv.Addr())
	srv.bgSave.Store(true) // as a BGSAVE does until its snapshot is written
	c.expect("-"+bgsaveBusy+"\r\n", "SAVE")
	c.expect("-"+bgsaveBusy+"\r\n", "BGSAVE")
	c.expect("-"+bgrewriteBusy+"\r\n", "BGREWRITEAOF")
	_, fields := infoFields(t, c.do("INFO", "persistence"))
	if fields["rdb_bgsave_in_progress"] != "1" || fields["aof_rewrite_in_progress"] != "1" || fields["aof_enabled"] != "0" {
		t.Errorf("INFO persistence during a save: %v", fields)
	}
	srv.bgSave.Store(false)
	c.expect("+OK\r\n", "SAVE")
}
