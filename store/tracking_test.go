package store

import (
	"bytes"
	"strings"
	"testing"

	"github.com/presenced/presenced/proto"
)

// trackLog is a Tracker that writes down what it is told, naming the
// batch a report comes from.
type trackLog struct {
	names  map[*Replies]string
	events []string
}

func (l *trackLog) by(r *Replies) string {
	if r == nil {
		return "nobody"
	}
	if n, ok := l.names[r]; ok {
		return n
	}
	return "other"
}

func (l *trackLog) Read(spec *proto.Spec, args [][]byte, by *Replies) {
	var keys []string
	spec.EachKey(args, func(k []byte) { keys = append(keys, string(k)) })
	l.events = append(l.events, l.by(by)+" read "+strings.Join(keys, ","))
}

func (l *trackLog) Changed(key []byte, by *Replies) {
	l.events = append(l.events, l.by(by)+" changed "+string(key))
}

func (l *trackLog) Flushed(by *Replies) { l.events = append(l.events, l.by(by)+" flushed") }

func (l *trackLog) Applied() { l.events = append(l.events, "applied") }

// take returns the events so far and forgets them.
func (l *trackLog) take() string {
	s := strings.Join(l.events, "; ")
	l.events = nil
	return s
}

// commands parses lines into commands of database 0.
func commands(lines ...string) []Command {
	var cmds []Command
	for _, l := range lines {
		cmds = append(cmds, Command{Args: bytesArgs(l)})
	}
	return cmds
}

// TestTracker checks what the store tells its Tracker, and in which
// order: the keys tracked batches read, interleaved with the changes as a
// transaction makes them; every change of a key, by a batch or by expiry,
// and none for a write that changes nothing; a flush; the end of each
// Apply.
func TestTracker(t *testing.T) {
	s := New()
	log := &trackLog{names: map[*Replies]string{}}
	tracked := &Replies{Tracked: true}
	log.names[tracked] = "tracked"
	plain := &Replies{}
	log.names[plain] = "plain"
	s.SetTracker(log)
	now := int64(testNow)
	for _, step := range []struct {
		name  string
		write bool
		out   *Replies
		lines []string
		at    int64
		want  string
	}{
		{name: "reads of a tracked batch", out: tracked, lines: []string{"GET a", "MGET b c", "GETBIT d 1", "GETBIT d 2", "STRLEN e"},
			want: "tracked read a; tracked read b,c; tracked read d; tracked read d; tracked read e"},
		{name: "reads of another batch", out: plain, lines: []string{"GET a"}},
		{name: "writes", write: true, out: plain, lines: []string{"SET a 1", "MSET b 1 c 1", "SETBIT d 1 1", "DEL nosuch", "SETBIT d 1 1"},
			want: "plain changed a; plain changed b; plain changed c; plain changed d; applied"},
		{name: "a transaction", write: true, out: tracked, lines: []string{"GET a", "SET a 2", "GET a", "INCR n"},
			want: "tracked read a; tracked changed a; tracked read a; tracked changed n; applied"},
		{name: "a key's expiry", write: true, out: plain, lines: []string{"SET e 1 PX 10"}, want: "plain changed e; applied"},
		{name: "the tick after it", write: true, out: plain, at: 20, want: "nobody changed e; applied"},
		{name: "a bit's expiry", write: true, out: plain, at: 20, lines: []string{"BITSETEX bits 1 7"}, want: "plain changed bits; applied"},
		{name: "the tick after that", write: true, out: plain, at: 10000, want: "nobody changed bits; applied"},
		{name: "FLUSHDB", write: true, out: tracked, lines: []string{"FLUSHDB"}, want: "tracked flushed; applied"},
		{name: "SWAPDB", write: true, out: plain, lines: []string{"SWAPDB 0 1"}, want: "applied"},
		{name: "FLUSHALL", write: true, out: plain, lines: []string{"FLUSHALL"}, want: "plain flushed; applied"},
	} {
		cmds := commands(step.lines...)
		*step.out = Replies{Tracked: step.out.Tracked}
		if step.write {
			s.ApplyEach(now+step.at, [][]Command{cmds}, []*Replies{step.out}, nil)
		} else {
			s.Read(cmds, now+step.at, step.out)
		}
		if got := log.take(); got != step.want {
			t.Errorf("%s: told %q, want %q", step.name, got, step.want)
		}
	}

	var snap bytes.Buffer
	if _, err := s.Snapshot().WriteTo(&snap); err != nil {
		t.Fatal(err)
	}
	if err := s.Restore(&snap); err != nil {
		t.Fatal(err)
	}
	if got := log.take(); got != "nobody flushed" {
		t.Errorf("restore: told %q, want a flush", got)
	}

	s.SetTracker(nil)
	s.Apply(commands("SET a 1"), now+3000, &Replies{})
	s.Read(commands("GET a"), now+3000, tracked)
	if got := log.take(); got != "" {
		t.Errorf("with no tracker: told %q", got)
	}
}
