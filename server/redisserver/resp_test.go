package redisserver

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestAppendCommand(t *testing.T) {
	if got, want := string(AppendCommand([]byte("x"), "SET", "k", "")), "x*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"; got != want {
		t.Errorf("strings: %q, want %q", got, want)
	}
	if got, want := string(AppendCommand(nil, []byte("ECHO"), []byte("a\r\nb"))), "*2\r\n$4\r\nECHO\r\n$4\r\na\r\nb\r\n"; got != want {
		t.Errorf("byte slices: %q, want %q", got, want)
	}
	if got := string(AppendCommand[string](nil)); got != "*0\r\n" {
		t.Errorf("no arguments: %q", got)
	}
}

func TestReadReply(t *testing.T) {
	long := "+" + strings.Repeat("x", 10000) + "\r\n" // longer than the reader's buffer
	replies := []string{
		"+OK\r\n",
		"+\r\n",
		"-ERR syntax error\r\n",
		":-42\r\n",
		"$-1\r\n",
		"*-1\r\n",
		"$0\r\n\r\n",
		"$4\r\na\r\nb\r\n",
		"*0\r\n",
		"*3\r\n:1\r\n*2\r\n$1\r\nx\r\n$-1\r\n*1\r\n*0\r\n",
		long,
		// RESP3
		"_\r\n",
		",1.5\r\n",
		"#t\r\n",
		"(12345678901234567890\r\n",
		"!5\r\nERR x\r\n",
		"=7\r\ntxt:a\r\n\r\n",
		"%2\r\n$1\r\na\r\n_\r\n+b\r\n~1\r\n:1\r\n",
		">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$0\r\n\r\n",
		"|1\r\n+ttl\r\n:3\r\n*1\r\n#f\r\n",
	}
	// One byte per read makes every reply cross buffer refills.
	r := bufio.NewReaderSize(iotest.OneByteReader(strings.NewReader(strings.Join(replies, ""))), 16)
	for _, want := range replies {
		got, err := ReadReply(r)
		if err != nil || string(got) != want {
			t.Fatalf("ReadReply = %.40q, %v; want %.40q", got, err, want)
		}
	}
	if got, err := ReadReply(r); err != io.EOF || len(got) != 0 {
		t.Fatalf("after the last reply: %q, %v; want EOF", got, err)
	}
}

func TestReadReplyRejectsMalformed(t *testing.T) {
	for _, tc := range []struct {
		in, read  string // read: the bytes returned with the error
		malformed bool   // whether the error wraps ErrMalformed
	}{
		{"OK\r\n", "OK\r\n", true},
		{"?x\r\n", "?x\r\n", true},
		{"\r\n", "\r\n", true},
		{"+OK\n", "+OK\n", true},
		{"-\r\n", "-\r\n", true},
		{":1x\r\n", ":1x\r\n", true},
		{":x\r\n", ":x\r\n", true},
		{"$-2\r\n", "$-2\r\n", true},
		{"_x\r\n", "_x\r\n", true},
		{"%x\r\n", "%x\r\n", true},
		{"%1\r\n:1\r\n", "%1\r\n:1\r\n", false},
		{"*abc\r\n", "*abc\r\n", true},
		{"$3\r\nabcd\r\n", "$3\r\nabcd\r", true},
		{"$5\r\nhelloXX", "$5\r\nhelloXX", true},
		{"*2\r\n:1\r\n", "*2\r\n:1\r\n", false},
		{"$4\r\nab", "$4\r\nab", false},
		{"+OK", "+OK", false},
		// A length the body does not have costs no memory up front.
		{"$9223372036854775807\r\nabc", "$9223372036854775807\r\nabc", false},
	} {
		got, err := ReadReply(bufio.NewReader(strings.NewReader(tc.in)))
		if err == nil || errors.Is(err, ErrMalformed) != tc.malformed || string(got) != tc.read {
			t.Errorf("ReadReply(%q) = %q, %v; want %q and an error (malformed: %v)", tc.in, got, err, tc.read, tc.malformed)
		}
	}
}

func TestConnWithRedis(t *testing.T) {
	p := StartForTest(t, Options{Password: "pw"})
	c, err := Dial(p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.NetConn().RemoteAddr().String(); got != p.Addr() {
		t.Errorf("NetConn().RemoteAddr() = %s, want %s", got, p.Addr())
	}
	do := func(want string, args ...string) {
		t.Helper()
		bargs := make([][]byte, len(args))
		for i, a := range args {
			bargs[i] = []byte(a)
		}
		if got, err := c.Do(bargs...); err != nil || string(got) != want {
			t.Fatalf("%q: %q, %v; want %q", args, got, err, want)
		}
	}
	do("-NOAUTH Authentication required.\r\n", "PING")
	do("+OK\r\n", "AUTH", "pw")
	do("+OK\r\n", "SET", "k", "a\r\nb")
	do("$4\r\na\r\nb\r\n", "GET", "k")
	do("*2\r\n$4\r\na\r\nb\r\n$-1\r\n", "MGET", "k", "nokey")
	// Raw bytes: an inline command and a pipeline, read reply by reply.
	if _, err := c.Write([]byte("EXISTS k\r\nPING\r\n")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{":1\r\n", "+PONG\r\n"} {
		if got, err := c.ReadReply(); err != nil || string(got) != want {
			t.Fatalf("ReadReply = %q, %v; want %q", got, err, want)
		}
	}
	// Read sees the bytes after the last reply, up to the close.
	if _, err := c.Write([]byte("QUIT\r\n")); err != nil {
		t.Fatal(err)
	}
	if rest, err := io.ReadAll(c); err != nil || string(rest) != "+OK\r\n" {
		t.Fatalf("reading to the close: %q, %v; want +OK", rest, err)
	}
}

func TestConnTimesOut(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	nc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	// The listener accepts (in the kernel) but never answers.
	c := newConn(nc, 50*time.Millisecond)
	defer c.Close()
	if got, err := c.Do([]byte("PING")); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Do against a silent server: %q, %v; want a deadline error", got, err)
	}
}
