package main

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	replica "github.com/presenced/presenced/cluster"
)

// Row groups, in the order they run; -only selects some.
const (
	groupHeartbeats = "heartbeats" // SETBIT and GETBIT, no persistence
	groupData       = "data"       // BITCOUNT and memory of loaded data sets
	groupModes      = "modes"      // SETBIT in each persistence mode, one node
	groupCluster    = "cluster"    // SETBIT on a three-node cluster
	groupFailover   = "failover"   // time to write again after the leader dies
	groupRestart    = "restart"    // restart and snapshot of a node holding LargeIDs ids
	groupPresence   = "presence"   // per-bit expiry: BITSETEX, GETBITS, bit-TTL rules, mass expiry
)

// allGroups lists every row group in running order.
var allGroups = []string{groupHeartbeats, groupData, groupModes, groupCluster, groupFailover, groupRestart, groupPresence, groupHistory, groupHistoryWrites, groupHyperLogLog, groupPubSub, groupValues}

// groupAliases name sets of groups for -only.
var groupAliases = map[string][]string{
	"all":         allGroups,
	"replication": {groupModes, groupCluster, groupFailover, groupRestart},
	"history":     {groupHistory, groupHistoryWrites},
}

// Targets from the replication issue: presenced / redis-server, or a
// time presenced must stay within.
var (
	targetModes        = Target{AtLeast: true, Ratio: 1}
	targetCluster      = Target{AtLeast: true, Ratio: 0.5}
	targetFailoverTime = 2 * time.Second
)

// A mode is a persistence setting, as each server spells it, and as the
// cluster package's configuration does (for the log alone).
type mode struct {
	name       string
	presenced  []string
	redis      []string
	appendOnly bool
	fsync      string
}

// persistenceModes are the modes of the modes group.
var persistenceModes = []mode{
	{name: "appendonly no", presenced: []string{"--appendonly", "no"}, redis: []string{"--appendonly", "no"},
		fsync: replica.FsyncAlways},
	{name: "appendfsync always",
		presenced:  []string{"--appendonly", "yes", "--appendfsync", "always"},
		redis:      []string{"--appendonly", "yes", "--appendfsync", "always"},
		appendOnly: true, fsync: replica.FsyncAlways},
	{name: "appendfsync everysec",
		presenced:  []string{"--appendfsync", "everysec"},
		redis:      []string{"--appendonly", "yes", "--appendfsync", "everysec"},
		appendOnly: true, fsync: replica.FsyncEverySec},
}

// noPersistence is the mode in which neither server writes to disk.
var noPersistence = persistenceModes[0]

// alwaysFsync is presenced's default mode: fsync before acknowledging.
var alwaysFsync = persistenceModes[1]

// redisAlways is redis-server's mode that matches presenced's default.
var redisAlways = alwaysFsync.redis

// modes measures SETBIT on one node in each persistence mode against
// redis-server in the same mode, a fresh pair per mode.
func (s *suite) modes() error {
	g := Group{Title: "Persistence modes, one node", Throughput: true, Note: fmt.Sprintf(
		"`SETBIT %s <random id> 1`, %d connections; each row sets bits no earlier row set, so every SETBIT changes the bitmap and is persisted. presenced `--appendonly no` is compared with redis-server `--appendonly no --save ''`, presenced `--appendonly yes --appendfsync always` (its default) and `--appendfsync everysec` with redis-server `--appendonly yes` and the same appendfsync. Each server has a fresh data directory on the same file system.",
		heartbeatKey, s.cfg.Conns)}
	var costs, alone []string
	for _, m := range persistenceModes {
		rows, cost, err := s.modeRows(m)
		if err != nil {
			return err
		}
		g.Rows = append(g.Rows, rows...)
		costs = append(costs, m.name+": "+cost)
		rate, err := s.logAlone(m)
		if err != nil {
			return err
		}
		alone = append(alone, fmt.Sprintf("%s: %s commands a second, %.0f an entry", m.name, formatOps(rate.perSecond), rate.perEntry))
	}
	g.Note += logCostNote + strings.Join(costs, "; ") + "."
	g.Note += fmt.Sprintf(logAloneNote, s.cfg.Conns) + strings.Join(alone, "; ") + "."
	s.rep.Groups = append(s.rep.Groups, g)
	return nil
}

// logAloneNote starts the sentence with the log alone's rates that the
// modes group's note ends with.
const logAloneNote = " The log alone (the server's cluster package in this process, no RESP and no sockets: %d writers each apply one SETBIT of a random id at a time, as long as a row runs; median of the runs a row has): "

// logAlone measures the log alone in mode m, Reps times, and returns the
// run with the median rate.
func (s *suite) logAlone(m mode) (logAloneRate, error) {
	var runs []logAloneRate
	for rep := range s.cfg.Reps {
		r, err := measureLogAlone(logAloneSpec{appendOnly: m.appendOnly, fsync: m.fsync,
			writers: s.cfg.Conns, duration: s.cfg.Duration, space: s.cfg.Space, seed: s.cfg.Seed + uint64(rep)})
		if err != nil {
			return logAloneRate{}, fmt.Errorf("%s: %w", m.name, err)
		}
		runs = append(runs, r)
	}
	slices.SortFunc(runs, func(a, b logAloneRate) int { return cmp.Compare(a.perSecond, b.perSecond) })
	return runs[len(runs)/2], nil
}

// modeRows measures the SETBIT pipelines on a fresh pair in mode m, and
// describes what a log entry cost at pipeline 1.
func (s *suite) modeRows(m mode) ([]Row, string, error) {
	p, err := startPairIn(s.cfg, m)
	if err != nil {
		return nil, "", err
	}
	defer p.close()
	var rows []Row
	var spent logSpend
	for _, pipeline := range []int{64, 1} {
		w := setbitWorkload(fmt.Sprintf("SETBIT, pipeline %d, %s", pipeline, m.name), pipeline, targetModes)
		w.ids = uint64(pipeline) // new bits: each SETBIT is a write to persist
		if pipeline == 1 {
			w.beside[0] = spent.count([]string{p[0].Addr()})
		}
		row, err := s.throughput(p.targets(), w)
		if err != nil {
			return nil, "", err
		}
		rows = append(rows, row)
	}
	return rows, spent.perEntry(), nil
}

// logCostNote starts the sentence that the descriptions of what a log
// entry cost at pipeline 1 (logSpend.perEntry) end a group's note with.
const logCostNote = " What an entry of the log cost in the pipeline-1 rows (from RAFT INFO's counters over presenced's runs): "

// cluster measures SETBIT on a cluster of Nodes presenced nodes, a fresh
// one in each persistence mode, against one redis-server with appendfsync
// always.
func (s *suite) cluster() error {
	redis, err := startRedis(redisAlways...)
	if err != nil {
		return err
	}
	defer redis.Close()
	g := Group{Title: fmt.Sprintf("%d-node cluster", s.cfg.Nodes), Throughput: true, Note: fmt.Sprintf(
		"%d presenced nodes on this machine, each with its own data directory, in each persistence mode (`--appendonly no`; `--appendfsync always`, the default; `--appendfsync everysec`; a fresh cluster per mode), all against one redis-server `--appendonly yes --appendfsync always`. `SETBIT %s <random id> 1`, %d connections, either all on the leader or spread evenly over the nodes (followers forward writes to the leader); each row sets bits no earlier row set, so every SETBIT changes the bitmap and is replicated. presenced's CPU is that of all nodes.",
		s.cfg.Nodes, heartbeatKey, s.cfg.Conns)}
	var costs []string
	for _, m := range persistenceModes {
		rows, cost, err := s.clusterRows(m, redis, len(g.Rows))
		if err != nil {
			return err
		}
		g.Rows = append(g.Rows, rows...)
		costs = append(costs, cost...)
	}
	g.Note += logCostNote + strings.Join(costs, "; ") + "."
	s.rep.Groups = append(s.rep.Groups, g)
	return nil
}

// clusterRows measures the SETBIT pipelines on a fresh cluster in mode m,
// with the clients on its leader and then on every node, against redis;
// before is the number of rows measured on redis so far, so that each row
// sets bits of its own.
func (s *suite) clusterRows(m mode, redis server, before int) ([]Row, []string, error) {
	c, err := startCluster(s.cfg.Presenced, s.cfg.Nodes, m.presenced...)
	if err != nil {
		return nil, nil, err
	}
	defer c.close()
	var rows []Row
	var costs []string // of the pipeline-1 rows
	for _, onLeader := range []bool{true, false} {
		for _, pipeline := range []int{64, 1} {
			ids := uint64(before + len(rows) + 1) // new bits: each SETBIT is a write to replicate
			row, cost, err := s.clusterRow(c, m, redis, onLeader, pipeline, ids)
			for attempt := 1; leaderChanged(err) && attempt < rowAttempts; attempt++ {
				s.rep.Notes = append(s.rep.Notes, fmt.Sprintf("A row of the %d-node cluster in mode %s was measured again: its leader changed during it (%v).", s.cfg.Nodes, m.name, err))
				row, cost, err = s.clusterRow(c, m, redis, onLeader, pipeline, ids)
			}
			if err != nil {
				return nil, nil, err
			}
			rows = append(rows, row)
			if pipeline == 1 {
				costs = append(costs, cost)
			}
		}
	}
	return rows, costs, nil
}

// rowAttempts bounds how many times a cluster row is measured when its
// leader changes during it.
const rowAttempts = 3

// clusterRow measures SETBIT at pipeline depth pipeline on cluster c in
// mode m, with the clients on its leader or on every node, against redis,
// setting the bits of ids; cost is what an entry cost the nodes' logs.
func (s *suite) clusterRow(c *cluster, m mode, redis server, onLeader bool, pipeline int, ids uint64) (row Row, cost string, err error) {
	where, t := "clients on every node", target{addrs: c.addrs(), pids: c.pids()}
	if onLeader {
		// Found again for each row: a loaded node may have lost its
		// leadership in the row before.
		l, err := c.leader()
		if err != nil {
			return Row{}, "", err
		}
		where, t = "clients on the leader", target{addrs: []string{c.nodes[l].addr}, pids: c.pids()}
	}
	name := fmt.Sprintf("SETBIT, pipeline %d, %d nodes, %s, %s", pipeline, s.cfg.Nodes, where, m.name)
	load := setbitWorkload(name, pipeline, targetCluster)
	load.ids = ids
	var spent logSpend
	load.beside[0] = spent.count(c.addrs())
	row, err = s.throughput([2]target{t, targetOf(redis)}, load)
	return row, fmt.Sprintf("%s, %s: %s", m.name, where, spent.perEntry()), err
}

// leaderChanged reports whether err carries a write's reply from a cluster
// whose leader changed while the write was committed: the write may be
// retried, as a client would.
func leaderChanged(err error) bool {
	var reply replyError
	if !errors.As(err, &reply) {
		return false
	}
	code, _, _ := strings.Cut(string(reply), " ")
	return code == "UNCERTAIN" || code == "TRYAGAIN" || code == "CLUSTERDOWN"
}

// logCounters are RAFT INFO's counters of a node's log writes and of the
// entries committed through it.
type logCounters struct {
	writes, writeUsec, entries, entryUsec, commands uint64
}

// readLogCounters reads the counters of the nodes at addrs.
func readLogCounters(addrs []string) ([]logCounters, error) {
	out := make([]logCounters, len(addrs))
	for i, addr := range addrs {
		c, err := dial(addr, 5*time.Second)
		if err != nil {
			return nil, err
		}
		f, err := raftInfo(c)
		c.close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", addr, err)
		}
		for _, field := range []struct {
			key string
			to  *uint64
		}{{"log_writes", &out[i].writes}, {"log_write_usec", &out[i].writeUsec}, {"entries_committed", &out[i].entries},
			{"entry_commit_usec", &out[i].entryUsec}, {"commands_committed", &out[i].commands}} {
			if *field.to, err = strconv.ParseUint(f[field.key], 10, 64); err != nil {
				return nil, fmt.Errorf("%s: RAFT INFO %s:%q", addr, field.key, f[field.key])
			}
		}
	}
	return out, nil
}

// logSpend sums what a cluster's counters grew by over some runs, node by
// node, and the time the runs took.
type logSpend struct {
	nodes []logCounters
	took  time.Duration
}

// count returns a job to run beside each of presenced's runs (see
// workload.beside) that adds the growth of the counters of the nodes at
// addrs over the run to s.
func (s *logSpend) count(addrs []string) func(target) (func() error, error) {
	return func(target) (func() error, error) {
		from, err := readLogCounters(addrs)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		return func() error {
			took := time.Since(start)
			to, err := readLogCounters(addrs)
			if err != nil {
				return err
			}
			if s.nodes == nil {
				s.nodes = make([]logCounters, len(to))
			}
			for i := range to {
				n := &s.nodes[i]
				n.writes += to[i].writes - from[i].writes
				n.writeUsec += to[i].writeUsec - from[i].writeUsec
				n.entries += to[i].entries - from[i].entries
				n.entryUsec += to[i].entryUsec - from[i].entryUsec
				n.commands += to[i].commands - from[i].commands
			}
			s.took += took
			return nil
		}, nil
	}
}

// perEntry describes what a log entry cost on average: the commands it
// carried, how often one was committed, the time from proposing it to
// applying it, and within that time the write of the leader's log and of
// a follower's. The leader is the node that committed the most entries
// (leadership may have moved during the runs).
func (s *logSpend) perEntry() string {
	leader := -1
	for i, n := range s.nodes {
		if n.entries > 0 && (leader < 0 || n.entries > s.nodes[leader].entries) {
			leader = i
		}
	}
	if leader < 0 {
		return "no entry committed"
	}
	per := func(usec, n uint64) string {
		if n == 0 {
			return "–"
		}
		return formatDuration(time.Duration(usec) * time.Microsecond / time.Duration(n))
	}
	l := s.nodes[leader]
	text := fmt.Sprintf("%.0f commands an entry, one entry every %s; %s from proposal to apply, of which the leader's log write %s",
		float64(l.commands)/float64(l.entries), formatDuration(s.took/time.Duration(l.entries)),
		per(l.entryUsec, l.entries), per(l.writeUsec, l.writes))
	var writes, usec uint64
	moved := false
	for i, n := range s.nodes {
		if i != leader {
			writes, usec = writes+n.writes, usec+n.writeUsec
			moved = moved || n.entries > 0
		}
	}
	if writes > 0 {
		text += " and a follower's " + per(usec, writes)
	}
	if moved {
		text += " (leadership moved during the runs)"
	}
	return text
}

// failover stops the leader of a cluster under write load FailoverTrials
// times with SIGKILL, which leaves the others to elect a leader, and as
// many times with SIGTERM, on which it hands its leadership over, and
// measures how long writes fail each way.
func (s *suite) failover() error {
	c, err := startCluster(s.cfg.Presenced, s.cfg.Nodes)
	if err != nil {
		return err
	}
	defer c.close()
	var rows []TimeRow
	var errs int64
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		name, limit := signalName(sig), time.Duration(0)
		if sig == syscall.SIGKILL {
			limit = targetFailoverTime
		}
		first := TimeRow{Workload: name + " of the leader until the first write succeeds", Limit: limit}
		every := TimeRow{Workload: name + " of the leader until every connection to a surviving node has written", Limit: limit}
		for trial := range s.cfg.FailoverTrials {
			f, e, n, err := s.failoverTrial(c, sig, trial)
			if err != nil {
				return fmt.Errorf("failover trial %d (%s): %w", trial+1, name, err)
			}
			s.logf("failover %d (%s): first write after %v, every connection after %v, %d failed writes", trial+1, name, f, e, n)
			first.Presenced = append(first.Presenced, f)
			every.Presenced = append(every.Presenced, e)
			errs += n
		}
		rows = append(rows, first, every)
	}
	s.rep.Groups = append(s.rep.Groups, Group{Title: "Failover", Times: rows, Note: fmt.Sprintf(
		"%d presenced nodes (default mode). %d connections spread over the nodes write `SETBIT %s <random id> 1` one at a time, reconnecting after a broken connection and going on after an error reply; the leader (found with RAFT INFO) gets SIGKILL (the others elect a leader once their heartbeat timeout runs out) or SIGTERM (it hands its leadership to a follower as it stops), and the time runs from the signal to the first reply without error to a write sent after it. Between trials the stopped node restarts and catches up. %d writes failed (error replies or broken connections) in all trials together.",
		s.cfg.Nodes, s.cfg.FailoverConns, heartbeatKey, errs)})
	return nil
}

// failoverTrial stops the leader once under load with sig, returns how
// long until the first write succeeded and until every connection to a
// surviving node had written, and the number of failed writes, then
// restarts the stopped node and waits for it to catch up.
func (s *suite) failoverTrial(c *cluster, sig syscall.Signal, trial int) (first, every time.Duration, failed int64, err error) {
	l, err := c.leader()
	if err != nil {
		return 0, 0, 0, err
	}
	load := startFailoverLoad(c.addrs(), s.cfg.FailoverConns, s.cfg.Seed+uint64(trial), s.cfg.Space)
	defer load.stop()
	if err := load.waitAllWrote(startTimeout); err != nil {
		return 0, 0, 0, err
	}
	kill := time.Now()
	load.killed.Store(kill.UnixNano())
	if err := c.nodes[l].stop(sig); err != nil {
		return 0, 0, 0, err
	}
	firstAt, everyAt, err := load.waitRecovered(c.nodes[l].addr, time.Minute)
	load.stop()
	if err != nil {
		return 0, 0, 0, err
	}
	if err := c.nodes[l].start(); err != nil {
		return 0, 0, 0, err
	}
	if err := c.waitCaughtUp(l); err != nil {
		return 0, 0, 0, err
	}
	return firstAt.Sub(kill), everyAt.Sub(kill), load.failed(), nil
}

// failoverLoad is write load that outlives errors, as an application
// would: each connection sends SETBIT with pipeline 1 to one node,
// reconnects after a broken connection and goes on after an error reply.
type failoverLoad struct {
	killed atomic.Int64 // the kill's time in Unix nanoseconds; 0 before it
	quit   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
	conns  []*failoverConn
}

// failoverConn is one connection's state, read by the trial while it runs.
type failoverConn struct {
	addr   string
	wrote  atomic.Int64 // writes that succeeded
	errs   atomic.Int64 // error replies and connections broken by a write
	healed atomic.Int64 // Unix nanoseconds of the first success of a write sent after the kill
}

// failoverTimeout bounds one write; a follower waits up to its
// LeaderWait (2s by default) for a leader before it replies.
const failoverTimeout = 10 * time.Second

func startFailoverLoad(addrs []string, conns int, seed, space uint64) *failoverLoad {
	l := &failoverLoad{quit: make(chan struct{})}
	for i := range conns {
		fc := &failoverConn{addr: addrs[i%len(addrs)]}
		l.conns = append(l.conns, fc)
		ids := newRandomIDs(seed, uint64(i), space)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			fc.run(l, ids)
		}()
	}
	return l
}

// run writes until the load stops.
func (fc *failoverConn) run(l *failoverLoad, ids idSource) {
	var c *client
	defer func() {
		if c != nil {
			c.close()
		}
	}()
	for {
		select {
		case <-l.quit:
			return
		default:
		}
		if c == nil {
			var err error
			if c, err = dial(fc.addr, time.Second); err != nil {
				c = nil
				time.Sleep(10 * time.Millisecond)
				continue
			}
		}
		sent := time.Now()
		_, err := c.do(failoverTimeout, "SETBIT", heartbeatKey, strconv.FormatUint(ids.next(), 10), "1")
		if err == nil {
			fc.wrote.Add(1)
			if k := l.killed.Load(); k != 0 && sent.UnixNano() > k {
				fc.healed.CompareAndSwap(0, time.Now().UnixNano())
			}
			continue
		}
		fc.errs.Add(1)
		var re replyError
		if !errors.As(err, &re) {
			c.close()
			c = nil
		}
		time.Sleep(time.Millisecond)
	}
}

// waitAllWrote waits until every connection has written at least once.
func (l *failoverLoad) waitAllWrote(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, fc := range l.conns {
		for fc.wrote.Load() == 0 {
			if time.Now().After(deadline) {
				return fmt.Errorf("no write succeeded on %s within %v", fc.addr, timeout)
			}
			time.Sleep(time.Millisecond)
		}
	}
	return nil
}

// waitRecovered waits until every connection to a node other than dead
// has written since the kill, and returns when the first and the last
// of them did.
func (l *failoverLoad) waitRecovered(dead string, timeout time.Duration) (first, every time.Time, err error) {
	deadline := time.Now().Add(timeout)
	for {
		first, every = time.Time{}, time.Time{}
		pending := 0
		for _, fc := range l.conns {
			if fc.addr == dead {
				continue
			}
			h := fc.healed.Load()
			if h == 0 {
				pending++
				continue
			}
			t := time.Unix(0, h)
			if first.IsZero() || t.Before(first) {
				first = t
			}
			if t.After(every) {
				every = t
			}
		}
		if pending == 0 {
			return first, every, nil
		}
		if time.Now().After(deadline) {
			return first, every, fmt.Errorf("%d connections still cannot write %v after the kill", pending, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// failed returns the failed writes of every connection (error replies
// and broken connections; not refused reconnections to the dead node).
func (l *failoverLoad) failed() int64 {
	var n int64
	for _, fc := range l.conns {
		n += fc.errs.Load()
	}
	return n
}

// stop ends the load and waits for the connections to finish; it is safe
// to call twice.
func (l *failoverLoad) stop() {
	l.once.Do(func() { close(l.quit) })
	l.wg.Wait()
}

// restartNode is a server of the restart group with its flavour's
// commands: how it compacts its log.
type restartNode struct {
	*node
	label   string   // server column of the report
	compact []string // command that compacts the log and returns when done
}

// restart loads LargeIDs ids into one presenced node (default mode) and
// one redis-server with appendfsync always, then measures restarts after
// SIGTERM and SIGKILL and write latency while each compacts its log.
func (s *suite) restart() error {
	root, err := os.MkdirTemp("", "bench-restart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	ds := dataset{ids: s.cfg.LargeIDs, space: s.cfg.Space}
	// presenced loads without fsync, which only makes loading faster: the
	// files are the same, and it restarts in the default mode.
	pn, err := newPresencedNode(s.cfg.Presenced, "n1", filepath.Join(root, "presenced"), "", "--appendfsync", "no")
	if err != nil {
		return err
	}
	rn, err := newRedisNode(filepath.Join(root, "redis"), redisAlways...)
	if err != nil {
		return err
	}
	servers := []restartNode{
		{node: pn, label: serverNames[0], compact: []string{"RAFT", "SNAPSHOT"}},
		{node: rn, label: serverNames[1], compact: []string{"BGREWRITEAOF"}},
	}
	for _, n := range servers {
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			return err
		}
		defer n.Close()
		if err := n.start(); err != nil {
			return err
		}
	}
	if err := waitLeader(pn.addr); err != nil {
		return err
	}
	for i, n := range servers {
		if err := s.fillNode(n, ds, i == 1); err != nil {
			return err
		}
	}
	pn.extra = nil
	name := fmt.Sprintf("%s ids in %s", count(ds.ids), count(ds.space))
	restarts := Group{Title: "Restart of a node holding " + name, Note: fmt.Sprintf(
		"One presenced node that loaded %s distinct random ids in a %s-id space with SETBIT pipelines (%d connections, pipeline %d; with appendfsync no to load faster, which writes the same files), then runs in the default mode (appendonly yes, appendfsync always), stopped with SIGKILL (first: it restarts by replaying the log written since its latest snapshot) or SIGTERM (it takes a snapshot as it stops, and restarts from that) and started again on its data directory; the time runs from starting the process until `BITCOUNT %s` first returns %d. For reference, redis-server `--appendonly yes --appendfsync always` holding the same string (written with one SET, so its AOF is small) restarts from its AOF the same way.",
		count(ds.ids), count(ds.space), s.cfg.LoadConns, s.cfg.LoadPipeline, datasetKey, ds.ids)}
	// The rows are reported SIGTERM first, but SIGKILL's trials run first:
	// they restart by replaying the log the load left after the latest
	// snapshot, which a SIGTERM compacts by taking one as the node stops.
	rows := make([]TimeRow, 2)
	for k, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		row := &rows[len(rows)-1-k]
		row.Workload = fmt.Sprintf("restart after %s, until the data is served", signalName(sig))
		for i, n := range servers {
			for range s.cfg.RestartTrials {
				d, err := restartTime(n.node, sig, ds.ids)
				if err != nil {
					return err
				}
				s.logf("restart after %s, %s: %v", signalName(sig), n.label, d)
				if i == 0 {
					row.Presenced = append(row.Presenced, d)
				} else {
					row.Redis = append(row.Redis, d)
				}
			}
		}
	}
	restarts.Times = append(restarts.Times, rows...)
	pauses := Group{Title: "Write latency while the log is compacted, " + name, Note: fmt.Sprintf(
		"`SETBIT %s <random id> 1`, pipeline 1, %d connections for %v, while the server holding %s (above) compacts its log a third of the way in: presenced with `RAFT SNAPSHOT` (it replies when the snapshot is written), redis-server with `BGREWRITEAOF` (done when INFO persistence says no rewrite is in progress). Round trips that overlapped the compaction count as during; medians of %d runs.",
		heartbeatKey, s.cfg.Conns, s.cfg.Duration, name, s.cfg.Reps)}
	for _, n := range servers {
		row, err := s.pauseRow(n)
		if err != nil {
			return fmt.Errorf("%s on %s: %w", pauses.Title, n.label, err)
		}
		pauses.Pauses = append(pauses.Pauses, row)
	}
	s.rep.Groups = append(s.rep.Groups, restarts, pauses)
	return nil
}

// signalName is how the report names sig.
func signalName(sig syscall.Signal) string {
	if sig == syscall.SIGKILL {
		return "SIGKILL"
	}
	return "SIGTERM"
}

// fillNode loads ds into datasetKey of n: with SETBIT pipelines, or, with
// oneSet, as one SET of the string those would make.
func (s *suite) fillNode(n restartNode, ds dataset, oneSet bool) error {
	c, err := dial(n.addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer c.close()
	if !oneSet {
		return s.fill(n.label, n, c, ds)
	}
	perm := newPermutation(ds.space, s.cfg.Seed)
	b := make([]byte, (ds.space+7)/8)
	for i := range ds.ids {
		id := perm.at(i)
		b[id/8] |= 0x80 >> (id % 8)
	}
	if _, err := c.do(time.Minute, "SET", datasetKey, string(b)); err != nil {
		return err
	}
	got, err := c.doInt(time.Minute, "BITCOUNT", datasetKey)
	if err == nil && uint64(got) != ds.ids {
		err = fmt.Errorf("BITCOUNT after SET of %d ids is %d", ds.ids, got)
	}
	return err
}

// restartTime stops n with sig, starts it again and returns the time from
// the start until BITCOUNT of datasetKey returns want.
func restartTime(n *node, sig syscall.Signal, want uint64) (time.Duration, error) {
	if err := n.stop(sig); err != nil {
		return 0, err
	}
	start, err := n.launch()
	if err != nil {
		return 0, err
	}
	served, err := n.poll(5*time.Minute, func(c *client) bool {
		got, err := c.doInt(time.Minute, "BITCOUNT", datasetKey)
		return err == nil && uint64(got) == want
	})
	return served.Sub(start), err
}

// pauseRow measures write latency on n while it compacts its log, Reps
// times, and returns the medians.
func (s *suite) pauseRow(n restartNode) (PauseRow, error) {
	var runs []*loadResult
	var took []time.Duration
	for rep := range s.cfg.Reps {
		res, d, err := s.pauseRun(n, rep)
		if err != nil {
			return PauseRow{}, err
		}
		s.logf("compaction under load, %s: took %v, p99 during %v, outside %v", n.label, d, res.marked.quantile(0.99), res.rtt.quantile(0.99))
		runs = append(runs, res)
		took = append(took, d)
	}
	return newPauseRow("SETBIT, pipeline 1, during "+strings.Join(n.compact, " "), n.label, runs, took), nil
}

// newPauseRow is the medians over runs of the latency of round trips in
// and out of their marked window, whose lengths are took.
func newPauseRow(workload, server string, runs []*loadResult, took []time.Duration) PauseRow {
	row := PauseRow{Workload: workload, Server: server, Outside: summarize(runs), Took: medianDuration(took)}
	var during, maxes []time.Duration
	var p99s []time.Duration
	for _, r := range runs {
		during = append(during, r.marked.quantile(0.5))
		p99s = append(p99s, r.marked.quantile(0.99))
		maxes = append(maxes, r.marked.quantile(1))
	}
	row.During = Measurement{P50: medianDuration(during), P99: medianDuration(p99s)}
	row.Max = medianDuration(maxes)
	return row
}

// pauseRun runs the write load once on n and compacts its log a third of
// the way in; it returns the load's result and how long the compaction
// took.
func (s *suite) pauseRun(n restartNode, rep int) (*loadResult, time.Duration, error) {
	var marker atomic.Uint64
	seed := s.cfg.Seed + uint64(rep)
	started := make(chan struct{})
	spec := loadSpec{req: setbitTemplate, pipeline: 1, conns: s.cfg.Conns, duration: s.cfg.Duration, marker: &marker,
		started: started, ids: func(c int) idSource { return newRandomIDs(seed, uint64(c), s.cfg.Space) }}
	c, err := dial(n.addr, 10*time.Second)
	if err != nil {
		return nil, 0, err
	}
	defer c.close()
	type outcome struct {
		res *loadResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := drive(targetOf(n), spec)
		done <- outcome{res, err}
	}()
	// The window opens a third of the way into the run itself: opening
	// connections can take longer than that on a loaded machine.
	select {
	case <-started:
	case o := <-done:
		if o.err == nil {
			o.err = errors.New("the load ended before it started")
		}
		return nil, 0, o.err
	}
	time.Sleep(s.cfg.Duration / 3)
	marker.Add(1)
	start := time.Now()
	err = compact(c, n.compact)
	took := time.Since(start)
	marker.Add(1)
	o := <-done
	switch {
	case err != nil:
		return nil, 0, err
	case o.err != nil:
		return nil, 0, o.err
	case o.res.marked.n == 0:
		return nil, 0, errors.New("no round trip overlapped the compaction")
	}
	return o.res, took, nil
}

// compact sends cmd on c and, for BGREWRITEAOF, waits until INFO
// persistence reports that no rewrite is scheduled or in progress.
func compact(c *client, cmd []string) error {
	if _, err := c.do(5*time.Minute, cmd...); err != nil {
		return err
	}
	if cmd[0] != "BGREWRITEAOF" {
		return nil
	}
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		v, err := c.do(time.Minute, "INFO", "persistence")
		if err != nil {
			return err
		}
		info, _ := v.(string)
		if infoField(info, "aof_rewrite_in_progress") == "0" && infoField(info, "aof_rewrite_scheduled") == "0" {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return errors.New("the AOF rewrite did not finish")
}
