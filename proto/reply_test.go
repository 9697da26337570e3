package proto

import (
	"bytes"
	"slices"
	"strings"
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

// splitReplies splits b into replies with ReplyLen.
func splitReplies(t *testing.T, b []byte) []string {
	t.Helper()
	var replies []string
	for rest := b; len(rest) > 0; {
		n, err := ReplyLen(rest)
		if err != nil || n == 0 {
			t.Fatalf("ReplyLen(%q) = %d, %v", rest, n, err)
		}
		replies = append(replies, string(rest[:n]))
		rest = rest[n:]
	}
	return replies
}

func TestWriterProtocols(t *testing.T) {
	write := func(w *Writer) {
		w.Null()
		w.NullArray()
		w.Map(1)
		w.BulkString("k")
		w.Set(2)
		w.Int(1)
		w.Null()
		w.Push(2)
		w.BulkString("message")
		w.Array(0)
		w.Verbatim([]byte("a\r\nb"))
		w.Map(0)
	}
	for _, tt := range []struct {
		resp3 bool
		want  []string
	}{
		{false, []string{"$-1\r\n", "*-1\r\n", "*2\r\n$1\r\nk\r\n*2\r\n:1\r\n$-1\r\n", "*2\r\n$7\r\nmessage\r\n*0\r\n",
			"$4\r\na\r\nb\r\n", "*0\r\n"}},
		{true, []string{"_\r\n", "_\r\n", "%1\r\n$1\r\nk\r\n~2\r\n:1\r\n_\r\n", ">2\r\n$7\r\nmessage\r\n*0\r\n",
			"=8\r\ntxt:a\r\nb\r\n", "%0\r\n"}},
	} {
		w := Writer{RESP3: tt.resp3}
		write(&w)
		if got := splitReplies(t, w.B); !slices.Equal(got, tt.want) {
			t.Errorf("RESP3 %v: wrote %q, want %q", tt.resp3, got, tt.want)
		}
		w.Reset()
		if w.RESP3 != tt.resp3 {
			t.Errorf("Reset changed the protocol")
		}
	}
}

func TestReplyLenRESP3(t *testing.T) {
	want := []string{"_\r\n", ",3.14\r\n", ",-inf\r\n", "#t\r\n", "#f\r\n", "(3492890328409238509324850943850943825024385\r\n",
		"!5\r\nERR x\r\n", "=7\r\ntxt:a\r\n\r\n", "%2\r\n+a\r\n:1\r\n+b\r\n~1\r\n_\r\n", ">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$0\r\n\r\n",
		"|1\r\n+ttl\r\n:3\r\n*1\r\n#t\r\n", "%0\r\n", "~0\r\n"}
	if got := splitReplies(t, []byte(strings.Join(want, ""))); !slices.Equal(got, want) {
		t.Fatalf("split into %q, want %q", got, want)
	}
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
		"*1\r\n!\r\n", "_x\r\n", "#x\r\n", "=-1\r\n", "%-1\r\n", "~x\r\n", string(bytes.Repeat([]byte("*1\r\n"), maxReplyDepth+1)) + ":1\r\n"} {
		if n, err := ReplyLen([]byte(b)); err != ErrBadReply {
			t.Errorf("ReplyLen(%q) = %d, %v, want ErrBadReply", b, n, err)
		}
	}
}

func FuzzReplyLen(f *testing.F) {
	for _, s := range []string{"+OK\r\n", "*2\r\n$1\r\na\r\n:1\r\n", "$-1\r\n", "*1\r\n*1\r\n-E\r\n", "%1\r\n_\r\n#t\r\n", "|1\r\n+a\r\n,1.5\r\n=5\r\ntxt:x\r\n"} {
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
			// Converted to RESP3, it is still one whole reply.
			conv := AppendRESP3(nil, b[:n])
			if m, err := ReplyLen(conv); m != len(conv) || err != nil {
				t.Fatalf("AppendRESP3(%q) = %q: ReplyLen %d, %v", b[:n], conv, m, err)
			}
		}
	})
}

func TestAppendRESP3(t *testing.T) {
	// The same replies written in RESP2 and converted, and written in
	// RESP3, are the same bytes.
	write := func(w *Writer) {
		w.Null()
		w.Array(4)
		w.Bulk([]byte("$-1\r\n"))
		w.NullArray()
		w.Array(2)
		w.Int(-1)
		w.Null()
		w.Error("ERR x")
		w.NullArray()
		w.Simple("OK")
		w.Array(0)
		w.Bulk(nil)
	}
	var two, three Writer
	three.RESP3 = true
	write(&two)
	write(&three)
	got := AppendRESP3([]byte("+kept\r\n"), two.B)
	if want := "+kept\r\n" + string(three.B); string(got) != want {
		t.Errorf("AppendRESP3 = %q, want %q", got, want)
	}
	// A reply cut short is left out.
	if got := AppendRESP3(nil, []byte(":1\r\n*2\r\n$-1\r\n")); string(got) != ":1\r\n" {
		t.Errorf("AppendRESP3 of a partial reply = %q", got)
	}
}
