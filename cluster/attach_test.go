package cluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/presenced/presenced/store"
)

// memAttachment is an Attachment held in memory: a version and content.
// A copy carries both; restoring a copy replaces the content only if the
// copy's version is newer, as history does with its file.
type memAttachment struct {
	mu      sync.Mutex
	version uint64
	content string
	offered int   // copies handed to RestoreCopy
	err     error // what Err returns
	asked   progress
}

func (a *memAttachment) Err() error {
	a.asked.advance(a.asked.get() + 1)
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

func (a *memAttachment) setErr(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.err = err
}

func (a *memAttachment) set(version uint64, content string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.version, a.content = version, content
}

func (a *memAttachment) get() (version uint64, content string, offered int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.version, a.content, a.offered
}

func (a *memAttachment) OpenCopy() (io.ReadCloser, int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	b := binary.LittleEndian.AppendUint64(nil, a.version)
	b = append(b, a.content...)
	return io.NopCloser(bytes.NewReader(b)), int64(len(b)), nil
}

func (a *memAttachment) RestoreCopy(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if len(b) < 8 {
		return errors.New("attachment copy too short")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.offered++
	if v := binary.LittleEndian.Uint64(b); v > a.version {
		a.version, a.content = v, string(b[8:])
	}
	return nil
}

// withAttachments configures each node with its attachment in atts, by
// node id, and lets the log be compacted down to two entries.
func withAttachments(atts map[string]*memAttachment, dirs map[string]string) func(*Config) {
	return func(cfg *Config) {
		cfg.TrailingLogs = 2
		if a := atts[cfg.NodeID]; a != nil {
			cfg.Attachment = a
		}
		if d := dirs[cfg.NodeID]; d != "" {
			cfg.AppendOnly, cfg.Dir = true, d
		}
	}
}

// writeAndSnapshot writes n bits through the leader and snapshots it, so
// that a node that joins later must install the snapshot.
func writeAndSnapshot(t *testing.T, c *testCluster, n int) {
	t.Helper()
	l := c.leader()
	var out store.Replies
	for i := range n {
		if err := l.node.Apply([]store.Command{cmd(0, "SETBIT", "online", strconv.Itoa(i*7919), "1")}, &out); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.node.Snapshot(); err != nil {
		t.Fatal(err)
	}
}

// TestAttachmentShipsWithSnapshot checks that a node that joins after
// the log was compacted receives the leader's attachment as it was when
// the snapshot was sent (not when it was taken), that it stores the
// framed snapshot, and that on restart it keeps its own newer copy
// rather than the one the stored snapshot carries.
func TestAttachmentShipsWithSnapshot(t *testing.T) {
	atts := map[string]*memAttachment{"n1": {}, "n2": {}}
	dirs := map[string]string{"n2": t.TempDir()}
	configure := withAttachments(atts, dirs)
	c := newTestCluster(t, 1, configure)
	atts["n1"].set(5, "taken")
	writeAndSnapshot(t, c, 30)
	atts["n1"].set(6, "sent")

	n2 := c.join("n2", configure)
	if n2.node.Stats().Restores == 0 {
		t.Fatal("the late node caught up without a snapshot")
	}
	if v, content, _ := atts["n2"].get(); v != 6 || content != "sent" {
		t.Fatalf("late node's attachment: version %d %q, want 6 \"sent\"", v, content)
	}
	if got := read(n2.st, cmd(0, "BITCOUNT", "online")); got[0] != ":30\r\n" {
		t.Fatalf("late node's store: %q", got)
	}

	// Restart n2: its stored snapshot carries version 6; its own copy is
	// newer and must be kept.
	atts["n2"].set(9, "local")
	_, _, offered := atts["n2"].get()
	if err := n2.node.Close(); err != nil {
		t.Fatal(err)
	}
	n2.st = store.New()
	c.start(n2, false, configure)
	c.converge()
	v, content, offeredAfter := atts["n2"].get()
	if offeredAfter != offered+1 {
		t.Fatalf("restart offered %d copies, want 1", offeredAfter-offered)
	}
	if v != 9 || content != "local" {
		t.Fatalf("after restart: version %d %q, want the newer local 9 \"local\"", v, content)
	}
	if got := read(n2.st, cmd(0, "BITCOUNT", "online")); got[0] != ":30\r\n" {
		t.Fatalf("restarted node's store: %q", got)
	}
}

// TestUnframedSnapshotRestores checks that a snapshot taken without an
// attachment (by an older version, or by this node) restores on a node
// that has one, leaving the attachment alone.
func TestUnframedSnapshotRestores(t *testing.T) {
	cfg := durableConfig(t, "solo")
	cfg.TrailingLogs = 1
	st := store.New()
	n := openTest(t, cfg, FromStore(st))
	waitReady(t, n)
	for i := range 10 {
		if err := n.Apply([]store.Command{cmd(0, "SETBIT", "online", strconv.Itoa(i), "1")}, new(store.Replies)); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}

	att := &memAttachment{version: 3, content: "mine"}
	cfg.Attachment = att
	st2 := store.New()
	n2 := openTest(t, cfg, FromStore(st2))
	waitReady(t, n2)
	if got := read(st2, cmd(0, "BITCOUNT", "online")); got[0] != ":10\r\n" {
		t.Fatalf("after restart: %q", got)
	}
	// Its own snapshot is restored without a copy of its own attachment.
	if v, content, offered := att.get(); v != 3 || content != "mine" || offered != 0 {
		t.Fatalf("attachment after restart: %d %q offered %d copies, want it untouched", v, content, offered)
	}
	if err := n2.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestFramedSnapshotDamage checks restoreFramed against damaged and
// truncated framed snapshots, and that unframed ones pass through.
func TestFramedSnapshotDamage(t *testing.T) {
	state := []byte("state-bytes")
	att := &memAttachment{}
	copyOf := func(version uint64, content string) []byte {
		a := &memAttachment{version: version, content: content}
		rc, _, _ := a.OpenCopy()
		b, _ := io.ReadAll(rc)
		return b
	}
	frame := func(state, attachment []byte) []byte {
		b := encodeFrameHeader(int64(len(state)), int64(len(attachment)))
		return append(append(b, state...), attachment...)
	}
	var restored []byte
	restore := func(r io.Reader) error {
		var err error
		restored, err = io.ReadAll(r)
		return err
	}
	good := frame(state, copyOf(4, "shipped"))
	if err := restoreFramed(bytes.NewReader(good), att, restore); err != nil {
		t.Fatal(err)
	}
	if v, content, _ := att.get(); string(restored) != string(state) || v != 4 || content != "shipped" {
		t.Fatalf("restored %q, attachment %d %q", restored, v, content)
	}
	if err := restoreFramed(bytes.NewReader(state), att, restore); err != nil || string(restored) != string(state) {
		t.Fatalf("unframed: %q, %v", restored, err)
	}
	for name, b := range map[string][]byte{
		"checksum":  append(append([]byte{}, good[:10]...), append([]byte{good[10] ^ 1}, good[11:]...)...),
		"truncated": good[:len(good)-3],
		"header":    good[:frameHeaderLen-1],
	} {
		if err := restoreFramed(bytes.NewReader(b), att, restore); err == nil {
			t.Errorf("%s: restored a damaged snapshot", name)
		}
	}
}

// TestFramedSnapshotOnDisk checks that a follower's stored snapshot is
// the framed one it received, and that the start-up check of the newest
// snapshot reads through the frame.
func TestFramedSnapshotOnDisk(t *testing.T) {
	atts := map[string]*memAttachment{"n1": {version: 2, content: "h"}, "n2": {}}
	dirs := map[string]string{"n2": t.TempDir()}
	configure := withAttachments(atts, dirs)
	c := newTestCluster(t, 1, configure)
	writeAndSnapshot(t, c, 5)
	n2 := c.join("n2", configure)
	states, err := filepath.Glob(filepath.Join(dirs["n2"], "snapshots", "*", "state.bin"))
	if err != nil || len(states) == 0 {
		t.Fatalf("no stored snapshot: %v", err)
	}
	b, err := os.ReadFile(states[0])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte(frameMagic)) {
		t.Fatalf("stored snapshot starts %q, not framed", b[:min(len(b), 8)])
	}
	if err := n2.node.Close(); err != nil {
		t.Fatal(err)
	}
	damage(t, states[0], int64(frameHeaderLen+2))
	cfg := testConfig("n2")
	configure(&cfg)
	if n, err := Open(cfg, FromStore(store.New()), &Network{Raft: n2.trans}); err == nil {
		n.Close()
		t.Fatal("a node with a damaged framed snapshot started")
	} else if want := filepath.Join(dirs["n2"], "snapshots"); !strings.Contains(err.Error(), want) {
		t.Fatalf("error does not name the snapshot: %v", err)
	}
	n2.dead = true
}

// TestSnapshotWaitsForAttachment checks that a node whose log is on disk
// takes no snapshot while its attachment has stopped following the log,
// so that the log keeps what a restart replays into it, and takes one
// again once the attachment follows; a node whose log is in memory, which
// a restart loses anyway, takes it.
func TestSnapshotWaitsForAttachment(t *testing.T) {
	for _, onDisk := range []bool{true, false} {
		atts := map[string]*memAttachment{"n1": {}}
		dirs := map[string]string{}
		if onDisk {
			dirs["n1"] = t.TempDir()
		}
		c := newTestCluster(t, 1, withAttachments(atts, dirs))
		n := c.leader().node
		write := func() {
			if err := n.Apply([]store.Command{cmd(0, "INCR", "k")}, new(store.Replies)); err != nil {
				t.Fatal(err)
			}
		}
		write()
		stopped := errors.New("write history.db: no space left on device")
		atts["n1"].setErr(stopped)
		err := n.Snapshot()
		if onDisk && (err == nil || !strings.Contains(err.Error(), stopped.Error())) {
			t.Errorf("a snapshot while the attachment is stopped, log on disk: %v", err)
		}
		if !onDisk && err != nil {
			t.Errorf("a snapshot while the attachment is stopped, log in memory: %v", err)
		}
		if failed := n.SaveStats().Failed; failed != onDisk {
			t.Errorf("the last save failed: %v, with the log on disk %v", failed, onDisk)
		}
		atts["n1"].setErr(nil)
		write()
		if err := n.Snapshot(); err != nil {
			t.Errorf("a snapshot once the attachment follows again (log on disk %v): %v", onDisk, err)
		}
		if n.SaveStats().Failed {
			t.Errorf("the last save failed after a snapshot that succeeded (log on disk %v)", onDisk)
		}
	}
}

// TestFailedSnapshotRetriedLater checks that a node whose snapshot to
// compact the log failed (here, refused while its attachment is stopped)
// tries again only after snapshotRetryDelay, as Redis retries a failed
// background save, and not at each entry applied meanwhile: each try
// writes the whole state.
func TestFailedSnapshotRetriedLater(t *testing.T) {
	atts := map[string]*memAttachment{"n1": {}}
	dirs := map[string]string{"n1": t.TempDir()}
	c := newTestCluster(t, 1, func(cfg *Config) {
		withAttachments(atts, dirs)(cfg)
		cfg.SnapshotBytes = 1 // every entry makes a snapshot due
	})
	n, att := c.leader().node, atts["n1"]
	write := func() {
		if err := n.Apply([]store.Command{cmd(0, "INCR", "k")}, new(store.Replies)); err != nil {
			t.Fatal(err)
		}
	}
	att.setErr(errors.New("write history.db: no space left on device"))
	base := att.asked.get()
	write()
	ctx, cancel := context.WithTimeout(c.ctx, 3*snapshotRetryDelay)
	defer cancel()
	if err := att.asked.wait(ctx, base+1); err != nil {
		t.Fatalf("no snapshot tried after an entry made one due: %v", err)
	}
	for range 20 {
		write()
	}
	if tries := att.asked.get() - base; tries != 1 {
		t.Errorf("%d snapshots tried within 21 entries of a failure, want 1", tries)
	}
	att.setErr(nil)
	if err := att.asked.wait(ctx, base+2); err != nil {
		t.Fatalf("no snapshot tried again after %v: %v", snapshotRetryDelay, err)
	}
}

// TestNewLeaderShipsItsAttachment checks that a node that received a
// snapshot as a follower and then leads sends a node joining later its
// own attachment, not the older copy stored with the snapshot.
func TestNewLeaderShipsItsAttachment(t *testing.T) {
	atts := map[string]*memAttachment{"n1": {}, "n2": {}, "n3": {}}
	configure := withAttachments(atts, nil)
	c := newTestCluster(t, 1, configure)
	atts["n1"].set(5, "n1")
	writeAndSnapshot(t, c, 30)
	n2 := c.join("n2", configure)
	if v, _, _ := atts["n2"].get(); v != 5 {
		t.Fatalf("n2 joined with attachment version %d, want 5", v)
	}
	l := c.leader()
	if err := l.node.raft.LeadershipTransferToServer(raft.ServerID("n2"), raft.ServerAddress(n2.addr)).Error(); err != nil {
		t.Fatal(err)
	}
	if c.leader() != n2 {
		t.Fatal("n2 does not lead after the transfer")
	}
	atts["n2"].set(10, "n2")
	c.join("n3", configure)
	if v, content, _ := atts["n3"].get(); v != 10 || content != "n2" {
		t.Fatalf("n3's attachment: version %d %q, want the new leader's 10 \"n2\"", v, content)
	}
}

// heldSnapshots is a state machine whose snapshots, once taken, wait for
// release before they are written.
type heldSnapshots struct {
	StateMachine
	taken   chan struct{}
	release chan struct{}
}

func (m heldSnapshots) Snapshot() Snapshot {
	return heldWriter{m.StateMachine.Snapshot(), m}
}

type heldWriter struct {
	Snapshot
	m heldSnapshots
}

func (w heldWriter) WriteTo(dst io.Writer) (int64, error) {
	w.m.taken <- struct{}{}
	<-w.m.release
	return w.Snapshot.WriteTo(dst)
}

// TestPersistingSnapshots checks that Stats counts a snapshot from when it
// is taken until it is written, and no longer.
func TestPersistingSnapshots(t *testing.T) {
	m := heldSnapshots{FromStore(store.New()), make(chan struct{}), make(chan struct{})}
	n := openTest(t, durableConfig(t, "solo"), m)
	waitReady(t, n)
	if err := n.Apply([]store.Command{cmd(0, "SETBIT", "online", "7", "1")}, new(store.Replies)); err != nil {
		t.Fatal(err)
	}
	if p := n.Stats().Persisting; p != 0 {
		t.Fatalf("persisting %d before any snapshot", p)
	}
	done := make(chan error, 1)
	go func() { done <- n.Snapshot() }()
	<-m.taken
	if p := n.Stats().Persisting; p != 1 {
		t.Fatalf("persisting %d while a snapshot is written", p)
	}
	close(m.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if p := n.Stats().Persisting; p != 0 {
		t.Fatalf("persisting %d after the snapshot was written", p)
	}
}

// heldDigests is a state machine whose captured states, once asked for
// their digest, wait for release before they compute it.
type heldDigests struct {
	StateMachine
	digesting chan struct{}
	release   chan struct{}
}

func (m heldDigests) Snapshot() Snapshot { return heldDigest{m.StateMachine.Snapshot(), m} }

type heldDigest struct {
	Snapshot
	m heldDigests
}

func (d heldDigest) Digest() uint64 {
	d.m.digesting <- struct{}{}
	<-d.m.release
	return d.Snapshot.Digest()
}

// TestDigestLeavesAppliesAlone checks that a digest holds up the state
// machine only while it captures the state: a write commits and is
// applied while the capture is digested, and the digest is that of the
// state at the index it came with.
func TestDigestLeavesAppliesAlone(t *testing.T) {
	m := heldDigests{FromStore(store.New()), make(chan struct{}), make(chan struct{})}
	n := openTest(t, durableConfig(t, "solo"), m)
	waitReady(t, n)
	type result struct{ applied, digest uint64 }
	held := make(chan result, 1)
	go func() {
		applied, digest := n.Digest()
		held <- result{applied, digest}
	}()
	<-m.digesting
	wrote := make(chan error, 1)
	go func() { wrote <- n.Apply([]store.Command{cmd(0, "SETBIT", "online", "7", "1")}, new(store.Replies)) }()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		close(m.release)
		t.Fatal("a write waited for a digest being computed")
	}
	close(m.release)
	before := <-held
	go func() { <-m.digesting }()
	if a, d := n.Digest(); before.applied >= a || d == before.digest {
		t.Fatalf("digest %x at %d before the write, %x at %d after", before.digest, before.applied, d, a)
	}
}
