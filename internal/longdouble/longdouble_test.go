package longdouble

import (
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

// incr is INCRBYFLOAT's arithmetic: the reply for a key holding cur, or
// "" when a number is refused, "inf" when the sum is infinite.
func incr(cur, by string) string {
	x, ok := Parse([]byte(cur))
	if !ok {
		return ""
	}
	y, ok := Parse([]byte(by))
	if !ok {
		return ""
	}
	sum := x.Add(y)
	if sum.IsInf() {
		return "inf"
	}
	return string(sum.AppendHuman(nil))
}

// TestRedisReplies checks replies redis-server 7.0 gave to INCRBYFLOAT on
// x86-64.
func TestRedisReplies(t *testing.T) {
	for _, c := range []struct{ cur, by, want string }{
		{"10.50", "0.1", "10.6"},
		{"10.6", "-5", "5.6"},
		{"5.0e3", "2.0e2", "5200"},
		{"0", "0x1p3", "8"},
		{"0", "0X1P3", "8"},
		{"0", "0x1.8", "1.5"},
		{"0", "0x.8", "0.5"},
		{"0", "0x1.p1", "2"},
		{"0", "0x1P+2", "4"},
		{"0", "-0x10", "-16"},
		{"0", "+3", "3"},
		{"0", ".5", "0.5"},
		{"0", "5.", "5"},
		{"0", "1.e1", "10"},
		{"0", "1e+5", "100000"},
		{"0", "00012.5000", "12.5"},
		{"0", "-0", "0"},
		{"-0", "-0", "0"},
		{"0", "0.1", "0.1"},
		{"0", "0.3", "0.3"},
		{"0", "1e17", "100000000000000000"},
		{"0", "123456789.123456789", "123456789.12345678899873747"},
		{"0", "-1e-18", "0"},
		{"0", "5e-18", "0"},
		{"0", "1.5e-17", "0.00000000000000002"},
		{"0", "2.5e-17", "0.00000000000000002"},
		{"0", "1e-4940", "0"},
		{"0", "1e-4950", "0"},
		{"0", "0x1p-16445", "0"},
		{"123456789012345678901234567890", "1", "123456789012345678899921813504"},
		{"5", "1.5", "6.5"},
		{"2", "1e50", "100000000000000000003583830118858923890798487404544"},
		{"1e4932", "1e4932", "inf"},
		{"0", "inf", "inf"},
		{"0", "-inf", "inf"},
		{"0", "INF", "inf"},
		{"0", "InFiNiTy", "inf"},
		{"1\x00abc", "1", ""},
		{"\x00abc", "1", ""},
		{"0", "\x00", ""},
		{"0", "1e-4951", ""},
		{"0", "1e-5000", ""},
		{"0", "1e4933", ""},
		{"0", "1.18973149535723176508e+4932", ""},
		{"0", "nan", ""},
		{"0", "nan(123)", ""},
		{"0", " 1", ""},
		{"0", "1 ", ""},
		{"0", "", ""},
		{"0", "1e", ""},
		{"0", "1e+", ""},
		{"0", "0x", ""},
		{"0", "0x1p", ""},
		{"0", ".e1", ""},
		{"0", ".", ""},
		{"0", "+-1", ""},
		{"0", "1_0", ""},
		{"0", "infin", ""},
		{"0", "+", ""},
		{"0", "1.2.3", ""},
		{"0", "0x1g", ""},
		{"0", "1" + strings.Repeat("0", MaxLen-1), ""},
	} {
		if got := incr(c.cur, c.by); got != c.want {
			t.Errorf("%q + %q = %q, want %q", c.cur, c.by, got, c.want)
		}
	}
	if got := incr("0", "1e4000"); len(got) != 4000 || !strings.HasPrefix(got, "99999999999999999999") {
		t.Errorf("0 + 1e4000 = %.30q... (%d digits), want 4000 digits", got, len(got))
	}
	max := incr("0", "1.18973149535723176502e+4932")
	if !strings.HasPrefix(max, "11897314953572317650212638530309702051690633222946242004403237338917") || len(max) != 4933 {
		t.Errorf("the largest value printed as %.30q... (%d digits)", max, len(max))
	}
	if got := incr(max, max); got != "inf" {
		t.Errorf("the largest value doubled = %.30q, want an overflow", got)
	}
}

// TestSubnormals checks the smallest values: multiples of 2^-16445, with
// half the smallest a tie that rounds to zero (refused, as strtold's
// ERANGE) and anything above it rounding up.
func TestSubnormals(t *testing.T) {
	tiny := new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Lsh(big.NewInt(1), subnormalBits))
	half := new(big.Rat).Mul(tiny, big.NewRat(1, 2))
	if _, ok := round(half); ok {
		t.Error("half the smallest subnormal did not round to zero")
	}
	above := new(big.Rat).Mul(tiny, big.NewRat(51, 100))
	x, ok := round(above)
	if r, _ := x.f.Rat(nil); !ok || r.Cmp(tiny) != 0 {
		t.Errorf("0.51 of the smallest subnormal rounded to %s, want it", x.f.Text('g', 10))
	}
	// 2.5 and 3.5 times the smallest: ties, to the even multiple.
	for _, c := range []struct{ times, want int64 }{{5, 2}, {7, 4}, {3, 2}} {
		q := new(big.Rat).Mul(tiny, big.NewRat(c.times, 2))
		x, _ := round(q)
		want := new(big.Rat).Mul(tiny, big.NewRat(c.want, 1))
		if r, _ := x.f.Rat(nil); r.Cmp(want) != 0 {
			t.Errorf("%d/2 of the smallest subnormal rounded to %s, want %d of it", c.times, x.f.Text('g', 10), c.want)
		}
	}
	// The largest subnormal plus the smallest is the smallest normal value.
	largest := new(big.Rat).Mul(tiny, new(big.Rat).SetInt(new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 63), big.NewInt(1))))
	a, _ := round(largest)
	b, _ := round(tiny)
	sum := a.Add(b)
	if e := sum.f.MantExp(nil); e != minNormalExp || sum.f.MinPrec() != 1 {
		t.Errorf("largest subnormal + smallest = %s (exponent %d), want 2^-16382", sum.f.Text('g', 10), e)
	}
}

// TestModel checks sums that are exact in the format against exact
// rational arithmetic: dyadic numbers of at most 17 binary places, which
// print exactly in 17 decimal places.
func TestModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	dyadic := func() *big.Rat {
		return new(big.Rat).SetFrac(big.NewInt(r.Int64N(1<<40)-1<<39), new(big.Int).Lsh(big.NewInt(1), uint(r.IntN(18))))
	}
	for range 5000 {
		a, b := dyadic(), dyadic()
		want := strings.TrimRight(strings.TrimRight(new(big.Rat).Add(a, b).FloatString(17), "0"), ".")
		if want == "-0" {
			want = "0"
		}
		if got := incr(a.FloatString(17), b.FloatString(17)); got != want {
			t.Fatalf("%s + %s = %s, want %s", a.FloatString(17), b.FloatString(17), got, want)
		}
	}
}

// FuzzParse checks that any bytes parse without a panic, in bounded
// time, and that what parses prints as a number that parses again to the
// same printed form when it has no more than 17 decimals.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"1", "-1.5e10", "0x1.8p3", "inf", "1e-4950", "1e4932", ".5", "0x", "nan", "\x001"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		x, ok := Parse(b)
		if !ok || x.IsInf() {
			return
		}
		s := x.AppendHuman(nil)
		y, ok := Parse(s)
		if !ok {
			return // a subnormal prints as 0, which parses; others print in full
		}
		if again := y.AppendHuman(nil); string(again) != string(s) {
			t.Fatalf("%q printed as %q, which printed again as %q", b, s, again)
		}
	})
}
