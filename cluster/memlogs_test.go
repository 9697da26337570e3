package cluster

import (
	"testing"

	"github.com/hashicorp/raft"
)

// TestMemLogsStoresCopies checks that the in-memory log keeps entries of
// its own, equal to those it was given, and not the given ones: the
// leader's are inside the futures of their proposals, which the log would
// otherwise keep alive.
func TestMemLogsStoresCopies(t *testing.T) {
	m := memLogs{raft.NewInmemStore()}
	given := []*raft.Log{
		{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("a")},
		{Index: 2, Term: 1, Type: raft.LogNoop},
		{Index: 3, Term: 2, Type: raft.LogCommand, Data: []byte("c")},
	}
	if err := m.StoreLogs(given[:2]); err != nil {
		t.Fatal(err)
	}
	if err := m.StoreLog(given[2]); err != nil {
		t.Fatal(err)
	}
	want := make([]raft.Log, len(given))
	for i, l := range given {
		want[i] = *l
		l.Term, l.Type = 9, raft.LogBarrier // a future's later fate
	}
	for _, w := range want {
		var got raft.Log
		if err := m.GetLog(w.Index, &got); err != nil {
			t.Fatal(err)
		}
		if got.Index != w.Index || got.Term != w.Term || got.Type != w.Type || string(got.Data) != string(w.Data) {
			t.Errorf("entry %d: got %+v, want %+v", w.Index, got, w)
		}
	}
	if first, _ := m.FirstIndex(); first != 1 {
		t.Errorf("FirstIndex = %d, want 1", first)
	}
	if last, _ := m.LastIndex(); last != 3 {
		t.Errorf("LastIndex = %d, want 3", last)
	}
}
