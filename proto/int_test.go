package proto

import (
	"math/rand"
	"regexp"
	"strconv"
	"testing"
)

// intCases are string2ll's edge cases; redis-server 7.0 gives "value is
// not an integer or out of range" for exactly the rejected ones.
var intCases = []struct {
	in   string
	want int64
	ok   bool
}{
	{"0", 0, true},
	{"1", 1, true},
	{"-1", -1, true},
	{"10", 10, true},
	{"9223372036854775807", 1<<63 - 1, true},
	{"-9223372036854775808", -1 << 63, true},
	{"9223372036854775808", 0, false},
	{"-9223372036854775809", 0, false},
	{"18446744073709551615", 0, false},
	{"18446744073709551616", 0, false},
	{"99999999999999999999", 0, false},
	{"-99999999999999999999", 0, false},
	{"100000000000000000000", 0, false},
	{"00000000000000000001", 0, false},
	{"", 0, false},
	{"-", 0, false},
	{"-0", 0, false},
	{"+1", 0, false},
	{"+0", 0, false},
	{"01", 0, false},
	{"-01", 0, false},
	{"00", 0, false},
	{" 1", 0, false},
	{"1 ", 0, false},
	{"1\x00", 0, false},
	{"1.0", 0, false},
	{"1e3", 0, false},
	{"0x10", 0, false},
	{"--1", 0, false},
	{"１", 0, false},
}

func TestParseInt(t *testing.T) {
	for _, tc := range intCases {
		got, ok := ParseInt([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

var canonicalInt = regexp.MustCompile(`^(0|-?[1-9][0-9]*)$`)

// parseIntModel is string2ll restated: the canonical decimal form of an
// int64, nothing else.
func parseIntModel(s string) (int64, bool) {
	if !canonicalInt.MatchString(s) {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}

func checkParseInt(t *testing.T, s string) {
	got, ok := ParseInt([]byte(s))
	want, wantOK := parseIntModel(s)
	if got != want || ok != wantOK {
		t.Fatalf("ParseInt(%q) = %d, %v; want %d, %v", s, got, ok, want, wantOK)
	}
	if ok && string(AppendInt(nil, got)) != s {
		t.Fatalf("AppendInt(%d) = %q, want %q", got, AppendInt(nil, got), s)
	}
}

func TestParseIntRandom(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	const alphabet = "-+0123456789 a"
	for i := 0; i < 30000; i++ {
		b := make([]byte, r.Intn(23))
		for j := range b {
			if r.Intn(4) == 0 {
				b[j] = alphabet[r.Intn(len(alphabet))]
			} else {
				b[j] = '0' + byte(r.Intn(10))
			}
		}
		checkParseInt(t, string(b))
	}
}

func FuzzParseInt(f *testing.F) {
	for _, tc := range intCases {
		f.Add(tc.in)
	}
	f.Fuzz(checkParseInt)
}
