package proto

import (
	"bytes"
	"errors"
)

// ErrBadReply is returned by ReplyLen for bytes that are not a RESP2 or
// RESP3 reply.
var ErrBadReply = errors.New("proto: malformed reply")

// maxReplyDepth bounds the nesting of aggregates ReplyLen accepts.
const maxReplyDepth = 64

// ReplyLen returns the length of the RESP2 or RESP3 reply at the start of
// b (an attribute counts as part of the reply it precedes): 0 if
// b holds only part of one, or ErrBadReply if b does not start with one.
// It lets a node relay another node's replies byte for byte.
func ReplyLen(b []byte) (int, error) {
	return replyLen(b, 0)
}

func replyLen(b []byte, depth int) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	end := bytes.Index(b, []byte("\r\n"))
	if end < 0 {
		return 0, nil
	}
	if end == 0 {
		return 0, ErrBadReply
	}
	line, n := b[1:end], end+2
	switch b[0] {
	case '+', '-', ',', '(':
		return n, nil
	case '_':
		if len(line) != 0 {
			return 0, ErrBadReply
		}
		return n, nil
	case '#':
		if len(line) != 1 || line[0] != 't' && line[0] != 'f' {
			return 0, ErrBadReply
		}
		return n, nil
	case ':':
		if _, ok := ParseInt(line); !ok {
			return 0, ErrBadReply
		}
		return n, nil
	case '$', '=', '!':
		size, ok := ParseInt(line)
		switch {
		case !ok || size < -1 || size == -1 && b[0] != '$':
			return 0, ErrBadReply
		case size == -1:
			return n, nil
		case int64(len(b)-n) < size+2:
			return 0, nil
		case b[n+int(size)] != '\r' || b[n+int(size)+1] != '\n':
			return 0, ErrBadReply
		}
		return n + int(size) + 2, nil
	case '*', '~', '>', '%', '|':
		count, ok := ParseInt(line)
		if !ok || count < -1 || count == -1 && b[0] != '*' || depth >= maxReplyDepth {
			return 0, ErrBadReply
		}
		if b[0] == '%' || b[0] == '|' {
			count *= 2
		}
		if b[0] == '|' {
			count++ // the reply the attribute comes with
		}
		for ; count > 0; count-- {
			m, err := replyLen(b[n:], depth+1)
			if m == 0 || err != nil {
				return 0, err
			}
			n += m
		}
		return n, nil
	}
	return 0, ErrBadReply
}

// AppendRESP3 appends to dst the RESP2 replies of src as RESP3 replies,
// where they differ in what a keyspace write answers: nulls (bulk and
// array) become RESP3's null. src must hold whole replies, as ReplyLen
// splits them; dst is returned with as much of src as was well-formed.
func AppendRESP3(dst, src []byte) []byte {
	for len(src) > 0 {
		n, err := ReplyLen(src)
		if n == 0 || err != nil {
			return dst
		}
		dst = appendRESP3(dst, src[:n])
		src = src[n:]
	}
	return dst
}

// appendRESP3 appends r, one well-formed RESP2 reply, as RESP3.
func appendRESP3(dst, r []byte) []byte {
	switch {
	case r[0] == '$' || r[0] == '*':
		if r[1] == '-' {
			return append(dst, "_\r\n"...)
		}
		if r[0] == '$' {
			return append(dst, r...)
		}
	default:
		return append(dst, r...)
	}
	nl := bytes.IndexByte(r, '\n') + 1
	dst = append(dst, r[:nl]...)
	for rest := r[nl:]; len(rest) > 0; {
		n, _ := ReplyLen(rest)
		dst = appendRESP3(dst, rest[:n])
		rest = rest[n:]
	}
	return dst
}
