package server

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/presenced/presenced/server/redisserver"
)

// TestMemoryStatsMatchesRedis compares MEMORY STATS's fields, their order
// and types, with redis-server's, in RESP2 and RESP3, with keys in two
// databases; checks that the figures add up; and compares MEMORY DOCTOR
// on a nearly empty instance and MEMORY HELP byte for byte.
func TestMemoryStatsMatchesRedis(t *testing.T) {
	ref := dialTarget(t, "redis", redisserver.StartForTest(t, redisserver.Options{}).Addr())
	sut := dialTarget(t, "presenced", startServer(t).Addr())
	for _, target := range []*diffTarget{ref, sut} {
		for _, line := range []string{"SET a 1", "SELECT 3", "SETBIT b 7 1", "SELECT 0"} {
			mustDo(t, target, argv(strings.Fields(line)...))
		}
	}
	for _, hello := range []string{"2", "3"} {
		var shapes [2]string
		for i, target := range []*diffTarget{ref, sut} {
			mustDo(t, target, argv("HELLO", hello))
			fields := statsFields(t, mustDo(t, target, argv("MEMORY", "STATS")))
			var shape []string
			for _, f := range fields {
				shape = append(shape, f.name+"="+f.kind)
			}
			shapes[i] = strings.Join(shape, " ")
			if target == sut {
				checkMemoryFigures(t, fields)
			}
		}
		if shapes[0] != shapes[1] {
			t.Errorf("RESP%s: MEMORY STATS fields:\npresenced:    %s\nredis-server: %s", hello, shapes[1], shapes[0])
		}
		for _, line := range []string{"MEMORY DOCTOR", "MEMORY HELP", "MEMORY STATS x", "MEMORY DOCTOR x"} {
			args := argv(strings.Fields(line)...)
			if got, want := mustDo(t, sut, args), mustDo(t, ref, args); !bytes.Equal(got, want) {
				t.Errorf("RESP%s: %s: %q, redis-server: %q", hello, line, got, want)
			}
		}
		if got := string(mustDo(t, sut, argv("MEMORY", "MALLOC-STATS"))); !strings.Contains(got, "___ Begin Go runtime memory statistics ___\nSys: ") {
			t.Errorf("MEMORY MALLOC-STATS: %q", got)
		}
	}
}

// statField is one field of a MEMORY STATS reply: its name, the type of
// its value (int, double or map) and, for numbers, the value.
type statField struct {
	name, kind string
	value      float64
}

// statsFields reads a MEMORY STATS reply, a map in RESP3 or an array of
// pairs in RESP2, with the doubles as bulk strings.
func statsFields(t *testing.T, reply []byte) []statField {
	t.Helper()
	_, elems, ok := arrayElements(reply)
	if !ok && len(reply) > 0 && reply[0] == '%' {
		n, rest, _ := bytes.Cut(reply[1:], []byte("\r\n"))
		count, _ := strconv.Atoi(string(n))
		_, elems, ok = arrayElements(fmt.Appendf(nil, "*%d\r\n%s", 2*count, rest))
	}
	if !ok {
		t.Fatalf("MEMORY STATS: %q", reply)
	}
	var out []statField
	for i := 0; i+1 < len(elems); i += 2 {
		f := statField{name: bulkBody(t, string(elems[i]))}
		v := elems[i+1]
		switch v[0] {
		case ':':
			f.kind = "int"
			f.value, _ = strconv.ParseFloat(strings.TrimSpace(string(v[1:])), 64)
		case ',', '$':
			f.kind = "double"
			body := strings.TrimSpace(string(v[1:]))
			if v[0] == '$' {
				body = bulkBody(t, string(v))
			}
			f.value, _ = strconv.ParseFloat(body, 64)
		default:
			f.kind = "map"
		}
		out = append(out, f)
	}
	return out
}

// checkMemoryFigures checks that presenced's MEMORY STATS adds up.
func checkMemoryFigures(t *testing.T, fields []statField) {
	t.Helper()
	v := map[string]float64{}
	for _, f := range fields {
		v[f.name] = f.value
	}
	switch {
	case v["keys.count"] != 2:
		t.Errorf("keys.count %v, want 2", v["keys.count"])
	case v["total.allocated"] <= 0 || v["total.allocated"] > v["peak.allocated"]:
		t.Errorf("total.allocated %v, peak.allocated %v", v["total.allocated"], v["peak.allocated"])
	case v["overhead.total"] != v["startup.allocated"]+v["clients.normal"]:
		t.Errorf("overhead.total %v, want startup.allocated %v + clients.normal %v", v["overhead.total"], v["startup.allocated"], v["clients.normal"])
	case v["dataset.bytes"]+v["overhead.total"] != v["total.allocated"]:
		t.Errorf("dataset.bytes %v + overhead.total %v != total.allocated %v", v["dataset.bytes"], v["overhead.total"], v["total.allocated"])
	case v["allocator.allocated"] != v["total.allocated"] || v["allocator.active"] < v["allocator.allocated"]:
		t.Errorf("allocator.allocated %v, active %v", v["allocator.allocated"], v["allocator.active"])
	}
	if p := v["total.allocated"] * 100 / v["peak.allocated"]; p-v["peak.percentage"] > 1e-6 || v["peak.percentage"]-p > 1e-6 {
		t.Errorf("peak.percentage %v, want %v", v["peak.percentage"], p)
	}
}

// TestMemoryDoctorReports checks MEMORY DOCTOR's rules on made-up
// figures: too little data to judge, nothing to report, and each issue.
func TestMemoryDoctorReports(t *testing.T) {
	const mb = 1 << 20
	healthy := memoryReport{total: 100 * mb, startup: 10 * mb, peak: 120 * mb, fragmentation: 1.2, fragBytes: 20 * mb,
		allocatorFrag: 1.05, allocatorFragBytes: 5 * mb, allocatorRSS: 1.3, allocatorRSSBytes: 5 * mb}
	if got := healthy.doctor(); got != "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n" {
		t.Errorf("healthy: %q", got)
	}
	small := healthy
	small.total = 14 * mb
	if got := small.doctor(); !strings.HasPrefix(got, "Hi Sam, this instance is empty") {
		t.Errorf("4 MB of data: %q", got)
	}
	for issue, change := range map[string]func(*memoryReport){
		"Peak memory":                  func(r *memoryReport) { r.peak = 151 * mb },
		"High total RSS":               func(r *memoryReport) { r.fragmentation = 1.5 },
		"High allocator fragmentation": func(r *memoryReport) { r.allocatorFrag, r.allocatorFragBytes = 1.2, 11*mb },
		"High allocator RSS overhead":  func(r *memoryReport) { r.allocatorRSSBytes = 11 * mb },
	} {
		r := healthy
		change(&r)
		got := r.doctor()
		if !strings.HasPrefix(got, "Sam, I detected a few issues in this Redis instance memory implants:\n\n * "+issue) ||
			!strings.HasSuffix(got, "\n\nI'm here to keep you safe, Sam. I want to help you.\n") || strings.Count(got, " * ") != 1 {
			t.Errorf("%s: %q", issue, got)
		}
	}
}
