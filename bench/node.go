package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/presenced/presenced/internal/proctest"
)

// A node is a server process that the benchmark stops (cleanly or with
// SIGKILL) and starts again on the same ports and data directory: a
// presenced cluster node, or a redis-server restarting from its AOF.
type node struct {
	name  string   // for messages: "n1", "redis-server"
	bin   string   // program
	args  []string // its command line after the program...
	extra []string // ...followed by these, which may change between starts
	addr  string   // client address, 127.0.0.1:port
	dir   string   // data directory, kept across restarts
	proc  *proctest.Process
}

// startTimeout bounds the wait for a started server to answer PING.
const startTimeout = 30 * time.Second

// newPresencedNode describes presenced node id on fresh loopback ports
// with data directory dir; join, when not empty, is the client address of
// a member to join. extra are more flags (persistence mode).
func newPresencedNode(bin, id, dir, join string, extra ...string) (*node, error) {
	port, err := proctest.FreePort()
	if err != nil {
		return nil, err
	}
	raftPort, err := proctest.FreePort()
	if err != nil {
		return nil, err
	}
	args := []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir,
		"--node-id", id, "--raft-addr", "127.0.0.1:" + strconv.Itoa(raftPort)}
	if join != "" {
		args = append(args, "--join", join)
	}
	return &node{name: id, bin: bin, args: args, extra: extra, addr: "127.0.0.1:" + strconv.Itoa(port), dir: dir}, nil
}

// newRedisNode describes redis-server on a fresh loopback port with data
// directory dir; extra are more configuration arguments.
func newRedisNode(dir string, extra ...string) (*node, error) {
	port, err := proctest.FreePort()
	if err != nil {
		return nil, err
	}
	args := []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir, "--save", ""}
	return &node{name: "redis-server", bin: "redis-server", args: args, extra: extra, addr: "127.0.0.1:" + strconv.Itoa(port), dir: dir}, nil
}

// launch starts the process and returns at once, with the time it was
// started.
func (n *node) launch() (time.Time, error) {
	cmd := exec.Command(n.bin, append(slices.Clone(n.args), n.extra...)...)
	start := time.Now()
	p, err := proctest.Start(cmd)
	if err != nil {
		return start, fmt.Errorf("%s: %w", n.name, err)
	}
	n.proc = p
	return start, nil
}

// start launches the process and waits until it answers PING.
func (n *node) start() error {
	if _, err := n.launch(); err != nil {
		return err
	}
	return n.waitReady()
}

// waitReady polls with PING until PONG, the process exits or startTimeout
// passes.
func (n *node) waitReady() error {
	if err := n.proc.WaitPING(n.addr, startTimeout); err != nil {
		return fmt.Errorf("%s: %w", n.name, err)
	}
	return nil
}

// poll calls ok on a connection to the node, reconnecting after errors,
// every millisecond or so until it returns true, the process exits or
// timeout passes, and returns when it first returned true.
func (n *node) poll(timeout time.Duration, ok func(c *client) bool) (time.Time, error) {
	var c *client
	defer func() {
		if c != nil {
			c.close()
		}
	}()
	var at time.Time
	err := n.proc.Poll(timeout, func() bool {
		if c == nil {
			c, _ = dial(n.addr, time.Second)
		}
		if c == nil {
			return false
		}
		if ok(c) {
			at = time.Now()
			return true
		}
		// A failed request may leave a reply unread: start afresh.
		c.close()
		c = nil
		return false
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", n.name, err)
	}
	return at, nil
}

// running reports whether the process is alive.
func (n *node) running() bool { return n.proc != nil && !n.proc.Exited() }

// stop sends sig and waits for the process to exit; a process that
// ignores SIGTERM for a minute is killed.
func (n *node) stop(sig syscall.Signal) error {
	if !n.running() {
		return nil
	}
	if err := n.proc.Stop(sig, time.Minute); err != nil {
		return fmt.Errorf("%s: %w", n.name, err)
	}
	return nil
}

// Addr is the node's client address.
func (n *node) Addr() string { return n.addr }

// Pid is the node's current process id.
func (n *node) Pid() int { return n.proc.Pid() }

// Close kills the process if it runs. The data directory stays: its
// owner removes it.
func (n *node) Close() error { return n.stop(syscall.SIGKILL) }

// raftInfo returns the fields of the node's RAFT INFO.
func raftInfo(c *client) (map[string]string, error) {
	v, err := c.do(5*time.Second, "RAFT", "INFO")
	if err != nil {
		return nil, err
	}
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("RAFT INFO replied %v", v)
	}
	fields := map[string]string{}
	for _, l := range strings.Split(s, "\r\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			fields[k] = v
		}
	}
	return fields, nil
}

// nodeInfo asks n for its RAFT INFO on a fresh connection.
func nodeInfo(n *node) (map[string]string, error) {
	c, err := dial(n.addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.close()
	return raftInfo(c)
}

// A cluster is presenced nodes on this machine; nodes[0] bootstrapped it.
type cluster struct {
	root  string // holds every node's data directory
	nodes []*node
}

// startCluster starts size presenced nodes with the flags extra (a
// persistence mode; none for the default): the first bootstraps, the
// others join it; it returns once every node knows the leader and all
// members.
func startCluster(bin string, size int, extra ...string) (*cluster, error) {
	c, err := startNodes(size, "bench-cluster-", func(i int, root string, first *node) (*node, error) {
		join := ""
		if first != nil {
			join = first.addr
		}
		id := "n" + strconv.Itoa(i+1)
		return newPresencedNode(bin, id, filepath.Join(root, id), join, extra...)
	})
	if err != nil {
		return nil, err
	}
	if err := c.waitFormed(); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// startNodes starts size nodes as a cluster whose data directories are
// under a fresh directory named after pattern. newNode makes node i, with
// its directory under root; first is the first node, nil for the first.
func startNodes(size int, pattern string, newNode func(i int, root string, first *node) (*node, error)) (*cluster, error) {
	root, err := os.MkdirTemp("", pattern)
	if err != nil {
		return nil, err
	}
	c := &cluster{root: root}
	for i := range size {
		var first *node
		if i > 0 {
			first = c.nodes[0]
		}
		n, err := newNode(i, root, first)
		if err == nil {
			c.nodes = append(c.nodes, n)
			err = n.start()
		}
		if err != nil {
			c.close()
			return nil, err
		}
	}
	return c, nil
}

// waitFormed waits until every running node sees a leader and all members.
func (c *cluster) waitFormed() error {
	want := strconv.Itoa(len(c.nodes))
	for _, n := range c.nodes {
		_, err := n.poll(startTimeout, func(cl *client) bool {
			f, err := raftInfo(cl)
			return err == nil && f["leader_id"] != "" && f["members"] == want
		})
		if err != nil {
			return fmt.Errorf("cluster did not form: %w", err)
		}
	}
	return nil
}

// errNoLeader is returned when no node says it leads.
var errNoLeader = errors.New("bench: no node is the leader")

// leader returns the index of the running node whose RAFT INFO says it
// leads, waiting up to startTimeout for one.
func (c *cluster) leader() (int, error) {
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		for i, n := range c.nodes {
			if !n.running() {
				continue
			}
			if f, err := nodeInfo(n); err == nil && f["state"] == "leader" {
				return i, nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0, errNoLeader
}

// waitCaughtUp waits until node i has applied everything the leader had
// committed when the wait began.
func (c *cluster) waitCaughtUp(i int) error {
	l, err := c.leader()
	if err != nil {
		return err
	}
	f, err := nodeInfo(c.nodes[l])
	if err != nil {
		return err
	}
	commit, err := strconv.ParseUint(f["commit_index"], 10, 64)
	if err != nil {
		return fmt.Errorf("leader's commit_index %q: %w", f["commit_index"], err)
	}
	_, err = c.nodes[i].poll(2*time.Minute, func(cl *client) bool {
		f, err := raftInfo(cl)
		if err != nil {
			return false
		}
		applied, err := strconv.ParseUint(f["applied_index"], 10, 64)
		return err == nil && applied >= commit
	})
	return err
}

// addrs returns the client addresses of the nodes.
func (c *cluster) addrs() []string {
	a := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		a[i] = n.addr
	}
	return a
}

// pids returns the process ids of the nodes.
func (c *cluster) pids() []int {
	p := make([]int, len(c.nodes))
	for i, n := range c.nodes {
		p[i] = n.Pid()
	}
	return p
}

// close kills every node and removes the data directories.
func (c *cluster) close() {
	for _, n := range c.nodes {
		n.Close()
	}
	os.RemoveAll(c.root)
}
