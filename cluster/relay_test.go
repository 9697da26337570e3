package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/presenced/presenced/proto"
)

// waitHeard waits until tn heard want relayed commands and returns them.
func waitHeard(t *testing.T, tn *testNode, want int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tn.relayMu.Lock()
		heard := slices.Clone(tn.relayed)
		tn.relayMu.Unlock()
		if len(heard) >= want || time.Now().After(deadline) {
			return heard
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRelayReachesEveryOtherMemberInOrder(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	from := c.nodes[1]
	const n = 500
	var want []string
	arg := make([]byte, 0, 16)
	for i := range n {
		arg = strconv.AppendInt(arg[:0], int64(i), 10)
		from.node.Relay([]byte("PUBLISH"), []byte("ch"), arg)
		want = append(want, "PUBLISH ch "+strconv.Itoa(i))
	}
	for _, tn := range c.nodes {
		if tn == from {
			continue
		}
		if heard := waitHeard(t, tn, n); !slices.Equal(heard, want) {
			t.Fatalf("%s heard %d commands, want %d in order; first: %q", tn.id, len(heard), n, heard[:min(len(heard), 3)])
		}
	}
	if heard := waitHeard(t, from, 0); len(heard) != 0 {
		t.Fatalf("the relaying node heard its own commands: %q", heard[:min(len(heard), 3)])
	}
	// Stats counts a call's commands once it returned.
	deadline := time.Now().Add(10 * time.Second)
	for st := from.node.Stats(); st.Relayed != 2*n || st.RelayDropped != 0; st = from.node.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("relayed %d, dropped %d; want %d and 0", st.Relayed, st.RelayDropped, 2*n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRelayMissesACutMember(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	from, cut, other := c.nodes[0], c.nodes[1], c.nodes[2]
	c.isolate(cut)
	from.node.Relay([]byte("missed"))
	waitHeard(t, other, 1)
	deadline := time.Now().Add(10 * time.Second)
	for from.node.Stats().RelayDropped != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("RelayDropped = %d, want 1", from.node.Stats().RelayDropped)
		}
		time.Sleep(time.Millisecond)
	}
	c.heal()
	from.node.Relay([]byte("heard"))
	if heard := waitHeard(t, cut, 1); !slices.Equal(heard, []string{"heard"}) {
		t.Fatalf("the member cut off and healed heard %q, want only the command after the heal", heard)
	}
	if heard := waitHeard(t, other, 2); !slices.Equal(heard, []string{"missed", "heard"}) {
		t.Fatalf("the member always reachable heard %q", heard)
	}
	if st := from.node.Stats(); st.RelayDropped != 1 {
		t.Fatalf("after the heal, RelayDropped = %d, want 1", st.RelayDropped)
	}
}

// switchPeers fails the calls to relay while fail is set.
type switchPeers struct {
	Peers
	fail atomic.Bool
}

func (p *switchPeers) Relay(context.Context, string, net.Buffers, int) error {
	if p.fail.Load() {
		return errors.New("member unreachable")
	}
	return nil
}

// TestRelayLogsWhenAMemberStartsAndStopsFailing checks that a member
// whose calls fail is logged once as it starts failing and once as it
// works again, with the commands it missed meanwhile.
func TestRelayLogsWhenAMemberStartsAndStopsFailing(t *testing.T) {
	p := &switchPeers{}
	var logged bytes.Buffer
	var logMu sync.Mutex
	r := newRelayer(p, "n1", maxRelayBytes, hclog.New(&hclog.LoggerOptions{Output: &logged, Mutex: &logMu}))
	defer r.close()
	wait := func(relayed, dropped uint64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for r.relayed.Load() != relayed || r.dropped.Load() != dropped {
			if time.Now().After(deadline) {
				t.Fatalf("relayed %d and dropped %d, want %d and %d", r.relayed.Load(), r.dropped.Load(), relayed, dropped)
			}
			time.Sleep(time.Millisecond)
		}
	}
	r.relay([]string{"a"}, [][]byte{[]byte("c")})
	wait(1, 0)
	p.fail.Store(true)
	for i := range 3 {
		r.relay([]string{"a"}, [][]byte{[]byte("c")})
		wait(1, uint64(i+1))
	}
	p.fail.Store(false)
	r.relay([]string{"a"}, [][]byte{[]byte("c")})
	wait(2, 3)
	logMu.Lock()
	defer logMu.Unlock()
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "relaying to a member failed") || !strings.Contains(lines[0], "error=\"member unreachable\"") ||
		!strings.Contains(lines[1], "works again") || !strings.Contains(lines[1], "missed=3") {
		t.Fatalf("logged %q, want the first failure, then the recovery with 3 commands missed", lines)
	}
}

// heldPeers records relayed commands, each call held until hold is closed.
type heldPeers struct {
	Peers
	hold  chan struct{}
	mu    sync.Mutex
	calls [][]string
}

func (p *heldPeers) Relay(_ context.Context, _ string, cmds net.Buffers, _ int) error {
	<-p.hold
	call, err := parseCommands(bytes.Join(cmds, nil))
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.calls = append(p.calls, call)
	p.mu.Unlock()
	return nil
}
func TestRelayQueueBoundDropsAndBatches(t *testing.T) {
	p := &heldPeers{hold: make(chan struct{})}
	release := sync.OnceFunc(func() { close(p.hold) })
	r := newRelayer(p, "n1", 200, hclog.NewNullLogger())
	defer r.close()
	defer release()                                                               // before close, which waits for the held call
	cmd := func(i int) [][]byte { return [][]byte{fmt.Appendf(nil, "c%08d", i)} } // 19 bytes in RESP
	r.relay([]string{"a"}, cmd(0))
	// The first call takes c0 and is held; the queue then fills up to
	// the limit (10 commands of 19 bytes) and drops the rest.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		taken := r.queues["a"].size == 0
		r.mu.Unlock()
		if taken {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sender did not take the first command")
		}
		time.Sleep(time.Millisecond)
	}
	for i := 1; i <= 20; i++ {
		r.relay([]string{"a"}, cmd(i))
	}
	if got := r.dropped.Load(); got != 10 {
		t.Fatalf("dropped %d commands, want 10", got)
	}
	release()
	for r.relayed.Load() != 11 {
		if time.Now().After(deadline) {
			t.Fatalf("relayed %d commands, want 11", r.relayed.Load())
		}
		time.Sleep(time.Millisecond)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var want []string
	for i := range 11 {
		want = append(want, string(cmd(i)[0]))
	}
	if len(p.calls) != 2 || !slices.Equal(slices.Concat(p.calls...), want) {
		t.Fatalf("calls %q, want c0 alone, then the 10 queued meanwhile in one call", p.calls)
	}
}

// TestRelayCloseCutsACallShort relays to a member that takes the request
// and never answers: closing the relayer must cut the call short rather
// than wait for its deadline.
func TestRelayCloseCutsACallShort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan net.Conn, 1)
	go func() {
		nc, err := ln.Accept()
		if err == nil {
			got <- nc
		}
	}()
	peers := NewRESPPeers(nil, nil)
	defer peers.Close()
	r := newRelayer(peers, "n1", maxRelayBytes, hclog.NewNullLogger())
	r.relay([]string{ln.Addr().String()}, [][]byte{[]byte("PUBLISH"), []byte("ch"), []byte("m")})
	nc := <-got
	defer nc.Close()
	req := make([]byte, 64)
	if _, err := nc.Read(req); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r.close()
	if took := time.Since(start); took >= relayTimeout {
		t.Fatalf("close took %v: it waited for the call's deadline", took)
	}
	if r.dropped.Load() != 1 || r.relayed.Load() != 0 {
		t.Fatalf("dropped %d, relayed %d; want 1 and 0", r.dropped.Load(), r.relayed.Load())
	}
	r.relay([]string{ln.Addr().String()}, [][]byte{[]byte("PUBLISH"), []byte("ch"), []byte("late")})
	if r.dropped.Load() != 1 || len(r.queues) != 0 {
		t.Fatal("a closed relayer queued a command")
	}
}

// TestRelayReachesAMemberThatJoins relays before and after a node joins:
// the relaying node looks at the membership again once it has applied
// the change.
func TestRelayReachesAMemberThatJoins(t *testing.T) {
	c := newTestCluster(t, 2, nil)
	from := c.nodes[1]
	from.node.Relay([]byte("before"))
	waitHeard(t, c.nodes[0], 1)
	joined := c.join("n3", nil)
	c.formed()
	from.node.Relay([]byte("after"))
	if heard := waitHeard(t, joined, 1); !slices.Equal(heard, []string{"after"}) {
		t.Fatalf("the member that joined heard %q, want the command relayed after it joined", heard)
	}
}

// recordingPeers keeps the commands relayed to it.
type recordingPeers struct {
	Peers
	mu    sync.Mutex
	calls [][]byte
}

func (p *recordingPeers) Relay(_ context.Context, _ string, cmds net.Buffers, _ int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, bytes.Join(cmds, nil))
	return nil
}

// TestRelayNumbersCalls checks that each call opens with RAFT RELAY,
// the node's ID, its incarnation and the next sequence number, so that a
// member can drop the commands of a call once a later one opened.
func TestRelayNumbersCalls(t *testing.T) {
	p := &recordingPeers{}
	r := newRelayer(p, "n7", maxRelayBytes, hclog.NewNullLogger())
	for i := range 3 {
		r.relay([]string{"a"}, [][]byte{[]byte("PUBLISH"), []byte("ch"), fmt.Appendf(nil, "m%d", i)})
	}
	deadline := time.Now().Add(10 * time.Second)
	for r.relayed.Load() != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("relayed %d commands, want 3", r.relayed.Load())
		}
		time.Sleep(time.Millisecond)
	}
	r.close()
	inc := string(r.prefix[3])
	var cmds []string
	var parser proto.Parser
	for i, call := range p.calls {
		args, n, err := parser.Parse(call, proto.Limits{MaxBulkLen: 1 << 20})
		want := fmt.Sprintf("RAFT RELAY n7 %s %d", inc, i+1)
		if got := string(bytes.Join(args, []byte(" "))); err != nil || got != want {
			t.Fatalf("call %d opens with %q (%v), want %q", i, got, err, want)
		}
		rest, err := parseCommands(call)
		if err != nil || n == 0 {
			t.Fatal(err)
		}
		cmds = append(cmds, rest...)
	}
	if want := []string{"PUBLISH ch m0", "PUBLISH ch m1", "PUBLISH ch m2"}; !slices.Equal(cmds, want) {
		t.Fatalf("relayed %q, want %q", cmds, want)
	}
	later := newRelayer(p, "n7", maxRelayBytes, hclog.NewNullLogger())
	first, err1 := strconv.ParseInt(inc, 10, 64)
	second, err2 := strconv.ParseInt(string(later.prefix[3]), 10, 64)
	if err1 != nil || err2 != nil || second <= first {
		t.Fatalf("incarnations %q, then %q: a later one must be greater", inc, later.prefix[3])
	}
}

// TestRelayQueueKeepsOrderInBoundedCalls queues commands of many sizes,
// some longer than a block, while a call is held, and checks them against
// the simple model of one list: every command reaches the member once and
// in order, and each call carries at most relayCallBytes of commands
// unless it carries one command alone, with the count it says.
func TestRelayQueueKeepsOrderInBoundedCalls(t *testing.T) {
	p := &countingPeers{heldPeers: heldPeers{hold: make(chan struct{})}}
	release := sync.OnceFunc(func() { close(p.hold) })
	r := newRelayer(p, "n1", maxRelayBytes, hclog.NewNullLogger())
	defer r.close()
	defer release()
	rng := rand.New(rand.NewPCG(1, 2))
	var want []string
	for i := range 3000 {
		size := rng.IntN(2000)
		if i%500 == 7 {
			size = relayChunk + rng.IntN(3*relayChunk) // a block of its own
		}
		msg := fmt.Appendf(nil, "m%d-", i)
		msg = append(msg, bytes.Repeat([]byte{'x'}, size)...)
		r.relay([]string{"a"}, [][]byte{[]byte("PUBLISH"), msg})
		want = append(want, "PUBLISH "+string(msg))
	}
	release()
	deadline := time.Now().Add(10 * time.Second)
	for r.relayed.Load() != uint64(len(want)) {
		if time.Now().After(deadline) {
			t.Fatalf("relayed %d commands, want %d", r.relayed.Load(), len(want))
		}
		time.Sleep(time.Millisecond)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if got := slices.Concat(p.calls...); !slices.Equal(got, want) {
		t.Fatalf("relayed %d commands, want the %d queued, in order", len(got), len(want))
	}
	if len(p.calls) < 3 {
		t.Fatalf("%d calls: the queue was not split into bounded calls", len(p.calls))
	}
	for i, call := range p.calls {
		if p.sizes[i] > relayCallBytes && len(call) > 1 {
			t.Fatalf("call %d carries %d bytes of %d commands, more than %d", i, p.sizes[i], len(call), relayCallBytes)
		}
		if p.counts[i] != len(call)+1 {
			t.Fatalf("call %d says %d replies for RAFT RELAY and %d commands", i, p.counts[i], len(call))
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if q := r.queues["a"]; q != nil && q.size != 0 {
		t.Fatalf("%d bytes still queued", q.size)
	}
}

// countingPeers is heldPeers that also keeps the bytes of each call's
// commands and the replies it expects.
type countingPeers struct {
	heldPeers
	sizes, counts []int
}

func (p *countingPeers) Relay(ctx context.Context, addr string, cmds net.Buffers, n int) error {
	size := len(bytes.Join(cmds[1:], nil)) // but the RAFT RELAY that opens the call
	if err := p.heldPeers.Relay(ctx, addr, cmds, n); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sizes, p.counts = append(p.sizes, size), append(p.counts, n)
	return nil
}

// TestRESPPeersRelayReadsRepliesInPieces relays to a member on loopback
// that answers in small writes splitting replies, one of them an error:
// Relay must read every reply, report the first error, and keep the
// connection for the next call.
func TestRESPPeersRelayReadsRepliesInPieces(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const n = 50000
	accepted := make(chan struct{}, 4)
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			go answerRelays(nc, n)
		}
	}()
	peers := NewRESPPeers(nil, nil)
	defer peers.Close()
	call := func() error {
		cmds := net.Buffers{[]byte("*1\r\n$4\r\nPING\r\n"), bytes.Repeat([]byte("*1\r\n$4\r\nPING\r\n"), n-1)}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return peers.Relay(ctx, ln.Addr().String(), cmds, n)
	}
	for i := range 2 {
		err := call()
		var re *RemoteError
		if !errors.As(err, &re) || re.Reply != "ERR first" {
			t.Fatalf("call %d: %v, want the first error reply, ERR first", i, err)
		}
	}
	if len(accepted) != 1 {
		t.Fatalf("%d connections for two calls, want one kept", len(accepted))
	}
}

// answerRelays answers each call of n commands on nc with n replies, two
// of them errors, written a few bytes at a time.
func answerRelays(nc net.Conn, n int) {
	defer nc.Close()
	var parser proto.Parser
	var in []byte
	buf := make([]byte, 64<<10)
	for answered := 0; ; {
		k, err := nc.Read(buf)
		if err != nil {
			return
		}
		in = append(in, buf[:k]...)
		var out []byte
		for {
			_, m, err := parser.Parse(in, proto.Limits{MaxBulkLen: 1 << 20})
			if err != nil || m == 0 {
				break
			}
			in = in[m:]
			switch answered % n {
			case n / 3:
				out = append(out, "-ERR first\r\n"...)
			case n / 2:
				out = append(out, "-ERR second\r\n"...)
			default:
				out = append(out, ":1\r\n"...)
			}
			answered++
		}
		for len(out) > 0 {
			w := min(len(out), 7)
			if _, err := nc.Write(out[:w]); err != nil {
				return
			}
			out = out[w:]
		}
	}
}
