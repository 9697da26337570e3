//go:build unix

package faulttest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/presenced/presenced/internal/proctest"
	"github.com/redis/go-redis/v9"
)

// node is one presenced process of the cluster, restarted with the same
// command line (and so the same data directory) after each kill.
type node struct {
	id         string
	clientAddr string
	raftAddr   string // where the process listens for raft
	proxy      *proxy // other nodes reach raftAddr through it
	args       []string
	logPath    string
	admin      *redis.Client // for PING and RAFT INFO

	mu struct {
		sync.Mutex
		cmd     *proctest.Process // nil before start and after kill
		stopped bool              // SIGSTOPped
	}
}

// cluster is three nodes and their proxies.
type cluster struct {
	t     testing.TB
	nodes []*node
}

// startCluster starts three nodes in dir: n1 bootstraps, n2 and n3 join
// it. It returns once all three are members and a leader is known.
//
// PRESENCED_CHAOS_APPENDONLY=no runs them with --appendonly no: their logs
// in memory, a node restarts empty, with --join (n1 through n2), and
// catches up from the others.
func startCluster(t testing.TB, dir string) *cluster {
	c := &cluster{t: t}
	persistence := []string{"--appendonly", "yes", "--appendfsync", "always"}
	inMemory := os.Getenv("PRESENCED_CHAOS_APPENDONLY") == "no"
	if inMemory {
		persistence = []string{"--appendonly", "no"}
	}
	ports := freePorts(t, 9)
	for i := range 3 {
		id := fmt.Sprintf("n%d", i+1)
		n := &node{
			id:         id,
			clientAddr: fmt.Sprintf("127.0.0.1:%d", ports[3*i]),
			raftAddr:   fmt.Sprintf("127.0.0.1:%d", ports[3*i+1]),
			logPath:    filepath.Join(dir, id+".log"),
		}
		proxyAddr := fmt.Sprintf("127.0.0.1:%d", ports[3*i+2])
		p, err := startProxy(proxyAddr, n.raftAddr)
		if err != nil {
			t.Fatalf("proxy for %s: %v", id, err)
		}
		n.proxy = p
		n.args = []string{
			"--bind", "127.0.0.1", "--port", strconv.Itoa(ports[3*i]),
			"--dir", filepath.Join(dir, id), "--node-id", id,
			"--raft-addr", n.raftAddr, "--raft-advertise", proxyAddr,
		}
		n.args = append(n.args, persistence...)
		n.args = append(n.args,
			// Elections and leadership changes, to read a failure by.
			"--raft-log-level", "info",
		)
		if i > 0 {
			n.args = append(n.args, "--join", c.nodes[0].clientAddr)
		}
		n.admin = redis.NewClient(&redis.Options{
			Addr: n.clientAddr, MaxRetries: -1, Protocol: 2, DisableIdentity: true,
			DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, PoolSize: 2,
		})
		c.nodes = append(c.nodes, n)
	}
	t.Cleanup(c.close)
	for i, n := range c.nodes {
		if err := n.start(); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			c.waitFor(30*time.Second, "n1 to lead", func(ctx context.Context) bool {
				info, err := n.raftInfo(ctx)
				return err == nil && info["state"] == "leader"
			})
		} else if err := n.waitReady(30 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	c.waitFor(30*time.Second, "three members and a leader", func(ctx context.Context) bool {
		for _, n := range c.nodes {
			info, err := n.raftInfo(ctx)
			if err != nil || info["members"] != "3" || info["leader_id"] == "" {
				return false
			}
		}
		return true
	})
	if inMemory {
		c.nodes[0].args = append(c.nodes[0].args, "--join", c.nodes[1].clientAddr)
	}
	return c
}

// waitFor polls cond until it holds, failing the test after timeout.
func (c *cluster) waitFor(timeout time.Duration, what string, cond func(context.Context) bool) {
	c.t.Helper()
	if err := poll(timeout, cond); err != nil {
		c.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// poll calls cond every few milliseconds until it holds or timeout
// passes.
func poll(timeout time.Duration, cond func(context.Context) bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if cond(ctx) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not done after %v", timeout)
		case <-tick.C:
		}
	}
}

// close kills every node and stops the proxies; on failure it prints the
// tail of each node's log and keeps the logs beside the check's
// artifacts.
func (c *cluster) close() {
	for _, n := range c.nodes {
		n.kill()
		n.admin.Close()
		n.proxy.close()
	}
	if !c.t.Failed() {
		return
	}
	dir := outDir(c.t)
	for _, n := range c.nodes {
		kept := filepath.Join(dir, n.id+".log")
		if b, err := os.ReadFile(n.logPath); err != nil || os.WriteFile(kept, b, 0o644) != nil {
			kept = "not kept"
		}
		c.t.Logf("last lines of %s's log (%s):\n%s", n.id, kept, tail(n.logPath, 40))
	}
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// start runs the node's process, its output appended to its log.
func (n *node) start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mu.cmd != nil {
		return fmt.Errorf("%s is already running", n.id)
	}
	f, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close() // the process has a descriptor of its own
	fmt.Fprintf(f, "=== test: starting %s at %s\n", n.id, time.Now().Format(time.StampMilli))
	cmd := exec.Command(binary, n.args...)
	cmd.Stdout, cmd.Stderr = f, f
	p, err := proctest.Start(cmd)
	if err != nil {
		return fmt.Errorf("starting %s: %w", n.id, err)
	}
	n.mu.cmd, n.mu.stopped = p, false
	return nil
}

// waitReady waits until the node answers PING.
func (n *node) waitReady(timeout time.Duration) error {
	n.mu.Lock()
	p := n.mu.cmd
	n.mu.Unlock()
	if p == nil {
		return fmt.Errorf("%s is not running", n.id)
	}
	if err := p.WaitPING(n.clientAddr, timeout); err != nil {
		return fmt.Errorf("%s did not answer PING: %w", n.id, err)
	}
	return nil
}

// running reports whether the process runs and is not stopped.
func (n *node) running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.cmd != nil && !n.mu.stopped
}

// kill SIGKILLs the process, if it runs, and waits for it to exit. Its
// proxy refuses connections until restart.
func (n *node) kill() {
	n.proxy.setDown(true)
	n.mu.Lock()
	p := n.mu.cmd
	n.mu.cmd, n.mu.stopped = nil, false
	n.mu.Unlock()
	if p == nil {
		return
	}
	p.Stop(syscall.SIGKILL, time.Minute)
}

// stop SIGSTOPs the process.
func (n *node) stop() error { return n.signal(syscall.SIGSTOP, true) }

// resume SIGCONTs the process.
func (n *node) resume() error { return n.signal(syscall.SIGCONT, false) }

func (n *node) signal(sig syscall.Signal, stopped bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mu.cmd == nil {
		return fmt.Errorf("%s is not running", n.id)
	}
	if n.mu.cmd.Exited() {
		return fmt.Errorf("%s exited unexpectedly", n.id)
	}
	n.mu.stopped = stopped
	return n.mu.cmd.Signal(sig)
}

// exitedUnexpectedly reports whether the process ended without being
// killed by the test.
func (n *node) exitedUnexpectedly() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.cmd != nil && n.mu.cmd.Exited()
}

// raftInfo returns the fields of the node's RAFT INFO reply.
func (n *node) raftInfo(ctx context.Context) (map[string]string, error) {
	return n.raftFields(ctx, "INFO")
}

// raftFields returns the fields of the node's RAFT <sub> reply.
func (n *node) raftFields(ctx context.Context, sub string) (map[string]string, error) {
	s, err := n.admin.Do(ctx, "RAFT", sub).Text()
	if err != nil {
		return nil, err
	}
	info := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			info[k] = v
		}
	}
	return info, nil
}

// leader returns the node that leads, asking the running ones; if two
// claim to (one of them deposed but not yet aware), the one of the later
// term.
func (c *cluster) leader(ctx context.Context) *node {
	var best *node
	var bestTerm uint64
	for _, n := range c.nodes {
		if !n.running() {
			continue
		}
		info, err := n.raftInfo(ctx)
		if err != nil || info["state"] != "leader" {
			continue
		}
		term, _ := strconv.ParseUint(info["term"], 10, 64)
		if best == nil || term > bestTerm {
			best, bestTerm = n, term
		}
	}
	return best
}

// waitLeader polls for a leader for up to timeout.
func (c *cluster) waitLeader(timeout time.Duration) (*node, error) {
	var l *node
	err := poll(timeout, func(ctx context.Context) bool {
		l = c.leader(ctx)
		return l != nil
	})
	return l, err
}

// freePorts returns n distinct free TCP ports on 127.0.0.1, from below the
// kernel's ephemeral range (proctest.FreePort), so that a port a killed
// node frees is not handed out to an outgoing connection before the node
// restarts on it.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	for len(ports) < n {
		p, err := proctest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	return ports
}
