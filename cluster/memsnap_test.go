package cluster

import (
	"bytes"
	"io"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/hashicorp/raft"
)

// writeSnapshot creates a snapshot at index in m and writes data into it
// in pieces of random sizes (some empty, some larger than a chunk).
func writeSnapshot(t *testing.T, m *memSnapshots, index uint64, data []byte, rng *rand.Rand) raft.SnapshotSink {
	t.Helper()
	cfg := raft.Configuration{Servers: []raft.Server{{ID: "n1", Address: "127.0.0.1:1", Suffrage: raft.Voter}}}
	sink, err := m.Create(1, index, 3, cfg, index-1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for rest := data; len(rest) > 0; {
		k := min(rng.IntN(3*m.chunk), len(rest))
		if n, err := sink.Write(rest[:k]); n != k || err != nil {
			t.Fatalf("Write of %d bytes: %d, %v", k, n, err)
		}
		rest = rest[k:]
	}
	return sink
}

// readSnapshot opens id in m and returns its meta and contents.
func readSnapshot(t *testing.T, m *memSnapshots, id string) (*raft.SnapshotMeta, []byte) {
	t.Helper()
	meta, rc, err := m.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return meta, got
}

func TestMemSnapshotsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{0, 1, 7, 8, 9, 1000} {
		m := &memSnapshots{chunk: 8}
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		sink := writeSnapshot(t, m, 10, data, rng)
		if err := sink.Close(); err != nil {
			t.Fatal(err)
		}
		list, err := m.List()
		if err != nil || len(list) != 1 {
			t.Fatalf("size %d: List = %v, %v; want the snapshot", size, list, err)
		}
		meta := list[0]
		if meta.ID != sink.ID() || meta.Index != 10 || meta.Term != 3 || meta.ConfigurationIndex != 9 || meta.Size != int64(size) || len(meta.Configuration.Servers) != 1 {
			t.Errorf("size %d: meta %+v", size, meta)
		}
		for range 2 { // a snapshot can be read more than once
			opened, got := readSnapshot(t, m, sink.ID())
			if !bytes.Equal(got, data) {
				t.Fatalf("size %d: read %d bytes that differ from the %d written", size, len(got), len(data))
			}
			if !reflect.DeepEqual(opened, meta) {
				t.Errorf("size %d: Open's meta %+v, List's %+v", size, opened, meta)
			}
		}
		for _, c := range m.latest.chunks {
			if cap(c) > m.chunk {
				t.Errorf("size %d: a chunk of %d bytes, more than %d", size, cap(c), m.chunk)
			}
		}
	}
}

func TestMemSnapshotsListOnlyComplete(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m := &memSnapshots{chunk: 16}
	if list, err := m.List(); len(list) != 0 || err != nil {
		t.Fatalf("empty store: List = %v, %v", list, err)
	}
	if _, _, err := m.Open("1-1-1"); err == nil {
		t.Fatal("empty store: Open succeeded")
	}
	first := writeSnapshot(t, m, 10, []byte("the first snapshot"), rng)
	if list, _ := m.List(); len(list) != 0 {
		t.Fatalf("a snapshot being written is listed: %+v", list[0])
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	expectLatest := func(sink raft.SnapshotSink, want string) {
		t.Helper()
		list, _ := m.List()
		if len(list) != 1 || list[0].ID != sink.ID() {
			t.Fatalf("List = %v, want only %s", list, sink.ID())
		}
		if _, got := readSnapshot(t, m, sink.ID()); string(got) != want {
			t.Fatalf("latest snapshot holds %q, want %q", got, want)
		}
	}
	expectLatest(first, "the first snapshot")

	second := writeSnapshot(t, m, 20, []byte("a second one, being written"), rng)
	expectLatest(first, "the first snapshot")
	if _, _, err := m.Open(second.ID()); err == nil {
		t.Fatal("a snapshot being written could be opened")
	}
	if err := second.Cancel(); err != nil {
		t.Fatal(err)
	}
	expectLatest(first, "the first snapshot")
	if _, err := second.Write([]byte("x")); err == nil {
		t.Error("Write after Cancel succeeded")
	}
	if err := second.Close(); err != nil {
		t.Errorf("Close after Cancel: %v", err)
	}
	expectLatest(first, "the first snapshot") // and not the cancelled one

	third := writeSnapshot(t, m, 30, []byte("the third"), rng)
	if err := third.Close(); err != nil {
		t.Fatal(err)
	}
	expectLatest(third, "the third")
	if _, _, err := m.Open(first.ID()); err == nil {
		t.Error("a replaced snapshot could still be opened")
	}
	if err := third.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	expectLatest(third, "the third")
	if _, err := m.Create(2, 40, 3, raft.Configuration{}, 39, nil); err == nil {
		t.Error("Create of a version 2 snapshot succeeded")
	}
}
