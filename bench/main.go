// Command bench starts presenced and redis-server on loopback ports,
// drives both with the same load generator and writes a side-by-side
// report (see Config and the README's benchmark section). It reads
// /proc, so it runs on Linux.
//
//	go build -o bin/presenced ./cmd/presenced
//	go run ./bench -out bench/RESULTS.md
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
)

// options are the command line: the benchmark's Config plus where the
// output goes.
type options struct {
	cfg        Config
	quick      bool
	out        string
	cpuProfile string
}

// newFlagSet binds flags to o, with o's current values as defaults.
func newFlagSet(o *options, output io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(output)
	c := &o.cfg
	fs.BoolVar(&o.quick, "quick", o.quick, "short runs on small data sets (other flags still apply)")
	fs.StringVar(&o.out, "out", o.out, "write the Markdown report to this file instead of stdout")
	fs.StringVar(&o.cpuProfile, "cpuprofile", o.cpuProfile, "write a CPU profile of the benchmark process (the load generator) to this file")
	fs.StringVar(&c.Presenced, "presenced", c.Presenced, "presenced binary")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "length of one throughput run against one server")
	fs.IntVar(&c.Reps, "reps", c.Reps, "runs per server and throughput workload (the report shows medians)")
	fs.IntVar(&c.Conns, "conns", c.Conns, "load connections per throughput run")
	fs.Uint64Var(&c.Space, "space", c.Space, "id space of heartbeats and of the BITCOUNT data sets")
	fs.Uint64Var(&c.WideSpace, "wide-space", c.WideSpace, "id space of the sparse memory data set (at most 2^32)")
	fs.Uint64Var(&c.SmallIDs, "small-ids", c.SmallIDs, "ids of the small data set")
	fs.Uint64Var(&c.LargeIDs, "large-ids", c.LargeIDs, "ids of the large data set")
	fs.Uint64Var(&c.WideIDs, "wide-ids", c.WideIDs, "ids of the sparse data set")
	fs.IntVar(&c.LoadConns, "load-conns", c.LoadConns, "connections that load a data set")
	fs.IntVar(&c.LoadPipeline, "load-pipeline", c.LoadPipeline, "pipeline depth of loading")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the random ids")
	fs.IntVar(&c.Nodes, "nodes", c.Nodes, "nodes of the presenced cluster")
	fs.IntVar(&c.FailoverConns, "failover-conns", c.FailoverConns, "connections writing while the leader is killed")
	fs.IntVar(&c.FailoverTrials, "failover-trials", c.FailoverTrials, "times the leader is killed")
	fs.IntVar(&c.RestartTrials, "restart-trials", c.RestartTrials, "restarts per server and kind of stop")
	fs.Uint64Var(&c.PresenceUsers, "presence-users", c.PresenceUsers, "users of the per-user expiry rows")
	fs.Uint64Var(&c.ExpiryIDs, "expiry-ids", c.ExpiryIDs, "ids that expire in the mass expiry rows (a multiple of 100)")
	fs.DurationVar(&c.ExpiryTTL, "expiry-ttl", c.ExpiryTTL, "least time from arming the mass expiry's ids to their first deadline (more when loading them was slow)")
	fs.DurationVar(&c.ExpirySpread, "expiry-spread", c.ExpirySpread, "time over which the mass expiry's deadlines are spread")
	fs.DurationVar(&c.HistoryCounts, "history-counts", c.HistoryCounts, "stretch of per-second counts recorded for the history count rows")
	fs.DurationVar(&c.HistoryRange, "history-range", c.HistoryRange, "stretch a BITHISTORY query reads")
	fs.Uint64Var(&c.HistoryIDs, "history-ids", c.HistoryIDs, "ids online in each history snapshot, and in the live key of the history write rows")
	fs.IntVar(&c.HistorySnapshots, "history-snapshots", c.HistorySnapshots, "minute snapshots of the history disk row")
	fs.DurationVar(&c.HistoryInterval, "history-interval", c.HistoryInterval, "presenced's --history-interval in the history write rows")
	fs.Func("only", "comma-separated row groups to run: "+strings.Join(allGroups, ", ")+", or replication (modes, cluster, failover, restart), history (history-reads, history-writes)", func(v string) error {
		c.Groups = parseGroups(v)
		return nil
	})
	return fs
}

// parseGroups splits a comma-separated list of group names, expanding
// aliases; Config.Validate rejects unknown names.
func parseGroups(v string) []string {
	var groups []string
	for _, g := range strings.Split(v, ",") {
		g = strings.TrimSpace(g)
		if expanded, ok := groupAliases[g]; ok {
			groups = append(groups, expanded...)
		} else if g != "" {
			groups = append(groups, g)
		}
	}
	return groups
}

// parseOptions parses args. With -quick, the quick defaults replace the
// full ones and the other flags given still override them.
func parseOptions(args []string, output io.Writer) (options, error) {
	o := options{cfg: DefaultConfig()}
	if err := newFlagSet(&o, output).Parse(args); err != nil {
		return o, err
	}
	if o.quick {
		o = options{cfg: QuickConfig(), quick: true}
		if err := newFlagSet(&o, output).Parse(args); err != nil {
			return o, err
		}
	}
	return o, o.cfg.Validate()
}

// commandLine renders how the benchmark was invoked, without the path of
// the temporary binary that go run builds.
func commandLine(args []string) string {
	parts := []string{"go", "run", "./bench"}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t'\"$`\\") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

func main() {
	o, err := parseOptions(os.Args[1:], os.Stderr)
	if err == flag.ErrHelp {
		return
	}
	if err == nil {
		_, err = run(o, commandLine(os.Args[1:]), os.Stdout, os.Stderr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// run runs the benchmark, writes the report to o.out (or to stdout when
// o.out is empty) and returns it. Progress goes to log.
func run(o options, command string, stdout, log io.Writer) (*Report, error) {
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	logf := func(format string, args ...any) { fmt.Fprintf(log, format+"\n", args...) }
	rep, err := runSuite(o.cfg, command, logf)
	if err != nil {
		return nil, err
	}
	if o.out == "" {
		_, err = stdout.Write(rep.Markdown())
	} else {
		err = os.WriteFile(o.out, rep.Markdown(), 0o644)
	}
	return rep, err
}
