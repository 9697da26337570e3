//go:build unix

package proctest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// helperEnv names the role a re-executed test binary plays instead of
// running the tests; helperAddr is where the "pong" and "ok" roles listen.
const (
	helperEnv  = "PROCTEST_HELPER"
	helperAddr = "PROCTEST_ADDR"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		os.Exit(helper(role))
	}
	os.Exit(m.Run())
}

// helper plays a child process and returns its exit status:
// "pong" and "ok" print a line and answer every request on the address
// in helperAddr with +PONG or +OK until SIGTERM; "fail" prints a line and
// exits with status 3; "stubborn" ignores SIGTERM and waits to be killed.
func helper(role string) int {
	switch role {
	case "fail":
		fmt.Println("cannot start: no such thing")
		return 3
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ignoring SIGTERM")
		time.Sleep(time.Hour) // until the test kills it
		return 1
	}
	reply := map[string]string{"pong": "+PONG\r\n", "ok": "+OK\r\n"}[role]
	// Caught before the first answer: a test may send it once it has one.
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	ln, err := net.Listen("tcp", os.Getenv(helperAddr))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("listening on", ln.Addr())
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go answer(conn, reply)
		}
	}()
	<-term
	return 0
}

// answer replies to each line the client sends that starts a request.
func answer(conn net.Conn, reply string) {
	defer conn.Close()
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "*") {
			conn.Write([]byte(reply))
		}
	}
}

// startHelper re-executes the test binary in role with its address at a
// free port, and kills it when the test ends.
func startHelper(t *testing.T, role string) (*Process, string) {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"="+role, helperAddr+"="+addr)
	p, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(syscall.SIGKILL, time.Minute) })
	return p, addr
}

func TestWaitPINGThenStop(t *testing.T) {
	p, addr := startHelper(t, "pong")
	if err := p.WaitPING(addr, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if !ping(addr) || p.Exited() {
		t.Fatal("ready, but does not answer PING or has exited")
	}
	if err := p.Stop(syscall.SIGTERM, time.Minute); err != nil {
		t.Fatal(err)
	}
	if !p.Exited() || p.Wait() != nil {
		t.Fatalf("after SIGTERM: exited %v, status %v", p.Exited(), p.Wait())
	}
	if out := p.Output(); out != "listening on "+addr+"\n" {
		t.Errorf("output %q", out)
	}
	if err := p.Stop(syscall.SIGTERM, time.Minute); err != nil {
		t.Errorf("Stop of an exited process: %v", err)
	}
	if ping(addr) {
		t.Error("PING answered after the process exited")
	}
}

func TestWaitPINGReportsExit(t *testing.T) {
	p, addr := startHelper(t, "fail")
	err := p.WaitPING(addr, 30*time.Second)
	if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "exit status 3") ||
		!strings.HasSuffix(err.Error(), "output:\ncannot start: no such thing") {
		t.Fatalf("WaitPING on a process that exits: %v", err)
	}
}

func TestWaitPINGWantsPONG(t *testing.T) {
	p, addr := startHelper(t, "ok")
	err := p.WaitPING(addr, 200*time.Millisecond)
	if err == nil || errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "not ready after 200ms") ||
		!strings.HasSuffix(err.Error(), "listening on "+addr) {
		t.Fatalf("WaitPING on a server that replies +OK: %v", err)
	}
}

func TestStopKillsAfterGrace(t *testing.T) {
	p, _ := startHelper(t, "stubborn")
	if err := p.Poll(30*time.Second, func() bool { return p.Output() != "" }); err != nil {
		t.Fatal(err)
	}
	err := p.Stop(syscall.SIGTERM, 100*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "did not exit within 100ms") {
		t.Fatalf("Stop of a process that ignores SIGTERM: %v", err)
	}
	var exit *exec.ExitError
	if !errors.As(p.Wait(), &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("exit %v, want killed by SIGKILL", p.Wait())
	}
}

func TestStartDirectedOutput(t *testing.T) {
	var out strings.Builder
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=fail")
	cmd.Stdout = &out
	p, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if p.Wait() == nil || p.Output() != "" || out.String() != "cannot start: no such thing\n" {
		t.Fatalf("status %v, Output %q, the caller's writer %q", p.Wait(), p.Output(), out.String())
	}
}

func TestSyncBufferConcurrentWrites(t *testing.T) {
	var b SyncBuffer
	const writers, lines = 8, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range lines {
				fmt.Fprintf(&b, "%d:%d\n", w, i)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		seen[l] = true
	}
	if len(seen) != writers*lines {
		t.Fatalf("%d distinct lines, want %d", len(seen), writers*lines)
	}
}

func TestFreePortIsBindable(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if port <= 0 || port > 65535 {
		t.Fatalf("port %d", port)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("port %d is not free: %v", port, err)
	}
	ln.Close()
}

// TestFreePortBelowEphemeral checks that the ports FreePort picks are
// ones no outgoing connection takes as its local port.
func TestFreePortBelowEphemeral(t *testing.T) {
	low := ephemeralLow()
	for range 50 {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if port < portsFrom || port >= low {
			t.Fatalf("port %d is outside [%d, %d)", port, portsFrom, low)
		}
	}
}
