package server

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	osexec "os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/presenced/presenced/server/redisserver"
)

// ioredisDir holds a Node script that drives a server with ioredis, and
// the package files pinning ioredis; `npm ci --prefix server/testdata/ioredis`
// installs it.
const ioredisDir = "testdata/ioredis"

// requireIoredis skips the test when ioredis is not installed in
// ioredisDir, unless CI=true, and fails it when the installed version is
// not the one package.json pins.
func requireIoredis(t *testing.T) {
	t.Helper()
	var installed struct {
		Version string `json:"version"`
	}
	if err := decodeJSONFile(filepath.Join(ioredisDir, "node_modules", "ioredis", "package.json"), &installed); err != nil {
		msg := fmt.Sprintf("ioredis not installed (npm ci --prefix server/%s): %v", ioredisDir, err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := decodeJSONFile(filepath.Join(ioredisDir, "package.json"), &pkg); err != nil {
		t.Fatal(err)
	}
	if pin := pkg.Dependencies["ioredis"]; installed.Version != pin {
		t.Fatalf("ioredis %s is installed, package.json pins %s: run npm ci --prefix server/%s", installed.Version, pin, ioredisDir)
	}
}

// decodeJSONFile decodes the JSON file name into v.
func decodeJSONFile(name string, v any) error {
	data, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// ioredisScenario builds the plan that client.js runs and, alongside, the
// replies it must print, from models of the keys it writes.
type ioredisScenario struct {
	rng  *rand.Rand
	bits map[string]*bitString
	plan map[string]any
	want map[string]any
}

// newIoredisScenario builds the scenario, its sections in the order
// client.js runs them.
func newIoredisScenario() *ioredisScenario {
	s := &ioredisScenario{
		rng:  rand.New(rand.NewPCG(13, 17)),
		bits: map[string]*bitString{},
		plan: map[string]any{},
		want: map[string]any{},
	}
	s.setBits()
	s.pipeline()
	s.multi()
	s.reads()
	s.bitops()
	s.bitfields()
	s.values()
	s.plan["expiring"] = map[string]any{"key": "online:total", "value": "42", "seconds": 15}
	s.want["set"] = "OK"
	s.want["get"] = "42"
	return s
}

// model returns the model of key, creating an empty one.
func (s *ioredisScenario) model(key string) *bitString {
	if s.bits[key] == nil {
		s.bits[key] = &bitString{}
	}
	return s.bits[key]
}

// setBits sets and clears random bits of a and b, one awaited call each.
func (s *ioredisScenario) setBits() {
	var plan [][]any
	var want []int64
	for range 300 {
		key, off, v := []string{"a", "b"}[s.rng.IntN(2)], s.rng.Int64N(1000), s.rng.IntN(2)
		plan = append(plan, []any{key, off, v})
		want = append(want, s.model(key).set(off, v))
	}
	s.plan["setbits"] = plan
	s.want["setbits"] = want
}

// pipeline sets heartbeat bits in one pipeline ending with a BITCOUNT.
func (s *ioredisScenario) pipeline() {
	const key = "online:bitmap:hb"
	m := s.model(key)
	var offsets []int64
	var want []any
	for range 1000 {
		off := s.rng.Int64N(200000)
		offsets = append(offsets, off)
		want = append(want, m.set(off, 1))
	}
	s.plan["pipeline"] = map[string]any{"key": key, "offsets": offsets}
	s.want["pipeline"] = append(want, m.count(nil, "BYTE"))
}

// multi runs SETBITs, a BITCOUNT, a failing INCR and a GET in one
// MULTI/EXEC transaction.
func (s *ioredisScenario) multi() {
	const key, counter = "online:bitmap:tx", "counter"
	m := s.model(key)
	var offsets []int64
	var want []any
	for range 50 {
		off := s.rng.Int64N(500)
		offsets = append(offsets, off)
		want = append(want, m.set(off, 1))
	}
	s.plan["multi"] = map[string]any{"key": key, "offsets": offsets, "counter": counter}
	s.want["multi"] = append(want, m.count(nil, "BYTE"), "OK",
		map[string]string{"error": "ERR value is not an integer or out of range"}, hex.EncodeToString(*m))
}

// keys returns the modelled bitmap keys in order.
func (s *ioredisScenario) keys() []string {
	return slices.Sorted(maps.Keys(s.bits))
}

// randomRange returns start and end (in bytes, or in bits for unit BIT)
// around the size of m, negative and out of range ones included.
func (s *ioredisScenario) randomRange(m bitString, unit string) (start, end int64) {
	size := int64(len(m))
	if unit == "BIT" {
		size *= 8
	}
	return s.rng.Int64N(2*size+4) - size - 2, s.rng.Int64N(2*size+4) - size - 2
}

// reads asks GETBIT, BITCOUNT and BITPOS of the bitmaps written so far.
func (s *ioredisScenario) reads() {
	keys := s.keys()
	var getbits [][]any
	var bits []int64
	for range 200 {
		key := keys[s.rng.IntN(len(keys))]
		m := *s.bits[key]
		off := s.rng.Int64N(int64(len(m))*8 + 64)
		getbits = append(getbits, []any{key, off})
		bits = append(bits, m.get(off))
	}
	s.plan["getbits"], s.want["getbits"] = getbits, bits

	var counts, positions []map[string]any
	var wantCounts, wantPositions []int64
	for i := range 120 {
		key := keys[s.rng.IntN(len(keys))]
		m := *s.bits[key]
		unit := []string{"", "BYTE", "BIT"}[s.rng.IntN(3)]
		start, end := s.randomRange(m, unit)
		rng := []any{}
		var nums []int64
		switch {
		case i%4 == 0:
		case i%4 == 1 && unit == "":
			nums = []int64{start}
		default:
			nums = []int64{start, end}
		}
		for _, n := range nums {
			rng = append(rng, n)
		}
		if len(nums) == 2 && unit != "" {
			rng = append(rng, unit)
		}
		if unit == "" {
			unit = "BYTE"
		}
		if len(nums) != 1 { // BITCOUNT takes no lone start
			counts = append(counts, map[string]any{"key": key, "range": rng})
			wantCounts = append(wantCounts, m.count(nums, unit))
		}
		bit := s.rng.Int64N(2)
		positions = append(positions, map[string]any{"key": key, "bit": bit, "range": rng})
		wantPositions = append(wantPositions, m.pos(bit, nums, unit))
	}
	s.plan["bitcounts"], s.want["bitcounts"] = counts, wantCounts
	s.plan["bitpos"], s.want["bitpos"] = positions, wantPositions
}

// bitops combines the bitmaps with BITOP and reads each result back.
func (s *ioredisScenario) bitops() {
	and := func(f byte, r []byte) byte {
		for _, b := range r {
			f &= b
		}
		return f
	}
	xor := func(f byte, r []byte) byte {
		for _, b := range r {
			f ^= b
		}
		return f
	}
	ops := []struct {
		name string
		op   func(first byte, rest []byte) byte
		keys []string
	}{
		{"AND", and, []string{"a", "b"}},
		{"OR", func(f byte, r []byte) byte { return f | orAll(r) }, []string{"a", "online:bitmap:hb", "b"}},
		{"XOR", xor, []string{"online:bitmap:tx", "a", "b"}},
		{"NOT", func(f byte, _ []byte) byte { return ^f }, []string{"b"}},
	}
	var plan, want []map[string]any
	for _, o := range ops {
		srcs := make([]bitString, len(o.keys))
		for i, k := range o.keys {
			srcs[i] = *s.bits[k]
		}
		res := bitop(o.op, srcs...)
		plan = append(plan, map[string]any{"op": o.name, "dest": "dest", "keys": o.keys})
		want = append(want, map[string]any{"length": len(res), "value": hex.EncodeToString(res)})
	}
	s.plan["bitops"], s.want["bitops"] = plan, want
}

// bitfields keeps 2-bit user states with BITFIELD SET, GET and INCRBY
// under every overflow policy.
func (s *ioredisScenario) bitfields() {
	const key, users = "states", 200
	states := userStates{}
	var plan [][]any
	var want [][]any
	maxUser := int64(0)
	for range 300 {
		user := s.rng.Int64N(users)
		maxUser = max(maxUser, user)
		field := fmt.Sprintf("#%d", user)
		if s.rng.IntN(2) == 0 {
			st := s.rng.Int64N(4)
			plan = append(plan, []any{"SET", "u2", field, st, "GET", "u2", field})
			want = append(want, []any{states[user], st})
			states[user] = st
			continue
		}
		by, overflow := s.rng.Int64N(9)-4, []string{"WRAP", "SAT", "FAIL"}[s.rng.IntN(3)]
		plan = append(plan, []any{"OVERFLOW", overflow, "INCRBY", "u2", field, by, "GET", "u2", field})
		var reply any // a refused INCRBY replies nil
		if v, ok := states.incr(user, by, overflow); ok {
			reply = v
		}
		want = append(want, []any{reply, states[user]})
	}
	s.plan["bitfieldKey"], s.plan["bitfields"], s.want["bitfields"] = key, plan, want
	// Every command writes, so the string grows to the highest field
	// named, refused or not.
	value := states.bytes()
	value = append(value, make(bitString, (2*maxUser+2+7)/8-int64(len(value)))...)
	s.bits[key] = &value
}

// values asks for every modelled key's bytes.
func (s *ioredisScenario) values() {
	keys := s.keys()
	want := map[string]string{}
	for _, k := range keys {
		want[k] = hex.EncodeToString(*s.bits[k])
	}
	s.plan["values"], s.want["values"] = keys, want
}

// runIoredis runs client.js against addr with plan and returns what it
// printed, section by section.
func runIoredis(t *testing.T, node, addr string, plan map[string]any) map[string]json.RawMessage {
	t.Helper()
	in, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := osexec.CommandContext(ctx, node, "client.js", addr)
	cmd.Dir = ioredisDir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node client.js: %v\n%s", err, stderr.Bytes())
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client.js output %.300q: %v", out, err)
	}
	return got
}

// checkSection fails the test unless got is want in JSON.
func checkSection(t *testing.T, name string, got json.RawMessage, want any) {
	t.Helper()
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var g, wv any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Errorf("%s: %.200q is not JSON: %v", name, got, err)
		return
	}
	if err := json.Unmarshal(w, &wv); err != nil {
		t.Fatal(err)
	}
	if d := jsonDiff(name, g, wv); d != "" {
		t.Error(d)
	}
}

// jsonDiff describes the first difference between two decoded JSON
// values, at its path inside them, or returns "" when they are equal.
func jsonDiff(path string, got, want any) string {
	if reflect.DeepEqual(got, want) {
		return ""
	}
	switch w := want.(type) {
	case []any:
		if g, ok := got.([]any); ok {
			if len(g) != len(w) {
				return fmt.Sprintf("%s: %d elements, want %d", path, len(g), len(w))
			}
			for i := range w {
				if d := jsonDiff(fmt.Sprintf("%s[%d]", path, i), g[i], w[i]); d != "" {
					return d
				}
			}
		}
	case map[string]any:
		if g, ok := got.(map[string]any); ok {
			for _, k := range slices.Sorted(maps.Keys(w)) {
				if d := jsonDiff(path+"."+k, g[k], w[k]); d != "" {
					return d
				}
			}
			return fmt.Sprintf("%s: got keys %v, want %v", path, slices.Sorted(maps.Keys(g)), slices.Sorted(maps.Keys(w)))
		}
	}
	return fmt.Sprintf("%s:\ngot  %.300v\nwant %.300v", path, got, want)
}

// TestIoredis runs one ioredis scenario against presenced and, as the
// referee for the model, against redis-server.
func TestIoredis(t *testing.T) {
	node := requireTool(t, "node")
	requireIoredis(t)
	s := newIoredisScenario()
	t.Run("presenced", func(t *testing.T) { checkIoredis(t, node, startServer(t).Addr(), s) })
	t.Run("redis-server", func(t *testing.T) {
		checkIoredis(t, node, redisserver.StartForTest(t, redisserver.Options{}).Addr(), s)
	})
}

// checkIoredis runs the scenario s with client.js against the server at
// addr and checks every reply.
func checkIoredis(t *testing.T, node, addr string, s *ioredisScenario) {
	got := runIoredis(t, node, addr, s.plan)
	for _, name := range slices.Sorted(maps.Keys(s.want)) {
		checkSection(t, name, got[name], s.want[name])
	}
	var ttl int64
	if err := json.Unmarshal(got["ttl"], &ttl); err != nil || ttl < 14 || ttl > 15 {
		t.Errorf("TTL after SET EX 15 = %s, %v", got["ttl"], err)
	}

	// The transaction reached the server as one MULTI/EXEC; the pipeline
	// as plain commands.
	_, fields := infoFields(t, dial(t, addr).do("INFO", "commandstats"))
	for _, name := range []string{"multi", "exec"} {
		if stat := fields["cmdstat_"+name]; !strings.HasPrefix(stat, "calls=1,") {
			t.Errorf("cmdstat_%s = %q, want one call", name, stat)
		}
	}
}
