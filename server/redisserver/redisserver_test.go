package redisserver

import (
	"bufio"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
)

func TestStartAnswersAndClose(t *testing.T) {
	p := StartForTest(t, Options{Args: []string{"--databases", "4"}})
	conn, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// SELECT 3 works and SELECT 4 fails only if the extra argument applied.
	if _, err := conn.Write([]byte("SELECT 3\r\nSELECT 4\r\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	for _, want := range []string{"+OK\r\n", "-ERR DB index is out of range\r\n"} {
		got, err := r.ReadString('\n')
		if err != nil || got != want {
			t.Fatalf("reply %q, %v; want %q", got, err, want)
		}
	}
	pid := p.Pid()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("process %d still exists after Close: %v", pid, err)
	}
	if _, err := net.Dial("tcp", p.Addr()); err == nil {
		t.Fatal("port still accepts connections after Close")
	}
}

func TestTwoServersGetDistinctPorts(t *testing.T) {
	a := StartForTest(t, Options{})
	b := StartIfInstalled(t, Options{}) // installed: a was started

	if a.Addr() == b.Addr() || a.Pid() == b.Pid() {
		t.Fatalf("same server twice: %s/%d and %s/%d", a.Addr(), a.Pid(), b.Addr(), b.Pid())
	}
}

func TestStartWithoutRedis(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, err := Start(Options{}); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("Start without redis-server: %v, want ErrNotInstalled", err)
	}
}

// fakeTB records what StartForTest asks of a test.
type fakeTB struct {
	skipped, failed bool
}

func (f *fakeTB) Helper()        {}
func (f *fakeTB) Skip(...any)    { f.skipped = true }
func (f *fakeTB) Fatal(...any)   { f.failed = true }
func (f *fakeTB) Cleanup(func()) {}

func TestStartForTestWithoutRedis(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		var f, g fakeTB
		// The fake's Skip and Fatal return, unlike testing's, so
		// StartForTest must stop by itself after either.
		if p := StartForTest(&f, Options{}); p != nil {
			t.Fatal("got a process without redis-server")
		}
		if wantFail := ci == "true"; f.failed != wantFail || f.skipped == wantFail {
			t.Errorf("CI=%q: skipped=%v failed=%v", ci, f.skipped, f.failed)
		}
		// StartIfInstalled neither skips nor fails outside CI.
		if p := StartIfInstalled(&g, Options{}); p != nil {
			t.Fatal("got a process without redis-server")
		}
		if wantFail := ci == "true"; g.failed != wantFail || g.skipped {
			t.Errorf("StartIfInstalled, CI=%q: skipped=%v failed=%v", ci, g.skipped, g.failed)
		}
	}
}

func TestStartReportsBadArgs(t *testing.T) {
	_, err := Start(Options{Args: []string{"--no-such-option", "1"}})
	if errors.Is(err, ErrNotInstalled) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	if !errors.Is(err, ErrNotReady) {
		t.Fatalf("Start with a bad option: %v, want ErrNotReady", err)
	}
}

func TestStartBinary(t *testing.T) {
	bin := RequireProgram(t, "redis-server")
	// A program given by its path, with only the options StartBinary
	// adds and the caller's.
	p, err := StartBinary(bin, Options{Args: []string{"--save", ""}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := Dial(p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := c.Do([]byte("CONFIG"), []byte("GET"), []byte("appendonly")); err != nil || string(got) != "*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n" {
		t.Fatalf("CONFIG GET appendonly: %q, %v", got, err)
	}
	if _, err := StartBinary("no-such-server-program", Options{}); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("StartBinary of a missing program: %v, want ErrNotInstalled", err)
	}
	// A program that exits at once never becomes ready.
	if _, err := StartBinary(RequireProgram(t, "false"), Options{}); !errors.Is(err, ErrNotReady) {
		t.Errorf("StartBinary of a program that exits: %v, want ErrNotReady", err)
	}
}

func TestRequireProgram(t *testing.T) {
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		var f fakeTB
		if path := RequireProgram(&f, "no-such-program"); path != "" {
			t.Errorf("CI=%q: path %q for a missing program", ci, path)
		}
		if wantFail := ci == "true"; f.failed != wantFail || f.skipped == wantFail {
			t.Errorf("CI=%q: skipped=%v failed=%v", ci, f.skipped, f.failed)
		}
		f = fakeTB{}
		if path := RequireProgram(&f, "sh"); path == "" || f.failed || f.skipped {
			t.Errorf("CI=%q: sh: path %q, skipped=%v failed=%v", ci, path, f.skipped, f.failed)
		}
	}
}
