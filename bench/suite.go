package main

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config sets what the benchmark measures.
type Config struct {
	// Presenced is the path of the presenced binary.
	Presenced string
	// Duration is the length of one throughput run against one server.
	Duration time.Duration
	// Reps is how many runs each server gets per throughput workload; the
	// report shows medians.
	Reps int
	// Conns is the number of load connections of a throughput run.
	Conns int
	// Space is the id space of heartbeats and of the BITCOUNT data sets.
	Space uint64
	// WideSpace is the id space of the sparse memory data set (below 2^32,
	// Redis's largest bit offset + 1).
	WideSpace uint64
	// SmallIDs and LargeIDs are the ids set in Space for the small and
	// large data sets; WideIDs those set in WideSpace.
	SmallIDs, LargeIDs, WideIDs uint64
	// LoadConns and LoadPipeline shape the SETBIT traffic that loads a
	// data set.
	LoadConns, LoadPipeline int
	// SettleInterval is the pause between RSS readings while waiting for
	// RSS to stop changing; SettleTimeout bounds that wait.
	SettleInterval, SettleTimeout time.Duration
	// Seed makes the ids of a run reproducible.
	Seed uint64
	// Groups are the row groups to run (see allGroups).
	Groups []string
	// Nodes is the size of the presenced cluster of the cluster and
	// failover groups.
	Nodes int
	// FailoverConns is the number of connections writing (SETBIT,
	// pipeline 1) while the leader is killed; FailoverTrials is how many
	// times it is killed.
	FailoverConns, FailoverTrials int
	// RestartTrials is how many times a node holding LargeIDs ids is
	// restarted after each kind of stop.
	RestartTrials int
	// PresenceUsers is the number of users (distinct random ids in
	// Space) of the per-user expiry rows.
	PresenceUsers uint64
	// ExpiryIDs is the number of ids (distinct, random in Space) that
	// get a deadline and expire in the mass expiry rows; a multiple of
	// 100, the ids per arming command.
	ExpiryIDs uint64
	// ExpiryTTL is the least time from when arming them begins to their
	// first deadline, which must outlast arming them and measuring their
	// memory: the benchmark waits longer, twice the time loading the
	// same ids with SETBIT took, when that is more.
	// ExpirySpread is the time over which their deadlines are spread
	// (plus a pause of a third of it between the two halves).
	ExpiryTTL, ExpirySpread time.Duration
	// HistoryCounts is the stretch of per-second counts recorded for the
	// count rows of the history group; HistoryRange, at most that, is the
	// stretch a BITHISTORY query reads.
	HistoryCounts, HistoryRange time.Duration
	// HistoryIDs is the number of ids online (in Space) in each minute
	// snapshot of the history group, and in the live key of its write
	// latency rows; HistorySnapshots is the number of minute snapshots.
	HistoryIDs       uint64
	HistorySnapshots int
	// HistoryInterval is presenced's --history-interval in the write
	// latency rows: how often the live key is snapshot.
	HistoryInterval time.Duration
}

// DefaultConfig is the full benchmark of the issue.
func DefaultConfig() Config {
	return Config{
		Presenced: "bin/presenced",
		Duration:  5 * time.Second, Reps: 3, Conns: 50,
		Space: 100_000_000, WideSpace: 4_000_000_000,
		SmallIDs: 2_000_000, LargeIDs: 50_000_000, WideIDs: 5_000_000,
		LoadConns: 4, LoadPipeline: 1000,
		SettleInterval: 100 * time.Millisecond, SettleTimeout: 10 * time.Second,
		Seed:   1,
		Groups: allGroups,
		Nodes:  3, FailoverConns: 10, FailoverTrials: 5, RestartTrials: 3,
		PresenceUsers: 10_000_000, ExpiryIDs: 50_000_000, ExpiryTTL: 90 * time.Second, ExpirySpread: 30 * time.Second,
		HistoryCounts: 30 * 24 * time.Hour, HistoryRange: 7 * 24 * time.Hour,
		HistoryIDs: 10_000_000, HistorySnapshots: 1440, HistoryInterval: 5 * time.Second,
	}
}

// QuickConfig is a short run with small data sets, to check that the
// benchmark works; its figures mean little.
func QuickConfig() Config {
	c := DefaultConfig()
	c.Duration, c.Reps = 200*time.Millisecond, 1
	c.Space, c.WideSpace = 1_000_000, 40_000_000
	c.SmallIDs, c.LargeIDs, c.WideIDs = 20_000, 500_000, 50_000
	c.SettleInterval, c.SettleTimeout = 20*time.Millisecond, 2*time.Second
	c.FailoverTrials, c.RestartTrials = 2, 1
	c.PresenceUsers, c.ExpiryIDs, c.ExpiryTTL, c.ExpirySpread = 100_000, 500_000, 8*time.Second, 3*time.Second
	c.HistoryCounts, c.HistoryRange = 24*time.Hour, 12*time.Hour
	c.HistoryIDs, c.HistorySnapshots, c.HistoryInterval = 100_000, 10, time.Second
	return c
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Presenced == "":
		return errors.New("bench: no presenced binary given")
	case c.Duration <= 0 || c.Reps < 1 || c.Conns < 1:
		return errors.New("bench: duration, repetitions and connections must be positive")
	case c.Space == 0 || c.WideSpace == 0 || c.WideSpace > 1<<32:
		return errors.New("bench: id spaces must be between 1 and 2^32")
	case c.SmallIDs > c.Space || c.LargeIDs > c.Space || c.WideIDs > c.WideSpace:
		return errors.New("bench: a data set has more ids than its id space")
	case c.LoadConns < 1 || c.LoadPipeline < 1:
		return errors.New("bench: load connections and pipeline must be positive")
	case c.SettleInterval <= 0 || c.SettleTimeout < c.SettleInterval:
		return errors.New("bench: the settle timeout must be at least one interval")
	case c.Nodes < 3 || c.FailoverConns < c.Nodes || c.FailoverTrials < 1 || c.RestartTrials < 1:
		return errors.New("bench: a cluster needs at least 3 nodes, a connection to each during failover, and a trial of each kind")
	case c.PresenceUsers > c.Space || c.ExpiryIDs > c.Space || c.PresenceUsers%armBatch != 0 || c.ExpiryIDs%armBatch != 0:
		return fmt.Errorf("bench: presence users and expiry ids must fit the id space, each a multiple of %d", armBatch)
	case c.ExpiryTTL < time.Second || c.ExpirySpread < time.Second:
		return errors.New("bench: the expiry TTL and spread must be at least a second")
	case c.HistoryRange < historyStep || c.HistoryCounts < c.HistoryRange:
		return fmt.Errorf("bench: the BITHISTORY range must be at least one %v step and within the recorded counts", historyStep)
	case c.HistoryIDs == 0 || c.HistoryIDs > c.Space/2 || c.Space > 1<<32 || c.HistorySnapshots < 1:
		return errors.New("bench: history snapshots need ids online, at most half the id space (below 2^32), and at least one snapshot")
	case c.HistoryInterval < 100*time.Millisecond || c.HistoryInterval%(100*time.Millisecond) != 0:
		return errors.New("bench: the history interval must be a positive multiple of 100ms")
	case len(c.Groups) == 0:
		return errors.New("bench: no row group selected")
	}
	for _, g := range c.Groups {
		if !slices.Contains(allGroups, g) {
			return fmt.Errorf("bench: unknown row group %q (groups: %s)", g, strings.Join(allGroups, ", "))
		}
	}
	return nil
}

// Keys of the benchmark: heartbeats go to one key, data sets to another.
const (
	heartbeatKey = "online:bitmap:0"
	datasetKey   = "online:bitmap:1"
)

// Targets from the issue: presenced / redis-server.
var (
	targetHeartbeat = Target{AtLeast: true, Ratio: 1}
	targetBitcount  = Target{AtLeast: true, Ratio: 100}
	targetMemSmall  = Target{Ratio: 0.5}
	targetMemLarge  = Target{Ratio: 1.1}
	targetMemWide   = Target{Ratio: 0.05}
)

// pair is one presenced and one redis-server, in that order.
type pair [2]server

// serverNames names the members of a pair, for messages.
var serverNames = [2]string{"presenced", "redis-server"}

// startPair starts presenced in its default persistence mode and
// redis-server with persistence off.
func startPair(cfg Config) (pair, error) {
	return startPairIn(cfg, mode{})
}

// startPairIn starts presenced and redis-server with m's arguments, each
// in a fresh data directory.
func startPairIn(cfg Config, m mode) (pair, error) {
	var p pair
	var err error
	if p[0], err = startPresenced(cfg.Presenced, m.presenced...); err != nil {
		return p, err
	}
	if p[1], err = startRedis(m.redis...); err != nil {
		p[0].Close()
		return p, err
	}
	return p, nil
}

func (p pair) close() {
	for _, s := range p {
		s.Close()
	}
}

// targets returns the members of p as load targets.
func (p pair) targets() [2]target {
	return [2]target{targetOf(p[0]), targetOf(p[1])}
}

// workload is a throughput workload.
type workload struct {
	name string
	// reqs are what each op sends to presenced and to redis-server (or
	// to whatever the two targets are): the same request, or each its
	// own recipe for the same op.
	reqs     [2]request
	pipeline int  // ops per round trip (see loadSpec.pipeline)
	random   bool // the requests take random ids, uniform in Space...
	// ...or, when pick is set, from the source it returns for a seed
	// and a connection.
	pick func(seed, stream uint64) idSource
	// ids selects the row's id streams. Rows on the same servers with
	// equal ids send the same ids in a repetition, so that a later row
	// sets bits an earlier one set: heartbeats of users already online,
	// which change nothing. A row that must write new bits takes ids of
	// its own.
	ids uint64
	// conns, when not zero, replaces Config.Conns: 1 times one query at
	// a time.
	conns  int
	target Target
	// labels name the two targets in the log when they are not
	// presenced and redis-server.
	labels [2]string
	// beside, when set for a target, starts a job that runs next to each
	// of that target's runs (a recipe's cleanup) and returns its stop,
	// which reports the job's error.
	beside [2]func(t target) (stop func() error, err error)
}

// seed returns the seed of w's id streams in repetition rep of a run
// seeded with base.
func (w workload) seed(base uint64, rep int) uint64 {
	return base + uint64(rep) + w.ids<<32
}

// both is r sent to both servers.
func both(r request) [2]request { return [2]request{r, r} }

// dataset is a key loaded with distinct random ids for a memory row and,
// optionally, BITCOUNT rows.
type dataset struct {
	ids, space uint64
	memTarget  Target
	bitcount   bool
}

// suite runs the benchmark and collects the report.
type suite struct {
	cfg  Config
	logf func(format string, args ...any)
	rep  *Report
}

// runSuite runs every workload of cfg and returns the report; logf
// receives progress lines.
func runSuite(cfg Config, command string, logf func(format string, args ...any)) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &suite{cfg: cfg, logf: logf, rep: &Report{
		Date:    time.Now(),
		Command: command,
		Machine: Machine{CPU: cpuModel(), Cores: runtime.NumCPU(), GoVersion: runtime.Version(), RedisVersion: redisVersion(), LoadStart: loadAverage()},
		Settings: fmt.Sprintf("%d connections, pipeline round trips timed; %v per run; median of %d runs per server, alternating which server goes first; heartbeat ids uniform in [0, %s); data sets loaded with distinct random ids in random order (SETBIT, %d connections, pipeline %d)",
			cfg.Conns, cfg.Duration, cfg.Reps, count(cfg.Space), cfg.LoadConns, cfg.LoadPipeline),
	}}
	for _, g := range allGroups {
		if !slices.Contains(cfg.Groups, g) {
			continue
		}
		if err := groupRunners[g](s); err != nil {
			return nil, err
		}
	}
	s.rep.Machine.LoadEnd = loadAverage()
	s.noteBusyMachine()
	return s.rep, nil
}

// groupRunners run each row group and add it to the report.
var groupRunners = map[string]func(*suite) error{
	groupHeartbeats: (*suite).heartbeats,
	groupData:       (*suite).datasets,
	groupModes:      (*suite).modes,
	groupCluster:    (*suite).cluster,
	groupFailover:   (*suite).failover,
	groupRestart:    (*suite).restart,
	groupPresence:   (*suite).presence,
	groupHistory:    (*suite).history,

	groupHistoryWrites: (*suite).historyWrites,
	groupHyperLogLog:   (*suite).hyperloglog,
	groupPubSub:        (*suite).pubsub,
	groupValues:        (*suite).values,
}

// datasets measures the memory of each data set and BITCOUNT on some.
func (s *suite) datasets() error {
	cfg := s.cfg
	mem := Group{Title: "Memory for the data", Note: "anonymous RSS (RssAnon: heap and stacks; not file-backed pages such as presenced's memory-mapped Raft log, which are page cache) after loading the key minus that of the same server empty (after it served a short warm-up load on a scratch key, since deleted), both read after MEMORY PURGE once no snapshot is being written (presenced) and RSS is stable; a fresh pair of servers per row."}
	bc := Group{Title: "BITCOUNT of a whole key", Throughput: true, Note: fmt.Sprintf("`BITCOUNT %s` with no range, pipeline 1 (Redis's scan of the whole string makes deeper pipelines time out).", datasetKey)}
	for _, ds := range []dataset{
		{ids: cfg.SmallIDs, space: cfg.Space, memTarget: targetMemSmall, bitcount: true},
		{ids: cfg.LargeIDs, space: cfg.Space, memTarget: targetMemLarge, bitcount: true},
		{ids: cfg.WideIDs, space: cfg.WideSpace, memTarget: targetMemWide},
	} {
		memRow, bcRow, err := s.dataset(ds)
		if err != nil {
			return err
		}
		mem.Rows = append(mem.Rows, memRow)
		if bcRow != nil {
			bc.Rows = append(bc.Rows, *bcRow)
		}
	}
	s.rep.Groups = append(s.rep.Groups, bc, mem)
	return nil
}

// heartbeats measures SETBIT and GETBIT on one pair of servers, both
// without persistence, as redis-server runs in the other groups: the
// persistence modes group compares the modes that write to disk.
func (s *suite) heartbeats() error {
	getbit := newTemplate([]string{"GETBIT", heartbeatKey}, 1)
	g := Group{Title: "Heartbeats", Throughput: true, Note: fmt.Sprintf("`SETBIT %s <random id> 1` and `GETBIT %s <random id>`; GETBIT runs on the key the SETBIT runs filled. Both servers run without persistence (presenced `--appendonly no`, redis-server `--appendonly no --save ''`): the persistence modes (below) compare the modes that write to disk. The pipeline-1 row sends the ids the pipeline-64 row set: heartbeats of users already online, which change nothing, so neither server writes them to its log or AOF. The last row sets ids of its own while a client tracks the key for client-side caching (`CLIENT TRACKING on BCAST PREFIX %s`, its invalidations redirected to a subscribed connection that reads them), under the heartbeats' bound.", heartbeatKey, heartbeatKey, heartbeatKey)}
	return s.throughputGroup(noPersistence, g, []workload{
		setbitWorkload("SETBIT heartbeat, pipeline 64", 64, targetHeartbeat),
		setbitWorkload("SETBIT heartbeat, pipeline 1", 1, targetHeartbeat),
		{name: "GETBIT, pipeline 64", reqs: both(getbit), pipeline: 64, random: true, target: targetHeartbeat},
		{name: "SETBIT heartbeat, pipeline 64, a client tracking the key", reqs: both(setbitTemplate), pipeline: 64, random: true, ids: trackedIDs, target: targetHeartbeat,
			beside: [2]func(target) (func() error, error){trackingListener(heartbeatKey), trackingListener(heartbeatKey)}},
	})
}

// throughputGroup starts a pair of servers in mode m, runs each of ws on
// it, and adds g to the report with their rows.
func (s *suite) throughputGroup(m mode, g Group, ws []workload) error {
	p, err := startPairIn(s.cfg, m)
	if err != nil {
		return err
	}
	defer p.close()
	for _, w := range ws {
		row, err := s.throughput(p.targets(), w)
		if err != nil {
			return err
		}
		g.Rows = append(g.Rows, row)
	}
	s.rep.Groups = append(s.rep.Groups, g)
	return nil
}

// trackedIDs selects the id streams of the heartbeats a tracking client
// hears of: new bits, so that each batch changes the key.
const trackedIDs = 2

// setbitTemplate is the heartbeat: SETBIT heartbeatKey <id> 1.
var setbitTemplate = newTemplate([]string{"SETBIT", heartbeatKey}, 1, "1")

// setbitWorkload is the heartbeat at a pipeline depth.
func setbitWorkload(name string, pipeline int, t Target) workload {
	return workload{name: name, reqs: both(setbitTemplate), pipeline: pipeline, random: true, target: t}
}

// redisVersion returns the version that redis-server --version prints.
func redisVersion() string {
	out, err := exec.Command("redis-server", "--version").Output()
	if err != nil {
		return "unknown"
	}
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	return "unknown"
}

// throughput runs w Reps times on each of p (presenced, redis-server),
// alternating which goes first, and returns the medians.
func (s *suite) throughput(p [2]target, w workload) (Row, error) {
	names := serverNames
	if w.labels != ([2]string{}) {
		names = w.labels
	}
	pick := w.pick
	if pick == nil {
		pick = func(seed, stream uint64) idSource { return newRandomIDs(seed, stream, s.cfg.Space) }
	}
	var runs [2][]*loadResult
	for rep := range s.cfg.Reps {
		for k := range 2 {
			i := k ^ rep%2
			spec := loadSpec{req: w.reqs[i], pipeline: w.pipeline, conns: cmp.Or(w.conns, s.cfg.Conns), duration: s.cfg.Duration}
			if w.random {
				// Both servers get the same ids in a repetition.
				seed := w.seed(s.cfg.Seed, rep)
				spec.ids = func(c int) idSource { return pick(seed, uint64(c)) }
			}
			res, err := driveBeside(p[i], spec, w.beside[i])
			if err != nil {
				return Row{}, fmt.Errorf("%s on %s: %w", w.name, names[i], err)
			}
			if res.ops == 0 {
				return Row{}, fmt.Errorf("%s on %s: no round trip finished in %v", w.name, names[i], s.cfg.Duration)
			}
			s.logf("%s, %s: %.0f ops/s, p50 %v, p99 %v", w.name, names[i], res.opsPerSec(), res.rtt.quantile(0.5), res.rtt.quantile(0.99))
			runs[i] = append(runs[i], res)
		}
	}
	return Row{Workload: w.name, Presenced: summarize(runs[0]), Redis: summarize(runs[1]), Target: w.target}, nil
}

// driveBeside runs spec against t while the job that start starts (when
// not nil) runs next to it.
func driveBeside(t target, spec loadSpec, start func(t target) (func() error, error)) (*loadResult, error) {
	if start == nil {
		return drive(t, spec)
	}
	stop, err := start(t)
	if err != nil {
		return nil, err
	}
	res, err := drive(t, spec)
	if serr := stop(); err == nil && serr != nil {
		err = fmt.Errorf("beside the run: %w", serr)
	}
	return res, err
}

// summarize returns the median of each figure over runs.
func summarize(runs []*loadResult) Measurement {
	pick := func(f func(r *loadResult) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		return median(v)
	}
	return Measurement{
		Value:  pick((*loadResult).opsPerSec),
		P50:    time.Duration(pick(func(r *loadResult) float64 { return float64(r.rtt.quantile(0.5)) })),
		P99:    time.Duration(pick(func(r *loadResult) float64 { return float64(r.rtt.quantile(0.99)) })),
		GenCPU: pick(func(r *loadResult) float64 { return r.genCPU.Seconds() / r.elapsed.Seconds() }),
		SrvCPU: pick(func(r *loadResult) float64 { return r.srvCPU.Seconds() / r.elapsed.Seconds() }),
	}
}

// median returns the middle value (the mean of the two middle ones for
// an even count).
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// dataset loads ds into a fresh pair of servers, measures the memory it
// takes and, if asked, BITCOUNT throughput on it.
func (s *suite) dataset(ds dataset) (Row, *Row, error) {
	p, err := startPair(s.cfg)
	if err != nil {
		return Row{}, nil, err
	}
	defer p.close()
	name := fmt.Sprintf("%s random ids in a %s-id space", count(ds.ids), count(ds.space))
	mem := Row{Workload: name, Target: ds.memTarget}
	for i, srv := range p {
		used, err := s.grownBy(srv, ds.space, func(c *client) error { return s.fill(serverNames[i], srv, c, ds) })
		if err != nil {
			return Row{}, nil, fmt.Errorf("%s on %s: %w", name, serverNames[i], err)
		}
		s.logf("%s, %s: %d bytes", name, serverNames[i], used)
		*mem.side(i) = Measurement{Value: float64(used)}
	}
	if !ds.bitcount {
		return mem, nil, nil
	}
	bc, err := s.throughput(p.targets(), workload{
		name: fmt.Sprintf("BITCOUNT, %s ids in %s", count(ds.ids), count(ds.space)),
		reqs: both(newTemplate([]string{"BITCOUNT", datasetKey}, 0)), pipeline: 1, target: targetBitcount,
	})
	return mem, &bc, err
}

// grownBy warms srv up with ids in space (see warmUp), then returns how
// much its RSS grew while fill ran (given a connection to srv).
func (s *suite) grownBy(srv server, space uint64, fill func(c *client) error) (int64, error) {
	c, err := dial(srv.Addr(), 10*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.close()
	if err := s.warmUp(srv, space); err != nil {
		return 0, err
	}
	before, err := s.settledRSS(c, srv.Pid())
	if err != nil {
		return 0, err
	}
	if err := fill(c); err != nil {
		return 0, err
	}
	after, err := s.settledRSS(c, srv.Pid())
	return after - before, err
}

// loadPerm sends req for the ids at positions [from, from+n) of perm to
// srv over LoadConns connections in pipelines of LoadPipeline ops; n must
// be a whole number of requests. Loading a data set piece by piece with
// successive ranges sets each id once.
func (s *suite) loadPerm(srv server, req request, perm permutation, from, n uint64) (*loadResult, error) {
	conns := s.cfg.LoadConns
	return drive(targetOf(srv), loadSpec{
		req: req, pipeline: s.cfg.LoadPipeline, conns: conns, count: n,
		ids: func(i int) idSource {
			start, _ := connShare(n, opsOf(req), conns, i)
			return &permIDs{perm: perm, i: from + start}
		},
	})
}

// noteLoad adds a note on how long loading what (a data set) took on
// name, and how many of unit per second that was.
func (s *suite) noteLoad(what, unit, name string, res *loadResult) {
	s.rep.Notes = append(s.rep.Notes, fmt.Sprintf("Loading %s took %.1fs (%s %s/s) on %s.",
		what, res.elapsed.Seconds(), formatOps(res.opsPerSec()), unit, name))
}

// fill sets ds's ids in datasetKey of srv (called name) with SETBIT
// pipelines, notes how long that took and checks BITCOUNT on c.
func (s *suite) fill(name string, srv server, c *client, ds dataset) error {
	res, err := s.loadPerm(srv, newTemplate([]string{"SETBIT", datasetKey}, 1, "1"), newPermutation(ds.space, s.cfg.Seed), 0, ds.ids)
	if err != nil {
		return err
	}
	s.noteLoad(fmt.Sprintf("%s ids in %s", count(ds.ids), count(ds.space)), "SETBIT", name, res)
	n, err := c.doInt(time.Minute, "BITCOUNT", datasetKey)
	if err != nil {
		return err
	}
	if uint64(n) != ds.ids {
		return fmt.Errorf("BITCOUNT after loading %d distinct ids is %d", ds.ids, n)
	}
	return nil
}

// warmUpKey is the scratch key of warmUp.
const warmUpKey = "bench:warmup"

// warmUp has srv serve the loading workload on a scratch key, then deletes
// the key, so that the baseline RSS is that of an empty server which has
// already served such traffic: its connections' buffers, goroutine stacks
// and code pages are counted in the baseline, not as data.
func (s *suite) warmUp(srv server, space uint64) error {
	conns := s.cfg.LoadConns
	_, err := drive(targetOf(srv), loadSpec{
		req:      newTemplate([]string{"SETBIT", warmUpKey}, 1, "1"),
		pipeline: s.cfg.LoadPipeline, conns: conns, count: uint64(conns * s.cfg.LoadPipeline * 4),
		ids: func(i int) idSource { return newRandomIDs(s.cfg.Seed, uint64(i)+1000, space) },
	})
	if err != nil {
		return err
	}
	c, err := dial(srv.Addr(), 10*time.Second)
	if err != nil {
		return err
	}
	defer c.close()
	_, err = c.do(time.Minute, "DEL", warmUpKey)
	return err
}

// share returns the range [from, to) of n items that worker i of k takes.
func share(n uint64, k, i int) (from, to uint64) {
	return n * uint64(i) / uint64(k), n * uint64(i+1) / uint64(k)
}

// settledRSS has presenced take a snapshot (RAFT SNAPSHOT) and waits
// until the server writes none (waitSnapshots), asks it to return free
// memory to the system (MEMORY PURGE), and returns its RSS once three
// readings in a row agree within 0.1% + 16 KiB, or the last reading when
// SettleTimeout passes first. One purge, after the snapshots: a purge also
// compacts presenced's bitmaps, which moves RSS. The snapshot leaves no
// entries for raft's own check (every SnapshotInterval) to snapshot while
// RSS settles, which would otherwise take one at a random moment and leave
// its buffers in RSS.
func (s *suite) settledRSS(c *client, pid int) (int64, error) {
	if _, err := c.do(time.Minute, "RAFT", "SNAPSHOT"); err != nil {
		var re replyError
		if !errors.As(err, &re) { // redis-server: an unknown command
			return 0, err
		}
	}
	if err := s.waitSnapshots(c, pid); err != nil {
		return 0, err
	}
	if _, err := c.do(time.Minute, "MEMORY", "PURGE"); err != nil {
		var re replyError
		if !errors.As(err, &re) {
			return 0, err
		}
		s.warn(fmt.Sprintf("MEMORY PURGE failed on process %d: %v", pid, err))
	}
	prev, err := readRSS(pid)
	if err != nil {
		return 0, err
	}
	deadline := time.Now().Add(s.cfg.SettleTimeout)
	for stable := 0; stable < 2; {
		if time.Now().After(deadline) {
			s.warn(fmt.Sprintf("RSS of process %d still changing after %v", pid, s.cfg.SettleTimeout))
			break
		}
		time.Sleep(s.cfg.SettleInterval)
		cur, err := readRSS(pid)
		if err != nil {
			return 0, err
		}
		stable++
		if d := cur - prev; d > prev/1000+16<<10 || -d > prev/1000+16<<10 {
			stable = 0
		}
		prev = cur
	}
	return prev, nil
}

// snapshotWait bounds how long waitSnapshots waits.
const snapshotWait = time.Minute

// waitSnapshots returns once the server is writing no snapshot of its
// state (presenced's RAFT INFO snapshot_in_progress is 0): while it writes
// one, the store keeps a copy of what writes changed since, memory the
// data itself does not take. A server without RAFT INFO (redis-server)
// writes no such snapshots.
func (s *suite) waitSnapshots(c *client, pid int) error {
	deadline := time.Now().Add(snapshotWait)
	for {
		info, err := raftInfo(c)
		var re replyError
		if errors.As(err, &re) {
			return nil
		}
		if err != nil {
			return err
		}
		if info["snapshot_in_progress"] == "0" {
			return nil
		}
		if time.Now().After(deadline) {
			s.warn(fmt.Sprintf("process %d was still writing a snapshot after %v", pid, snapshotWait))
			return nil
		}
		time.Sleep(s.cfg.SettleInterval)
	}
}

// warn adds a note to the report once.
func (s *suite) warn(note string) {
	if !slices.Contains(s.rep.Notes, note) {
		s.rep.Notes = append(s.rep.Notes, note)
		s.logf("warning: %s", note)
	}
}

// count writes an id count or space the way the issue does: 2M, 100M, 4e9.
func count(n uint64) string {
	switch {
	case n >= 1e9 && n%1e8 == 0:
		return fmt.Sprintf("%ge9", float64(n)/1e9)
	case n >= 1e6 && n%1e5 == 0:
		return fmt.Sprintf("%gM", float64(n)/1e6)
	case n >= 1e3 && n%100 == 0:
		return fmt.Sprintf("%gk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// cpuModel returns the first "model name" of /proc/cpuinfo.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// noteBusyMachine adds a note when the load average exceeded the core
// count at the start or the end: other processes then took CPU time from
// the servers, and throughput figures are noisy.
func (s *suite) noteBusyMachine() {
	m := s.rep.Machine
	for _, l := range []string{m.LoadStart, m.LoadEnd} {
		if v, err := strconv.ParseFloat(l, 64); err == nil && v > float64(m.Cores) {
			s.warn(fmt.Sprintf("The load average (%s at the start, %s at the end) exceeded the %d cores: other processes competed for the CPU, so throughput figures are noisy; memory figures are not affected.", m.LoadStart, m.LoadEnd, m.Cores))
			return
		}
	}
}

// loadAverage returns the 1-minute load average from /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "unknown"
}

// infoField returns the value of field in an INFO reply.
func infoField(info, field string) string {
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return v
		}
	}
	return "unknown"
}
