package proto

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
)

// refParse is a plain, whole-buffer restatement of Redis's request
// parsing (processInlineBuffer and processMultibulkBuffer), against which
// the incremental parser is checked: the commands in buf, then the error,
// if any, that stops the stream.
func refParse(buf []byte, lim Limits) ([][]string, error) {
	var out [][]string
	for len(buf) > 0 {
		var args []string
		var n int
		var err error
		if buf[0] == '*' {
			args, n, err = refMultibulk(buf, lim)
		} else {
			args, n, err = refInline(buf)
		}
		if err != nil || n == 0 {
			return out, err
		}
		if len(args) > 0 {
			out = append(out, args)
		}
		buf = buf[n:]
	}
	return out, nil
}

// refLine is the line that starts buf and ends with c, or ok false when
// strchr would not find c: missing, or after a NUL.
func refLine(buf []byte, c byte) (line []byte, ok bool) {
	for i, b := range buf {
		switch b {
		case c:
			return buf[:i], true
		case 0:
			return nil, false
		}
	}
	return nil, false
}

func refInline(buf []byte) ([]string, int, error) {
	line, ok := refLine(buf, '\n')
	if !ok {
		if len(buf) > InlineMax {
			return nil, 0, errBigInline
		}
		return nil, 0, nil
	}
	n := len(line) + 1
	line = bytes.TrimSuffix(line, []byte("\r"))
	args, ok := SplitArgs(line)
	if !ok {
		return nil, 0, errUnbalanced
	}
	return strs(args), n, nil
}

func refMultibulk(buf []byte, lim Limits) ([]string, int, error) {
	line, ok := refLine(buf, '\r')
	if !ok {
		if len(buf) > InlineMax {
			return nil, 0, errBigMultibulk
		}
		return nil, 0, nil
	}
	if len(line)+2 > len(buf) {
		return nil, 0, nil
	}
	count, ok := parseIntModel(string(line[1:]))
	switch {
	case !ok || count > 1<<31-1:
		return nil, 0, errInvalidMultibulk
	case lim.AuthRequired && count > 10:
		return nil, 0, errUnauthMultibulk
	}
	pos := len(line) + 2
	var args []string
	for i := int64(0); i < count; i++ {
		rest := buf[pos:]
		line, ok := refLine(rest, '\r')
		if !ok {
			if len(rest) > InlineMax {
				return nil, 0, errBigBulk
			}
			return nil, 0, nil
		}
		if len(line)+2 > len(rest) {
			return nil, 0, nil
		}
		if rest[0] != '$' {
			return nil, 0, ProtocolError(fmt.Sprintf("expected '$', got '%c'", rest[0]))
		}
		size, ok := parseIntModel(string(line[1:]))
		switch {
		case !ok || size < 0 || size > lim.MaxBulkLen:
			return nil, 0, errInvalidBulk
		case lim.AuthRequired && size > 16384:
			return nil, 0, errUnauthBulk
		}
		start := pos + len(line) + 2
		if int64(len(buf)-start) < size+2 {
			return nil, 0, nil
		}
		args = append(args, string(buf[start:start+int(size)]))
		pos = start + int(size) + 2
	}
	return args, pos, nil
}

// encode writes commands in the multibulk form.
func encode(cmds [][]string) []byte {
	var b []byte
	for _, c := range cmds {
		b = fmt.Appendf(b, "*%d\r\n", len(c))
		for _, a := range c {
			b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	return b
}

func FuzzParser(f *testing.F) {
	for _, tc := range parseCases {
		if len(tc.in) < 1024 {
			f.Add([]byte(tc.in))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := Limits{MaxBulkLen: DefaultMaxBulkLen, AuthRequired: len(data)%7 == 3}
		if len(data)%5 == 1 {
			lim.MaxBulkLen = 16 // make "invalid bulk length" reachable
		}
		want, wantErr := refParse(data, lim)
		got, err := parseChunks(t, data, lim)
		if !reflect.DeepEqual(got, want) || err != wantErr {
			t.Fatalf("whole: got %q, %v; reference %q, %v", got, err, want, wantErr)
		}
		if len(data) > InlineMax {
			return // whether a long line is too big depends on the reads
		}
		cut := len(data) / 2
		if len(data) > 0 {
			cut = int(data[0]) % (len(data) + 1)
		}
		for _, cuts := range [][]int{{len(data) / 2}, {cut}} {
			got, err := parseChunks(t, data, lim, cuts...)
			if !reflect.DeepEqual(got, want) || err != wantErr {
				t.Fatalf("cut at %v: got %q, %v; whole %q, %v", cuts, got, err, want, wantErr)
			}
		}
		// The commands found, sent again in multibulk form, come back the
		// same.
		again, err := parseChunks(t, encode(want), Limits{MaxBulkLen: DefaultMaxBulkLen})
		if err != nil || !reflect.DeepEqual(again, want) {
			t.Fatalf("re-encoded: got %q, %v; want %q", again, err, want)
		}
	})
}

// quote writes args as a line SplitArgs reads back: each in double
// quotes, every byte escaped as \xHH.
func quote(args [][]byte) []byte {
	var b []byte
	for _, a := range args {
		b = append(b, " \""...)
		for _, c := range a {
			b = fmt.Appendf(b, `\x%02x`, c)
		}
		b = append(b, '"')
	}
	return b
}

func FuzzSplitArgs(f *testing.F) {
	for _, tc := range splitCases {
		f.Add([]byte(tc.line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		args, ok := SplitArgs(line)
		if !ok {
			if args != nil {
				t.Fatalf("SplitArgs(%q) failed but returned %q", line, args)
			}
			return
		}
		again, ok := SplitArgs(quote(args))
		if !ok || len(again) != len(args) {
			t.Fatalf("SplitArgs(%q) = %q; quoted again %q", line, args, again)
		}
		for i := range args {
			if !bytes.Equal(again[i], args[i]) {
				t.Fatalf("SplitArgs(%q) = %q; quoted again %q", line, args, again)
			}
		}
	})
}
