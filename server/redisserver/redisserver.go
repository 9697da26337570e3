// Package redisserver starts a real redis-server on a free loopback port,
// as a referee for tests and benchmarks that compare presenced with Redis.
// It needs nothing from the testing package, so a benchmark program can
// use it too.
package redisserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrNotInstalled is returned by Start when no redis-server is on PATH.
var ErrNotInstalled = errors.New("redisserver: redis-server not found on PATH")

// ErrNotReady is returned by Start when the server does not answer PING
// within Options.ReadyTimeout.
var ErrNotReady = errors.New("redisserver: redis-server did not become ready")

// Options configures Start. The zero value is ready to use.
type Options struct {
	// Args are extra configuration arguments appended to the command
	// line, e.g. []string{"--maxmemory", "1gb"}. They override the
	// defaults Start sets (save, appendonly, bind, port, dir).
	Args []string
	// Dir is the server's working directory; empty means a fresh
	// temporary directory that Close removes.
	Dir string
	// ReadyTimeout bounds the wait for the first PONG; 0 means 10s.
	ReadyTimeout time.Duration
}

// Process is a running redis-server.
type Process struct {
	cmd     *exec.Cmd
	addr    string
	tempDir string        // removed by Close when Start created it
	output  bytes.Buffer  // stdout and stderr, read only after exit
	done    chan struct{} // closed when the process has exited
	waitErr error
	once    sync.Once
}

// Start launches redis-server with persistence off, bound to 127.0.0.1 on a
// free port, and returns once it answers PING. If the port was taken by
// someone else in the meantime, it retries on another port.
func Start(opts Options) (*Process, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNotInstalled
	}
	const attempts = 3
	for i := 1; ; i++ {
		p, err := start(bin, opts)
		if err == nil || i == attempts || !errors.Is(err, errExited) {
			return p, err
		}
	}
}

// errExited marks a server that exited before it became ready.
var errExited = errors.New("process exited")

func start(bin string, opts Options) (*Process, error) {
	p := &Process{done: make(chan struct{})}
	dir := opts.Dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "redisserver-"); err != nil {
			return nil, fmt.Errorf("redisserver: %w", err)
		}
		p.tempDir = dir
	}
	port, err := freePort()
	if err != nil {
		p.removeTemp()
		return nil, err
	}
	p.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	args := append([]string{
		"--save", "", "--appendonly", "no", "--bind", "127.0.0.1",
		"--port", strconv.Itoa(port), "--dir", dir,
	}, opts.Args...)
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout = &p.output
	p.cmd.Stderr = &p.output
	setParentDeathSignal(p.cmd)
	if err := p.cmd.Start(); err != nil {
		p.removeTemp()
		return nil, fmt.Errorf("redisserver: %w", err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()
	timeout := opts.ReadyTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	if err := p.waitReady(timeout); err != nil {
		p.Close()
		return nil, fmt.Errorf("%w: %w; output: %s", ErrNotReady, err, p.output.String())
	}
	return p, nil
}

// Addr is the server's "127.0.0.1:port" address.
func (p *Process) Addr() string { return p.addr }

// Pid is the server's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Close kills the server, waits for it to exit and removes the temporary
// directory Start created. It is safe to call more than once.
func (p *Process) Close() error {
	p.once.Do(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		p.removeTemp()
	})
	return nil
}

func (p *Process) removeTemp() {
	if p.tempDir != "" {
		_ = os.RemoveAll(p.tempDir)
	}
}

// waitReady polls the port with PING, backing off from 1ms up to 50ms
// between attempts, until a PONG arrives, the process exits or the timeout
// passes. It then checks that the server answering is this process and
// not another one that holds the port.
func (p *Process) waitReady(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	backoff := time.Millisecond
	for {
		pid, err := probe(ctx, p.addr)
		if err == nil {
			if pid != p.Pid() {
				return fmt.Errorf("%w: port %s is held by process %d", errExited, p.addr, pid)
			}
			return nil
		}
		timer := time.NewTimer(backoff)
		select {
		case <-p.done:
			timer.Stop()
			return fmt.Errorf("%w: %v", errExited, p.waitErr)
		case <-ctx.Done():
			timer.Stop()
			return err
		case <-timer.C:
		}
		backoff = min(2*backoff, 50*time.Millisecond)
	}
}

// probe sends PING, expects +PONG, then asks INFO server for the process
// id of the server that answered.
func probe(ctx context.Context, addr string) (int, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")); err != nil {
		return 0, err
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	if line != "+PONG\r\n" {
		return 0, fmt.Errorf("unexpected reply %q", line)
	}
	if line, err = r.ReadString('\n'); err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(line, "$"), "\r\n"))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("unexpected INFO reply %q", line)
	}
	info := make([]byte, n)
	if _, err := io.ReadFull(r, info); err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(info), "\r\n") {
		if v, ok := strings.CutPrefix(l, "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("INFO server has no process_id")
}

// freePort asks the kernel for a free loopback port. Another process may
// take it before redis-server binds it; waitReady notices.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redisserver: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
