package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// groupPubSub is PUBLISH heard by subscribers on other nodes.
const groupPubSub = "pubsub"

// pubsubChannel is the channel the pubsub group publishes on.
const pubsubChannel = "online:events"

// drainTimeout bounds the wait, after a run, for its last messages to
// reach every subscriber.
const drainTimeout = 30 * time.Second

// pubsub measures PUBLISH on one node heard by a subscriber on each other
// node: presenced's leader relays its clients' messages to the other
// members, as a redis-server master's replicas hear its PUBLISH through
// replication. After each run every subscriber must have heard every
// message the run published, once.
func (s *suite) pubsub() error {
	c, err := startCluster(s.cfg.Presenced, s.cfg.Nodes, noPersistence.presenced...)
	if err != nil {
		return err
	}
	defer c.close()
	l, err := c.leader()
	if err != nil {
		return err
	}
	r, err := startReplicated(s.cfg.Nodes)
	if err != nil {
		return err
	}
	defer r.close()
	var followers []string
	for i, n := range c.nodes {
		if i != l {
			followers = append(followers, n.addr)
		}
	}
	publish := newTemplate([]string{"PUBLISH", pubsubChannel}, 1)
	var drains [2]drainStats
	g := Group{Title: "Pub/sub across nodes", Throughput: true}
	for _, pipeline := range []int{64, 1} {
		w := workload{
			name:     fmt.Sprintf("PUBLISH on the leader, pipeline %d, a subscriber on each of the %d other nodes", pipeline, s.cfg.Nodes-1),
			reqs:     both(publish),
			pipeline: pipeline,
			random:   true,
			beside:   [2]func(target) (func() error, error){subscribers(followers, &drains[0]), subscribers(r.addrs()[1:], &drains[1])},
		}
		row, err := s.throughput([2]target{{addrs: []string{c.nodes[l].addr}, pids: c.pids()}, {addrs: r.addrs()[:1], pids: r.pids()}}, w)
		if err != nil {
			return err
		}
		g.Rows = append(g.Rows, row)
	}
	g.Note = fmt.Sprintf("`PUBLISH %s <random id>`, %d connections on one node: presenced's leader of %d nodes (`--appendonly no`; a message does not enter the log), which relays each message to the other members, against a redis-server master (`--appendonly no --save ''`) with %d replicas, which hear it through replication. One subscriber on each other node reads the messages as a client library does. After each run, every subscriber had heard every message once, within %s (presenced) and %s (redis-server) of the run's last reply at most (an upper bound: the time the count took to be seen settled). presenced's CPU is that of all nodes, redis-server's of all its processes; a row has no target.",
		pubsubChannel, s.cfg.Conns, s.cfg.Nodes, s.cfg.Nodes-1, formatDuration(drains[0].max()), formatDuration(drains[1].max()))
	s.rep.Groups = append(s.rep.Groups, g)
	return nil
}

// drainStats keeps the longest time a run's last messages took to reach
// every subscriber after the run (the runs' stops take turns).
type drainStats struct{ longest time.Duration }

func (d *drainStats) add(took time.Duration) { d.longest = max(d.longest, took) }

func (d *drainStats) max() time.Duration { return d.longest }

// subscribers returns a job to run beside a target's runs: a connection
// to each of addrs subscribed to pubsubChannel, counting the messages it
// reads. Its stop reads from INFO commandstats how many PUBLISH the
// target's node ran since the job started, and waits until every
// subscriber heard that many messages (adding the wait to drains); it
// fails if they do not agree within drainTimeout.
func subscribers(addrs []string, drains *drainStats) func(t target) (func() error, error) {
	return func(t target) (func() error, error) {
		const timeout = 10 * time.Second
		before, err := publishCalls(t.addrs[0])
		if err != nil {
			return nil, err
		}
		var ls []*listener
		closeAll := func() {
			for _, l := range ls {
				l.stop()
			}
		}
		for _, addr := range addrs {
			c, err := dial(addr, timeout)
			var l *listener
			if err == nil {
				if _, err = c.do(timeout, "SUBSCRIBE", pubsubChannel); err == nil {
					l, err = listen(c)
				}
				if err != nil {
					c.close()
				}
			}
			if err != nil {
				closeAll()
				return nil, err
			}
			ls = append(ls, l)
		}
		return func() error {
			defer closeAll()
			// The server may still run commands the run sent and did
			// not wait for: the count settles when two readings, each
			// heard by every subscriber, agree.
			start := time.Now()
			settled := int64(-1)
			for {
				after, err := publishCalls(t.addrs[0])
				if err != nil {
					return err
				}
				want, heard := after-before, 0
				for _, l := range ls {
					if got := l.messages.Load(); got == want {
						heard++
					} else if time.Since(start) > drainTimeout {
						return fmt.Errorf("%v after the run, a subscriber heard %d messages, %d were published", drainTimeout, got, want)
					}
				}
				if heard == len(ls) && want == settled {
					drains.add(time.Since(start))
					return nil
				}
				if heard == len(ls) {
					settled = want
				}
				time.Sleep(time.Millisecond)
			}
		}, nil
	}
}

// publishCalls returns the PUBLISH commands the server at addr ran, from
// INFO commandstats.
func publishCalls(addr string) (int64, error) {
	c, err := dial(addr, 10*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.close()
	v, err := c.do(10*time.Second, "INFO", "commandstats")
	if err != nil {
		return 0, err
	}
	info, _ := v.(string)
	stats := infoField(info, "cmdstat_publish")
	if stats == "unknown" {
		return 0, nil // none yet
	}
	calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
	n, err := strconv.ParseInt(calls, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("INFO commandstats: cmdstat_publish:%s", stats)
	}
	return n, nil
}

// startReplicated starts a redis-server master and size-1 replicas of
// it, all without persistence, as a cluster whose nodes[0] is the master,
// and returns once every replica's link to the master is up.
func startReplicated(size int) (*cluster, error) {
	r, err := startNodes(size, "bench-replicated-", func(i int, root string, master *node) (*node, error) {
		extra := noPersistence.redis
		if master != nil {
			host, port, _ := strings.Cut(master.addr, ":")
			extra = append(slices.Clone(extra), "--replicaof", host, port)
		}
		dir := filepath.Join(root, strconv.Itoa(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		return newRedisNode(dir, extra...)
	})
	if err != nil {
		return nil, err
	}
	for _, n := range r.nodes[1:] {
		_, err := n.poll(startTimeout, func(c *client) bool {
			v, err := c.do(5*time.Second, "INFO", "replication")
			info, _ := v.(string)
			return err == nil && infoField(info, "master_link_status") == "up"
		})
		if err != nil {
			r.close()
			return nil, fmt.Errorf("replica did not reach its master: %w", err)
		}
	}
	return r, nil
}
