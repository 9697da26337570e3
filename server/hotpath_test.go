package server

import (
	"bufio"
	"net"
	"strconv"
	"testing"

	"github.com/presenced/presenced/proto"
	"github.com/presenced/presenced/server/redisserver"
)

// heartbeatPipeline encodes n commands name key offset [value] with
// offsets 0..n-1.
func heartbeatPipeline(name string, n int, value string) []byte {
	var b []byte
	for i := 0; i < n; i++ {
		args := []string{name, "online:bitmap:3", strconv.Itoa(i)}
		if value != "" {
			args = append(args, value)
		}
		b = redisserver.AppendCommand(b, args...)
	}
	return b
}

// roundTrip writes a pipeline and reads its n one-line replies.
func roundTrip(tb testing.TB, nc net.Conn, r *bufio.Reader, pipeline []byte, n int) {
	if _, err := nc.Write(pipeline); err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < n; i++ {
		line, err := r.ReadSlice('\n')
		if err != nil {
			tb.Fatal(err)
		}
		if line[0] != ':' {
			tb.Fatalf("reply %q", line)
		}
	}
}

// dialHeartbeat starts a server for the length of the test and connects
// to it, with a reader that holds a pipeline's replies. It reads with
// roundTrip, which allocates nothing, rather than a redisserver.Conn.
func dialHeartbeat(tb testing.TB) (net.Conn, *bufio.Reader) {
	tb.Helper()
	nc, err := net.Dial("tcp", startServer(tb).Addr())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { nc.Close() })
	return nc, bufio.NewReaderSize(nc, 1<<16)
}

// TestHeartbeatPathAllocations checks that serving pipelined SETBIT and
// GETBIT heartbeats allocates nothing per command once the connection's
// buffers have grown: parsing, dispatch, the store and the replies reuse
// their memory. What a pipeline does allocate is per batch, not per
// command: the raft entry, its future, the read index round. (Setting a
// bit that is already set allocates nothing in roaring either; new bits
// may grow a container.)
func TestHeartbeatPathAllocations(t *testing.T) {
	nc, r := dialHeartbeat(t)
	for _, tc := range []struct {
		name, value string
	}{{"SETBIT", "1"}, {"GETBIT", ""}} {
		perPipeline := map[int]float64{}
		for _, n := range []int{64, 256} {
			p := heartbeatPipeline(tc.name, n, tc.value)
			for i := 0; i < 10; i++ {
				roundTrip(t, nc, r, p, n)
			}
			perPipeline[n] = testing.AllocsPerRun(100, func() { roundTrip(t, nc, r, p, n) })
		}
		// The whole process is counted (client included), and the
		// runtime allocates now and then: allow a few over four times the
		// commands (which still fit one read), where one allocation per command
		// would add 192.
		if perPipeline[256] > perPipeline[64]+8 {
			t.Errorf("%s: %.1f allocations per pipeline of 64, %.1f per pipeline of 256",
				tc.name, perPipeline[64], perPipeline[256])
		}
	}
}

// BenchmarkHeartbeatPipeline measures one pipeline of 64 SETBITs through
// a loopback connection.
func BenchmarkHeartbeatPipeline(b *testing.B) {
	nc, r := dialHeartbeat(b)
	p := heartbeatPipeline("SETBIT", 64, "1")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		roundTrip(b, nc, r, p, 64)
	}
}

// TestLookupCache checks the client's one-name cache of the command
// table: it answers as proto.Lookup does whatever came before, and keeps
// its own copy of the name, since the name's bytes are the input buffer,
// which the next read overwrites.
func TestLookupCache(t *testing.T) {
	for _, spec := range proto.Commands {
		if len(spec.Name) > maxCachedName {
			t.Errorf("command %q is longer than the %d bytes lookup caches", spec.Name, maxCachedName)
		}
	}
	var c client
	buf := make([]byte, 0, 16)
	names := []string{"getbit", "GETBIT", "setbit", "nosuchcommand", "SetBit", "getbit", "bitcount"}
	for _, name := range names {
		buf = append(buf[:0], name...) // the same array, as the input is reused
		if got, want := c.lookup(buf), proto.Lookup([]byte(name)); got != want {
			t.Fatalf("lookup(%q) after %q = %v, want %v", name, c.lastName, got, want)
		}
	}
}
