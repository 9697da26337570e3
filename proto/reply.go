package proto

import (
	"bytes"
	"errors"
)

// ErrBadReply is returned by ReplyLen for bytes that are not a RESP2
// reply.
var ErrBadReply = errors.New("proto: malformed reply")

// maxReplyDepth bounds the nesting of arrays ReplyLen accepts.
const maxReplyDepth = 64

// ReplyLen returns the length of the RESP2 reply at the start of b: 0 if
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
	case '+', '-':
		return n, nil
	case ':':
		if _, ok := ParseInt(line); !ok {
			return 0, ErrBadReply
		}
		return n, nil
	case '$':
		size, ok := ParseInt(line)
		switch {
		case !ok || size < -1:
			return 0, ErrBadReply
		case size == -1:
			return n, nil
		case int64(len(b)-n) < size+2:
			return 0, nil
		case b[n+int(size)] != '\r' || b[n+int(size)+1] != '\n':
			return 0, ErrBadReply
		}
		return n + int(size) + 2, nil
	case '*':
		count, ok := ParseInt(line)
		if !ok || count < -1 || depth >= maxReplyDepth {
			return 0, ErrBadReply
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
