package server

import (
	"io"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/presenced/presenced/server/redisserver"
)

// TestStopCheckpoints stops a server that keeps its log on disk in the
// ways a node stops cleanly. Close (what SIGTERM does) and SHUTDOWN take a
// snapshot of what was applied, so that the log holds next to nothing
// after it for a restart to replay; SHUTDOWN NOSAVE takes none, and every
// write is still to replay. Each restart serves every write.
func TestStopCheckpoints(t *testing.T) {
	const writes = 200 // one entry each, sent one at a time
	for _, tc := range []struct {
		name     string
		shutdown []string // the command that stops the server; nil: Close
		replayed bool
	}{
		{"Close", nil, false},
		{"SHUTDOWN", []string{"SHUTDOWN"}, false},
		{"SHUTDOWN NOSAVE", []string{"SHUTDOWN", "NOSAVE"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			durable := func(c *Config) {
				c.Dir = dir
				c.Cluster = testClusterConfig(dir)
				c.Cluster.AppendOnly = true
			}
			srv := startServer(t, durable)
			c := dial(t, srv.Addr())
			for i := range writes {
				c.expect("+OK\r\n", "SET", "k"+strconv.Itoa(i), strconv.Itoa(i))
			}
			if tc.shutdown != nil {
				c.send(redisserver.AppendCommand(nil, tc.shutdown...))
				c.expectClosed()
				<-srv.ShutdownRequested()
			}
			if err := srv.Close(); err != nil {
				t.Fatal(err)
			}
			// Besides the writes, the log holds the ticks the leader
			// proposes every TickInterval: a few may follow the snapshot.
			const ticks = 5
			switch after := entriesAfterSnapshot(t, dir); {
			case tc.replayed && after < writes:
				t.Errorf("%d entries after the newest snapshot, want the %d writes at least", after, writes)
			case !tc.replayed && after > ticks:
				t.Errorf("%d entries after the newest snapshot, want %d at most", after, ticks)
			}
			c2 := dial(t, startServer(t, durable).Addr())
			for _, i := range []int{0, writes / 2, writes - 1} {
				c2.expect("$"+strconv.Itoa(len(strconv.Itoa(i)))+"\r\n"+strconv.Itoa(i)+"\r\n", "GET", "k"+strconv.Itoa(i))
			}
		})
	}
}

// entriesAfterSnapshot returns how many entries the raft log in dir holds
// after the newest snapshot there: what the node replays when it starts.
func entriesAfterSnapshot(t *testing.T, dir string) uint64 {
	t.Helper()
	snaps, err := raft.NewFileSnapshotStore(dir, 2, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	list, err := snaps.List()
	if err != nil {
		t.Fatal(err)
	}
	var snapIndex uint64
	if len(list) > 0 {
		snapIndex = list[0].Index
	}
	logs, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	last, err := logs.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	return last - snapIndex
}
