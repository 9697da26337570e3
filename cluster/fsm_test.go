package cluster

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/presenced/presenced/store"
)

// newTestFSM returns an fsm over a fresh store.
func newTestFSM() (*fsm, *store.Store) {
	st := store.New()
	f := &fsm{sm: FromStore(st), log: hclog.NewNullLogger(), saves: newSaves(time.Now()), maxDue: 1 << 40, due: make(chan struct{}, 1), behind: make(chan struct{}, 1)}
	f.snapshotDue.Store(f.maxDue)
	return f, st
}

// commandLog returns the log entry at index of batches, stamped now.
func commandLog(index uint64, now int64, batches ...[]store.Command) *raft.Log {
	tails := make([][]byte, len(batches))
	for i, b := range batches {
		tails[i] = appendTail(nil, b)
	}
	return &raft.Log{Index: index, Type: raft.LogCommand, Data: encodeEntry(now, batches, tails)}
}

// TestApplyBatchDecodesAhead applies a batch of entries (commands, a
// membership change, a damaged entry, one this node proposed) as raft
// hands them over after a restart, and checks that it gives the replies,
// the state and the applied index of applying the entries one at a time,
// and answers the proposal's caller from its own commands.
func TestApplyBatchDecodesAhead(t *testing.T) {
	const now = 1_700_000_000_000
	var logs []*raft.Log
	for i := range 40 {
		var b []store.Command
		for j := range 5 {
			b = append(b, cmd(i%3, "SETBIT", "online", strconv.Itoa(i*977+j*13), "1"))
		}
		b = append(b, cmd(0, "INCR", "n"), cmd(0, "BITCOUNT", "online"))
		logs = append(logs, commandLog(uint64(len(logs)+1), now+int64(i), b))
		switch i {
		case 10:
			logs = append(logs, &raft.Log{Index: uint64(len(logs) + 1), Type: raft.LogConfiguration, Data: []byte{0}})
		case 20:
			logs = append(logs, &raft.Log{Index: uint64(len(logs) + 1), Type: raft.LogCommand, Data: []byte("not an entry")})
		}
	}
	mine := []store.Command{cmd(0, "INCR", "n"), cmd(0, "SETBIT", "online", "5", "1")}
	proposed := commandLog(uint64(len(logs)+1), now+100, mine)
	logs = append(logs, proposed)
	logs = append(logs, commandLog(uint64(len(logs)+1), now+101, []store.Command{cmd(0, "GET", "n")}))
	logs = append(logs, &raft.Log{Index: uint64(len(logs) + 1), Type: raft.LogConfiguration, Data: []byte{0}})
	last := uint64(len(logs))

	// The reference: one entry at a time, the proposal decoded like any
	// other entry.
	ref, refStore := newTestFSM()
	var want []string
	for _, l := range logs {
		if l.Type == raft.LogCommand {
			want = append(want, response(ref.Apply(l)))
		}
	}

	f, st := newTestFSM()
	b := &batcher{fsm: f, slots: make(chan struct{}, 1)}
	b.slots <- struct{}{}
	r := &request{cmds: mine, out: new(store.Replies), done: make(chan error, 1)}
	p := &proposal{b: b, key: &proposed.Data[0], proposed: time.UnixMilli(now + 100), reqs: []*request{r}, batches: [][]store.Command{mine}}
	f.pending.Store(p.key, p)
	resps := f.ApplyBatch(logs)
	if len(resps) != len(logs) {
		t.Fatalf("%d responses for %d entries", len(resps), len(logs))
	}
	var got []string
	for i, l := range logs {
		switch {
		case l.Type != raft.LogCommand:
			if resps[i] != nil {
				t.Errorf("entry %d, a membership change: response %v", l.Index, resps[i])
			}
		case l == proposed:
			if resps[i] != nil {
				t.Errorf("the proposed entry's response %v: its caller is answered directly", resps[i])
			}
			if err := <-r.done; err != nil {
				t.Fatal(err)
			}
			got = append(got, string(r.out.B))
		default:
			got = append(got, response(resps[i]))
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("replies\n%q\nwant\n%q", got, want)
	}
	if got, want := st.Digest(), refStore.Digest(); got != want {
		t.Fatalf("digest %x, one entry at a time %x", got, want)
	}
	if got := f.applied.get(); got != last {
		t.Fatalf("applied index %d, want %d (the last entry, a membership change)", got, last)
	}
	if _, left := f.pending.Load(p.key); left {
		t.Fatal("the proposal is still pending")
	}
}

// response renders what the fsm returned for an entry of commands.
func response(r any) string {
	switch r := r.(type) {
	case *store.Replies:
		return string(r.B)
	case error:
		if !errors.Is(r, ErrBadEntry) {
			return "unexpected error: " + r.Error()
		}
		return "bad entry"
	}
	return fmt.Sprintf("unexpected response %T", r)
}

// TestSnapshotDueFollowsSnapshotSize checks when the next snapshot is
// due: with the log in memory, after the log has grown by the last
// snapshot's size, within [memLogFloor, SnapshotBytes]; with the log on
// disk, after SnapshotBytes always.
func TestSnapshotDueFollowsSnapshotSize(t *testing.T) {
	const most = 64 << 20
	for _, c := range []struct {
		inMemory   bool
		size, want int64
	}{
		{true, 1 << 20, memLogFloor},
		{true, 40 << 20, 40 << 20},
		{true, 100 << 20, most},
		{false, 1 << 20, most},
		{false, 40 << 20, most},
	} {
		f, _ := newTestFSM()
		f.dueBySize, f.maxDue = c.inMemory, most
		f.snapshotDue.Store(most)
		f.persisted(c.size)
		if got := f.snapshotDue.Load(); got != c.want {
			t.Errorf("log in memory %v, a snapshot of %d bytes: next due after %d bytes, want %d", c.inMemory, c.size, got, c.want)
		}
	}
}
