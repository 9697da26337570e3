package server

import (
	"fmt"
	"strings"
	"time"

	"github.com/presenced/presenced/proto"
)

// A snapshot of the node (see cluster.Node.Save) is presenced's save: it
// writes the whole state, as Redis's SAVE and BGSAVE write an RDB file,
// and compacts the raft log up to it, as BGREWRITEAOF rewrites the AOF.
// So SAVE, BGSAVE and BGREWRITEAOF all take one, and INFO persistence
// reports the same snapshots in its rdb_ and aof_ fields.

// Redis's replies to the background saves.
const (
	bgsaveStarted     = "Background saving started"
	bgsaveBusy        = "ERR Background save already in progress"
	bgrewriteStarted  = "Background append only file rewriting started"
	bgrewriteBusy     = "ERR Background append only file rewriting already in progress"
	bgsaveScheduleArg = "schedule"
)

// saving reports whether a snapshot is being taken or written: one a
// client asked for, or one the node took as its log grew.
func (s *Server) saving() bool {
	return s.bgSave.Load() || !s.node.SaveStats().Since.IsZero()
}

// startSave starts a snapshot in the background, unless one is under way.
func (s *Server) startSave() bool {
	if s.saving() || !s.bgSave.CompareAndSwap(false, true) {
		return false
	}
	s.goFunc(func() {
		defer s.bgSave.Store(false)
		s.node.Save() // its outcome is the node's to record, for INFO
	})
	return true
}

// save is SAVE: a snapshot now, answered once it is written.
func save(c *client, _ [][]byte) {
	if c.s.saving() {
		c.out.Error(bgsaveBusy)
		return
	}
	c.okOrError(c.s.node.Save())
}

// bgsave is BGSAVE [SCHEDULE]: a snapshot in the background. SCHEDULE,
// which asks Redis to wait for an AOF rewrite in progress, changes
// nothing here, where the rewrite and the save are the same snapshot.
func bgsave(c *client, args [][]byte) {
	if len(args) > 2 || (len(args) == 2 && !strings.EqualFold(string(args[1]), bgsaveScheduleArg)) {
		c.out.Error(proto.ErrSyntax)
		return
	}
	if !c.s.startSave() {
		c.out.Error(bgsaveBusy)
		return
	}
	c.out.Simple(bgsaveStarted)
}

// bgrewriteaof is BGREWRITEAOF: a snapshot in the background, which
// compacts the log.
func bgrewriteaof(c *client, _ [][]byte) {
	if !c.s.startSave() {
		c.out.Error(bgrewriteBusy)
		return
	}
	c.out.Simple(bgrewriteStarted)
}

// lastsave is LASTSAVE: the Unix time of the latest snapshot written.
func lastsave(c *client, _ [][]byte) {
	c.out.Int(c.s.node.SaveStats().Last.Unix())
}

// infoPersistence writes INFO's persistence section: Redis's fields that
// have a meaning here.
func (s *Server) infoPersistence(b *strings.Builder) {
	st := s.node.SaveStats()
	inProgress, current := 0, int64(-1)
	if s.saving() {
		inProgress = 1
		if !st.Since.IsZero() {
			current = int64(time.Since(st.Since).Seconds())
		}
	}
	took := int64(-1)
	if st.Took >= 0 {
		took = int64(st.Took.Seconds())
	}
	status := "ok"
	if st.Failed {
		status = "err"
	}
	aof := 0
	if s.node.Config().AppendOnly {
		aof = 1
	}
	fmt.Fprintf(b, "# Persistence\r\nloading:0\r\nasync_loading:0\r\nrdb_changes_since_last_save:%d\r\nrdb_bgsave_in_progress:%d\r\nrdb_last_save_time:%d\r\nrdb_last_bgsave_status:%s\r\nrdb_last_bgsave_time_sec:%d\r\nrdb_current_bgsave_time_sec:%d\r\nrdb_saves:%d\r\n",
		st.Changes, inProgress, st.Last.Unix(), status, took, current, st.Count)
	written := "ok"
	if s.node.LogFailure() != nil {
		written = "err"
	}
	fmt.Fprintf(b, "aof_enabled:%d\r\naof_rewrite_in_progress:%d\r\naof_last_rewrite_time_sec:%d\r\naof_current_rewrite_time_sec:%d\r\naof_last_bgrewrite_status:%s\r\naof_rewrites:%d\r\naof_last_write_status:%s\r\n",
		aof, inProgress, took, current, status, st.Count, written)
}
