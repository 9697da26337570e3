package server

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/presenced/presenced/server/redisserver"
)

func TestBufferBudgetTakesWithinItsLimit(t *testing.T) {
	b := bufferBudget{limit: 100}
	for _, step := range []struct {
		n    int64
		ok   bool
		kept int64
	}{
		{60, true, 60},
		{50, false, 60}, // over the limit: nothing counted
		{40, true, 100}, // up to the limit
		{-60, true, 40},
		{0, true, 40},
		{60, true, 100},
	} {
		if ok := b.take(step.n); ok != step.ok || b.kept.Load() != step.kept {
			t.Fatalf("take(%d) = %v with %d kept, want %v with %d", step.n, ok, b.kept.Load(), step.ok, step.kept)
		}
	}
}

func TestBufferBudgetKeepsBuffersTheBatchesFill(t *testing.T) {
	b := bufferBudget{limit: 1 << 20}
	var one, other int // what the budget counts for two connections' buffers
	for _, step := range []struct {
		what         string
		counted      *int
		size, used   int
		keep         bool
		kept, oneNow int
	}{
		{"a buffer its batch filled to 78%", &one, 256 << 10, 200 << 10, true, 256 << 10, 256 << 10},
		{"the same buffer filled by half", &one, 256 << 10, 128 << 10, true, 256 << 10, 256 << 10},
		{"that buffer grown", &one, 512 << 10, 400 << 10, true, 512 << 10, 512 << 10},
		{"another's buffer past the budget", &other, 600 << 10, 600 << 10, false, 512 << 10, 512 << 10},
		{"a buffer its batch filled to 39%", &one, 512 << 10, 200 << 10, false, 0, 0},
		{"the other's buffer within the budget", &other, 600 << 10, 600 << 10, true, 600 << 10, 0},
		{"a buffer over maxKeptBuffer", &other, maxKeptBuffer + 1, maxKeptBuffer + 1, false, 0, 0},
	} {
		if got := b.keep(step.counted, step.size, step.used); got != step.keep {
			t.Fatalf("%s: kept %v, want %v", step.what, got, step.keep)
		}
		if got := b.kept.Load(); got != int64(step.kept) || one != step.oneNow {
			t.Fatalf("%s: %d bytes counted (%d for the first connection), want %d (%d)", step.what, got, one, step.kept, step.oneNow)
		}
	}
	b.keep(&one, 256<<10, 256<<10)
	b.release(&one)
	if b.kept.Load() != 0 || one != 0 {
		t.Fatalf("%d bytes counted after the release (%d for the connection), want 0", b.kept.Load(), one)
	}
}

// TestLargeValuesReuseTheConnectionsBuffers sends large values one at a
// time and pipelined, and reads each back, one at a time and pipelined:
// the buffers a connection keeps between batches must never show a batch
// another's bytes. The kept memory is counted while the large batches go
// on, and no longer after small batches or once the connection ends.
func TestLargeValuesReuseTheConnectionsBuffers(t *testing.T) {
	srv := startServer(t)
	c := dial(t, srv.Addr())
	rng := rand.New(rand.NewPCG(1, 2))
	values := make([][]byte, 6)
	for i := range values {
		values[i] = make([]byte, 300<<10+rng.IntN(1000))
		for j := range values[i] {
			values[i][j] = byte('a' + rng.IntN(26))
		}
	}
	set := func(i int) []byte {
		return redisserver.AppendCommand(nil, "SET", "k"+strconv.Itoa(i), string(values[i]))
	}
	for i := range 3 {
		c.send(set(i))
		if got := c.reply(); got != "+OK\r\n" {
			t.Fatalf("SET of value %d: %q", i, got)
		}
	}
	// The batch of the third SET came after the second's ended.
	if kept := srv.buffers.kept.Load(); kept < 300<<10 || kept > 2*maxKeptBuffer {
		t.Errorf("%d bytes of input kept after large SETs one at a time, want one buffer of at least %d", kept, 300<<10)
	}
	var pipeline []byte
	for i := 3; i < len(values); i++ {
		pipeline = append(pipeline, set(i)...)
	}
	for i := range values {
		pipeline = redisserver.AppendCommand(pipeline, "GET", "k"+strconv.Itoa(i))
	}
	c.send(pipeline)
	if got := c.replies(3); got != "+OK\r\n+OK\r\n+OK\r\n" {
		t.Fatalf("pipelined SETs: %q", got)
	}
	for i, v := range values {
		want := "$" + strconv.Itoa(len(v)) + "\r\n" + string(v) + "\r\n"
		if got := c.reply(); got != want {
			t.Fatalf("GET k%d: %d bytes, differing from the value set at byte %d", i, len(got), firstDiff(got, want))
		}
	}
	for i, v := range values {
		want := "$" + strconv.Itoa(len(v)) + "\r\n" + string(v) + "\r\n"
		if got := c.do("GET", "k"+strconv.Itoa(i)); got != want {
			t.Fatalf("GET k%d alone: %d bytes, differing from the value set at byte %d", i, len(got), firstDiff(got, want))
		}
	}
	// The batch of the last GET came after the one before ended.
	if kept := srv.buffers.kept.Load(); kept < 300<<10 || kept > 2*maxKeptBuffer {
		t.Errorf("%d bytes of buffers kept after large GETs one at a time, want a reply's buffer of at least %d", kept, 300<<10)
	}
	c.expect("+PONG\r\n", "PING")
	c.expect("+PONG\r\n", "PING") // after the first PING's batch ended
	if kept := srv.buffers.kept.Load(); kept != 0 {
		t.Errorf("%d bytes of buffers kept after small batches, want 0", kept)
	}
	// One connection keeps its output buffer, another its input buffer;
	// each one's second batch comes after its first ended.
	d := dial(t, srv.Addr())
	for i := range 2 {
		want := "$" + strconv.Itoa(len(values[i])) + "\r\n" + string(values[i]) + "\r\n"
		if got := c.do("GET", "k"+strconv.Itoa(i)); got != want {
			t.Fatalf("GET k%d before the close: %d bytes, differing at byte %d", i, len(got), firstDiff(got, want))
		}
		d.send(set(i))
		if got := d.reply(); got != "+OK\r\n" {
			t.Fatalf("SET of value %d before the close: %q", i, got)
		}
	}
	kept := srv.buffers.kept.Load()
	if kept < 600<<10 {
		t.Fatalf("%d bytes of buffers kept by two connections, want at least %d", kept, 600<<10)
	}
	stats := statsFields(t, []byte(dial(t, srv.Addr()).do("MEMORY", "STATS")))
	if i := slices.IndexFunc(stats, func(f statField) bool { return f.name == "clients.normal" }); i < 0 || stats[i].value != float64(kept) {
		t.Errorf("MEMORY STATS: %+v, want clients.normal %d", stats, kept)
	}
	c.conn.Close()
	d.conn.Close()
	for deadline := time.Now().Add(ioTimeout); srv.buffers.kept.Load() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes of buffers still kept after the connection ended", srv.buffers.kept.Load())
		}
	}
}

// firstDiff returns the index of the first byte where a and b differ.
func firstDiff(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
