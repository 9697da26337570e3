package main

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Target is a bound on the ratio presenced / redis-server.
type Target struct {
	AtLeast bool    // the ratio must be >= Ratio; otherwise <= Ratio
	Ratio   float64 // the bound
}

// String renders the target as in the issue, e.g. "≥ 1.0×".
func (t Target) String() string {
	op := "≤"
	if t.AtLeast {
		op = "≥"
	}
	return fmt.Sprintf("%s %s×", op, trimFloat(t.Ratio))
}

// Met reports whether ratio satisfies the target; an undefined ratio
// (NaN) never does.
func (t Target) Met(ratio float64) bool {
	if math.IsNaN(ratio) {
		return false
	}
	if t.AtLeast {
		return ratio >= t.Ratio
	}
	return ratio <= t.Ratio
}

// Measurement is one server's figure for a row: ops/s for throughput
// rows, bytes for memory rows.
type Measurement struct {
	Value    float64
	P50, P99 time.Duration // round-trip latency; zero for memory rows
	GenCPU   float64       // cores used by the load generator (throughput rows)
	SrvCPU   float64       // cores used by the server (throughput rows)
}

// Row is one workload measured on both servers.
type Row struct {
	Workload  string
	Presenced Measurement
	Redis     Measurement
	Target    Target
}

// side returns the measurement of server i: 0 presenced (or the first
// column), 1 redis-server (or the second).
func (r *Row) side(i int) *Measurement {
	if i == 0 {
		return &r.Presenced
	}
	return &r.Redis
}

// targetCells returns the row's target and whether its ratio met it, as
// the report shows them: dashes for a row without a target.
func (r Row) targetCells() (target, met string) {
	switch {
	case r.Target == Target{}:
		return "–", "–"
	case r.Target.Met(r.Ratio()):
		return r.Target.String(), "yes"
	}
	return r.Target.String(), "no"
}

// Ratio is presenced / redis-server, NaN when the redis figure is not
// positive.
func (r Row) Ratio() float64 {
	if r.Redis.Value <= 0 {
		return math.NaN()
	}
	return r.Presenced.Value / r.Redis.Value
}

// TimeRow is a duration measured in several trials (a failover, a
// restart), with redis-server's for reference where it has one.
type TimeRow struct {
	Workload  string
	Presenced []time.Duration
	Redis     []time.Duration // empty when redis-server has no counterpart
	// Limit is the target: presenced's median is at most Limit; zero
	// means there is none.
	Limit time.Duration
}

// Met reports whether presenced's median meets the limit.
func (r TimeRow) Met() bool {
	return len(r.Presenced) > 0 && medianDuration(r.Presenced) <= r.Limit
}

// PauseRow is write latency while a server compacts its log: medians
// over trials of round trips that overlapped the compaction and of those
// that did not.
type PauseRow struct {
	Workload string
	Server   string
	// Outside and During hold the p50 and p99 of round trips that did not
	// and that did overlap the compaction; Outside.Value is the run's
	// ops/s.
	Outside, During Measurement
	Max             time.Duration // the longest round trip overlapping it
	Took            time.Duration // how long the compaction (the window) took
}

// CPURow is the CPU time presenced spent on background work (expiring
// ids) over a window, beside a reference measured in the same run.
type CPURow struct {
	Workload string
	Took     time.Duration // the window
	CPU      float64       // cores used over the window
	RefName  string        // what the reference is
	Ref      float64       // cores the reference used
	Limit    float64       // the target: CPU is at most Limit cores
}

// Met reports whether the CPU use is within the limit.
func (r CPURow) Met() bool { return r.CPU <= r.Limit }

// LatencyRow is the round-trip latency of a query on presenced with a
// bound on its p99, beside a reference measured in the same run: the
// comparable command on redis-server, or presenced in another setting.
type LatencyRow struct {
	Workload  string
	Presenced Measurement // P50 and P99; Value is queries/s
	Reference Measurement // zero when there is none
	RefName   string      // what the reference ran
	// The target: presenced's p99 is at most Limit or, when Factor is
	// positive, at most Factor times the reference's p99.
	Limit  time.Duration
	Factor float64
	// Longest, when not zero, is the longest of the measured times; the
	// target then bounds it, not the p99, by Limit.
	Longest time.Duration
	// LongestCPU, when not zero, is the most processor time any one of
	// the measured operations took on its thread: what is left of Longest
	// is time the machine gave to other work.
	LongestCPU time.Duration
}

// Bound is the p99 the target allows.
func (r LatencyRow) Bound() time.Duration {
	if r.Factor > 0 {
		return time.Duration(r.Factor * float64(r.Reference.P99))
	}
	return r.Limit
}

// Met reports whether presenced's p99 (or longest) is within the bound.
func (r LatencyRow) Met() bool {
	if r.Longest > 0 {
		return r.Longest <= r.Bound()
	}
	return r.Presenced.P99 > 0 && r.Presenced.P99 <= r.Bound()
}

// target renders the bound as the issue states it.
func (r LatencyRow) target() string {
	if r.Longest > 0 {
		took := formatDuration(r.Longest)
		if r.LongestCPU > 0 {
			took += "; " + formatDuration(r.LongestCPU) + " of CPU at most"
		}
		return "longest ≤ " + formatDuration(r.Limit) + " (took " + took + ")"
	}
	if r.Factor > 0 {
		return "p99 ≤ " + trimFloat(r.Factor) + "× reference"
	}
	return "p99 ≤ " + formatDuration(r.Limit)
}

// SizeRow is what presenced keeps on disk for a stretch of snapshots,
// with a bound, beside what the recipe it replaces, raw bitmaps copied to
// another store every few minutes, keeps for the same stretch.
type SizeRow struct {
	Workload  string
	Bytes     int64         // presenced's file
	Snapshots int           // in the file
	Span      time.Duration // the stretch the snapshots cover
	Raw       int64         // bytes of one raw bitmap
	Limit     int64         // the target: Bytes is at most Limit
}

// Met reports whether the file is within the bound.
func (r SizeRow) Met() bool { return r.Bytes <= r.Limit }

// rawEvery is what raw bitmaps taken every d over the span take.
func (r SizeRow) rawEvery(d time.Duration) float64 {
	return float64(r.Raw) * float64(r.Span/d)
}

// Group is one table of the report: Rows, Times, Pauses, CPUs, Latencies
// or Sizes.
type Group struct {
	Title      string
	Note       string // a sentence under the title
	Throughput bool   // rows are ops/s with latencies; otherwise bytes
	// Columns name the two figures of a row when they are not presenced
	// and redis-server (two commands on presenced, say); the ratio is the
	// first over the second.
	Columns [2]string
	Unit    string // what a throughput row counts per second: "ops" when empty
	Window  string // what the Pauses' window is: "compaction" when empty
	Rows    []Row
	Times   []TimeRow
	Pauses  []PauseRow
	CPUs    []CPURow
	// Latencies and Sizes are the history rows.
	Latencies []LatencyRow
	Sizes     []SizeRow
}

// columns returns the labels of a row's two figures.
func (g *Group) columns() [2]string {
	if g.Columns == ([2]string{}) {
		return [2]string{"presenced", "redis"}
	}
	return g.Columns
}

// orDefault returns v, or def when v is empty.
func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// Machine describes where the benchmark ran.
type Machine struct {
	CPU          string
	Cores        int
	GoVersion    string
	RedisVersion string
	// LoadStart and LoadEnd are the 1-minute load averages when the run
	// started and ended; above the core count, other processes competed
	// for the CPU.
	LoadStart, LoadEnd string
}

// Report is the whole benchmark result.
type Report struct {
	Machine  Machine
	Date     time.Time
	Command  string
	Settings string
	Groups   []Group
	Notes    []string
}

// Markdown renders the report.
func (rep *Report) Markdown() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# presenced vs redis-server\n\n")
	fmt.Fprintf(&b, "Produced by `%s` on %s.\n\n", rep.Command, rep.Date.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "| machine | |\n|---|---|\n")
	fmt.Fprintf(&b, "| CPU | %s, %d cores (shared by both servers and the load generator) |\n", rep.Machine.CPU, rep.Machine.Cores)
	fmt.Fprintf(&b, "| Go | %s |\n", rep.Machine.GoVersion)
	fmt.Fprintf(&b, "| redis-server | %s |\n", rep.Machine.RedisVersion)
	fmt.Fprintf(&b, "| load average at start / end | %s / %s |\n", rep.Machine.LoadStart, rep.Machine.LoadEnd)
	fmt.Fprintf(&b, "| settings | %s |\n\n", rep.Settings)
	b.WriteString("Ratio is presenced / redis-server from the same run; a target is met when the ratio is on its side of the bound.\n")
	for _, g := range rep.Groups {
		fmt.Fprintf(&b, "\n## %s\n\n", g.Title)
		if g.Note != "" {
			fmt.Fprintf(&b, "%s\n\n", g.Note)
		}
		g.writeTable(&b)
	}
	if cpu := rep.cpuTable(); cpu != "" {
		b.WriteString("\n## CPU use during the throughput runs\n\n")
		b.WriteString("Cores used (CPU seconds per wall second, medians) by the server and by the load generator; the two share the machine, so a generator near the server's figure is part of the limit.\n\n")
		b.WriteString(cpu)
	}
	if len(rep.Notes) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, n := range rep.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	return b.Bytes()
}

func (g *Group) writeTable(b *bytes.Buffer) {
	switch {
	case len(g.Times) > 0:
		g.writeTimes(b)
		return
	case len(g.Pauses) > 0:
		g.writePauses(b)
		return
	case len(g.CPUs) > 0:
		g.writeCPUs(b)
		return
	case len(g.Latencies) > 0:
		g.writeLatencies(b)
		return
	case len(g.Sizes) > 0:
		g.writeSizes(b)
		return
	}
	c := g.columns()
	if g.Throughput {
		unit := orDefault(g.Unit, "ops") + "/s"
		fmt.Fprintf(b, "| workload | %s %s | %s %s | ratio | target | met | %s p50 | %s p99 | %s p50 | %s p99 |\n",
			c[0], unit, c[1], unit, c[0], c[0], c[1], c[1])
		b.WriteString("|---|--:|--:|--:|---|---|--:|--:|--:|--:|\n")
	} else {
		fmt.Fprintf(b, "| workload | %s | %s | ratio | target | met |\n", c[0], c[1])
		b.WriteString("|---|--:|--:|--:|---|---|\n")
	}
	for _, r := range g.Rows {
		ratio := r.Ratio()
		target, met := r.targetCells()
		value := formatBytes
		if g.Throughput {
			value = formatOps
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |", r.Workload, value(r.Presenced.Value),
			value(r.Redis.Value), formatRatio(ratio), target, met)
		if g.Throughput {
			fmt.Fprintf(b, " %s | %s | %s | %s |", formatDuration(r.Presenced.P50), formatDuration(r.Presenced.P99),
				formatDuration(r.Redis.P50), formatDuration(r.Redis.P99))
		}
		b.WriteByte('\n')
	}
}

func (g *Group) writeTimes(b *bytes.Buffer) {
	b.WriteString("| workload | presenced median | presenced min | presenced max | trials | target | met | redis median (reference) |\n")
	b.WriteString("|---|--:|--:|--:|--:|---|---|--:|\n")
	for _, r := range g.Times {
		target, met, redis := "–", "–", "–"
		if r.Limit > 0 {
			target, met = "≤ "+formatDuration(r.Limit), "no"
			if r.Met() {
				met = "yes"
			}
		}
		if len(r.Redis) > 0 {
			redis = formatDuration(medianDuration(r.Redis))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %d | %s | %s | %s |\n", r.Workload,
			formatDuration(medianDuration(r.Presenced)), formatDuration(slices.Min(r.Presenced)),
			formatDuration(slices.Max(r.Presenced)), len(r.Presenced), target, met, redis)
	}
}

func (g *Group) writePauses(b *bytes.Buffer) {
	fmt.Fprintf(b, "| workload | server | ops/s | p50 outside | p99 outside | p50 during | p99 during | max during | %s took |\n", orDefault(g.Window, "compaction"))
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range g.Pauses {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Workload, r.Server,
			formatOps(r.Outside.Value), formatDuration(r.Outside.P50), formatDuration(r.Outside.P99),
			formatDuration(r.During.P50), formatDuration(r.During.P99), formatDuration(r.Max), formatDuration(r.Took))
	}
}

func (g *Group) writeCPUs(b *bytes.Buffer) {
	b.WriteString("| workload | window | presenced CPU | reference | reference CPU | target | met |\n")
	b.WriteString("|---|--:|--:|---|--:|---|---|\n")
	for _, r := range g.CPUs {
		met := "no"
		if r.Met() {
			met = "yes"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | ≤ %s | %s |\n", r.Workload, formatDuration(r.Took),
			formatCore(r.CPU), r.RefName, formatCore(r.Ref), formatCore(r.Limit), met)
	}
}

func (g *Group) writeLatencies(b *bytes.Buffer) {
	b.WriteString("| workload | presenced p50 | presenced p99 | target | met | reference | reference p50 | reference p99 |\n")
	b.WriteString("|---|--:|--:|---|---|---|--:|--:|\n")
	for _, r := range g.Latencies {
		ref, p50, p99 := "–", "–", "–"
		if r.RefName != "" {
			ref, p50, p99 = r.RefName, formatDuration(r.Reference.P50), formatDuration(r.Reference.P99)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Workload,
			formatDuration(r.Presenced.P50), formatDuration(r.Presenced.P99), r.target(), yesNo(r.Met()), ref, p50, p99)
	}
}

func (g *Group) writeSizes(b *bytes.Buffer) {
	b.WriteString("| workload | presenced on disk | per snapshot | target | met | raw bitmap every 5 minutes | raw bitmap every minute |\n")
	b.WriteString("|---|--:|--:|---|---|--:|--:|\n")
	for _, r := range g.Sizes {
		fmt.Fprintf(b, "| %s | %s | %s | ≤ %s | %s | %s | %s |\n", r.Workload, formatSize(float64(r.Bytes)),
			formatSize(float64(r.Bytes)/float64(max(r.Snapshots, 1))), formatSize(float64(r.Limit)), yesNo(r.Met()),
			formatSize(r.rawEvery(5*time.Minute)), formatSize(r.rawEvery(time.Minute)))
	}
}

// yesNo renders whether a target is met.
func yesNo(met bool) string {
	if met {
		return "yes"
	}
	return "no"
}

// formatCore writes cores as a percentage of one core.
func formatCore(v float64) string {
	return strconv.FormatFloat(100*v, 'f', 1, 64) + "% of a core"
}

// medianDuration returns the median of d.
func medianDuration(d []time.Duration) time.Duration {
	v := make([]float64, len(d))
	for i, x := range d {
		v[i] = float64(x)
	}
	return time.Duration(median(v))
}

// cpuTable renders the CPU use of every throughput row, or "" when there
// is none.
func (rep *Report) cpuTable() string {
	var b strings.Builder
	for _, g := range rep.Groups {
		if !g.Throughput {
			continue
		}
		for _, r := range g.Rows {
			if b.Len() == 0 {
				b.WriteString("| workload | presenced | generator (vs presenced) | redis | generator (vs redis) |\n|---|--:|--:|--:|--:|\n")
			}
			name := r.Workload
			if g.Columns != ([2]string{}) {
				name = fmt.Sprintf("%s (columns: %s, %s)", name, g.Columns[0], g.Columns[1])
			}
			fmt.Fprintf(&b, "| %s | %.2f | %.2f | %.2f | %.2f |\n", name,
				r.Presenced.SrvCPU, r.Presenced.GenCPU, r.Redis.SrvCPU, r.Redis.GenCPU)
		}
	}
	return b.String()
}

func formatOps(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func formatBytes(v float64) string {
	switch {
	case math.Abs(v) >= 1<<20:
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	case math.Abs(v) >= 1<<10:
		return fmt.Sprintf("%.0f KiB", v/(1<<10))
	}
	return fmt.Sprintf("%.0f B", v)
}

// formatSize writes a size on disk in decimal units, as the issue states
// them (a 12.5 MB bitmap, 2 GB).
func formatSize(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.2f GB", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.1f MB", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1f kB", v/1e3)
	}
	return fmt.Sprintf("%.0f B", v)
}

// formatRatio shows three significant digits, so a ratio just past its
// bound does not print as the bound.
func formatRatio(r float64) string {
	if math.IsNaN(r) {
		return "n/a"
	}
	decimals := 0
	for lim := 100.0; decimals < 6 && math.Abs(r) < lim; lim /= 10 {
		decimals++
	}
	return strconv.FormatFloat(r, 'f', decimals, 64) + "×"
}

func formatDuration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
}

// trimFloat formats v with at least one decimal and no trailing zeros
// beyond it: 1 -> "1.0", 0.05 -> "0.05".
func trimFloat(v float64) string {
	s := fmt.Sprintf("%.4f", v)
	s = strings.TrimRight(s, "0")
	if strings.HasSuffix(s, ".") {
		s += "0"
	}
	return s
}
