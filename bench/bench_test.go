package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/presenced/presenced/server/redisserver"
)

// buildPresenced builds cmd/presenced into a temporary directory.
func buildPresenced(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "presenced")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/presenced/presenced/cmd/presenced").CombinedOutput()
	if err != nil {
		t.Fatalf("building presenced: %v\n%s", err, out)
	}
	return bin
}

// wantRows are the rows of every report, by group title.
var wantRows = map[string][]string{
	"Pub/sub across nodes": {"PUBLISH on the leader, pipeline 64, a subscriber on each of the 2 other nodes",
		"PUBLISH on the leader, pipeline 1, a subscriber on each of the 2 other nodes"},
	"HyperLogLog":             {"PFADD, pipeline 64", "PFADD, pipeline 1", "PFCOUNT of one key, pipeline 64"},
	"Large values":            {"SET of a 100 KB value, pipeline 1", "GET of a 100 KB value, pipeline 1"},
	"Heartbeats":              {"SETBIT heartbeat, pipeline 64", "SETBIT heartbeat, pipeline 1", "GETBIT, pipeline 64", "SETBIT heartbeat, pipeline 64, a client tracking the key"},
	"BITCOUNT of a whole key": {"BITCOUNT, 20k ids in 1M", "BITCOUNT, 500k ids in 1M"},
	"Memory for the data": {"20k random ids in a 1M-id space", "500k random ids in a 1M-id space",
		"50k random ids in a 40M-id space"},
	"Persistence modes, one node": {"SETBIT, pipeline 64, appendonly no", "SETBIT, pipeline 1, appendonly no",
		"SETBIT, pipeline 64, appendfsync always", "SETBIT, pipeline 1, appendfsync always",
		"SETBIT, pipeline 64, appendfsync everysec", "SETBIT, pipeline 1, appendfsync everysec"},
	"3-node cluster": wantClusterRows(),
	"Failover": {"SIGKILL of the leader until the first write succeeds",
		"SIGKILL of the leader until every connection to a surviving node has written",
		"SIGTERM of the leader until the first write succeeds",
		"SIGTERM of the leader until every connection to a surviving node has written"},
	"Restart of a node holding 500k ids in 1M": {"restart after SIGTERM, until the data is served",
		"restart after SIGKILL, until the data is served"},
	"Write latency while the log is compacted, 500k ids in 1M": {"SETBIT, pipeline 1, during RAFT SNAPSHOT",
		"SETBIT, pipeline 1, during BGREWRITEAOF"},
	"Per-bit expiry: BITSETEX vs SETBIT, both on presenced": {"BITSETEX heartbeats, 64 ids per command, appendonly no",
		"BITSETEX heartbeats, 1 id per command, pipeline 64, appendonly no",
		"BITSETEX heartbeats, 64 ids per command, appendfsync always",
		"BITSETEX heartbeats, 1 id per command, pipeline 64, appendfsync always"},
	"Per-bit expiry vs the Redis recipes": {"GETBITS of 500 offsets vs 500 pipelined GETBITs, 20k ids in 1M",
		"seed pattern: SETBIT under a bit-TTL rule vs SETBIT + EXPIRE, pipeline 64 heartbeats",
		"per-user expiry, heartbeats of 100k users (distinct random ids in 1M), pipeline 64"},
	"Memory for per-user expiry":           {"per-user expiry, 100k users (distinct random ids in 1M): BITSETEX vs ZADD"},
	"Expiry at 500k online: memory":        {"500k ids in 1M armed with BITPSETEX, MEMORY USAGE", "500k ids in 1M armed with BITPSETEX, RssAnon"},
	"Expiry at 500k online: CPU":           {"steady state: 500k online in 1M, heartbeats every 30s, 90s TTL, 1% churn (in process)", "mass expiry of 250k ids, no client load"},
	"Expiry at 500k online: write latency": {"SETBIT, pipeline 1, during the expiry of 250k ids"},
	"Expiry at 500k online: ticks":         {"a tick of the steady state: 500k online in 1M, heartbeats every 30s, 90s TTL, 1% churn (in process)"},
	"History: reads of the past": {"`BITCOUNT online:history:counts AT <t>`, 1 day of per-second counts",
		"`BITHISTORY online:history:counts <from> <to> STEP 300` over 12 hours",
		"`BITHISTORY online:history:counts <from> <to> STEP 300` over 12 hours AGGREGATE avg",
		"`GETBIT online:history:members <offset> AT <t>`, 100k-id snapshots",
		"`BITCOUNT online:history:members 0 -1 AT <t>`, 100k-id snapshots"},
	"History: disk for minute snapshots": {"10 minute snapshots of 100k online in 1M, 2% churn a minute"},
	"History: write latency while snapshots are written": {
		"`SETBIT online:bitmap:0 <random id> 1` on a 100k-id key snapshot every 1s: round trips overlapping a snapshot",
		"`SETBIT online:bitmap:0 <random id> 1` on a 100k-id key snapshot every 1s: whole runs"},
}

// wantClusterRows are the rows of the 3-node cluster group, in each
// persistence mode.
func wantClusterRows() []string {
	var rows []string
	for _, m := range persistenceModes {
		for _, where := range []string{"clients on the leader", "clients on every node"} {
			for _, pipeline := range []int{64, 1} {
				rows = append(rows, fmt.Sprintf("SETBIT, pipeline %d, 3 nodes, %s, %s", pipeline, where, m.name))
			}
		}
	}
	return rows
}

// TestQuickRun runs the whole benchmark in quick mode against real
// servers and checks that the report has every row, sane figures and
// ratios that match them. It asserts nothing about speed.
func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers and loads data")
	}
	redisserver.RequireProgram(t, "redis-server")
	bin := buildPresenced(t)
	out := filepath.Join(t.TempDir(), "RESULTS.md")
	args := []string{"-quick", "-presenced", bin, "-out", out}
	o, err := parseOptions(args, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	rep, err := run(o, commandLine(args), os.Stdout, &log)
	if err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log.String())
	}
	md, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	text := string(md)
	for _, want := range []string{"go run ./bench -quick", "| redis-server | 7.", "| Go | go1."} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if len(rep.Groups) != len(wantRows) {
		t.Errorf("%d groups, want %d", len(rep.Groups), len(wantRows))
	}
	for _, g := range rep.Groups {
		var names []string
		for _, r := range g.Rows {
			names = append(names, r.Workload)
			checkRow(t, o.cfg, g, r)
			checkRendered(t, text, g, r)
		}
		for _, r := range g.Times {
			names = append(names, r.Workload)
			checkTimes(t, o.cfg, g, r)
		}
		for _, r := range g.Pauses {
			names = append(names, r.Workload)
			checkPause(t, r)
		}
		names = append(names, historyRowNames(t, g)...)
		for _, r := range g.CPUs {
			names = append(names, r.Workload)
			if r.Took <= 0 || r.CPU <= 0 || r.Ref < 0 || r.RefName == "" {
				t.Errorf("%s: implausible %+v", r.Workload, r)
			}
		}
		if want := wantRows[g.Title]; fmt.Sprint(names) != fmt.Sprint(want) {
			t.Errorf("group %q has rows %q, want %q", g.Title, names, want)
		}
		checkLogCosts(t, g)
	}
	if t.Failed() {
		t.Logf("report:\n%s\nlog:\n%s", md, log.String())
	}
}

// checkLogCosts checks that a group of SETBIT rows in each persistence
// mode ends its note with what an entry cost in each pipeline-1 row.
func checkLogCosts(t *testing.T, g Group) {
	t.Helper()
	want := 0
	for _, r := range g.Rows {
		if strings.HasPrefix(r.Workload, "SETBIT, pipeline 1, ") {
			want++
		}
	}
	if g.Title != "Persistence modes, one node" && g.Title != "3-node cluster" {
		want = 0
	}
	if got := strings.Count(g.Note, "from proposal to apply"); got != want || strings.Contains(g.Note, "no entry committed") {
		t.Errorf("group %q: the note describes %d entry costs, want %d: %s", g.Title, got, want, g.Note)
	}
	alone := 0
	if g.Title == "Persistence modes, one node" {
		alone = len(persistenceModes)
	}
	if got := strings.Count(g.Note, " commands a second, "); got != alone {
		t.Errorf("group %q: the note has %d rates of the log alone, want %d: %s", g.Title, got, alone, g.Note)
	}
}

// checkRow checks that a row's figures are plausible.
func checkRow(t *testing.T, cfg Config, g Group, r Row) {
	t.Helper()
	if r.Redis.Value > 0 && r.Ratio() != r.Presenced.Value/r.Redis.Value || r.Redis.Value <= 0 && !math.IsNaN(r.Ratio()) {
		t.Errorf("%s: ratio %v, want %v / %v (NaN below a positive reference)", r.Workload, r.Ratio(), r.Presenced.Value, r.Redis.Value)
	}
	for i, m := range []Measurement{r.Presenced, r.Redis} {
		who := serverNames[i]
		if floor := rowFloor(g, r, i); m.Value <= floor {
			t.Errorf("%s on %s: figure %v, want > %v", r.Workload, who, m.Value, floor)
		}
		if !g.Throughput {
			continue
		}
		if m.P50 <= 0 || m.P99 < m.P50 {
			t.Errorf("%s on %s: p50 %v, p99 %v", r.Workload, who, m.P50, m.P99)
		}
		if m.GenCPU <= 0 {
			t.Errorf("%s on %s: load generator used no CPU", r.Workload, who)
		}
	}
	// Redis's string for the sparse data set spans the whole id space.
	if r.Workload == wantRows["Memory for the data"][2] && r.Redis.Value < float64(cfg.WideSpace/8)*0.9 {
		t.Errorf("%s: redis grew by %v bytes, less than its %d-byte string", r.Workload, r.Redis.Value, cfg.WideSpace/8)
	}
}

// rssNoise bounds how far presenced's RSS can move between two settled
// readings for reasons other than the data: the Go runtime keeps or returns
// whole pages of heap, stacks and buffers. The quick data sets are smaller
// than that (20k ids in 1M take about 40 KiB), so their RSS growth can read
// below zero.
const rssNoise = 1 << 20

// rowFloor is the figure that column i of r must exceed: 0, or -rssNoise
// for an RSS growth of presenced (both columns of the RssAnon rows are
// presenced's: the deadlines and the bitmap).
func rowFloor(g Group, r Row, i int) float64 {
	switch {
	case strings.HasSuffix(r.Workload, "RssAnon"):
		return -rssNoise
	case (g.Title == "Memory for the data" || g.Title == "Memory for per-user expiry") && serverNames[i] == "presenced":
		return -rssNoise
	}
	return 0
}

// checkTimes checks that a timed row of g has a positive time per trial,
// and redis-server's when it has them.
func checkTimes(t *testing.T, cfg Config, g Group, r TimeRow) {
	t.Helper()
	trials := cfg.RestartTrials
	if g.Title == "Failover" {
		trials = cfg.FailoverTrials
	}
	if len(r.Presenced) != trials || (len(r.Redis) != 0 && len(r.Redis) != trials) {
		t.Errorf("%s: %d presenced and %d redis trials, want %d", r.Workload, len(r.Presenced), len(r.Redis), trials)
	}
	for _, d := range append(slices.Clone(r.Presenced), r.Redis...) {
		if d <= 0 || d > time.Minute {
			t.Errorf("%s: a trial took %v", r.Workload, d)
		}
	}
}

// checkPause checks that a compaction took time and that round trips
// overlapping it were measured.
func checkPause(t *testing.T, r PauseRow) {
	t.Helper()
	if r.Took <= 0 || r.During.P50 <= 0 || r.During.P99 < r.During.P50 || r.Max < r.During.P99 ||
		r.Outside.Value <= 0 || r.Outside.P50 <= 0 {
		t.Errorf("%s on %s: implausible %+v", r.Workload, r.Server, r)
	}
}

// checkRendered checks that the Markdown table row of r shows its
// figures, its ratio and whether the target is met.
func checkRendered(t *testing.T, md string, g Group, r Row) {
	t.Helper()
	value := formatBytes
	if g.Throughput {
		value = formatOps
	}
	target, met := r.targetCells()
	want := fmt.Sprintf("| %s | %s | %s | %s | %s | %s |", r.Workload, value(r.Presenced.Value),
		value(r.Redis.Value), formatRatio(r.Ratio()), target, met)
	if !strings.Contains(md, want) {
		t.Errorf("report lacks the line %q", want)
	}
}
