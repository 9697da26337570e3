//go:build linux

// The tests run the presenced binary as a real process: they stop it with
// signals and restart it on its data dir. Linux only, for the parent death
// signal that stops the processes of a test binary that dies.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/presenced/presenced/internal/proctest"
	"github.com/redis/go-redis/v9"
)

// binary is the presenced program TestMain builds.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "presenced-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "presenced")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building presenced: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// startTimeout bounds a process's start: until it is ready, or has exited.
const startTimeout = 30 * time.Second

// node is how a test runs one presenced: the same data dir, node ID and
// raft address every time it starts.
type node struct {
	id, dir, raftAddr string
	extra             []string // more flags
}

// newNode returns a node with a fresh data dir and a free raft port.
func newNode(t *testing.T, id string, extra ...string) node {
	t.Helper()
	return node{id: id, dir: t.TempDir(), raftAddr: freeAddr(t), extra: extra}
}

// args is the node's command line, plus more flags.
func (n node) args(more ...string) []string {
	args := []string{"--port", "0", "--node-id", n.id, "--dir", n.dir, "--raft-addr", n.raftAddr}
	return append(append(args, n.extra...), more...)
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	port, err := proctest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(port)
}

// proc is a running presenced.
type proc struct {
	*proctest.Process
	t    *testing.T
	addr string // client address
}

// readyLine is what presenced logs once it accepts connections.
var readyLine = regexp.MustCompile(`ready to accept connections on (\S+)\n`)

// launch starts presenced with args and returns once it logged that it
// is ready, or exited: then addr is empty.
func launch(t *testing.T, args ...string) *proc {
	t.Helper()
	return launchCmd(t, exec.Command(binary, args...))
}

// launchCmd is launch of a command that runs presenced.
func launchCmd(t *testing.T, cmd *exec.Cmd) *proc {
	t.Helper()
	cmd.Dir = t.TempDir()
	child, err := proctest.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{Process: child, t: t}
	t.Cleanup(func() { p.kill(syscall.SIGKILL) })
	err = p.Poll(startTimeout, func() bool {
		m := readyLine.FindStringSubmatch(p.Output())
		if m != nil {
			p.addr = m[1]
		}
		return m != nil
	})
	if err != nil && !errors.Is(err, proctest.ErrExited) {
		t.Fatalf("presenced %q did not start: %v", cmd.Args, err)
	}
	return p
}

// start starts presenced and fails the test unless it becomes ready and
// leads its cluster.
func (n node) start(t *testing.T, more ...string) *proc {
	t.Helper()
	p := launch(t, n.args(more...)...)
	if p.addr == "" {
		t.Fatalf("presenced exited at start (%v); output:\n%s", p.Wait(), p.Output())
	}
	p.waitLeader()
	return p
}

// refuse starts presenced expecting it to exit with an error, and returns
// its output.
func refuse(t *testing.T, args ...string) string {
	t.Helper()
	p := launch(t, args...)
	if p.addr != "" {
		t.Fatalf("presenced started on %s; output:\n%s", p.addr, p.Output())
	}
	if p.Wait() == nil {
		t.Fatalf("presenced exited with status 0; output:\n%s", p.Output())
	}
	return p.Output()
}

// waitLeader waits until the node knows a leader, so that its first
// reads and writes do not wait for an election.
func (p *proc) waitLeader() {
	p.t.Helper()
	p.waitInfo("it knows a leader", func(info string) bool { return !strings.Contains(info, "leader_id:\r\n") })
}

// waitInfo waits until the node's RAFT INFO satisfies cond, which what
// describes.
func (p *proc) waitInfo(what string, cond func(info string) bool) {
	p.t.Helper()
	rdb := p.client(0)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for backoff := time.Millisecond; ; backoff = min(2*backoff, 50*time.Millisecond) {
		info, err := rdb.Do(ctx, "RAFT", "INFO").Text()
		if err == nil && cond(info) {
			return
		}
		select {
		case <-ctx.Done():
			p.t.Fatalf("waiting until %s: %v %q", what, err, info)
		case <-time.After(backoff):
		}
	}
}

// client returns a go-redis client of database db, closed with the test.
func (p *proc) client(db int) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: p.addr, DB: db, MaxRetries: -1})
	p.t.Cleanup(func() { rdb.Close() })
	return rdb
}

// kill sends sig and waits for the process to exit; one that does not
// within a minute is killed and fails the test.
func (p *proc) kill(sig syscall.Signal) {
	p.t.Helper()
	if err := p.Stop(sig, time.Minute); err != nil {
		p.t.Fatal(err)
	}
}

// stop sends SIGTERM and fails the test unless the process exits cleanly.
func (p *proc) stop() {
	p.t.Helper()
	p.kill(syscall.SIGTERM)
	if err := p.Wait(); err != nil {
		p.t.Fatalf("after SIGTERM: %v; output:\n%s", err, p.Output())
	}
}

// dataset is what a test wrote and had acknowledged, per database.
type dataset struct {
	strings map[int]map[string]string
	bits    map[int]map[string][]int64 // offsets set to 1
	ttls    map[int]map[string]int64   // milliseconds left when last looked at
}

func newDataset() *dataset {
	return &dataset{strings: map[int]map[string]string{}, bits: map[int]map[string][]int64{}, ttls: map[int]map[string]int64{}}
}

// dbs is the databases the tests write to.
var dbs = []int{0, 1, 7, 15}

// write writes a round of strings, bits and keys with TTLs in every
// database and records those acknowledged.
func (d *dataset) write(t *testing.T, p *proc, round int) {
	t.Helper()
	ctx := context.Background()
	for _, db := range dbs {
		rdb := p.client(db)
		for i := range 20 {
			k := fmt.Sprintf("s:%d:%d", round, i)
			v := fmt.Sprintf("value-%d-%d-%d", db, round, i)
			if err := rdb.Set(ctx, k, v, 0).Err(); err != nil {
				t.Fatalf("SET: %v", err)
			}
			put(d.strings, db, k, v)
			bk := fmt.Sprintf("online:%d", round%3)
			off := int64(db*100003 + round*1009 + i*7)
			if err := rdb.SetBit(ctx, bk, off, 1).Err(); err != nil {
				t.Fatalf("SETBIT: %v", err)
			}
			if d.bits[db] == nil {
				d.bits[db] = map[string][]int64{}
			}
			d.bits[db][bk] = append(d.bits[db][bk], off)
			tk := fmt.Sprintf("ttl:%d:%d", round, i)
			if err := rdb.Set(ctx, tk, v, time.Hour+time.Duration(i)*time.Minute).Err(); err != nil {
				t.Fatalf("SET EX: %v", err)
			}
			put(d.strings, db, tk, v)
		}
	}
	d.readTTLs(t, p)
}

func put[V any](m map[int]map[string]V, db int, k string, v V) {
	if m[db] == nil {
		m[db] = map[string]V{}
	}
	m[db][k] = v
}

// readTTLs records the TTLs of the keys that have one.
func (d *dataset) readTTLs(t *testing.T, p *proc) {
	t.Helper()
	ctx := context.Background()
	for _, db := range dbs {
		rdb := p.client(db)
		for k := range d.strings[db] {
			if !strings.HasPrefix(k, "ttl:") {
				continue
			}
			ttl, err := rdb.PTTL(ctx, k).Result()
			if err != nil || ttl <= 0 {
				t.Fatalf("PTTL %s: %v %v", k, ttl, err)
			}
			put(d.ttls, db, k, ttl.Milliseconds())
		}
	}
}

// check verifies that p holds exactly the dataset: every key, bit and
// TTL (counting down since it was last read), and DBSIZE per database.
func (d *dataset) check(t *testing.T, p *proc) {
	t.Helper()
	ctx := context.Background()
	for _, db := range dbs {
		rdb := p.client(db)
		want := len(d.strings[db]) + len(d.bits[db])
		if n, err := rdb.DBSize(ctx).Result(); err != nil || n != int64(want) {
			t.Errorf("db %d: DBSIZE %d (%v), want %d", db, n, err, want)
		}
		for k, v := range d.strings[db] {
			if got, err := rdb.Get(ctx, k).Result(); got != v || err != nil {
				t.Fatalf("db %d: GET %s = %q (%v), want %q", db, k, got, err, v)
			}
		}
		for k, offs := range d.bits[db] {
			if n, err := rdb.BitCount(ctx, k, nil).Result(); err != nil || n != int64(len(offs)) {
				t.Errorf("db %d: BITCOUNT %s = %d (%v), want %d", db, k, n, err, len(offs))
			}
			for _, off := range offs {
				if b, err := rdb.GetBit(ctx, k, off).Result(); b != 1 || err != nil {
					t.Fatalf("db %d: GETBIT %s %d = %d (%v)", db, k, off, b, err)
				}
			}
		}
		for k, before := range d.ttls[db] {
			ttl, err := rdb.PTTL(ctx, k).Result()
			if err != nil || ttl <= 0 || ttl.Milliseconds() >= before {
				t.Fatalf("db %d: PTTL %s = %v (%v), was %dms before the restart", db, k, ttl, err, before)
			}
		}
	}
	d.readTTLs(t, p)
}

// TestRestartKeepsData writes to a node, stops it with SIGTERM, restarts
// it, writes more, kills it with SIGKILL and restarts it: every
// acknowledged write survives both, in each fsync mode.
func TestRestartKeepsData(t *testing.T) {
	for _, fsync := range []string{"always", "no"} {
		t.Run("appendfsync="+fsync, func(t *testing.T) {
			t.Parallel()
			n := newNode(t, "n1", "--appendfsync", fsync)
			d := newDataset()
			p := n.start(t)
			d.write(t, p, 0)
			p.stop()

			p = n.start(t)
			d.check(t, p)
			d.write(t, p, 1)
			p.kill(syscall.SIGKILL)

			p = n.start(t)
			d.check(t, p)
		})
	}
}

// TestShutdownCommand stops a node with SHUTDOWN, as go-redis sends it:
// the client sees the connection close (go-redis reports success), the
// process exits cleanly, and a restart finds every acknowledged write.
func TestShutdownCommand(t *testing.T) {
	n := newNode(t, "n1")
	d := newDataset()
	p := n.start(t)
	d.write(t, p, 0)
	if err := p.client(0).Shutdown(context.Background()).Err(); err != nil {
		t.Fatalf("SHUTDOWN: %v", err)
	}
	if err := p.Poll(time.Minute, func() bool { return false }); !errors.Is(err, proctest.ErrExited) {
		t.Fatalf("presenced did not exit after SHUTDOWN: %v", err)
	}
	if err := p.Wait(); err != nil {
		t.Fatalf("after SHUTDOWN: %v; output:\n%s", err, p.Output())
	}
	d.check(t, n.start(t))
}

// TestCorruptSnapshotRefused damages the snapshot a node would restart
// from, the one it took as SIGTERM stopped it: the node must refuse to
// start, naming the snapshot, rather than start without the data.
func TestCorruptSnapshotRefused(t *testing.T) {
	n := newNode(t, "n1")
	p := n.start(t)
	d := newDataset()
	d.write(t, p, 0)
	p.stop()
	states, _ := filepath.Glob(filepath.Join(n.dir, "snapshots", "*", "state.bin"))
	if len(states) != 1 {
		t.Fatalf("snapshots: %q", states)
	}
	flipBytes(t, states[0], 20, 1)
	out := refuse(t, n.args()...)
	if id := filepath.Base(filepath.Dir(states[0])); !strings.Contains(out, id) {
		t.Errorf("the error does not name snapshot %s:\n%s", id, out)
	}
}

// TestCorruptLogEntryRefused damages one write's entry in the raft log: the
// node must not start without that write (the entry's checksum tells).
func TestCorruptLogEntryRefused(t *testing.T) {
	n := newNode(t, "n1")
	p := n.start(t)
	payload := "payload-" + randomHex()
	ctx := context.Background()
	if err := p.client(0).Set(ctx, "k", payload, 0).Err(); err != nil {
		t.Fatal(err)
	}
	p.stop()
	path := filepath.Join(n.dir, "raft.db")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for i := bytes.Index(raw, []byte(payload)); i >= 0; {
		flipBytes(t, path, int64(i+len(payload)-1), 1)
		found++
		next := bytes.Index(raw[i+1:], []byte(payload))
		if next < 0 {
			break
		}
		i += 1 + next
	}
	if found == 0 {
		t.Fatal("the write is not in raft.db")
	}
	p = launch(t, n.args()...)
	if p.addr == "" {
		if p.Wait() == nil || !strings.Contains(p.Output(), "raft.db") {
			t.Errorf("refused to start (%v) without naming raft.db:\n%s", p.Wait(), p.Output())
		}
		return
	}
	p.waitLeader()
	got, err := p.client(0).Get(ctx, "k").Result()
	t.Errorf("started on a log with a corrupted entry: GET k = %q (%v), the write was %q; output:\n%s", got, err, payload, p.Output())
}

// TestCorruptFilesRefused damages the pages of the raft log file, then
// of the history file: the node must exit with an error that names the
// file, not crash.
func TestCorruptFilesRefused(t *testing.T) {
	for _, file := range []string{"raft.db", "history.db"} {
		t.Run(file, func(t *testing.T) {
			n := newNode(t, "n1")
			p := n.start(t)
			newDataset().write(t, p, 0)
			p.stop()
			path := filepath.Join(n.dir, file)
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			// Everything after the two meta pages at the start of the file.
			const metaPages = 2 * 4096
			flipBytes(t, path, metaPages, int(info.Size()-metaPages))
			out := refuse(t, n.args()...)
			if strings.Contains(out, "panic:") || !strings.Contains(out, file) {
				t.Errorf("on a damaged %s, want an error naming it, got:\n%s", file, out)
			}
		})
	}
}

// randomHex returns 16 random hex digits.
func randomHex() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// flipBytes inverts some bits of n bytes of the file at path, from at.
func flipBytes(t *testing.T, path string, at int64, n int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] ^= 0x5a
	}
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}

// TestBadFlags checks that presenced refuses bad settings with a message
// that says what is wrong.
func TestBadFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want []string // in the output
	}{
		{[]string{"--appendonly", "maybe"}, []string{"--appendonly must be yes or no", `"maybe"`}},
		{[]string{"--appendfsync", "sometimes"}, []string{"ppendFsync must be", `"always"`, `"everysec"`, `"no"`, `"sometimes"`}},
		{[]string{"--port", "70000"}, []string{"port 70000"}},
		{[]string{"--raft-log-level", "loud"}, []string{"LogLevel must be trace, debug, info, warn or error", `"loud"`}},
		{[]string{"--unixsocketperm", "800"}, []string{`unixsocketperm "800" is not octal`}},
		{[]string{"--tls-cluster", "yes"}, []string{"--tls-cluster yes needs --tls-port"}},
		{[]string{"--tls-cluster", "maybe"}, []string{"--tls-cluster must be yes or no", `"maybe"`}},
		{[]string{"--cluster-enabled", "1"}, []string{"--cluster-enabled must be yes or no", `"1"`}},
		{[]string{"--cluster-announce-port", "70000"}, []string{"cluster-announce-port and cluster-announce-tls-port must be between 0 and 65535"}},
		{[]string{"--tls-port", "6399", "--tls-cert-file", "c.pem", "--tls-key-file", "c.key"}, []string{"tls-auth-clients yes needs tls-ca-cert-file"}},
		{[]string{"--tls-port", "6399", "--tls-cert-file", "nosuch.pem", "--tls-key-file", "c.key", "--tls-auth-clients", "no"}, []string{"tls-cert-file nosuch.pem"}},
		{[]string{"--nosuch"}, []string{"flag provided but not defined: -nosuch"}},
		{[]string{"--raft-addr", "0.0.0.0:0"}, []string{"0.0.0.0:0 listens on every interface, which other nodes cannot dial: set --raft-advertise"}},
	} {
		args := append([]string{"--dir", dir, "--raft-addr", "127.0.0.1:0", "--port", "0"}, tc.args...)
		out := refuse(t, args...)
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%q: output does not say %q:\n%s", tc.args, w, out)
			}
		}
	}
}

// TestDataDirOfAnotherCluster restarts a node whose data dir holds a
// cluster of its own with --join of another cluster, and with another
// node ID: both are refused.
func TestDataDirOfAnotherCluster(t *testing.T) {
	a := newNode(t, "a1")
	pa := a.start(t)
	b := newNode(t, "b1")
	pb := b.start(t)
	if err := pb.client(0).Set(context.Background(), "k", "b's", 0).Err(); err != nil {
		t.Fatal(err)
	}
	pb.stop()

	out := refuse(t, b.args("--join", pa.addr)...)
	if !strings.Contains(out, "belongs to another cluster") || !strings.Contains(out, "a node joins from an empty --dir") {
		t.Errorf("joining with another cluster's data dir:\n%s", out)
	}
	other := b
	other.id = "c1"
	out = refuse(t, other.args()...)
	if !strings.Contains(out, `holds node "b1"'s state`) {
		t.Errorf("starting node c1 on b1's data dir:\n%s", out)
	}
	// Neither attempt changed b's data or cluster a's membership.
	pb = b.start(t)
	if got, err := pb.client(0).Get(context.Background(), "k").Result(); got != "b's" || err != nil {
		t.Errorf("b's data after the refused starts: %q, %v", got, err)
	}
	info, err := pa.client(0).Do(context.Background(), "RAFT", "INFO").Text()
	if err != nil || !strings.Contains(info, "members:1\r\n") {
		t.Errorf("cluster a after the refused join: %q, %v", info, err)
	}
}

// TestRemovedNodeRestart restarts, with the same flags, a node that RAFT
// REMOVE took out of its cluster: with --join it is refused with a
// message that says so and how to add it back; started without --join, it
// serves again once RAFT ADD has added it back.
func TestRemovedNodeRestart(t *testing.T) {
	ctx := context.Background()
	a := newNode(t, "a1")
	pa := a.start(t)
	for _, id := range []string{"a2", "a3"} {
		newNode(t, id).start(t, "--join", pa.addr)
	}
	c := newNode(t, "a4")
	pc := c.start(t, "--join", pa.addr)
	if err := pa.client(0).Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := pa.client(0).Do(ctx, "RAFT", "REMOVE", "a4").Err(); err != nil {
		t.Fatal(err)
	}
	// The leader sends the removal on to the removed node as it stops
	// replicating to it; wait until it has it before stopping it.
	pc.waitInfo("it lists three members", func(info string) bool { return strings.Contains(info, "members:3\r\n") })
	pc.stop()

	out := refuse(t, c.args("--join", pa.addr)...)
	if want := "holds node a4, which RAFT REMOVE took out of the cluster of --join " + pa.addr + ": to add it back, start it without --join and send RAFT ADD a4 " + c.raftAddr + " to a member"; !strings.Contains(out, want) {
		t.Errorf("restarting a removed node: the output does not say %q:\n%s", want, out)
	}
	pc = launch(t, c.args()...)
	if pc.addr == "" {
		t.Fatalf("the removed node did not start without --join (%v):\n%s", pc.Wait(), pc.Output())
	}
	if err := pa.client(0).Do(ctx, "RAFT", "ADD", "a4", c.raftAddr).Err(); err != nil {
		t.Fatal(err)
	}
	pc.waitLeader()
	if got, err := pc.client(0).Get(ctx, "k").Result(); got != "v" || err != nil {
		t.Errorf("GET on the node added back: %q, %v", got, err)
	}
}

// TestMovedNode restarts nodes at another raft address: a lone node moves
// there, and the membership it lists follows; a member of three is
// refused, with or without --join, with a message that says where the
// others call it.
func TestMovedNode(t *testing.T) {
	ctx := context.Background()
	solo := newNode(t, "s1")
	p := solo.start(t)
	if err := p.client(0).Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	p.stop()
	solo.raftAddr = freeAddr(t)
	p = solo.start(t)
	p.waitInfo("it lists itself at its new address", func(info string) bool {
		return strings.Contains(info, "member0:id=s1,addr="+solo.raftAddr+",voter=1\r\n")
	})
	if got, err := p.client(0).Get(ctx, "k").Result(); got != "v" || err != nil {
		t.Errorf("GET after moving: %q, %v", got, err)
	}

	a := newNode(t, "a1")
	pa := a.start(t)
	newNode(t, "a2").start(t, "--join", pa.addr)
	c := newNode(t, "a3")
	c.start(t, "--join", pa.addr).stop()
	moved := c
	moved.raftAddr = freeAddr(t)
	for by, args := range map[string][]string{
		"its record of the membership":     moved.args(),
		"the members of --join " + pa.addr: moved.args("--join", pa.addr),
	} {
		out := refuse(t, args...)
		if want := "holds node a3, at raft address " + c.raftAddr + " by " + by + ", not " + moved.raftAddr; !strings.Contains(out, want) {
			t.Errorf("restarting a member at another raft address: the output does not say %q:\n%s", want, out)
		}
	}
	c.start(t)
}

// TestLogWriteFailure runs a node whose raft log cannot grow past a file
// size limit (ulimit -f), as a full disk stops it: once the log's file is
// full, writes and reads are refused with MISCONF naming the failure,
// rather than the CLUSTERDOWN of a node that finds no leader; restarted
// without the limit, the node has every write it acknowledged and none it
// refused.
func TestLogWriteFailure(t *testing.T) {
	ctx := context.Background()
	n := newNode(t, "f1")
	metrics := freeAddr(t)
	limited := exec.Command("sh", append([]string{"-c", `ulimit -f 8192 && exec "$0" "$@"`, binary}, n.args("--metrics-addr", metrics)...)...)
	p := launchCmd(t, limited)
	if p.addr == "" {
		t.Fatalf("presenced exited at start (%v); output:\n%s", p.Wait(), p.Output())
	}
	p.waitLeader()
	rdb := p.client(0)
	value := strings.Repeat("v", 100_000)
	var acked, refused []string
	for i := 0; len(refused) == 0; i++ {
		if i == 1000 {
			t.Fatal("1,000 SETs of 100 KB, and the log's file never reached its limit")
		}
		key := fmt.Sprintf("k%d", i)
		err := rdb.Set(ctx, key, value, 0).Err()
		switch {
		case err == nil:
			acked = append(acked, key)
		case strings.HasPrefix(err.Error(), "MISCONF Errors writing to the raft log: ") && strings.Contains(err.Error(), "raft.db"):
			refused = append(refused, key)
		case strings.HasPrefix(err.Error(), "UNCERTAIN The raft log could not be written while the write was being committed (") && strings.Contains(err.Error(), "raft.db"):
			// The leader's failed log write: it may or may not be applied.
		default:
			t.Fatalf("SET %s: %v", key, err)
		}
	}
	if err := rdb.Get(ctx, acked[0]).Err(); err == nil || !strings.HasPrefix(err.Error(), "MISCONF ") {
		t.Errorf("GET on the node that cannot write its log: %v, want MISCONF", err)
	}
	if info := rdb.Info(ctx, "persistence").Val(); !strings.Contains(info, "aof_last_write_status:err\r\n") {
		t.Errorf("INFO persistence on the node that cannot write its log:\n%s", info)
	}
	if page := scrapeMetrics(t, metrics); !strings.Contains(page, "\npresenced_raft_log_write_failing 1\n") {
		t.Errorf("/metrics of the node that cannot write its log lacks presenced_raft_log_write_failing 1")
	}
	p.kill(syscall.SIGKILL)

	p = n.start(t)
	rdb = p.client(0)
	if info := rdb.Info(ctx, "persistence").Val(); !strings.Contains(info, "aof_last_write_status:ok\r\n") {
		t.Errorf("INFO persistence after the restart without the limit:\n%s", info)
	}
	for _, key := range acked {
		if got, err := rdb.Get(ctx, key).Result(); err != nil || got != value {
			t.Fatalf("acknowledged SET %s after the restart: %d bytes, %v", key, len(got), err)
		}
	}
	for _, key := range refused {
		if n, err := rdb.Exists(ctx, key).Result(); err != nil || n != 0 {
			t.Errorf("refused SET %s after the restart: EXISTS %d, %v", key, n, err)
		}
	}
}

// TestRecover recovers the last node of three whose two others are gone
// for good: --recover makes it its cluster's only voter and exits, and
// started again it serves its data and takes writes. --recover is refused
// with --join, and on a data dir without a cluster.
func TestRecover(t *testing.T) {
	ctx := context.Background()
	a := newNode(t, "r1")
	pa := a.start(t)
	pb := newNode(t, "r2").start(t, "--join", pa.addr)
	c := newNode(t, "r3")
	pc := c.start(t, "--join", pa.addr)
	if err := pa.client(0).Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	pc.waitInfo("it applied the write", func(info string) bool {
		return strings.Contains(info, "applied_index:"+infoField(t, pa, "commit_index")+"\r\n")
	})
	pa.kill(syscall.SIGKILL)
	pb.kill(syscall.SIGKILL)
	pc.stop()

	p := launch(t, c.args("--recover")...)
	if err := p.Wait(); err != nil || !strings.Contains(p.Output(), "recovered: node r3 is its cluster's only voter") {
		t.Fatalf("--recover: %v\n%s", err, p.Output())
	}
	pc = c.start(t)
	rdb := pc.client(0)
	if got, err := rdb.Get(ctx, "k").Result(); got != "v" || err != nil {
		t.Errorf("GET after recovering: %q, %v", got, err)
	}
	if err := rdb.Set(ctx, "k", "w", 0).Err(); err != nil {
		t.Errorf("SET after recovering: %v", err)
	}
	if n := infoField(t, pc, "members"); n != "1" {
		t.Errorf("members after recovering: %s", n)
	}
	pc.stop()

	if out, want := refuse(t, c.args("--recover", "--join", pa.addr)...), "--recover makes a cluster of this node alone: it takes no --join"; !strings.Contains(out, want) {
		t.Errorf("--recover with --join: the output does not say %q:\n%s", want, out)
	}
	if out, want := refuse(t, newNode(t, "r4").args("--recover")...), "nothing to recover"; !strings.Contains(out, want) {
		t.Errorf("--recover on an empty data dir: the output does not say %q:\n%s", want, out)
	}
}

// infoField returns a field of p's RAFT INFO.
func infoField(t *testing.T, p *proc, name string) string {
	t.Helper()
	info, err := p.client(0).Do(context.Background(), "RAFT", "INFO").Text()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	t.Fatalf("RAFT INFO has no %s: %q", name, info)
	return ""
}

// TestSIGHUPIgnored checks that presenced, like redis-server, goes on
// serving after a SIGHUP (its terminal closed), and then stops cleanly on
// SIGTERM; a SIGHUP that stopped it would leave it dead of the hangup.
func TestSIGHUPIgnored(t *testing.T) {
	p := newNode(t, "h1").start(t)
	if err := p.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if err := p.client(0).Set(context.Background(), "k", "v", 0).Err(); err != nil {
		t.Errorf("SET after SIGHUP: %v", err)
	}
	p.stop()
}

// TestBrokenLogPipe checks that presenced, like redis-server, goes on
// serving once the program reading its log has gone: Go's default for a
// write to a broken pipe on standard error ends the process. DEBUG LOG
// writes a line there.
func TestBrokenLogPipe(t *testing.T) {
	ctx := context.Background()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, newNode(t, "b1").args()...)
	cmd.Dir = t.TempDir()
	cmd.Stdout, cmd.Stderr = w, w
	child, err := proctest.Start(cmd)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{Process: child, t: t}
	t.Cleanup(func() { p.kill(syscall.SIGKILL) })
	log := bufio.NewReader(r)
	for p.addr == "" {
		line, err := log.ReadString('\n')
		if err != nil {
			t.Fatalf("presenced's log ended before it was ready: %v", err)
		}
		if m := readyLine.FindStringSubmatch(line); m != nil {
			p.addr = m[1]
		}
	}
	r.Close()
	p.waitLeader()
	rdb := p.client(0)
	if err := rdb.Do(ctx, "DEBUG", "LOG", "into a broken pipe").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Errorf("SET after a log line into a broken pipe: %v", err)
	}
	p.stop()
}

// TestBitTTLFlag starts presenced with --bit-ttl rules: they are
// installed through the log, SETBIT arms them, and bad values are refused.
func TestBitTTLFlag(t *testing.T) {
	n := newNode(t, "n1")
	p := n.start(t, "--bit-ttl", "online:*=90s", "--bit-ttl", "sess:*=2m")
	rdb := p.client(0)
	ctx := context.Background()
	deadline := time.Now().Add(startTimeout)
	for {
		rules, err := rdb.ConfigGet(ctx, "bit-ttl").Result()
		if err == nil && rules["bit-ttl"] == "online:* 90 sess:* 120" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bit-ttl %q, %v", rules, err)
		}
		time.Sleep(10 * time.Millisecond) // polling for the installation
	}
	if err := rdb.SetBit(ctx, "online:0", 7, 1).Err(); err != nil {
		t.Fatal(err)
	}
	if ttl, err := rdb.Do(ctx, "BITTTL", "online:0", 7).Int64(); err != nil || ttl < 89 || ttl > 90 {
		t.Fatalf("BITTTL under the rule: %d, %v; want 90", ttl, err)
	}
	p.stop()
	for _, bad := range []string{"online:*", "=90s", "online:*=0", "online:*=1.5s", "online:*=soon"} {
		if out := refuse(t, n.args("--bit-ttl", bad)...); !strings.Contains(out, "--bit-ttl") {
			t.Errorf("--bit-ttl %q: output %q does not name the flag", bad, out)
		}
	}
}

// TestRestartKeepsDeadlines kills a node holding bits with deadlines:
// after the restart the bits whose deadline passed meanwhile are gone,
// and the others are still set, with their deadlines.
func TestRestartKeepsDeadlines(t *testing.T) {
	n := newNode(t, "n1")
	p := n.start(t)
	rdb := p.client(0)
	ctx := context.Background()
	if err := rdb.Do(ctx, "BITPSETEX", "online", 300, 1, 2, 3).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Do(ctx, "BITSETEX", "online", 3600, 4, 5).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.SetBit(ctx, "online", 6, 1).Err(); err != nil {
		t.Fatal(err)
	}
	p.kill(syscall.SIGKILL)
	began := time.Now()
	p = n.start(t)
	rdb = p.client(0)
	for {
		bits, err := rdb.Do(ctx, "GETBITS", "online", 1, 2, 3, 4, 5, 6).Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		if slices.Equal(bits, []int64{0, 0, 0, 1, 1, 1}) {
			break
		}
		if !slices.Equal(bits, []int64{1, 1, 1, 1, 1, 1}) || time.Since(began) > startTimeout {
			t.Fatalf("bits after the restart: %v", bits)
		}
		time.Sleep(20 * time.Millisecond) // waiting for the short deadlines
	}
	for off, want := range map[int64]int64{4: 3600, 5: 3600, 6: -1} {
		if ttl, err := rdb.Do(ctx, "BITTTL", "online", off).Int64(); err != nil || ttl > want || ttl < want-60 {
			t.Errorf("BITTTL of bit %d after the restart: %d, %v; want %d", off, ttl, err, want)
		}
	}
}

// scrapeMetrics returns the page of /metrics at addr.
func scrapeMetrics(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %v, %v", resp.Status, err)
	}
	return string(body)
}

// TestMetricsEndpoint scrapes /metrics of a node started with
// --metrics-addr and --metrics-keys: the node's figures, the key counts
// and Go's are there; a bad address or pattern is refused.
func TestMetricsEndpoint(t *testing.T) {
	n := newNode(t, "n1")
	addr := freeAddr(t)
	p := n.start(t, "--metrics-addr", addr, "--metrics-keys", "online:*,total")
	rdb := p.client(0)
	ctx := context.Background()
	for _, id := range []int64{3, 5, 8} {
		if err := rdb.SetBit(ctx, "online:bitmap:0", id, 1).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.SetBit(ctx, "offline", 1, 1).Err(); err != nil {
		t.Fatal(err)
	}
	page := scrapeMetrics(t, addr)
	for _, want := range []string{
		"\npresenced_bits{db=\"0\",key=\"online:bitmap:0\"} 3\n",
		"\npresenced_commands_total{command=\"setbit\"} 4\n",
		"\npresenced_raft_leader 1\n",
		"\npresenced_keys{db=\"0\"} 2\n",
		"\ngo_goroutines ",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, `key="offline"`) {
		t.Errorf("/metrics reports a key no pattern names:\n%s", page)
	}
	p.stop()

	if out := refuse(t, n.args("--metrics-addr", "127.0.0.1:nosuchport")...); !strings.Contains(out, "--metrics-addr") {
		t.Errorf("a bad --metrics-addr: output %q does not name the flag", out)
	}
	if out := refuse(t, n.args("--metrics-keys", "online:*,")...); !strings.Contains(out, "--metrics-keys") {
		t.Errorf("an empty --metrics-keys pattern: output %q does not name the flag", out)
	}
}

// TestAppendOnlyNoRestart restarts nodes with --appendonly no, whose logs
// are in memory: a lone node starts a new cluster, empty; a member of
// three is refused without --join (it would form a cluster of its own,
// and acknowledge writes the others never see), and with --join catches
// up from the others.
func TestAppendOnlyNoRestart(t *testing.T) {
	ctx := context.Background()
	solo := newNode(t, "s1", "--appendonly", "no")
	p := solo.start(t)
	if err := p.client(0).Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	p.kill(syscall.SIGKILL)
	p = solo.start(t)
	if n, err := p.client(0).Exists(ctx, "k").Result(); n != 0 || err != nil {
		t.Errorf("EXISTS k on a lone node restarted with --appendonly no: %d, %v; want 0", n, err)
	}

	a := newNode(t, "a1", "--appendonly", "no")
	pa := a.start(t)
	newNode(t, "a2", "--appendonly", "no").start(t, "--join", pa.addr)
	c := newNode(t, "a3", "--appendonly", "no")
	pc := c.start(t, "--join", pa.addr)
	if err := pa.client(0).Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	pc.kill(syscall.SIGKILL)
	out := refuse(t, c.args()...)
	if want := "node a3 was a member of a cluster, and with --appendonly no its log went with its last run: start it with --join"; !strings.Contains(out, want) {
		t.Errorf("restarting a member without --join: the output does not say %q:\n%s", want, out)
	}
	pc = c.start(t, "--join", pa.addr)
	if got, err := pc.client(0).Get(ctx, "k").Result(); got != "v" || err != nil {
		t.Errorf("GET on the member restarted with --join: %q, %v", got, err)
	}
	pc.waitInfo("it has caught up", func(info string) bool { return strings.Contains(info, "catching_up:0\r\n") })
	if _, err := os.Stat(filepath.Join(c.dir, "raft-vote.db")); err != nil {
		t.Errorf("the member keeps no term and vote: %v", err)
	}
}
