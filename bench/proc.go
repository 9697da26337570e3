package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/presenced/presenced/internal/proctest"
	"github.com/presenced/presenced/server/redisserver"
)

// A server is a running server process under test.
type server interface {
	Addr() string
	Pid() int
	Close() error
}

// startRedis starts redis-server (from PATH) with persistence off unless
// args say otherwise.
func startRedis(args ...string) (server, error) {
	return asServer(redisserver.Start(redisserver.Options{Args: args}))
}

// startPresenced starts the presenced binary at path on a free loopback
// port, with its raft listener on another, a fresh data directory and
// args, and returns once it answers PING.
func startPresenced(path string, args ...string) (server, error) {
	raftPort, err := proctest.FreePort()
	if err != nil {
		return nil, err
	}
	args = append([]string{"--raft-addr", "127.0.0.1:" + strconv.Itoa(raftPort)}, args...)
	srv, err := asServer(redisserver.StartBinary(path, redisserver.Options{Args: args}))
	if err != nil {
		return nil, err
	}
	if err := waitLeader(srv.Addr()); err != nil {
		srv.Close()
		return nil, err
	}
	return srv, nil
}

// waitLeader waits until the presenced node at addr says it leads: a
// node answers PING before it has elected itself, and writes wait for
// the election, which would count against the first run.
func waitLeader(addr string) error {
	deadline := time.Now().Add(startTimeout)
	for {
		c, err := dial(addr, time.Second)
		if err == nil {
			f, err := raftInfo(c)
			c.close()
			if err == nil && f["state"] == "leader" {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: %s did not become the leader within %v", addr, startTimeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// asServer returns p as a server, and a nil server, not a nil *Process,
// with an error.
func asServer(p *redisserver.Process, err error) (server, error) {
	if err != nil {
		return nil, err
	}
	return p, nil
}

// readRSS returns the anonymous resident memory of process pid in bytes,
// from RssAnon in /proc/<pid>/status: the heap and stacks, without the
// file-backed pages (the binary, and presenced's memory-mapped Raft log,
// which are the kernel's page cache and go under memory pressure).
func readRSS(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "RssAnon:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("bench: no RssAnon for process %d", pid)
}

// clockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat;
// it is 100 on every Linux architecture Go supports.
const clockTicks = 100

// processCPU returns the user plus system CPU time of process pid, from
// fields 14 and 15 of /proc/<pid>/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields after it follow
	// the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("bench: malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), so utime and stime are f[11] and f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("bench: malformed /proc/%d/stat", pid)
	}
	var ticks int64
	for _, s := range f[11:13] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: malformed /proc/%d/stat: %w", pid, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
