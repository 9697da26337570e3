package server

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
)

// memoryReport is what MEMORY STATS and MEMORY DOCTOR say of the node's
// memory, in Redis's terms, from the Go runtime's counts: the heap's live
// objects are Redis's allocations, its spans in use the allocator's
// active pages, its pages not returned to the OS the allocator's
// resident ones, and everything the runtime took from the OS but gave
// back the resident set.
type memoryReport struct {
	peak, total, startup        uint64 // HeapSys (as INFO's used_memory_peak), HeapAlloc, HeapAlloc at start
	clients                     uint64 // the large buffers connections keep between batches (see buffers.go)
	active, resident, rss       uint64
	keys                        int
	dbs                         []int // the databases that hold keys
	allocatorFrag, allocatorRSS float64
	rssOverhead, fragmentation  float64
	allocatorFragBytes          int64
	allocatorRSSBytes           int64
	rssOverheadBytes, fragBytes int64
	datasetBytes, overheadTotal uint64
	perKey                      uint64
	datasetPercent, peakPercent float64
}

func (s *Server) memoryReport() memoryReport {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	r := memoryReport{peak: m.HeapSys, total: m.HeapAlloc, startup: min(s.startupHeap, m.HeapAlloc),
		active: m.HeapInuse, resident: m.HeapSys - m.HeapReleased, rss: m.Sys - m.HeapReleased}
	r.clients = min(uint64(max(s.buffers.kept.Load(), 0)), r.total-r.startup)
	for _, k := range s.store.Keyspace() {
		r.keys += k.Keys
		r.dbs = append(r.dbs, k.DB)
	}
	ratio := func(a, b uint64) (float64, int64) { return float64(a) / float64(max(b, 1)), int64(a) - int64(b) }
	r.allocatorFrag, r.allocatorFragBytes = ratio(r.active, r.total)
	r.allocatorRSS, r.allocatorRSSBytes = ratio(r.resident, r.active)
	r.rssOverhead, r.rssOverheadBytes = ratio(r.rss, r.resident)
	r.fragmentation, r.fragBytes = ratio(r.rss, r.total)
	r.overheadTotal = r.startup + r.clients
	r.datasetBytes = r.total - r.overheadTotal
	if r.keys > 0 {
		r.perKey = (r.total - r.startup) / uint64(r.keys)
	}
	r.datasetPercent = float64(r.datasetBytes) * 100 / float64(max(r.total-r.startup, 1))
	r.peakPercent = float64(r.total) * 100 / float64(max(r.peak, 1))
	return r
}

// writeStats answers MEMORY STATS with Redis 7.0's fields, in its order.
// clients.normal is the large buffers connections keep between batches
// (the others are too small to count); what presenced does not have
// (replication backlog, scripts, the keys' hash tables apart from their
// values) is 0: a key's memory is all in its value's, as MEMORY USAGE
// says.
func (r memoryReport) writeStats(c *client) {
	type field struct {
		name string
		v    any
	}
	before := []field{{"peak.allocated", r.peak}, {"total.allocated", r.total}, {"startup.allocated", r.startup},
		{"replication.backlog", 0}, {"clients.slaves", 0}, {"clients.normal", r.clients}, {"cluster.links", 0},
		{"aof.buffer", 0}, {"lua.caches", 0}, {"functions.caches", 0}}
	after := []field{{"overhead.total", r.overheadTotal}, {"keys.count", r.keys}, {"keys.bytes-per-key", r.perKey},
		{"dataset.bytes", r.datasetBytes}, {"dataset.percentage", r.datasetPercent}, {"peak.percentage", r.peakPercent},
		{"allocator.allocated", r.total}, {"allocator.active", r.active}, {"allocator.resident", r.resident},
		{"allocator-fragmentation.ratio", r.allocatorFrag}, {"allocator-fragmentation.bytes", r.allocatorFragBytes},
		{"allocator-rss.ratio", r.allocatorRSS}, {"allocator-rss.bytes", r.allocatorRSSBytes},
		{"rss-overhead.ratio", r.rssOverhead}, {"rss-overhead.bytes", r.rssOverheadBytes},
		{"fragmentation", r.fragmentation}, {"fragmentation.bytes", r.fragBytes}}
	w := &c.out.Writer
	write := func(fields []field) {
		for _, f := range fields {
			w.BulkString(f.name)
			switch v := f.v.(type) {
			case uint64:
				w.Int(int64(v))
			case int64:
				w.Int(v)
			case int:
				w.Int(int64(v))
			case float64:
				w.Double(v)
			}
		}
	}
	w.Map(len(before) + len(r.dbs) + len(after))
	write(before)
	for _, db := range r.dbs {
		w.BulkString("db." + strconv.Itoa(db))
		w.Map(3)
		write([]field{{"overhead.hashtable.main", 0}, {"overhead.hashtable.expires", 0}, {"overhead.hashtable.slot-to-keys", 0}})
	}
	write(after)
}

// doctor is MEMORY DOCTOR's report, by Redis's rules where presenced has
// what they look at: an instance whose data takes less than 5 MB is too
// small to judge, and a peak above 150% of the memory in use, or a
// fragmentation (total, of the heap's spans, or of its pages) above 1.4
// or 1.1 and 10 MB, are reported.
func (r memoryReport) doctor() string {
	const tenMB = 10 << 20
	if r.total-r.startup < 5<<20 {
		return "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n"
	}
	var issues []string
	if float64(r.peak)/float64(r.total) > 1.5 {
		issues = append(issues, " * Peak memory: In the past this instance used more than 150% the memory that is currently using. The Go runtime returns memory to the OS a few minutes after a peak, so the resident set may stay above the data for a while; MEMORY PURGE returns it at once.")
	}
	if r.fragmentation > 1.4 && r.fragBytes > tenMB {
		issues = append(issues, fmt.Sprintf(" * High total RSS: This instance's resident set is %.2f times the memory its data takes (%s more). This is usually a recent peak (see above) or the garbage collector's headroom; GOGC sets the headroom.", r.fragmentation, humanBytes(uint64(r.fragBytes))))
	}
	if r.allocatorFrag > 1.1 && r.allocatorFragBytes > tenMB {
		issues = append(issues, fmt.Sprintf(" * High allocator fragmentation: The heap's spans in use hold %.2f times the memory of the live objects (%s more). MEMORY PURGE packs the bitmaps anew.", r.allocatorFrag, humanBytes(uint64(r.allocatorFragBytes))))
	}
	if r.allocatorRSS > 1.1 && r.allocatorRSSBytes > tenMB {
		issues = append(issues, fmt.Sprintf(" * High allocator RSS overhead: The heap keeps %s of free pages it has not returned to the OS (%.2f times the pages in use). MEMORY PURGE returns them.", humanBytes(uint64(r.allocatorRSSBytes)), r.allocatorRSS))
	}
	if len(issues) == 0 {
		return "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n"
	}
	return "Sam, I detected a few issues in this Redis instance memory implants:\n\n" + strings.Join(issues, "\n\n") +
		"\n\nI'm here to keep you safe, Sam. I want to help you.\n"
}

// mallocStats is MEMORY MALLOC-STATS's report: the Go runtime's counts
// of its heap, where Redis gives its allocator's.
func mallocStats() string {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	var b strings.Builder
	b.WriteString("___ Begin Go runtime memory statistics ___\n")
	for _, f := range []struct {
		name string
		v    uint64
	}{{"Sys", m.Sys}, {"HeapAlloc", m.HeapAlloc}, {"HeapInuse", m.HeapInuse}, {"HeapIdle", m.HeapIdle},
		{"HeapReleased", m.HeapReleased}, {"HeapSys", m.HeapSys}, {"HeapObjects", m.HeapObjects},
		{"StackInuse", m.StackInuse}, {"MSpanInuse", m.MSpanInuse}, {"MCacheInuse", m.MCacheInuse},
		{"GCSys", m.GCSys}, {"OtherSys", m.OtherSys}, {"NextGC", m.NextGC}, {"Mallocs", m.Mallocs},
		{"Frees", m.Frees}, {"NumGC", uint64(m.NumGC)}, {"PauseTotalNs", m.PauseTotalNs}} {
		fmt.Fprintf(&b, "%s: %d\n", f.name, f.v)
	}
	b.WriteString("--- End Go runtime memory statistics ---\n")
	return b.String()
}
