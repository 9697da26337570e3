package faulttest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPausedLeaderReadsNothingStale stops the leader (SIGSTOP) while
// clients write through it, until another node leads; writes a key
// through the new leader; sends a GET of the key to the old leader while
// it is still stopped; and resumes it. The GET must answer the new value
// or fail, never the value from before: the answers to the appends and
// heartbeats the old leader sent before its pause, which wait in its
// sockets meanwhile, must not confirm to the read a leadership that
// another node holds.
func TestPausedLeaderReadsNothingStale(t *testing.T) {
	c := startCluster(t, t.TempDir())
	ctx := context.Background()
	for round := range 8 {
		old, err := c.waitLeader(leaderTimeout)
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("paused:%d", round)
		rdb := newClient(old, 8)
		if err := rdb.Set(ctx, key, "before", 0).Err(); err != nil {
			t.Fatal(err)
		}
		// Writes in flight through the leader as it stops, so that
		// answers to its appends wait in its sockets during the pause.
		writing, loaded, wg := make(chan struct{}), make(chan struct{}), sync.WaitGroup{}
		var written atomic.Int64
		for w := range 8 {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-writing:
						return
					default:
					}
					if rdb.Set(ctx, fmt.Sprintf("load:%d:%d", w, i%100), i, 0).Err() == nil && written.Add(1) == 200 {
						close(loaded)
					}
				}
			})
		}
		select {
		case <-loaded:
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: writes through %s did not flow", round, old.id)
		}
		if err := old.stop(); err != nil {
			t.Fatal(err)
		}
		close(writing)
		var next *node
		c.waitFor(leaderTimeout, "another leader", func(ctx context.Context) bool {
			for _, n := range c.nodes {
				if info, err := n.raftInfo(ctx); n != old && err == nil && info["state"] == "leader" {
					next = n
					return true
				}
			}
			return false
		})
		if err := newClient(next, 1).Set(ctx, key, "after", 0).Err(); err != nil {
			t.Fatal(err)
		}
		conn, err := net.Dial("tcp", old.clientAddr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", len(key), key)
		if err := old.resume(); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		r := bufio.NewReader(conn)
		reply, err := r.ReadString('\n')
		if err == nil && strings.HasPrefix(reply, "$") {
			reply, err = r.ReadString('\n')
		}
		conn.Close()
		wg.Wait()
		rdb.Close()
		if strings.TrimSpace(reply) == "before" {
			t.Fatalf("round %d: the resumed former leader %s answered GET with the value from before %s led", round, old.id, next.id)
		}
		t.Logf("round %d: %s resumed, GET: %q, %v", round, old.id, strings.TrimSpace(reply), err)
	}
}
