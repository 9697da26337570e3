package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// replyError is an error reply ("-ERR ...") from a server.
type replyError string

func (e replyError) Error() string { return string(e) }

// errProtocol marks a reply the reader cannot parse.
var errProtocol = errors.New("bench: malformed reply")

// respReader reads RESP replies through one buffer that it allocates once
// and grows only for replies larger than the buffer.
type respReader struct {
	src  io.Reader
	buf  []byte
	r, w int // unread bytes are buf[r:w]
}

func newRespReader(src io.Reader, size int) *respReader {
	return &respReader{src: src, buf: make([]byte, size)}
}

// fill reads at least one more byte into the buffer, moving the unread
// bytes to its start and doubling it when it is full.
func (rd *respReader) fill() error {
	if rd.r > 0 {
		rd.w = copy(rd.buf, rd.buf[rd.r:rd.w])
		rd.r = 0
	}
	if rd.w == len(rd.buf) {
		grown := make([]byte, 2*len(rd.buf))
		copy(grown, rd.buf[:rd.w])
		rd.buf = grown
	}
	n, err := rd.src.Read(rd.buf[rd.w:])
	rd.w += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// line returns the next line without its CRLF. It aliases the buffer and
// is valid until the next call.
func (rd *respReader) line() ([]byte, error) {
	for {
		if i := bytes.IndexByte(rd.buf[rd.r:rd.w], '\n'); i >= 0 {
			l := rd.buf[rd.r : rd.r+i]
			rd.r += i + 1
			if len(l) == 0 || l[len(l)-1] != '\r' {
				return nil, errProtocol
			}
			return l[:len(l)-1], nil
		}
		if err := rd.fill(); err != nil {
			return nil, err
		}
	}
}

// take returns the next n bytes, which must be followed by CRLF. It
// aliases the buffer and is valid until the next call.
func (rd *respReader) take(n int) ([]byte, error) {
	for rd.w-rd.r < n+2 {
		if err := rd.fill(); err != nil {
			return nil, err
		}
	}
	b := rd.buf[rd.r : rd.r+n]
	if rd.buf[rd.r+n] != '\r' || rd.buf[rd.r+n+1] != '\n' {
		return nil, errProtocol
	}
	rd.r += n + 2
	return b, nil
}

// header reads a reply's first line and returns its type byte and, for
// bulk strings and arrays, its length; for the other types the line's
// text is returned instead.
func (rd *respReader) header() (kind byte, n int, text []byte, err error) {
	l, err := rd.line()
	if err != nil {
		return 0, 0, nil, err
	}
	if len(l) == 0 {
		return 0, 0, nil, errProtocol
	}
	kind, text = l[0], l[1:]
	switch kind {
	case '$', '*':
		v, err := strconv.Atoi(string(text))
		if err != nil || v < -1 {
			return 0, 0, nil, errProtocol
		}
		return kind, v, nil, nil
	case '+', '-', ':':
		return kind, 0, text, nil
	}
	return 0, 0, nil, fmt.Errorf("%w: type byte %q", errProtocol, kind)
}

// skip consumes one reply without keeping it. An error reply is returned
// as a replyError after the reply has been consumed.
func (rd *respReader) skip() error {
	kind, n, text, err := rd.header()
	if err != nil {
		return err
	}
	switch kind {
	case '-':
		return replyError(text)
	case '$':
		if n >= 0 {
			_, err = rd.take(n)
		}
		return err
	case '*':
		for ; n > 0; n-- {
			if err := rd.skip(); err != nil {
				return err
			}
		}
	}
	return nil
}

// read returns one reply as a Go value: string for simple and bulk
// strings, int64 for integers, []any for arrays, nil for null replies,
// and a replyError as the error for error replies.
func (rd *respReader) read() (any, error) {
	kind, n, text, err := rd.header()
	if err != nil {
		return nil, err
	}
	switch kind {
	case '+':
		return string(text), nil
	case '-':
		return nil, replyError(text)
	case ':':
		v, err := strconv.ParseInt(string(text), 10, 64)
		if err != nil {
			return nil, errProtocol
		}
		return v, nil
	case '$':
		if n < 0 {
			return nil, nil
		}
		b, err := rd.take(n)
		return string(b), err
	}
	if n < 0 {
		return nil, nil
	}
	items := make([]any, n)
	for i := range items {
		if items[i], err = rd.read(); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// appendBulk appends s as a RESP bulk string.
func appendBulk(buf []byte, s []byte) []byte {
	buf = append(buf, '$')
	buf = strconv.AppendInt(buf, int64(len(s)), 10)
	buf = append(buf, "\r\n"...)
	buf = append(buf, s...)
	return append(buf, "\r\n"...)
}

// A template is a command encoded once, whose only changing parts are
// integer arguments (bit offsets) in a row between fixed arguments: none
// (BITCOUNT key), one (SETBIT key <id> 1) or many (GETBITS key <id>...).
// It is a request of one command.
type template struct {
	head []byte // array header and the arguments before the integers
	tail []byte // the arguments after them
	n    int    // how many integer arguments the command has
}

// newTemplate encodes the command before... followed by n integer
// arguments and after....
func newTemplate(before []string, n int, after ...string) template {
	t := template{n: n}
	t.head = append(t.head, '*')
	t.head = strconv.AppendInt(t.head, int64(len(before)+n+len(after)), 10)
	t.head = append(t.head, "\r\n"...)
	for _, a := range before {
		t.head = appendBulk(t.head, []byte(a))
	}
	for _, a := range after {
		t.tail = appendBulk(t.tail, []byte(a))
	}
	return t
}

// appendTo appends the command with its integer arguments taken from ids
// (which may be nil when it has none). It does not allocate once buf has
// room.
func (t template) appendTo(buf []byte, ids idSource) []byte {
	buf = append(buf, t.head...)
	for range t.n {
		buf = appendUint(buf, ids.next())
	}
	return append(buf, t.tail...)
}

// ids is the number of integer arguments.
func (t template) ids() int { return t.n }

// replies is 1: one command.
func (t template) replies() int { return 1 }

// appendUint appends v as a RESP bulk string of its decimal digits.
func appendUint(buf []byte, v uint64) []byte {
	var digits [20]byte
	return appendBulk(buf, strconv.AppendUint(digits[:0], v, 10))
}
