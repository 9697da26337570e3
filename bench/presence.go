package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The presence group measures per-bit expiry (BITSETEX, GETBITS, bit-TTL
// rules) against presenced's own SETBIT and against the Redis recipes it
// replaces: a sorted set of last-seen times with a cleanup job, and a
// bitmap whose key TTL every heartbeat renews.

// Keys of the presence group, apart from heartbeatKey and datasetKey.
const (
	expiringKey = "online:expiring:0" // BITSETEX heartbeats, beside SETBIT on heartbeatKey
	usersKey    = "online:users"      // per-user expiry: BITSETEX, or the recipe's sorted set
	expiryKey   = "online:expiry"     // the mass expiry
)

// heartbeatTTL is the TTL of a heartbeat in the recipes, in seconds.
const heartbeatTTL = 90

// getbitsOffsets is the number of offsets of a GETBITS query.
const getbitsOffsets = 500

// armBatch is the ids per command that arm the mass expiry and the users
// of the BITSETEX rows.
const armBatch = 100

// usersTTL is the TTL, in seconds, with which the users of the BITSETEX
// rows are armed: longer than the rows take, so that each heartbeat
// re-arms a bit that is set.
const usersTTL = 3600

// Expiry schedule: the ids are armed in two halves of armSlices slices,
// each slice for one deadline; the first half expires with no client
// load, the second under SETBIT load (expiryConns connections, pipeline
// 1).
const (
	armSlices   = 15
	expiryConns = 4
	// windowLead opens a window this long before its first planned
	// deadline: deadlines are rounded up to the leader's 100 ms tick,
	// so a bit cannot expire earlier.
	windowLead = 250 * time.Millisecond
	// pollEvery is how often BITCOUNT is polled to see expiry progress.
	pollEvery = 50 * time.Millisecond
)

// Targets from the per-bit expiry issue.
var (
	targetBitsetex     = Target{AtLeast: true, Ratio: 0.9} // BITSETEX / presenced SETBIT
	targetRecipe       = Target{AtLeast: true, Ratio: 1}   // vs a Redis recipe's heartbeat
	targetGetbits      = Target{AtLeast: true, Ratio: 3}
	targetUsersMemory  = Target{Ratio: 0.05}
	targetDeadlineMem  = Target{Ratio: 0.5} // deadlines / bitmap
	targetExpiryCPU    = 0.05               // cores
	targetTickPause    = 10 * time.Millisecond
	bitsetexColumns    = [2]string{"presenced BITSETEX", "presenced SETBIT"}
	deadlineMemColumns = [2]string{"per-bit deadlines", "bitmap"}
)

// batch is requests sent back to back as one: a recipe's heartbeat of
// several commands.
type batch []request

func (b batch) appendTo(buf []byte, ids idSource) []byte {
	for _, r := range b {
		buf = r.appendTo(buf, ids)
	}
	return buf
}

func (b batch) ids() int     { return b.sum(request.ids) }
func (b batch) replies() int { return b.sum(request.replies) }

func (b batch) sum(f func(request) int) int {
	n := 0
	for _, r := range b {
		n += f(r)
	}
	return n
}

// clocked is a command whose first integer argument comes from the clock
// when the command is encoded, and the others from the id source.
type clocked struct {
	t   template // the command, with the clock's argument and the ids
	arg func(now time.Time) uint64
}

func (c clocked) appendTo(buf []byte, ids idSource) []byte {
	buf = append(buf, c.t.head...)
	buf = appendUint(buf, c.arg(time.Now()))
	for range c.t.n - 1 {
		buf = appendUint(buf, ids.next())
	}
	return append(buf, c.t.tail...)
}

func (c clocked) ids() int     { return c.t.n - 1 }
func (c clocked) replies() int { return 1 }

// newZaddNow is the sorted-set recipe's heartbeat, ZADD key <unix ms>
// <id>: the score is the time the command is encoded.
func newZaddNow(key string) clocked {
	return clocked{t: newTemplate([]string{"ZADD", key}, 2), arg: func(now time.Time) uint64 { return uint64(now.UnixMilli()) }}
}

// bitpsetexAt is BITPSETEX key <ms> followed by n ids, the TTL being what
// is left until at when the command is encoded (at least 1 ms), so that
// the ids expire at at however long sending takes.
func bitpsetexAt(key string, at time.Time, n int) clocked {
	return clocked{t: newTemplate([]string{"BITPSETEX", key}, 1+n), arg: func(now time.Time) uint64 {
		return uint64(max(at.Sub(now).Milliseconds(), 1))
	}}
}

// bitsetex is BITSETEX key <ttl> followed by n ids.
func bitsetex(key string, ttl, n int) template {
	return newTemplate([]string{"BITSETEX", key, strconv.Itoa(ttl)}, n)
}

// loadedIDs yields random ids among the first n of a permutation: the
// heartbeats of users who are online, when those n were loaded.
type loadedIDs struct {
	perm permutation
	rank *randomIDs // uniform in [0, n)
}

func (l loadedIDs) next() uint64 { return l.perm.at(l.rank.next()) }

// online picks the ids of a workload among the first users of perm, as
// loadedIDs do.
func online(perm permutation, users uint64) func(seed, stream uint64) idSource {
	return func(seed, stream uint64) idSource {
		return loadedIDs{perm: perm, rank: newRandomIDs(seed, stream, users)}
	}
}

// presence runs the rows of the per-bit expiry issue.
func (s *suite) presence() error {
	own, err := s.bitsetexVsSetbit()
	if err != nil {
		return err
	}
	s.rep.Groups = append(s.rep.Groups, own)
	recipes := s.recipesGroup()
	if err := s.presenceOnePair(&recipes); err != nil {
		return err
	}
	mem, err := s.perUser(&recipes)
	if err != nil {
		return err
	}
	s.rep.Groups = append(s.rep.Groups, recipes, mem)
	return s.expiry()
}

// presenceOnePair measures GETBITS and the bit-TTL rule against the
// Redis recipes (rows of recipes) on one pair of servers, both without
// persistence.
func (s *suite) presenceOnePair(recipes *Group) error {
	p, err := startPairIn(s.cfg, noPersistence)
	if err != nil {
		return err
	}
	defer p.close()
	ds := dataset{ids: s.cfg.SmallIDs, space: s.cfg.Space}
	for i, srv := range p {
		if err := s.fillChecked(serverNames[i], srv, ds); err != nil {
			return err
		}
	}
	getbit := newTemplate([]string{"GETBIT", datasetKey}, 1)
	row, err := s.throughput(p.targets(), workload{
		name: fmt.Sprintf("GETBITS of %d offsets vs %d pipelined GETBITs, %s ids in %s", getbitsOffsets, getbitsOffsets, count(ds.ids), count(ds.space)),
		reqs: [2]request{newTemplate([]string{"GETBITS", datasetKey}, getbitsOffsets), getbit}, pipeline: getbitsOffsets, random: true, target: targetGetbits,
	})
	if err != nil {
		return err
	}
	recipes.Rows = append(recipes.Rows, row)

	// The rule applies from here on: SETBIT 1 on online:* arms a TTL.
	if err := send(p[0], "CONFIG", "SET", "bit-ttl", fmt.Sprintf("online:* %d", heartbeatTTL)); err != nil {
		return err
	}
	expire := newTemplate([]string{"EXPIRE", heartbeatKey, strconv.Itoa(heartbeatTTL)}, 0)
	row, err = s.throughput(p.targets(), workload{
		name: "seed pattern: SETBIT under a bit-TTL rule vs SETBIT + EXPIRE, pipeline 64 heartbeats",
		reqs: [2]request{setbitTemplate, batch{setbitTemplate, expire}}, pipeline: 64, random: true, target: targetRecipe,
	})
	if err != nil {
		return err
	}
	recipes.Rows = append(recipes.Rows, row)
	return nil
}

// bitsetexVsSetbit measures BITSETEX heartbeats against SETBIT ones on
// presenced, in each mode on a fresh presenced of its own.
func (s *suite) bitsetexVsSetbit() (Group, error) {
	g := Group{Title: "Per-bit expiry: BITSETEX vs SETBIT, both on presenced", Throughput: true, Columns: bitsetexColumns, Unit: "ids", Note: fmt.Sprintf(
		"Both columns are presenced, in the same runs (alternating): heartbeats of %s users who are online, `BITSETEX %s %d <id>...` against presenced's own `SETBIT %s <id> 1`, 64 ids per round trip on each connection either way (one BITSETEX of 64 ids, or 64 pipelined commands); the ratio is BITSETEX / SETBIT. Redis has no BITSETEX. The users (distinct random ids in %s) are first armed in %s (`BITSETEX %s %d`, %d ids a command) and set in %s; each heartbeat then picks one of them at random. So every BITSETEX re-arms a bit that is set (a write, through the log), and every SETBIT sets a bit already set (it changes nothing and is answered without the log, as Redis too leaves it out of its AOF). The rows run on a fresh presenced in each mode: `--appendonly no`, and the default (`--appendfsync always`: each re-arm is fsynced before its reply, while the SETBITs write nothing).",
		count(s.cfg.PresenceUsers), expiringKey, heartbeatTTL, heartbeatKey, count(s.cfg.Space), expiringKey, expiringKey, usersTTL, armBatch, heartbeatKey)}
	for _, m := range []mode{noPersistence, alwaysFsync} {
		if err := s.bitsetexRows(&g, m); err != nil {
			return Group{}, err
		}
	}
	return g, nil
}

// bitsetexRows adds to g the rows of BITSETEX against SETBIT on a fresh
// presenced in mode m.
func (s *suite) bitsetexRows(g *Group, m mode) error {
	srv, err := startPresenced(s.cfg.Presenced, m.presenced...)
	if err != nil {
		return err
	}
	defer srv.Close()
	users, perm := s.cfg.PresenceUsers, newPermutation(s.cfg.Space, s.cfg.Seed)
	if err := s.loadOnline(srv, perm, users, m); err != nil {
		return err
	}
	pres := targetOf(srv)
	for _, w := range []workload{
		{name: "BITSETEX heartbeats, 64 ids per command, " + m.name, reqs: [2]request{bitsetex(expiringKey, heartbeatTTL, 64), setbitTemplate}},
		{name: "BITSETEX heartbeats, 1 id per command, pipeline 64, " + m.name, reqs: [2]request{bitsetex(expiringKey, heartbeatTTL, 1), setbitTemplate}},
	} {
		w.pipeline, w.random, w.target, w.labels, w.pick = 64, true, targetBitsetex, bitsetexColumns, online(perm, users)
		row, err := s.throughput([2]target{pres, pres}, w)
		if err != nil {
			return err
		}
		g.Rows = append(g.Rows, row)
	}
	// Heartbeats of users who are online neither add nor drop any.
	if err := expectOnline(srv, users); err != nil {
		return fmt.Errorf("after the heartbeats: %w", err)
	}
	return nil
}

// loadOnline arms the first users ids of perm in expiringKey for usersTTL
// and sets them in heartbeatKey, on srv in mode m, and checks both
// counts.
func (s *suite) loadOnline(srv server, perm permutation, users uint64, m mode) error {
	for _, l := range []struct {
		req      request
		cmd, key string
	}{
		{bitsetex(expiringKey, usersTTL, armBatch), "BITSETEX", expiringKey},
		{setbitTemplate, "SETBIT", heartbeatKey},
	} {
		what := fmt.Sprintf("%s users (distinct random ids in %s) into %s with %s, %s,", count(users), count(s.cfg.Space), l.key, l.cmd, m.name)
		res, err := s.loadPerm(srv, l.req, perm, 0, users)
		if err != nil {
			return fmt.Errorf("loading %s: %w", what, err)
		}
		s.noteLoad(what, "ids", "presenced", res)
	}
	return expectOnline(srv, users)
}

// expectOnline checks that expiringKey and heartbeatKey of srv each hold
// users bits.
func expectOnline(srv server, users uint64) error {
	c, err := dial(srv.Addr(), 10*time.Second)
	if err != nil {
		return err
	}
	defer c.close()
	for _, key := range []string{expiringKey, heartbeatKey} {
		if err := expectInt(c, users, "BITCOUNT", key); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	return nil
}

// recipesGroup is the table of presence rows against Redis recipes; its
// rows come from presenceOnePair and perUser.
func (s *suite) recipesGroup() Group {
	return Group{Title: "Per-bit expiry vs the Redis recipes", Throughput: true, Unit: "ids", Note: fmt.Sprintf(
		"An op is an id: a heartbeat, or one offset read (a GETBITS query of %d offsets counts %d; queries/s are the figures / %d, with the same ratio). Random ids uniform in the id space, except per-user expiry, whose heartbeats come from the loaded users. "+
			"GETBITS and the seed pattern run both servers without persistence (presenced `--appendonly no`); per-user expiry runs presenced in its default mode (fsync before each reply) against redis-server without persistence, since its memory row reads anonymous RSS, which with `--appendonly no` would count the log held in memory. "+
			"GETBITS: `GETBITS %s <%d random offsets>` against %d pipelined `GETBIT %s <offset>`, one query per round trip, on a key loaded with distinct random ids as the data sets are. "+
			"Seed pattern: presenced `SETBIT %s <id> 1` under the rule `CONFIG SET bit-ttl \"online:* %d\"` against redis-server `SETBIT %s <id> 1` + `EXPIRE %s %d` (the recipe's heartbeat, 2 commands, so 128 commands per round trip). "+
			"Per-user expiry: presenced `BITSETEX %s %d <id>` against redis-server `ZADD %s <unix ms> <id>`, while one more connection runs the recipe's cleanup, `ZREMRANGEBYSCORE %s -inf <now - %ds>`, once a second, on the key loaded with the users (below).",
		getbitsOffsets, getbitsOffsets, getbitsOffsets, datasetKey, getbitsOffsets, getbitsOffsets, datasetKey,
		heartbeatKey, heartbeatTTL, heartbeatKey, heartbeatKey, heartbeatTTL,
		usersKey, heartbeatTTL, usersKey, usersKey, heartbeatTTL)}
}

// fillChecked sets ds's ids in datasetKey of srv (called name), as the
// data sets are loaded.
func (s *suite) fillChecked(name string, srv server, ds dataset) error {
	c, err := dial(srv.Addr(), 10*time.Second)
	if err != nil {
		return err
	}
	defer c.close()
	return s.fill(name, srv, c, ds)
}

// send sends one command to srv, on a connection of its own.
func send(srv server, args ...string) error {
	c, err := dial(srv.Addr(), 10*time.Second)
	if err != nil {
		return err
	}
	defer c.close()
	if _, err := c.do(time.Minute, args...); err != nil {
		return fmt.Errorf("%s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// perUser loads PresenceUsers users into a fresh pair, presenced with
// BITSETEX and redis-server with the sorted-set recipe, and measures the
// heartbeat throughput on that key (a row of recipes) and the memory (its
// own group, returned).
func (s *suite) perUser(recipes *Group) (Group, error) {
	p, err := startPair(s.cfg)
	if err != nil {
		return Group{}, err
	}
	defer p.close()
	users := s.cfg.PresenceUsers
	perm := newPermutation(s.cfg.Space, s.cfg.Seed)
	reqs := [2]request{bitsetex(usersKey, heartbeatTTL, 1), newZaddNow(usersKey)}
	cards := [2][]string{{"BITCOUNT", usersKey}, {"ZCARD", usersKey}}
	units := [2]string{"BITSETEX", "ZADD"}
	what := fmt.Sprintf("%s users (distinct random ids in %s)", count(users), count(s.cfg.Space))
	mem := Row{Workload: "per-user expiry, " + what + ": BITSETEX vs ZADD", Target: targetUsersMemory}
	for i, srv := range p {
		used, err := s.grownBy(srv, s.cfg.Space, func(c *client) error {
			res, err := s.loadPerm(srv, reqs[i], perm, 0, users)
			if err != nil {
				return err
			}
			s.noteLoad(what, units[i], serverNames[i], res)
			return expectInt(c, users, cards[i]...)
		})
		if err != nil {
			return Group{}, fmt.Errorf("%s on %s: %w", mem.Workload, serverNames[i], err)
		}
		s.logf("%s, %s: %d bytes", mem.Workload, serverNames[i], used)
		*mem.side(i) = Measurement{Value: float64(used)}
	}
	row, err := s.throughput(p.targets(), workload{
		name: "per-user expiry, heartbeats of " + what + ", pipeline 64",
		reqs: reqs, pipeline: 64, random: true, target: targetRecipe,
		pick:   online(perm, users),
		beside: [2]func(target) (func() error, error){nil, zsetCleanup(usersKey, heartbeatTTL*time.Second)},
	})
	if err != nil {
		return Group{}, err
	}
	recipes.Rows = append(recipes.Rows, row)
	return Group{Title: "Memory for per-user expiry", Rows: []Row{mem}, Note: fmt.Sprintf(
		"`BITSETEX %s %d <id>` on presenced against the recipe's `ZADD %s <unix ms> <id>` on redis-server, one command per user (%d connections, pipeline %d); RSS grown as for the data sets, checked with BITCOUNT and ZCARD before any TTL passes; a fresh pair of servers.",
		usersKey, heartbeatTTL, usersKey, s.cfg.LoadConns, s.cfg.LoadPipeline)}, nil
}

// expectInt sends cmd on c and checks that it replies want.
func expectInt(c *client, want uint64, cmd ...string) error {
	n, err := c.doInt(time.Minute, cmd...)
	if err == nil && uint64(n) != want {
		err = fmt.Errorf("%s after loading %d distinct ids is %d", cmd[0], want, n)
	}
	return err
}

// zsetCleanup is the sorted-set recipe's cleanup job: from its own
// connection, at once and then once a second, ZREMRANGEBYSCORE key -inf
// <now - ttl>.
func zsetCleanup(key string, ttl time.Duration) func(t target) (func() error, error) {
	return func(t target) (func() error, error) {
		c, err := dial(t.addrs[0], 10*time.Second)
		if err != nil {
			return nil, err
		}
		quit, done := make(chan struct{}), make(chan error, 1)
		go func() {
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				cutoff := time.Now().Add(-ttl).UnixMilli()
				if _, err := c.do(time.Minute, "ZREMRANGEBYSCORE", key, "-inf", strconv.FormatInt(cutoff, 10)); err != nil {
					done <- err
					return
				}
				select {
				case <-quit:
					done <- nil
					return
				case <-tick.C:
				}
			}
		}()
		return func() error {
			close(quit)
			err := <-done
			c.close()
			return err
		}, nil
	}
}

// armPlan is the deadlines of the halves of the mass expiry.
type armPlan struct {
	ids         [2]uint64     // ids of each half
	first, last [2]time.Time  // each half's first and last deadline
	lead        time.Duration // from the start of arming to the first deadline
	sending     time.Duration // how long arming took
}

// expiry arms ExpiryIDs deadlines on one presenced and measures what
// they cost: memory, the CPU their expiry takes, and write latency while
// they expire.
func (s *suite) expiry() error {
	srv, err := startPresenced(s.cfg.Presenced)
	if err != nil {
		return err
	}
	defer srv.Close()
	c, err := dial(srv.Addr(), 10*time.Second)
	if err != nil {
		return err
	}
	defer c.close()
	n := s.cfg.ExpiryIDs
	mem, plan, err := s.expiryMemory(c, srv)
	if err != nil {
		return err
	}
	cpu, err := s.expiryCPU(c, srv, plan, n)
	if err != nil {
		return err
	}
	pause, err := s.expiryLatency(c, srv, plan)
	if err != nil {
		return err
	}
	steady, ticks, err := s.steadyRows()
	if err != nil {
		return err
	}
	s.rep.Groups = append(s.rep.Groups, mem,
		Group{Title: "Expiry at " + count(n) + " online: CPU", CPUs: []CPURow{steady, cpu}, Note: fmt.Sprintf(
			"Steady state: the load the issue states, %s users online in %s, each heartbeating every %v with a %ds TTL while %d%% of them leave (stop heartbeating, and expire) and as many join every %v, is about %s heartbeats a second, more than this machine's load generator sends. So it runs in process on presenced's state machine (`store.Store`, without history recording: with it, as presenced runs by default, each expired bit also flips a bit in the key's changes since its last snapshot), fed as the server feeds it: a tick every %v of log time, which does the expiry (followed at once by more while one spends its expiry budget, as the cluster proposes them), and between ticks the `BITPSETEX %s %d <%d ids>` commands of the heartbeats due then. The first %v arm everyone; the figure is the wall time of the ticks over the last %v (%d cycles), over that log time; the reference is the time spent applying the heartbeats in that window. BITCOUNT at the end must equal the users whose last heartbeat is under a TTL old. "+
				"Mass expiry: the deadlines armed above are spread evenly in %d steps: the first half's over %v starting %v after arming began, the second half's over the next %v after a pause of %v. The first half expires with no client load; presenced's CPU time (utime + stime from /proc) is taken from %v before its first deadline until BITCOUNT (polled every %v) shows the half gone, over the wall time of that window. The reference is the same process over the quiet wait before it (no load, nothing due).",
			count(n), count(s.cfg.Space), steadyEvery, heartbeatTTL, steadyChurn, steadyEvery, count((n/uint64(steadyEvery.Seconds())+5e4)/1e5*1e5), steadyTick, steadyKey, heartbeatTTL*1000, steadyBatch,
			steadyEvery, 2*steadyEvery, 2,
			2*armSlices, s.cfg.ExpirySpread/2, plan.lead.Round(time.Second), s.cfg.ExpirySpread/2, s.cfg.ExpirySpread/3, windowLead, pollEvery)},
		Group{Title: "Expiry at " + count(n) + " online: write latency", Window: "expiry", Pauses: []PauseRow{pause}, Note: fmt.Sprintf(
			"`SETBIT %s <random id> 1`, pipeline 1, %d connections, from the end of the first half's expiry until %v after the second half's: round trips that overlapped the second half's expiry (from %v before its first deadline until BITCOUNT shows it gone) count as during, the others as outside. One run.",
			heartbeatKey, expiryConns, s.cfg.Duration, windowLead)},
		Group{Title: "Expiry at " + count(n) + " online: ticks", Latencies: []LatencyRow{ticks}, Note: fmt.Sprintf(
			"How long each tick of the steady state's measured cycles (above) took to apply, %v of log time apart, with the ticks that follow one at once when it spent its expiry budget (as the cluster proposes them): the writes of the entries behind a tick wait that long. The issue bounds the longest. Beside it, the most processor time any tick took (the state machine runs on one thread, whose CPU clock times each tick): where the longest took more, it waited for a core that other processes on the machine had.",
			steadyTick)})
	return nil
}

// expiryMemory loads ExpiryIDs ids into expiryKey of srv with SETBIT,
// then arms a deadline for each (see arm), and returns the memory the
// bitmap and the deadlines take, and the plan of the deadlines.
func (s *suite) expiryMemory(c *client, srv server) (Group, armPlan, error) {
	n, perm := s.cfg.ExpiryIDs, newPermutation(s.cfg.Space, s.cfg.Seed)
	name := fmt.Sprintf("%s ids in %s", count(n), count(s.cfg.Space))
	if err := s.warmUp(srv, s.cfg.Space); err != nil {
		return Group{}, armPlan{}, err
	}
	rss0, err := s.settledRSS(c, srv.Pid())
	if err != nil {
		return Group{}, armPlan{}, err
	}
	res, err := s.loadPerm(srv, newTemplate([]string{"SETBIT", expiryKey}, 1, "1"), perm, 0, n)
	if err != nil {
		return Group{}, armPlan{}, err
	}
	s.noteLoad(name+" for the expiry rows", "SETBIT", serverNames[0], res)
	s.logf("expiry: loaded %s with SETBIT in %v", name, res.elapsed)
	use0, rss1, err := s.keyMemory(c, srv, n)
	if err != nil {
		return Group{}, armPlan{}, err
	}

	// The same ids armed with BITPSETEX. Arming them takes about as long
	// as loading them did, so the first deadline waits for twice that if
	// ExpiryTTL is shorter.
	lead := max(s.cfg.ExpiryTTL, 2*res.elapsed)
	plan, err := s.arm(srv, perm, n, lead)
	if err != nil {
		return Group{}, armPlan{}, err
	}
	s.logf("expiry: armed %s in %v; the first deadline is %v away", name, plan.sending, time.Until(plan.first[0]))
	s.rep.Notes = append(s.rep.Notes, fmt.Sprintf("Arming %s with BITPSETEX (%d ids per command, %d connections, pipeline %d ids) took %.1fs (%s ids/s).",
		name, armBatch, s.cfg.LoadConns, s.cfg.LoadPipeline, plan.sending.Seconds(), formatOps(float64(n)/plan.sending.Seconds())))
	use1, rss2, err := s.keyMemory(c, srv, n)
	if err != nil {
		return Group{}, armPlan{}, fmt.Errorf("%w (if ids expired already, -expiry-ttl is too short for arming them)", err)
	}
	s.logf("expiry: MEMORY USAGE %d -> %d bytes, RssAnon grew %d then %d bytes", use0, use1, rss1-rss0, rss2-rss1)
	armed := fmt.Sprintf("%s armed with BITPSETEX", name)
	return Group{Title: "Expiry at " + count(n) + " online: memory", Columns: deadlineMemColumns, Note: fmt.Sprintf(
		"One presenced loads %s with `SETBIT %s <id> 1` (%d connections, pipeline %d): the bitmap; then `BITPSETEX %s <ms> <%d ids>` (BITSETEX in milliseconds) arms a deadline for each of those bits: the deadlines are what the key grew by. MEMORY USAGE of the key, and anonymous RSS as for the data sets; the ratio is deadlines / bitmap.",
		name, expiryKey, s.cfg.LoadConns, s.cfg.LoadPipeline, expiryKey, armBatch), Rows: []Row{
		{Workload: armed + ", MEMORY USAGE", Presenced: Measurement{Value: float64(use1 - use0)}, Redis: Measurement{Value: float64(use0)}, Target: targetDeadlineMem},
		{Workload: armed + ", RssAnon", Presenced: Measurement{Value: float64(rss2 - rss1)}, Redis: Measurement{Value: float64(rss1 - rss0)}, Target: targetDeadlineMem},
	}}, plan, nil
}

// keyMemory returns MEMORY USAGE of expiryKey and the settled RSS of srv,
// after checking that the key holds n ids.
func (s *suite) keyMemory(c *client, srv server, n uint64) (usage, rss int64, err error) {
	if err := expectInt(c, n, "BITCOUNT", expiryKey); err != nil {
		return 0, 0, err
	}
	if usage, err = c.doInt(time.Minute, "MEMORY", "USAGE", expiryKey); err != nil {
		return 0, 0, err
	}
	rss, err = s.settledRSS(c, srv.Pid())
	return usage, rss, err
}

// arm sends BITPSETEX expiryKey for the n ids of perm, as fast as it
// can, in two halves of armSlices slices with a deadline each: the first
// lead after arming begins, the others ExpirySpread/2/armSlices apart,
// and a pause of ExpirySpread/3 between the halves.
func (s *suite) arm(srv server, perm permutation, n uint64, lead time.Duration) (armPlan, error) {
	plan := armPlan{lead: lead}
	cmds := n / armBatch
	step := s.cfg.ExpirySpread / 2 / armSlices
	start := time.Now()
	base := start.Add(lead)
	for j := range 2 * armSlices {
		half := j / armSlices
		at := base.Add(time.Duration(j)*step + time.Duration(half)*s.cfg.ExpirySpread/3)
		if j%armSlices == 0 {
			plan.first[half] = at
		}
		from, to := share(cmds, 2*armSlices, j)
		if _, err := s.loadPerm(srv, bitpsetexAt(expiryKey, at, armBatch), perm, from*armBatch, (to-from)*armBatch); err != nil {
			return plan, err
		}
		plan.ids[half] += (to - from) * armBatch
		plan.last[half] = at
	}
	plan.sending = time.Since(start)
	return plan, nil
}

// expiryCPU measures presenced's CPU while the first half of plan
// expires with no client load, and over the quiet wait before it.
func (s *suite) expiryCPU(c *client, srv server, plan armPlan, n uint64) (CPURow, error) {
	open := plan.first[0].Add(-windowLead)
	quiet, err := cpuOver(srv.Pid(), func() error {
		if time.Until(open) <= 0 {
			return fmt.Errorf("the first deadline came %v after arming began, before arming and measuring memory were done: raise -expiry-ttl", plan.lead)
		}
		time.Sleep(time.Until(open))
		return nil
	})
	if err != nil {
		return CPURow{}, err
	}
	start := time.Now()
	busy, err := cpuOver(srv.Pid(), func() error { return waitBitcount(c, n-plan.ids[0], s.cfg.ExpirySpread+5*time.Minute) })
	took := time.Since(start)
	if err != nil {
		return CPURow{}, err
	}
	s.logf("expiry: %s ids expired in %v with %.1f%% of a core (quiet: %.1f%%)", count(plan.ids[0]), took, 100*busy, 100*quiet)
	return CPURow{Workload: fmt.Sprintf("mass expiry of %s ids, no client load", count(plan.ids[0])), Took: took, CPU: busy,
		RefName: "the same process, idle before it", Ref: quiet, Limit: targetExpiryCPU}, nil
}

// cpuOver runs f and returns the cores process pid used meanwhile.
func cpuOver(pid int, f func() error) (float64, error) {
	before, err := processCPU(pid)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := f(); err != nil {
		return 0, err
	}
	wall := time.Since(start)
	after, err := processCPU(pid)
	if err != nil {
		return 0, err
	}
	return (after - before).Seconds() / wall.Seconds(), nil
}

// waitBitcount polls BITCOUNT expiryKey until it is at most want.
func waitBitcount(c *client, want uint64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		got, err := c.doInt(time.Minute, "BITCOUNT", expiryKey)
		if err != nil {
			return err
		}
		if uint64(got) <= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("BITCOUNT %s still %d, not %d, %v on", expiryKey, got, want, timeout)
		}
		time.Sleep(pollEvery)
	}
}

// expiryLatency runs SETBIT load from now until Duration after the
// second half of plan has expired, and splits its round trips into those
// that overlapped that expiry and the others.
func (s *suite) expiryLatency(c *client, srv server, plan armPlan) (PauseRow, error) {
	open := plan.first[1].Add(-windowLead)
	var marker atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var took time.Duration
	var werr error
	wg.Add(1)
	go func() {
		// Open the window, wait for the expiry, close it, and end the
		// load Duration later.
		defer wg.Done()
		defer close(stop)
		time.Sleep(time.Until(open))
		marker.Add(1)
		werr = waitBitcount(c, 0, s.cfg.ExpirySpread+5*time.Minute)
		took = time.Since(open)
		marker.Add(1)
		time.Sleep(s.cfg.Duration)
	}()
	res, err := drive(targetOf(srv), loadSpec{req: setbitTemplate, pipeline: 1, conns: expiryConns, until: stop, marker: &marker,
		ids: func(i int) idSource { return newRandomIDs(s.cfg.Seed, uint64(i), s.cfg.Space) }})
	wg.Wait()
	switch {
	case werr != nil:
		return PauseRow{}, werr
	case err != nil:
		return PauseRow{}, err
	case res.marked.n == 0:
		return PauseRow{}, errors.New("no round trip overlapped the expiry")
	}
	s.logf("expiry under load: took %v, p99 during %v, outside %v", took, res.marked.quantile(0.99), res.rtt.quantile(0.99))
	return newPauseRow(fmt.Sprintf("SETBIT, pipeline 1, during the expiry of %s ids", count(plan.ids[1])), serverNames[0],
		[]*loadResult{res}, []time.Duration{took}), nil
}
