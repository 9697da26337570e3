package server

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/presenced/presenced/cluster"
	"github.com/presenced/presenced/proto"
)

// The latency monitor is Redis's: with latency-monitor-threshold set,
// whatever takes that many milliseconds or more is a latency event, and
// each event keeps its latest samples, one a second, and its worst ever,
// for LATENCY LATEST, HISTORY, GRAPH, DOCTOR and RESET. The events are
// Redis's names for presenced's work of the same kind:
//
//   - "command", and "fast-command" for the commands Redis flags fast: a
//     command's time, as SLOWLOG has it;
//   - "aof-fsync-always": a write to the raft log with appendfsync always,
//     its flush included, as Redis's flush of its AOF;
//   - "aof-write-alone": a write to the raft log with everysec or no, as
//     Redis's write of its AOF with no fsync or child in the way;
//   - "expire-cycle": the expiry of the keys and bits whose time passed,
//     at the start of an entry's apply, as Redis's active expiry cycle.
//
// Redis's events about forks and eviction never occur here.

// latencySamples is how many samples an event keeps, as LATENCY_TS_LEN.
const latencySamples = 160

// latencySample is one sample of an event: the Unix second it came in,
// and the worst latency of that second, in milliseconds.
type latencySample struct {
	time, latency int64
}

// latencySeries is an event's samples, a ring whose next slot is next,
// and its worst latency ever.
type latencySeries struct {
	samples [latencySamples]latencySample
	next    int
	max     int64
}

// latencyEvents holds the latency monitor's events by name.
type latencyEvents struct {
	mu     sync.Mutex
	byName map[string]*latencySeries
}

// addIfSlow records event if it took d, latency-monitor-threshold or
// more by cfg.
func (ev *latencyEvents) addIfSlow(event string, d time.Duration, cfg *Config) {
	if ms := d.Milliseconds(); cfg.LatencyMonitorThreshold > 0 && ms >= cfg.LatencyMonitorThreshold {
		ev.add(event, ms)
	}
}

// logWritten is the node's Config.LogWritten: a slow write to the raft log
// is an AOF event, with appendonly yes; with no, the log is in memory.
func (s *Server) logWritten(d time.Duration) {
	cfg := s.settings.current()
	if !cfg.Cluster.AppendOnly {
		return
	}
	event := "aof-write-alone"
	if cfg.Cluster.AppendFsync == cluster.FsyncAlways {
		event = "aof-fsync-always"
	}
	s.events.addIfSlow(event, d, cfg)
}

// expiryTook is the store's expiry observer: a slow expiry is an
// expire-cycle event.
func (s *Server) expiryTook(d time.Duration) {
	s.events.addIfSlow("expire-cycle", d, s.settings.current())
}

// commandEvent is the event a command's latency counts under.
func commandEvent(spec *proto.Spec) string {
	if spec.Flags&proto.Fast != 0 {
		return "fast-command"
	}
	return "command"
}

// add records a latency of ms milliseconds of event now, as Redis's
// latencyAddSample does: a second sample in the same second only raises
// the first.
func (ev *latencyEvents) add(event string, ms int64) {
	now := time.Now().Unix()
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if ev.byName == nil {
		ev.byName = map[string]*latencySeries{}
	}
	ts := ev.byName[event]
	if ts == nil {
		ts = &latencySeries{}
		ev.byName[event] = ts
	}
	ts.max = max(ts.max, ms)
	if prev := &ts.samples[(ts.next+latencySamples-1)%latencySamples]; prev.time == now {
		prev.latency = max(prev.latency, ms)
		return
	}
	ts.samples[ts.next] = latencySample{now, ms}
	ts.next = (ts.next + 1) % latencySamples
}

// series returns a copy of event's samples, oldest first, and its worst
// latency, or false if the event never occurred (since its reset).
func (ev *latencyEvents) series(event string) ([]latencySample, int64, bool) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ts := ev.byName[event]
	if ts == nil {
		return nil, 0, false
	}
	var out []latencySample
	for j := range latencySamples {
		if s := ts.samples[(ts.next+j)%latencySamples]; s.time != 0 {
			out = append(out, s)
		}
	}
	return out, ts.max, true
}

// names returns the events that occurred, in order.
func (ev *latencyEvents) names() []string {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return slices.Sorted(maps.Keys(ev.byName))
}

// reset forgets the events named (every event, when none is), whatever
// the case of their names, and returns how many it forgot.
func (ev *latencyEvents) reset(names [][]byte) int64 {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	var n int64
	for name := range ev.byName {
		if len(names) == 0 || slices.ContainsFunc(names, func(b []byte) bool { return strings.EqualFold(string(b), name) }) {
			delete(ev.byName, name)
			n++
		}
	}
	return n
}

// latencyCommand answers LATENCY.
func latencyCommand(c *client, args [][]byte) {
	sub := c.subcommand(args)
	if sub == nil {
		return
	}
	ev := &c.s.events
	switch sub.Name {
	case "latest":
		names := ev.names()
		c.out.Array(len(names))
		for _, name := range names {
			samples, worst, _ := ev.series(name)
			last := samples[len(samples)-1]
			c.out.Array(4)
			c.out.BulkString(name)
			c.out.Int(last.time)
			c.out.Int(last.latency)
			c.out.Int(worst)
		}
	case "history":
		samples, _, _ := ev.series(string(args[2]))
		c.out.Array(len(samples))
		for _, s := range samples {
			c.out.Array(2)
			c.out.Int(s.time)
			c.out.Int(s.latency)
		}
	case "graph":
		samples, worst, ok := ev.series(string(args[2]))
		if !ok {
			c.out.Error(fmt.Sprintf("ERR No samples available for event '%s'", args[2]))
			return
		}
		c.out.Verbatim([]byte(latencyGraph(string(args[2]), samples, worst, time.Now().Unix())))
	case "doctor":
		c.out.Verbatim([]byte(c.s.latencyReport()))
	case "reset":
		c.out.Int(ev.reset(args[2:]))
	case "histogram":
		c.latencyHistogramCommand(args[2:])
	case "help":
		c.help("LATENCY",
			"DOCTOR", "    Return a human readable latency analysis report.",
			"GRAPH <event>", "    Return an ASCII latency graph for the <event> class.",
			"HISTORY <event>", "    Return time-latency samples for the <event> class.",
			"LATEST", "    Return the latest latency samples for all events.",
			"RESET [<event> ...]", "    Reset latency data of one or more <event> classes.",
			"    (default: reset all data for all event classes)",
			"HISTOGRAM [COMMAND ...]", "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
			"    If no commands are specified then all histograms are replied.")
	}
}

// latencyGraph is LATENCY GRAPH's reply: a heading, then the samples as
// Redis's sparkline of them, each labelled with how long ago it came in.
func latencyGraph(event string, samples []latencySample, worst, now int64) string {
	values := make([]float64, len(samples))
	labels := make([]string, len(samples))
	low, high := samples[0].latency, samples[0].latency
	for i, s := range samples {
		low, high = min(low, s.latency), max(high, s.latency)
		values[i] = float64(s.latency)
		switch ago := now - s.time; {
		case ago < 60:
			labels[i] = fmt.Sprintf("%ds", ago)
		case ago < 3600:
			labels[i] = fmt.Sprintf("%dm", ago/60)
		case ago < 3600*24:
			labels[i] = fmt.Sprintf("%dh", ago/3600)
		default:
			labels[i] = fmt.Sprintf("%dd", ago/(3600*24))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s - high %d ms, low %d ms (all time high %d ms)\n", event, high, low, worst)
	b.WriteString(strings.Repeat("-", 80) + "\n")
	sparkline(&b, values, labels, 80, 4)
	return b.String()
}

// sparkline writes values as Redis's sparklineRender draws them with
// SPARKLINE_FILL, columns wide and rows high, with each value's label
// written downwards beneath it.
func sparkline(b *strings.Builder, values []float64, labels []string, columns, rows int) {
	const charset = "_o#"
	low, high := values[0], values[0]
	for _, v := range values[1:] {
		if v < low {
			low = v
		} else if v > high {
			high = v
		}
	}
	relmax := high - low
	if relmax == 0 {
		relmax = 1
	}
	steps := len(charset) * rows
	for from := 0; from < len(values); from += columns {
		if from > 0 {
			b.WriteByte('\n')
		}
		part := values[from:min(from+columns, len(values))]
		line := make([]byte, len(part))
		for row := 0; ; row++ {
			more := false
			for j := range line {
				line[j] = ' '
			}
			for j, v := range part {
				step := int(float64(int((v-low)*float64(steps))) / relmax)
				step = min(max(step, 0), steps-1)
				if row < rows {
					more = true
					switch idx := step - (rows-row-1)*len(charset); {
					case idx >= 0 && idx < len(charset):
						line[j] = charset[idx]
					case idx >= len(charset):
						line[j] = '|'
					}
					continue
				}
				if row-rows < 1 { // the margin above the labels
					more = true
					break
				}
				if label := labels[from+j]; row-rows-1 < len(label) {
					more = true
					line[j] = label[row-rows-1]
				}
			}
			if !more {
				break
			}
			b.Write(line)
			b.WriteByte('\n')
		}
	}
}

// latencyReport is LATENCY DOCTOR's reply, Redis's createLatencyReport
// for the events presenced has: each event's spikes, then advice.
func (s *Server) latencyReport() string {
	cfg := s.settings.current()
	names := s.events.names()
	if len(names) == 0 && cfg.LatencyMonitorThreshold == 0 {
		return "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n"
	}
	var b strings.Builder
	var slowlogEnabled, slowlogTuning, slowlogInspect, scheduler, localDisk, ssd, dataWriteback, relaxFsync, largeObjects, disableTHP bool
	advices := 0
	now := time.Now().Unix()
	for i, name := range names {
		samples, worst, _ := s.events.series(name)
		if i == 0 {
			b.WriteString("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n")
		}
		avg, mad, period := analyzeLatency(samples, now)
		fmt.Fprintf(&b, "%d. %s: %d latency spikes (average %dms, mean deviation %dms, period %.2f sec). Worst all time event %dms.",
			i+1, name, len(samples), avg, mad, float64(period)/float64(len(samples)), worst)
		switch name {
		case "command":
			if cfg.SlowlogSlowerThan < 0 {
				slowlogEnabled = true
				advices++
			} else if cfg.SlowlogSlowerThan/1000 > cfg.LatencyMonitorThreshold {
				slowlogTuning = true
				advices++
			}
			slowlogInspect, largeObjects = true, true
			advices += 2
		case "fast-command":
			scheduler = true
			advices++
		case "aof-write-alone":
			localDisk, dataWriteback, ssd = true, true, true
			advices += 3
		case "aof-fsync-always":
			relaxFsync = true
			advices++
		case "expire-cycle":
			// Redis also advises a higher hz, which here is the log's
			// tick and cannot be set.
			largeObjects = true
			advices += 2
		}
		b.WriteString("\n")
	}
	if anonHugePages() > 0 {
		disableTHP = true
		advices++
	}
	switch {
	case len(names) == 0 && advices == 0:
		b.WriteString("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n")
		return b.String()
	case advices == 0:
		b.WriteString("\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n")
		return b.String()
	}
	b.WriteString("\nI have a few advices for you:\n\n")
	if slowlogEnabled {
		fmt.Fprintf(&b, "- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than %d'. If the Slow log is disabled Redis is not able to log slow commands execution for you.\n", cfg.LatencyMonitorThreshold*1000)
	}
	if slowlogTuning {
		fmt.Fprintf(&b, "- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than %d'.\n", cfg.LatencyMonitorThreshold*1000)
	}
	if slowlogInspect {
		b.WriteString("- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n")
	}
	if scheduler {
		b.WriteString("- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to:\n" +
			"  1) Lower the system load.\n" +
			"  2) Use a computer / VM just for Redis if you are running other software in the same system.\n" +
			"  3) Check if you have a \"noisy neighbour\" problem.\n" +
			"  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n" +
			"  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are using Jemalloc. However this may create fragmentation problems.\n")
	}
	if localDisk {
		b.WriteString("- It is strongly advised to use local disks for persistence, especially if you are using AOF. Remote disks provided by platform-as-a-service providers are known to be slow.\n")
	}
	if ssd {
		b.WriteString("- SSD disks are able to reduce fsync latency, and total time needed for snapshotting and AOF log rewriting (resulting in smaller memory usage and smaller final AOF rewrite buffer flushes). With extremely high write load SSD disks can be a good option. However Redis should perform reasonably with high load using normal disks. Use this advice as a last resort.\n")
	}
	if dataWriteback {
		b.WriteString("- Mounting ext3/4 filesystems with data=writeback can provide a performance boost compared to data=ordered, however this mode of operation provides less guarantees, and sometimes it can happen that after a hard crash the AOF file will have a half-written command at the end and will require to be repaired before Redis restarts.\n")
	}
	if relaxFsync && cfg.Cluster.AppendFsync == cluster.FsyncAlways {
		b.WriteString("- Your fsync policy is set to 'always'. It is very hard to get good performances with such a setup, if possible try to relax the fsync policy to 'onesec'.\n")
	}
	if largeObjects {
		b.WriteString("- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n")
	}
	if disableTHP {
		b.WriteString("- I detected a non zero amount of anonymous huge pages used by your process. This creates very serious latency events in different conditions, especially when Redis is persisting on disk. To disable THP support use the command 'echo never > /sys/kernel/mm/transparent_hugepage/enabled', make sure to also add it into /etc/rc.local so that the command will be executed again after a reboot. Note that even if you have already disabled THP, you still need to restart the Redis process to get rid of the huge pages already created.\n")
	}
	return b.String()
}

// analyzeLatency returns the average of samples, their mean deviation
// from it, and the seconds since the oldest (at least 1), as Redis's
// analyzeLatencyForEvent computes them, in whole milliseconds.
func analyzeLatency(samples []latencySample, now int64) (avg, mad, period int64) {
	var sum int64
	oldest := samples[0].time
	for _, s := range samples {
		sum += s.latency
		oldest = min(oldest, s.time)
	}
	avg = sum / int64(len(samples))
	sum = 0
	for _, s := range samples {
		d := avg - s.latency
		sum += max(d, -d)
	}
	return avg, sum / int64(len(samples)), max(now-oldest, 1)
}
