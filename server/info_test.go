package server

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/presenced/presenced/server/redisserver"
)

// infoLeftOut are the fields of redis-server's INFO that presenced does
// not have, by section: its build's, its allocator's, fork's and
// copy-on-write's, scripting's, eviction's and defragmentation's, its
// replication backlog's, and its client buffers' (see the README).
var infoLeftOut = map[string][]string{
	"server": {"atomicvar_api", "gcc_version", "lru_clock", "monotonic_clock", "multiplexing_api",
		"process_supervised", "redis_build_id", "redis_git_dirty", "redis_git_sha1"},
	"clients": {"client_recent_max_input_buffer", "client_recent_max_output_buffer", "clients_in_timeout_table"},
	"memory": {"active_defrag_running", "allocator_active", "allocator_allocated", "allocator_frag_bytes",
		"allocator_frag_ratio", "allocator_resident", "allocator_rss_bytes", "allocator_rss_ratio",
		"lazyfree_pending_objects", "lazyfreed_objects", "mem_aof_buffer", "mem_clients_normal",
		"mem_clients_slaves", "mem_cluster_links", "mem_not_counted_for_evict", "mem_replication_backlog",
		"mem_total_replication_buffers", "number_of_cached_scripts", "number_of_functions",
		"number_of_libraries", "rss_overhead_bytes", "rss_overhead_ratio", "used_memory_dataset",
		"used_memory_dataset_perc", "used_memory_functions", "used_memory_lua", "used_memory_lua_human",
		"used_memory_overhead", "used_memory_scripts", "used_memory_scripts_eval", "used_memory_scripts_human",
		"used_memory_startup", "used_memory_vm_eval", "used_memory_vm_functions", "used_memory_vm_total",
		"used_memory_vm_total_human"},
	"persistence": {"aof_last_cow_size", "aof_rewrite_scheduled",
		"aof_rewrites_consecutive_failures", "current_cow_peak", "current_cow_size", "current_cow_size_age",
		"current_fork_perc", "current_save_keys_processed", "current_save_keys_total", "module_fork_in_progress",
		"module_fork_last_cow_size", "rdb_last_cow_size", "rdb_last_load_keys_expired", "rdb_last_load_keys_loaded"},
	"stats": {"active_defrag_hits", "active_defrag_key_hits", "active_defrag_key_misses", "active_defrag_misses",
		"current_active_defrag_time", "current_eviction_exceeded_time", "dump_payload_sanitizations",
		"expire_cycle_cpu_milliseconds", "expired_stale_perc", "expired_time_cap_reached_count",
		"instantaneous_input_repl_kbps", "instantaneous_output_repl_kbps", "io_threaded_reads_processed",
		"io_threaded_writes_processed", "reply_buffer_expands", "reply_buffer_shrinks",
		"slave_expires_tracked_keys", "total_active_defrag_time", "total_eviction_exceeded_time",
		"total_net_repl_input_bytes", "total_net_repl_output_bytes"},
	"replication": {"master_replid", "master_replid2", "repl_backlog_active", "repl_backlog_first_byte_offset",
		"repl_backlog_histlen", "repl_backlog_size", "second_repl_offset"},
	"cpu":     {"used_cpu_sys_main_thread", "used_cpu_user_main_thread"},
	"cluster": nil,
}

// TestInfoFieldsMatchRedis checks that each default section of INFO has
// every field redis-server's has but those infoLeftOut lists.
func TestInfoFieldsMatchRedis(t *testing.T) {
	ref := dial(t, redisserver.StartForTest(t, redisserver.Options{}).Addr())
	sut := dial(t, startServer(t).Addr())
	for section, leftOut := range infoLeftOut {
		_, theirs := infoFields(t, ref.do("INFO", section))
		_, ours := infoFields(t, sut.do("INFO", section))
		var missing []string
		for f := range theirs {
			if _, ok := ours[f]; !ok {
				missing = append(missing, f)
			}
		}
		slices.Sort(missing)
		if !slices.Equal(missing, leftOut) {
			t.Errorf("INFO %s lacks %q of redis-server's fields, want only %q", section, missing, leftOut)
		}
	}
}

// TestInfoCountsTraffic checks the traffic INFO stats counts: the bytes
// of each request and reply, exactly; the reads and writes that moved
// them; the SYNCs answered; and instantaneous_ops_per_sec, which rises
// above 0 while a client runs commands.
func TestInfoCountsTraffic(t *testing.T) {
	srv := startServer(t)
	c := dial(t, srv.Addr())
	number := func(fields map[string]string, k string) int64 {
		n, err := strconv.ParseInt(fields[k], 10, 64)
		if err != nil {
			t.Fatalf("INFO %s = %q", k, fields[k])
		}
		return n
	}
	info := "*2\r\n$4\r\nINFO\r\n$5\r\nstats\r\n"
	first := c.do("INFO", "stats")
	_, before := infoFields(t, first)
	c.expect("+PONG\r\n", "PING")
	_, after := infoFields(t, c.do("INFO", "stats"))
	if in := number(after, "total_net_input_bytes") - number(before, "total_net_input_bytes"); in != int64(len("*1\r\n$4\r\nPING\r\n")+len(info)) {
		t.Errorf("a PING and an INFO stats counted as %d bytes in", in)
	}
	if out := number(after, "total_net_output_bytes") - number(before, "total_net_output_bytes"); out != int64(len(first)+len("+PONG\r\n")) {
		t.Errorf("an INFO reply of %d bytes and a PONG counted as %d bytes out", len(first), out)
	}
	for _, k := range []string{"total_reads_processed", "total_writes_processed"} {
		if n := number(after, k) - number(before, k); n != 2 {
			t.Errorf("%s grew by %d over two requests, want 2", k, n)
		}
	}

	sync := dial(t, srv.Addr())
	sync.send(redisserver.AppendCommand(nil, "SYNC"))
	sync.readToClose()
	_, fields := infoFields(t, c.do("INFO", "stats"))
	if n := number(fields, "sync_full"); n != 1 {
		t.Errorf("sync_full %d after one SYNC", n)
	}

	deadline := time.Now().Add(10 * time.Second)
	for {
		for range 200 {
			c.expect("+PONG\r\n", "PING")
		}
		_, fields := infoFields(t, c.do("INFO", "stats"))
		if number(fields, "instantaneous_ops_per_sec") > 0 && strings.TrimRight(fields["instantaneous_input_kbps"], "0.") != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("instantaneous metrics still 0 while a client runs commands: %v", maps.Collect(maps.All(fields)))
		}
	}
}
