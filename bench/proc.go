package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/presenced/presenced/server/redisserver"
)

// A server is a running server process under test.
type server interface {
	Addr() string
	Pid() int
	Close() error
}

// startRedis starts redis-server (from PATH) with persistence off.
func startRedis() (server, error) {
	return redisserver.Start(redisserver.Options{})
}

// presencedProc is a presenced process started by startPresenced.
type presencedProc struct {
	cmd     *exec.Cmd
	addr    string
	dir     string
	output  bytes.Buffer // stdout and stderr, read only after exit
	done    chan struct{}
	waitErr error
	once    sync.Once
}

// errExited marks a server that exited before it answered PING.
var errExited = errors.New("bench: server exited")

// startPresenced starts the presenced binary at path on a free loopback
// port with a fresh data directory, and returns once it answers PING. If
// another process took the port first, it retries on another one.
func startPresenced(path string) (server, error) {
	const attempts = 3
	for i := 1; ; i++ {
		p, err := startPresencedOnce(path)
		if err == nil || i == attempts || !errors.Is(err, errExited) {
			return p, err
		}
	}
}

func startPresencedOnce(path string) (*presencedProc, error) {
	dir, err := os.MkdirTemp("", "presenced-bench-")
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	p := &presencedProc{
		addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		dir:  dir, done: make(chan struct{}),
	}
	p.cmd = exec.Command(path, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir)
	p.cmd.Stdout = &p.output
	p.cmd.Stderr = &p.output
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("bench: starting %s: %w", path, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()
	if err := p.waitReady(10 * time.Second); err != nil {
		p.Close()
		return nil, fmt.Errorf("bench: %s not ready: %w; output: %s", path, err, p.output.String())
	}
	return p, nil
}

// waitReady polls with PING until +PONG arrives, the process exits or
// the timeout passes.
func (p *presencedProc) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	backoff := time.Millisecond
	for {
		err := ping(p.addr)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-p.done:
			return fmt.Errorf("%w: %v", errExited, p.waitErr)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 50*time.Millisecond)
	}
}

// ping sends PING to addr and expects PONG.
func ping(addr string) error {
	c, err := dial(addr, time.Second)
	if err != nil {
		return err
	}
	defer c.close()
	v, err := c.do(time.Second, "PING")
	if err == nil && v != "PONG" {
		err = fmt.Errorf("PING replied %v", v)
	}
	return err
}

// Addr is the server's "127.0.0.1:port" address.
func (p *presencedProc) Addr() string { return p.addr }

// Pid is the server's process id.
func (p *presencedProc) Pid() int { return p.cmd.Process.Pid }

// Close stops the server (SIGTERM, then SIGKILL after 10s), waits for it
// and removes its data directory. It is safe to call more than once.
func (p *presencedProc) Close() error {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		os.RemoveAll(p.dir)
	})
	return nil
}

// readRSS returns the resident set size of process pid in bytes, from
// VmRSS in /proc/<pid>/status.
func readRSS(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("bench: no VmRSS for process %d", pid)
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
