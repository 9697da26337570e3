// Package proctest runs server programs (presenced, redis-server) as child
// processes for tests and benchmarks: it finds free loopback ports, starts
// a program so that it dies with its parent, collects its output, waits
// until it answers PING and stops it with a signal. It needs nothing from
// the testing package, so a benchmark program can use it too; tests turn
// its errors into t.Fatal.
package proctest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrExited is returned by Poll and WaitPING when the process exits
// before the condition holds.
var ErrExited = errors.New("proctest: process exited")

// pollInterval is how long Poll waits between calls of its condition.
const pollInterval = time.Millisecond

// tailBytes is how much of the end of a process's output errors quote.
const tailBytes = 2000

// FreePort returns a TCP port that is free on 127.0.0.1, for a server to
// bind. It picks one at random below the kernel's range of ephemeral
// ports, so that no outgoing connection takes it as its local port before
// the server binds it (a port the kernel handed out for ":0" is in that
// range, and a busy test's clients reuse such ports at once). Another
// process picking ports may still take it first; the server then fails to
// start, which Poll and WaitPING report.
func FreePort() (int, error) {
	low := ephemeralLow()
	for range 100 {
		port := portsFrom + rand.IntN(low-portsFrom)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			l.Close()
			return port, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("proctest: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// portsFrom is the lowest port FreePort picks: above the ports of
// well-known services.
const portsFrom = 10000

// ephemeralLow returns the first port of the kernel's ephemeral range
// (Linux's ip_local_port_range), or 32768, the usual one, where that is
// not known or leaves too few ports below it.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	low, err := strconv.Atoi(f[0])
	if err != nil || low < portsFrom+1000 {
		return 32768
	}
	return low
}

// SyncBuffer is a buffer that a process, or a goroutine, writes while
// others read it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns the buffer's contents.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Process is a started child process.
type Process struct {
	cmd     *exec.Cmd
	output  *SyncBuffer   // nil when the caller directed the output
	done    chan struct{} // closed when the process has exited
	waitErr error         // how it exited, once done is closed
}

// Start starts cmd, with the parent death signal set where the kernel
// has one (Linux: the child is killed if this process dies without
// stopping it), and waits for it in the background. When the caller left
// cmd.Stdout and cmd.Stderr nil, both go to a buffer that Output reads
// and that errors quote; otherwise the output goes where the caller said.
func Start(cmd *exec.Cmd) (*Process, error) {
	p := &Process{cmd: cmd, done: make(chan struct{})}
	if cmd.Stdout == nil && cmd.Stderr == nil {
		p.output = &SyncBuffer{}
		cmd.Stdout, cmd.Stderr = p.output, p.output
	}
	setParentDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("proctest: %w", err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Output returns what the process wrote so far to stdout and stderr, if
// Start collected it, and otherwise "". Once the process has exited it is
// complete.
func (p *Process) Output() string {
	if p.output == nil {
		return ""
	}
	return p.output.String()
}

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait waits for the process to exit and returns its exit error, as
// exec.Cmd.Wait does: nil for a status of 0.
func (p *Process) Wait() error {
	<-p.done
	return p.waitErr
}

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("proctest: %w", err)
	}
	return nil
}

// Stop sends sig to the process, unless it has already exited, and waits
// for it to exit. If it still runs after grace, Stop kills it, waits for
// that and returns an error. How the process exited is Wait's to tell.
func (p *Process) Stop(sig os.Signal, grace time.Duration) error {
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("proctest: %w", err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return fmt.Errorf("proctest: process %d did not exit within %v of %v; killed it", p.Pid(), grace, sig)
}

// Poll calls ok about every millisecond until it returns true, the
// process exits (ErrExited) or timeout passes. Its errors end with the
// tail of the process's output.
func (p *Process) Poll(timeout time.Duration, ok func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if p.Exited() {
			return fmt.Errorf("%w (%v)%s", ErrExited, p.waitErr, p.tail())
		}
		if ok() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("proctest: process %d not ready after %v%s", p.Pid(), timeout, p.tail())
		}
		time.Sleep(pollInterval)
	}
}

// WaitPING polls the server at addr with PING, as Poll does, until it
// answers PONG.
func (p *Process) WaitPING(addr string, timeout time.Duration) error {
	return p.Poll(timeout, func() bool { return ping(addr) })
}

// tail returns the end of the process's output, for error messages: ""
// when Start did not collect it.
func (p *Process) tail() string {
	s := strings.TrimSpace(p.Output())
	if s == "" {
		return ""
	}
	if len(s) > tailBytes {
		s = "..." + s[len(s)-tailBytes:]
	}
	return "; output:\n" + s
}

// ping sends PING to addr on a fresh connection and reports whether the
// reply was PONG within a second each for connecting and for the reply.
func ping(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(time.Second)); err != nil {
		return false
	}
	if _, err := io.WriteString(conn, "*1\r\n$4\r\nPING\r\n"); err != nil {
		return false
	}
	const want = "+PONG\r\n"
	got := make([]byte, len(want))
	_, err = io.ReadFull(conn, got)
	return err == nil && string(got) == want
}
