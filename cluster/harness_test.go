package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/presenced/presenced/proto"
	"github.com/presenced/presenced/store"
)

// testConfig is a node configuration for in-process tests: in-memory raft
// stores, short timeouts, no tick unless a test sets one.
func testConfig(id string) Config {
	c := DefaultConfig()
	c.NodeID = id
	c.RaftAddr = "127.0.0.1:0" // a node on raft's TCP transport takes a free port
	c.AppendOnly = false
	c.Dir = ""
	c.TickInterval = time.Hour
	// Short enough for quick failovers, long enough not to flap on a
	// loaded machine under the race detector.
	c.HeartbeatTimeout = 400 * time.Millisecond
	c.ElectionTimeout = 400 * time.Millisecond
	c.LeaderLeaseTimeout = 200 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
	c.LogOutput = io.Discard
	if os.Getenv("RAFTLOG") != "" {
		c.LogOutput = os.Stderr
		c.LogLevel = "debug"
	}
	return c
}

// testNode is one member of a testCluster.
type testNode struct {
	id    string
	addr  raft.ServerAddress
	trans *raft.InmemTransport
	st    *store.Store
	sm    *gatedMachine // tn.st as the node applies to it, to hold an Apply
	node  *Node
	dead  bool
	cut   bool // isolated: no raft traffic and no peer calls to or from it

	relayMu sync.Mutex
	relayed []string // the commands other nodes relayed to it, arguments joined by spaces
}

// testCluster is a cluster of in-process nodes connected by raft's
// in-memory transport, with hooks to kill and partition nodes.
type testCluster struct {
	t     *testing.T
	ctx   context.Context
	nodes []*testNode
}

// newTestCluster starts n nodes: the first bootstraps, the others join it.
// configure, if not nil, adjusts each node's configuration.
func newTestCluster(t *testing.T, n int, configure func(*Config)) *testCluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c := &testCluster{t: t, ctx: ctx}
	t.Cleanup(c.close)
	for i := range n {
		tn := &testNode{id: fmt.Sprintf("n%d", i+1), st: store.New()}
		tn.addr, tn.trans = raft.NewInmemTransport("")
		c.nodes = append(c.nodes, tn)
	}
	c.heal()
	for i, tn := range c.nodes {
		c.start(tn, i == 0, configure)
		if i == 0 {
			c.leader()
			continue
		}
		if err := c.nodes[0].node.AddVoter(ctx, tn.id, string(tn.addr), true); err != nil {
			t.Fatal(err)
		}
	}
	c.formed()
	return c
}

// start opens tn's node, bootstrapping a cluster or not.
func (c *testCluster) start(tn *testNode, bootstrap bool, configure func(*Config)) {
	c.t.Helper()
	cfg := testConfig(tn.id)
	cfg.Bootstrap = bootstrap
	if configure != nil {
		configure(&cfg)
	}
	tn.sm = newGatedMachine(FromStore(tn.st))
	node, err := Open(cfg, tn.sm, &Network{Raft: tn.trans, Peers: testPeers{c, tn}})
	if err != nil {
		c.t.Fatal(err)
	}
	tn.node = node
}

// formed commits a command entry after membership changes and waits for
// every node to apply it: then every node knows the whole membership.
func (c *testCluster) formed() {
	c.t.Helper()
	if err := c.leader().node.Apply([]store.Command{cmd(0, "DEL", "formed")}, new(store.Replies)); err != nil {
		c.t.Fatal(err)
	}
	c.converge()
}

// join starts a new node with an empty store, adds it to the cluster as
// a voter and waits until it caught up.
func (c *testCluster) join(id string, configure func(*Config)) *testNode {
	c.t.Helper()
	tn := &testNode{id: id, st: store.New()}
	tn.addr, tn.trans = raft.NewInmemTransport("")
	c.nodes = append(c.nodes, tn)
	c.heal()
	c.start(tn, false, configure)
	if err := c.leader().node.AddVoter(c.ctx, tn.id, string(tn.addr), true); err != nil {
		c.t.Fatal(err)
	}
	c.formed()
	return tn
}

func (c *testCluster) live() []*testNode {
	var out []*testNode
	for _, tn := range c.nodes {
		if !tn.dead {
			out = append(out, tn)
		}
	}
	return out
}

func (c *testCluster) byID(id string) *testNode {
	for _, tn := range c.nodes {
		if tn.id == id && !tn.dead {
			return tn
		}
	}
	return nil
}

// leader waits until a live node leads and returns it. It waits on raft's
// leadership observations: on the node believed to lead if it is alive,
// else on another live node, which will learn of the next leader.
func (c *testCluster) leader() *testNode {
	c.t.Helper()
	for {
		obs := c.live()[0]
		if _, id := obs.node.Leader(); c.byID(id) != nil {
			obs = c.byID(id)
		}
		seen := obs.node.leaders.get()
		if _, id := obs.node.Leader(); c.byID(id) != nil && c.byID(id).node.IsLeader() {
			return c.byID(id)
		}
		if err := obs.node.leaders.wait(c.ctx, seen+1); err != nil {
			c.t.Fatalf("no leader: %v", err)
		}
	}
}

// followers returns the two nodes of a three-node cluster that do not
// lead, leader being the one that does.
func (c *testCluster) followers(leader *testNode) (a, b *testNode) {
	for _, tn := range c.nodes {
		switch {
		case tn == leader:
		case a == nil:
			a = tn
		default:
			b = tn
		}
	}
	return a, b
}

// close stops every node, leaders first: a leader waits for its RPCs in
// flight, which a stopped follower would leave to time out.
func (c *testCluster) close() {
	for _, leading := range []bool{true, false} {
		for _, tn := range c.nodes {
			if tn.node != nil && tn.node.IsLeader() == leading {
				tn.node.Close()
			}
		}
	}
}

// kill stops a node and cuts it off.
func (c *testCluster) kill(tn *testNode) {
	tn.dead = true
	tn.node.Close()
	c.isolate(tn)
}

// isolate cuts every link between tn and the other nodes.
func (c *testCluster) isolate(tn *testNode) {
	tn.cut = true
	tn.trans.DisconnectAll()
	for _, o := range c.nodes {
		if o != tn {
			o.trans.Disconnect(tn.addr)
		}
	}
}

// heal connects every pair of nodes.
func (c *testCluster) heal() {
	for _, a := range c.nodes {
		a.cut = a.dead
		for _, b := range c.nodes {
			if a != b {
				a.trans.Connect(b.addr, b.trans)
			}
		}
	}
}

// converge waits until every live node applied every command the leader
// applied and checks that their stores are equal: each node's digest must
// be the leader's at the same applied index. An entry that comes in
// meanwhile (a tick, say) moves the leader on, and the round starts over.
func (c *testCluster) converge() {
	c.t.Helper()
	l := c.leader()
	if err := l.node.Tick(c.ctx); err != nil {
		c.t.Fatal(err)
	}
	for {
		if err := c.ctx.Err(); err != nil {
			c.t.Fatalf("the log kept moving: %v", err)
		}
		last, want := l.node.Digest()
		moved := false
		for _, tn := range c.live() {
			if err := tn.node.WaitApplied(c.ctx, last); err != nil {
				c.t.Fatalf("%s did not apply up to %d: %v", tn.id, last, err)
			}
			applied, got := tn.node.Digest()
			if applied != last {
				moved = true
				break
			}
			if got != want {
				c.t.Fatalf("%s digest %x, leader %s %x, both at index %d", tn.id, got, l.id, want, last)
			}
		}
		if !moved {
			return
		}
	}
}

// cmd builds a command in database db.
func cmd(db int, args ...string) store.Command {
	c := store.Command{DB: db}
	for _, a := range args {
		c.Args = append(c.Args, []byte(a))
	}
	return c
}

// replies returns each reply of r as a string.
func replies(r *store.Replies) []string {
	out := make([]string, len(r.Ends))
	for i := range r.Ends {
		out[i] = string(r.Reply(i))
	}
	return out
}

// read runs read-only commands on st and returns their replies.
func read(st *store.Store, cmds ...store.Command) []string {
	var r store.Replies
	st.Read(cmds, time.Now().UnixMilli(), &r)
	return replies(&r)
}

// testPeers makes calls from one node of a testCluster on another by
// calling the other's methods, as the other's server would; a call to or
// from an isolated or dead node fails before being sent.
type testPeers struct {
	c    *testCluster
	from *testNode
}

func (p testPeers) to(addr string) (*Node, error) {
	tn, err := p.member(addr)
	if err != nil {
		return nil, err
	}
	return tn.node, nil
}

func (p testPeers) member(addr string) (*testNode, error) {
	for _, tn := range p.c.nodes {
		if string(tn.addr) == addr && !tn.cut && !p.from.cut {
			return tn, nil
		}
	}
	return nil, fmt.Errorf("%w: %s unreachable", errNotSent, addr)
}

// Relay records the commands of a relay call, the n commands of cmds but
// the RAFT RELAY that opens them, as heard by the node at addr.
func (p testPeers) Relay(_ context.Context, addr string, cmds net.Buffers, n int) error {
	tn, err := p.member(addr)
	if err != nil {
		return err
	}
	heard, err := parseCommands(bytes.Join(cmds, nil))
	if err != nil {
		return err
	}
	if len(heard)+1 != n {
		return fmt.Errorf("%d commands and RAFT RELAY relayed as %d", len(heard), n)
	}
	tn.relayMu.Lock()
	defer tn.relayMu.Unlock()
	tn.relayed = append(tn.relayed, heard...)
	return nil
}

// parseCommands parses the commands of a relay call, which opens with
// RAFT RELAY and the relaying node's ID, incarnation and the call's
// sequence number: each command after it is returned as its arguments
// joined by spaces.
func parseCommands(b []byte) ([]string, error) {
	var p proto.Parser
	var out []string
	for first := true; len(b) > 0; first = false {
		args, n, err := p.Parse(b, proto.Limits{MaxBulkLen: 1 << 20})
		if err != nil || n == 0 {
			return nil, fmt.Errorf("relayed bytes %q: %v", b, err)
		}
		b = b[n:]
		relay := len(args) == 5 && string(args[0]) == "RAFT" && string(args[1]) == "RELAY"
		if first != relay {
			return nil, fmt.Errorf("relayed %q: a call must open with RAFT RELAY, and only it", args)
		}
		if !relay {
			out = append(out, string(bytes.Join(args, []byte(" "))))
		}
	}
	return out, nil
}
func (p testPeers) Forward(_ context.Context, addr string, cmds []store.Command, out *store.Replies) error {
	n, err := p.to(addr)
	if err != nil {
		return err
	}
	return n.ApplyLocal(cmds, out)
}

func (p testPeers) ReadIndex(ctx context.Context, addr string) (uint64, error) {
	n, err := p.to(addr)
	if err != nil {
		return 0, err
	}
	return n.ReadIndex(ctx)
}

func (p testPeers) Tick(_ context.Context, addr string) (uint64, error) {
	n, err := p.to(addr)
	if err != nil {
		return 0, err
	}
	return n.TickLocal()
}

func (p testPeers) AddVoter(ctx context.Context, addr, id, raftAddr string, joining bool) error {
	n, err := p.to(addr)
	if err != nil {
		return err
	}
	if !n.IsLeader() {
		return ErrNotLeader
	}
	return n.AddVoter(ctx, id, raftAddr, joining)
}

func (p testPeers) RemoveServer(ctx context.Context, addr, id string) error {
	n, err := p.to(addr)
	if err != nil {
		return err
	}
	if !n.IsLeader() {
		return ErrNotLeader
	}
	return n.RemoveServer(ctx, id)
}

func (p testPeers) Handover(ctx context.Context, addr, to string) error {
	n, err := p.to(addr)
	if err != nil {
		return err
	}
	id := ""
	if to != "" {
		target, err := p.to(to)
		if err != nil {
			return err
		}
		id = target.cfg.NodeID
	}
	return n.Handover(ctx, id)
}

func (p testPeers) Applied(_ context.Context, addr string) (uint64, error) {
	n, err := p.to(addr)
	if err != nil {
		return 0, err
	}
	return n.Applied(), nil
}

func (p testPeers) Members(_ context.Context, addr string) ([]Member, error) {
	n, err := p.to(addr)
	if err != nil {
		return nil, err
	}
	return n.Members()
}

// Info has the fields of RAFT INFO that the node itself knows: the
// server adds the others.
func (p testPeers) Info(_ context.Context, addr string) (map[string]string, error) {
	n, err := p.to(addr)
	if err != nil {
		return nil, err
	}
	return map[string]string{"node_id": n.Config().NodeID, "applied_index": strconv.FormatUint(n.Applied(), 10),
		"term": strconv.FormatUint(n.raft.CurrentTerm(), 10)}, nil
}
