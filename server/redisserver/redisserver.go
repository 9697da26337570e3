// Package redisserver starts a real redis-server on a free loopback port,
// as a referee for tests and benchmarks that compare presenced with Redis,
// and speaks raw RESP to it (see Conn). StartBinary starts any server
// program that takes redis-server's --bind, --port and --dir options, such
// as presenced itself. The package needs nothing from the testing package,
// so a benchmark program can use it too.
package redisserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/presenced/presenced/internal/proctest"
)

// ErrNotInstalled is returned by Start when no redis-server is on PATH,
// and by StartBinary when its program cannot be found.
var ErrNotInstalled = errors.New("redisserver: server program not found")

// ErrNotReady is returned by Start and StartBinary when the server does
// not answer PING within Options.ReadyTimeout.
var ErrNotReady = errors.New("redisserver: server did not become ready")

// Options configures Start and StartBinary. The zero value is ready to use.
type Options struct {
	// Args are extra configuration arguments appended to the command
	// line, e.g. []string{"--maxmemory", "1gb"}. They override the
	// defaults Start sets (save, appendonly, bind, port, dir).
	Args []string
	// Dir is the server's working directory; empty means a fresh
	// temporary directory that Close removes.
	Dir string
	// Password, when set, is passed as --requirepass; the readiness
	// check authenticates with it.
	Password string
	// ReadyTimeout bounds the wait for the first PONG; 0 means 10s.
	ReadyTimeout time.Duration
}

// Process is a running server.
type Process struct {
	cmd     *exec.Cmd
	addr    string
	tempDir string        // removed by Close when Start created it
	output  bytes.Buffer  // stdout and stderr, read only after exit
	done    chan struct{} // closed when the process has exited
	waitErr error
	once    sync.Once
}

// Start launches redis-server from PATH with persistence off, as
// StartBinary launches a program.
func Start(opts Options) (*Process, error) {
	opts.Args = append([]string{"--save", "", "--appendonly", "no"}, opts.Args...)
	return StartBinary("redis-server", opts)
}

// StartBinary launches the server program bin (a path, or a name looked up
// on PATH) with "--bind 127.0.0.1 --port N --dir D" on a free port N,
// followed by opts.Args, and returns once it answers PING and INFO server
// reports its process id. If the port was taken by someone else in the
// meantime, it retries on another port.
func StartBinary(bin string, opts Options) (*Process, error) {
	path, err := lookPath(bin)
	if err != nil {
		return nil, err
	}
	const attempts = 3
	for i := 1; ; i++ {
		p, err := start(path, opts)
		if err == nil || i == attempts || !errors.Is(err, errExited) {
			return p, err
		}
	}
}

// lookPath finds the program bin as exec.LookPath does; a missing one is
// ErrNotInstalled.
func lookPath(bin string) (string, error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotInstalled, err)
	}
	return path, nil
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
	port, err := proctest.FreePort() // taken meanwhile by another process: waitReady notices
	if err != nil {
		p.removeTemp()
		return nil, err
	}
	p.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	args := []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir}
	if opts.Password != "" {
		args = append(args, "--requirepass", opts.Password)
	}
	p.cmd = exec.Command(bin, append(args, opts.Args...)...)
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
	if err := p.waitReady(timeout, opts.Password); err != nil {
		p.Close()
		return nil, fmt.Errorf("%w: %s: %w; output: %s", ErrNotReady, bin, err, p.output.String())
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
func (p *Process) waitReady(timeout time.Duration, password string) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	backoff := time.Millisecond
	for {
		pid, err := probe(ctx, p.addr, password)
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

// probe authenticates when there is a password, sends PING, expects PONG,
// then asks INFO server for the process id of the server that answered.
func probe(ctx context.Context, addr, password string) (int, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	deadline, _ := ctx.Deadline()
	c := newConn(nc, time.Until(deadline))
	defer c.Close()
	if password != "" {
		if err := c.expect("+OK\r\n", "AUTH", password); err != nil {
			return 0, err
		}
	}
	if err := c.expect("+PONG\r\n", "PING"); err != nil {
		return 0, err
	}
	info, err := c.Do([]byte("INFO"), []byte("server"))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(info), "\r\n") {
		if v, ok := strings.CutPrefix(l, "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("INFO server has no process_id: %q", info)
}
