package proto

import "bytes"

// Limits bounds what a client may send, as redis-server bounds it.
type Limits struct {
	// MaxBulkLen is proto-max-bulk-len: the largest bulk string accepted.
	MaxBulkLen int64
	// AuthRequired is set while the client has not authenticated; Redis
	// then accepts at most 10 arguments of at most 16384 bytes each.
	AuthRequired bool
}

const (
	// InlineMax is PROTO_INLINE_MAX_SIZE: the longest inline command, and
	// the longest multibulk or bulk header line.
	InlineMax = 64 * 1024
	// DefaultMaxBulkLen is proto-max-bulk-len's default, 512 MB.
	DefaultMaxBulkLen = 512 << 20
	// maxMultibulk is INT_MAX, Redis 7's bound on a multibulk count.
	maxMultibulk = 1<<31 - 1
	// unauthMultibulk and unauthBulk bound the requests of a client that
	// has not authenticated yet.
	unauthMultibulk = 10
	unauthBulk      = 16384
)

// ProtocolError is a malformed request. The connection replies with
// "ERR " followed by its text and is then closed, as in Redis.
type ProtocolError string

// Error returns the text Redis replies with, without the "ERR " prefix.
func (e ProtocolError) Error() string { return "Protocol error: " + string(e) }

// Redis's protocol errors.
const (
	errInvalidMultibulk = ProtocolError("invalid multibulk length")
	errInvalidBulk      = ProtocolError("invalid bulk length")
	errUnauthMultibulk  = ProtocolError("unauthenticated multibulk length")
	errUnauthBulk       = ProtocolError("unauthenticated bulk length")
	errBigMultibulk     = ProtocolError("too big mbulk count string")
	errBigBulk          = ProtocolError("too big bulk count string")
	errBigInline        = ProtocolError("too big inline request")
	errUnbalanced       = ProtocolError("unbalanced quotes in request")
)

// Parser splits a client's byte stream into commands. It keeps the state
// of a multibulk request that has not fully arrived, so each byte is
// looked at once however the stream is split. The zero value is ready.
type Parser struct {
	// State of the multibulk request at the start of the buffer.
	inMulti bool
	left    int   // arguments still to read
	pos     int   // offset of the next unread byte, from the request start
	bulk    int64 // length of the argument being read, or -1
	offs    []int // start and end offsets of the arguments read so far
}

// Parse reads one request from the start of buf. It returns the number of
// bytes the request took and its arguments: a fresh slice of byte slices
// that alias buf (or, for an inline request, fresh memory) and stay valid
// until buf is changed.
// n == 0 with a nil error means buf does not yet hold a whole request:
// call again, with the same bytes at the start of buf and more after them.
// A request with no arguments (an empty line, "*0") returns n > 0 and no
// arguments; skip it.
func (p *Parser) Parse(buf []byte, lim Limits) (args [][]byte, n int, err error) {
	return p.ParseAppend(nil, buf, lim)
}

// ParseAppend is Parse appending the request's arguments to dst and
// returning the extended slice, so that a connection can parse a whole
// pipeline into one reused slice without allocating. Earlier requests'
// sub-slices of dst stay valid when later appends grow it.
func (p *Parser) ParseAppend(dst [][]byte, buf []byte, lim Limits) (argv [][]byte, n int, err error) {
	if len(buf) == 0 {
		return dst, 0, nil
	}
	if !p.inMulti && buf[0] != '*' {
		args, n, err := p.parseInline(buf)
		return append(dst, args...), n, err
	}
	if !p.inMulti {
		count, nl, ok := shortHeader(buf, '*')
		if !ok {
			nl = lineEnd(buf, '\r')
			if nl < 0 {
				if len(buf) > InlineMax {
					return dst, 0, errBigMultibulk
				}
				return dst, 0, nil
			}
			if nl+1 >= len(buf) {
				return dst, 0, nil
			}
			if count, ok = ParseInt(buf[1:nl]); !ok || count > maxMultibulk {
				return dst, 0, errInvalidMultibulk
			}
		}
		if count > unauthMultibulk && lim.AuthRequired {
			return dst, 0, errUnauthMultibulk
		}
		if count <= 0 {
			return dst, nl + 2, nil
		}
		p.inMulti, p.left, p.pos, p.bulk = true, int(count), nl+2, -1
		p.offs = p.offs[:0]
	}
	for p.left > 0 {
		if p.bulk < 0 {
			rest := buf[p.pos:]
			size, nl, ok := shortHeader(rest, '$')
			if !ok {
				if len(rest) == 0 {
					return dst, 0, nil
				}
				nl = lineEnd(rest, '\r')
				if nl < 0 {
					if len(rest) > InlineMax {
						p.reset()
						return dst, 0, errBigBulk
					}
					return dst, 0, nil
				}
				if nl+1 >= len(rest) {
					return dst, 0, nil
				}
				if rest[0] != '$' {
					p.reset()
					return dst, 0, ProtocolError("expected '$', got '" + string(rest[0]) + "'")
				}
				if size, ok = ParseInt(rest[1:nl]); !ok || size < 0 {
					p.reset()
					return dst, 0, errInvalidBulk
				}
			}
			if size > lim.MaxBulkLen {
				p.reset()
				return dst, 0, errInvalidBulk
			}
			if size > unauthBulk && lim.AuthRequired {
				p.reset()
				return dst, 0, errUnauthBulk
			}
			p.bulk = size
			p.pos += nl + 2
		}
		end := p.pos + int(p.bulk)
		if end+2 > len(buf) {
			return dst, 0, nil
		}
		p.offs = append(p.offs, p.pos, end)
		p.pos = end + 2
		p.bulk = -1
		p.left--
	}
	for i := 0; i < len(p.offs); i += 2 {
		dst = append(dst, buf[p.offs[i]:p.offs[i+1]:p.offs[i+1]])
	}
	n = p.pos
	p.reset()
	return dst, n, nil
}

// Need is how many bytes, from the start of the request, the buffer must
// hold before the request can make progress; 0 when unknown. Connections
// use it to grow their buffer once for a large argument.
func (p *Parser) Need() int {
	if p.inMulti && p.bulk >= 0 {
		return p.pos + int(p.bulk) + 2
	}
	return 0
}

func (p *Parser) reset() {
	p.inMulti, p.left, p.pos, p.bulk = false, 0, 0, -1
}

// shortHeader reads the usual header of a multibulk request or a bulk
// string at the start of b: kind ('*' or '$'), one to nine digits without
// a leading zero, then "\r" and a byte after it. It returns the number and
// the offset of the "\r"; ok is false for anything else, which the
// general path reads.
func shortHeader(b []byte, kind byte) (n int64, nl int, ok bool) {
	if len(b) < 4 || b[0] != kind || b[1] < '1' || b[1] > '9' {
		return 0, 0, false
	}
	i := 1
	for ; i < len(b) && i <= 9 && '0' <= b[i] && b[i] <= '9'; i++ {
		n = n*10 + int64(b[i]-'0')
	}
	if i+1 >= len(b) || b[i] != '\r' {
		return 0, 0, false
	}
	return n, i, true
}

// lineEnd is the index of the first c in b, or -1 when there is none
// before the end of b or a NUL byte. Redis looks for line ends with
// strchr, which stops at NUL, so a header or inline line holding a NUL
// never ends: the request waits for more input until it is too big.
func lineEnd(b []byte, c byte) int {
	i := bytes.IndexByte(b, c)
	if i < 0 || bytes.IndexByte(b[:i], 0) >= 0 {
		return -1
	}
	return i
}

// parseInline reads a request in the inline (telnet) form: one line, split
// into arguments as Redis's sdssplitargs does.
func (p *Parser) parseInline(buf []byte) ([][]byte, int, error) {
	nl := lineEnd(buf, '\n')
	if nl < 0 {
		if len(buf) > InlineMax {
			return nil, 0, errBigInline
		}
		return nil, 0, nil
	}
	line := buf[:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	args, ok := SplitArgs(line)
	if !ok {
		return nil, 0, errUnbalanced
	}
	return args, nl + 1, nil
}

// SplitArgs splits a line into arguments the way redis-cli and inline
// requests do (Redis's sdssplitargs): blanks separate arguments, "double
// quotes" take \n \r \t \b \a \\ \" and \xHH escapes, 'single quotes' take
// \'. A closing quote must be followed by a blank or the end of the line.
// As for a C string, the line ends at its first NUL byte.
func SplitArgs(line []byte) ([][]byte, bool) {
	if i := bytes.IndexByte(line, 0); i >= 0 {
		line = line[:i]
	}
	var args [][]byte
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i >= len(line) {
			return args, true
		}
		var cur []byte
		inDQ, inSQ, done := false, false, false
		for !done {
			if inDQ {
				if i >= len(line) {
					return nil, false
				}
				c := line[i]
				switch {
				case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
					cur = append(cur, hexVal(line[i+2])<<4|hexVal(line[i+3]))
					i += 3
				case c == '\\' && i+1 < len(line):
					i++
					switch line[i] {
					case 'n':
						cur = append(cur, '\n')
					case 'r':
						cur = append(cur, '\r')
					case 't':
						cur = append(cur, '\t')
					case 'b':
						cur = append(cur, '\b')
					case 'a':
						cur = append(cur, '\a')
					default:
						cur = append(cur, line[i])
					}
				case c == '"':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, false
					}
					done = true
				default:
					cur = append(cur, c)
				}
			} else if inSQ {
				if i >= len(line) {
					return nil, false
				}
				c := line[i]
				switch {
				case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
					i++
					cur = append(cur, '\'')
				case c == '\'':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, false
					}
					done = true
				default:
					cur = append(cur, c)
				}
			} else {
				if i >= len(line) {
					break
				}
				switch c := line[i]; {
				case c == ' ' || c == '\n' || c == '\r' || c == '\t':
					done = true
				case c == '"':
					inDQ = true
				case c == '\'':
					inSQ = true
				default:
					cur = append(cur, c)
				}
			}
			if i < len(line) {
				i++
			}
		}
		if cur == nil {
			cur = []byte{}
		}
		args = append(args, cur)
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func hexVal(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
