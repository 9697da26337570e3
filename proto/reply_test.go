package proto

import (
	"bytes"
	"testing"
)

func TestReplyLen(t *testing.T) {
	var w Writer
	w.OK()
	w.Error("ERR boom")
	w.Int(-42)
	w.Bulk([]byte("a\r\nb"))
	w.Null()
	w.NullArray()
	w.Array(3)
	w.Int(1)
	w.Array(2)
	w.BulkString("x")
	w.Simple("y")
	w.Bulk(nil)
	w.Array(0)
	replies := [][]byte{}
	for rest := w.B; len(rest) > 0; {
		n, err := ReplyLen(rest)
		if err != nil || n == 0 {
			t.Fatalf("ReplyLen(%q) = %d, %v", rest, n, err)
		}
		replies = append(replies, rest[:n])
		rest = rest[n:]
	}
	want := []string{"+OK\r\n", "-ERR boom\r\n", ":-42\r\n", "$4\r\na\r\nb\r\n", "$-1\r\n", "*-1\r\n",
		"*3\r\n:1\r\n*2\r\n$1\r\nx\r\n+y\r\n$0\r\n\r\n", "*0\r\n"}
	if len(replies) != len(want) {
		t.Fatalf("split into %q, want %q", replies, want)
	}
	for i := range want {
		if string(replies[i]) != want[i] {
			t.Errorf("reply %d = %q, want %q", i, replies[i], want[i])
		}
	}
	// Every proper prefix of a reply is incomplete, never an error.
	for _, r := range want {
		for i := range len(r) {
			if n, err := ReplyLen([]byte(r[:i])); n != 0 || err != nil {
				t.Errorf("ReplyLen(%q) = %d, %v, want 0, nil", r[:i], n, err)
			}
		}
	}
}

func TestReplyLenRejectsMalformed(t *testing.T) {
	for _, b := range []string{"?x\r\n", ":1x\r\n", "$-2\r\n", "$1\r\nab\r\n", "*x\r\n", "*-2\r\n",
		"*1\r\n!\r\n", string(bytes.Repeat([]byte("*1\r\n"), maxReplyDepth+1)) + ":1\r\n"} {
		if n, err := ReplyLen([]byte(b)); err != ErrBadReply {
			t.Errorf("ReplyLen(%q) = %d, %v, want ErrBadReply", b, n, err)
		}
	}
}

func FuzzReplyLen(f *testing.F) {
	for _, s := range []string{"+OK\r\n", "*2\r\n$1\r\na\r\n:1\r\n", "$-1\r\n", "*1\r\n*1\r\n-E\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := ReplyLen(b)
		if err != nil {
			return
		}
		if n < 0 || n > len(b) {
			t.Fatalf("ReplyLen(%q) = %d out of range", b, n)
		}
		if n > 0 {
			// A complete reply stays the same reply when more bytes follow.
			m, err := ReplyLen(append(bytes.Clone(b[:n]), "+tail\r\n"...))
			if m != n || err != nil {
				t.Fatalf("ReplyLen(%q + tail) = %d, %v, want %d", b[:n], m, err, n)
			}
		}
	})
}
