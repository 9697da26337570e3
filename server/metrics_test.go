package server

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// scrape collects srv's metrics through a pedantic registry, which also
// checks them against their descriptions, keyed as name{label="value",...}.
func scrape(t *testing.T, srv *Server) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(srv.Collector())
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			key := f.GetName()
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			v := m.GetGauge().GetValue()
			if m.Counter != nil {
				v = m.GetCounter().GetValue()
			}
			out[key] = v
		}
	}
	return out
}

func TestMetrics(t *testing.T) {
	srv := startServer(t, func(cfg *Config) { cfg.MetricsKeys = []string{"online:*", "session"} })
	c := dial(t, srv.Addr())
	for _, id := range []string{"5", "9", "9"} {
		c.do("SETBIT", "online:a", id, "1")
	}
	c.do("SETBIT", "online:b", "1", "1")
	c.do("SETBIT", "other", "1", "1")
	c.expect("+OK\r\n", "SET", "session", "xyz")
	sessionBits := intBody(t, c.do("BITCOUNT", "session"))
	c.do("GET", "nokey")
	c.do("INCR", "session")
	c.do("NOSUCH")
	c.expect("+OK\r\n", "SELECT", "1")
	c.expect("+OK\r\n", "SET", "online:c", "v", "EX", "100")

	m := scrape(t, srv)
	want := map[string]float64{
		`presenced_bits{db="0",key="online:a"}`:              2,
		`presenced_bits{db="0",key="online:b"}`:              1,
		`presenced_bits{db="0",key="session"}`:               float64(sessionBits),
		`presenced_bits{db="1",key="online:c"}`:              5, // "v" is 0x76
		`presenced_keys{db="0"}`:                             4,
		`presenced_keys{db="1"}`:                             1,
		`presenced_keys_with_ttl{db="1"}`:                    1,
		`presenced_commands_total{command="setbit"}`:         5,
		`presenced_command_failed_total{command="incr"}`:     1,
		`presenced_error_replies_total{code="ERR"}`:          2,
		`presenced_connected_clients`:                        1,
		`presenced_connections_received_total`:               1,
		`presenced_raft_leader`:                              1,
		`presenced_pubsub_channels`:                          0,
		`presenced_command_rejected_total{command="incr"}`:   0,
		`presenced_raft_snapshot_restores_total`:             0,
		`presenced_raft_log_write_failing`:                   0,
		`presenced_pubsub_relayed_total`:                     0,
		`presenced_command_rejected_total{command="setbit"}`: 0,
		`presenced_keyspace_hits_total`:                      1, // BITCOUNT session
		`presenced_keyspace_misses_total`:                    1, // GET nokey
	}
	for k, v := range want {
		if got, ok := m[k]; !ok || got != v {
			t.Errorf("%s = %v (reported: %v), want %v", k, got, ok, v)
		}
	}
	if _, ok := m[`presenced_bits{db="0",key="other"}`]; ok {
		t.Errorf("a key no pattern names is reported: %v", m)
	}
	if m["presenced_raft_applied_index"] == 0 || m["presenced_raft_applied_index"] > m["presenced_raft_commit_index"] ||
		m["presenced_raft_commands_total"] < 6 || m["presenced_raft_log_writes_total"] == 0 {
		t.Errorf("raft figures: %v", m)
	}

	// Every command INFO commandstats counts, with the same count.
	_, info := infoFields(t, c.do("INFO", "commandstats"))
	for k, v := range info {
		name, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok {
			continue
		}
		calls, _ := strconv.ParseFloat(strings.TrimPrefix(strings.Split(v, ",")[0], "calls="), 64)
		if got := m[`presenced_commands_total{command="`+name+`"}`]; got != calls && name != "info" {
			t.Errorf("presenced_commands_total of %s = %v, INFO says %v", name, got, calls)
		}
	}
}

func TestMetricsOfACluster(t *testing.T) {
	srvs, l, f := leaderAndFollower(t)
	dial(t, f.Addr()).expect("+OK\r\n", "SET", "k", "v")
	waitApplied(t, srvs)
	if m := scrape(t, f); m["presenced_raft_leader"] != 0 {
		t.Errorf("a follower reports presenced_raft_leader %v", m["presenced_raft_leader"])
	}
	m := scrape(t, l)
	var lags []string
	for k, v := range m {
		if strings.HasPrefix(k, "presenced_raft_follower_lag_entries{") {
			lags = append(lags, k)
			if v < 0 {
				t.Errorf("%s = %v with every follower up", k, v)
			}
		}
	}
	want := []string{}
	for _, s := range clusterFollowers(srvs, l) {
		want = append(want, `presenced_raft_follower_lag_entries{node_id="`+s.node.Config().NodeID+`"}`)
	}
	slices.Sort(lags)
	slices.Sort(want)
	if m["presenced_raft_leader"] != 1 || !slices.Equal(lags, want) {
		t.Errorf("the leader reports presenced_raft_leader %v and lags %q, want %q", m["presenced_raft_leader"], lags, want)
	}
}
