// Package longdouble computes as C's long double does on x86-64, in the
// x87 80-bit extended format: a 64-bit significand and exponents from
// -16382 (then subnormal, down to 2^-16445) to 16383.
//
// Redis's INCRBYFLOAT parses both numbers with strtold, adds them in this
// format and prints the sum with printf's "%.17Lf", its trailing zeros
// removed. presenced does the same in exact arithmetic (math/big), each
// step rounded to the nearest value of the format, ties to even, as the
// x87 unit rounds, so that its replies are Redis's digit for digit and
// every replica computes the same bytes.
package longdouble

import (
	"bytes"
	"math/big"
)

// MaxLen is Redis's MAX_LONG_DOUBLE_CHARS: a string of this length or
// longer is not a number.
const MaxLen = 5 * 1024

// The format's limits, as exponents of big.Float's mantissa in [0.5, 1):
// the largest finite value is just under 2^maxExp, the smallest normal
// one is 2^(minNormalExp-1), and subnormal values are multiples of
// 2^-subnormalBits.
const (
	precision     = 64
	maxExp        = 16384
	minNormalExp  = -16381
	subnormalBits = 16445
)

// Float is a finite or infinite long double; the zero value is +0.
type Float struct {
	f *big.Float // nil for +0
}

// IsInf reports whether x is an infinity.
func (x Float) IsInf() bool { return x.f != nil && x.f.IsInf() }

// Parse reads b as Redis's string2ld does: strtold in the C locale, an
// optional sign and then decimal or 0x-hexadecimal digits with an
// optional point and exponent, or INF or INFINITY in any case, which must
// be all of b. It refuses a leading space, NaN, a NUL byte, a b that is
// empty or MaxLen bytes long or longer, and a value beyond the format's
// range: one that overflows or rounds to zero.
func Parse(b []byte) (Float, bool) {
	if len(b) == 0 || len(b) >= MaxLen || isSpace(b[0]) {
		return Float{}, false
	}
	neg := false
	if b[0] == '+' || b[0] == '-' {
		neg = b[0] == '-'
		b = b[1:]
	}
	var q *big.Rat
	switch {
	case equalFold(b, "inf") || equalFold(b, "infinity"):
		return Float{f: new(big.Float).SetInf(neg)}, true
	case len(b) > 1 && b[0] == '0' && b[1]|0x20 == 'x':
		q = hexadecimal.parse(b[2:])
	default:
		q = decimal.parse(b)
	}
	if q == nil {
		return Float{}, false
	}
	if neg {
		q.Neg(q)
	}
	x, ok := round(q)
	return x, ok && !x.IsInf()
}

// Add returns x+y rounded to the format: an infinity when it overflows,
// or when x or y is one (the caller refuses infinities either way, so the
// sum of opposite infinities, NaN, need not be told apart). Zero has no
// sign here: printed, a negative zero is "0" all the same.
func (x Float) Add(y Float) Float {
	switch {
	case x.IsInf() || y.f == nil:
		return x
	case y.IsInf() || x.f == nil:
		return y
	}
	xr, _ := x.f.Rat(nil)
	yr, _ := y.f.Rat(nil)
	sum, _ := round(xr.Add(xr, yr))
	return sum
}

// AppendHuman appends x as Redis's ld2string does in LD_STR_HUMAN mode:
// printf's "%.17Lf" (exact decimal digits rounded to 17 places, ties to
// even), its trailing zeros and then a trailing point removed, and "-0"
// written "0". x must be finite.
func (x Float) AppendHuman(dst []byte) []byte {
	f := x.f
	if f == nil {
		f = new(big.Float)
	}
	start := len(dst)
	dst = f.Append(dst, 'f', 17)
	dst = bytes.TrimRight(dst, "0")
	dst = bytes.TrimSuffix(dst, []byte("."))
	if string(dst[start:]) == "-0" {
		dst = append(dst[:start], '0')
	}
	return dst
}

// round rounds q to the nearest value of the format, ties to even. It
// reports false when q is not zero but rounds to zero, as strtold reports
// ERANGE; a q too large rounds to an infinity.
func round(q *big.Rat) (Float, bool) {
	if q.Sign() == 0 {
		return Float{}, true
	}
	// Truncated, q keeps its binary exponent: its power of two at most.
	exp := new(big.Float).SetPrec(precision + 8).SetMode(big.ToZero).SetRat(q).MantExp(nil)
	prec := precision
	if exp < minNormalExp {
		// Subnormal: fewer bits, down to the smallest one's place.
		prec = exp + subnormalBits
	}
	var f *big.Float
	switch {
	case prec > 0:
		f = new(big.Float).SetPrec(uint(prec)).SetRat(q)
	case prec == 0 && !isPowerOfTwo(q):
		// Above half the smallest subnormal: up to it. Exactly half is a
		// tie, and zero is the even neighbour.
		f = new(big.Float).SetMantExp(big.NewFloat(0.5), 1-subnormalBits)
		f.SetPrec(precision)
		if q.Sign() < 0 {
			f.Neg(f)
		}
	default:
		return Float{}, false
	}
	if f.MantExp(nil) > maxExp {
		f.SetInf(f.Signbit())
	}
	return Float{f: f.SetPrec(precision)}, true
}

// isPowerOfTwo reports whether |q| is a power of two.
func isPowerOfTwo(q *big.Rat) bool {
	a, b := new(big.Int).Abs(q.Num()), q.Denom()
	isPow := func(n *big.Int) bool { return n.BitLen() == int(n.TrailingZeroBits())+1 }
	return isPow(a) && isPow(b)
}

// A notation is one of strtold's ways of writing a number: decimal digits
// with a decimal exponent, or hexadecimal ones with a binary exponent.
type notation struct {
	base     int   // of the digits
	letter   byte  // that opens the exponent, in lower case
	expBase  int64 // the exponent's base
	digitExp int   // how much one digit's place moves the exponent
	// The magnitudes (the exponent of the place above the first
	// significant digit) beyond which a number's size alone decides that
	// it overflows or rounds to zero, so that its exact value, a power
	// of ten or two away, is never computed.
	maxMag, minMag int
}

var (
	// decimal: the largest value is about 1.19e4932, half the smallest
	// about 1.82e-4951.
	decimal     = notation{base: 10, letter: 'e', expBase: 10, digitExp: 1, maxMag: 4933, minMag: -4951}
	hexadecimal = notation{base: 16, letter: 'p', expBase: 2, digitExp: 4, maxMag: maxExp + 4, minMag: -subnormalBits - 8}
)

// expLimit bounds the exponents read: one beyond it counts as it.
const expLimit = 1 << 20

// parse reads digits with an optional point and an optional exponent
// (the letter in either case, an optional sign, decimal digits), all of
// s, and returns their exact value, or nil for anything else. A value
// that its size alone puts out of the format's range comes back as
// overflow() or underflow().
func (n notation) parse(s []byte) *big.Rat {
	digits, point, rest := mantissa(s, n.base)
	exp, ok := exponent(rest, n.letter)
	if !ok || len(digits) == 0 {
		return nil
	}
	sig := bytes.TrimLeft(digits, "0")
	if len(sig) == 0 {
		return new(big.Rat)
	}
	// The value is 0.sig × expBase^mag.
	mag := exp + n.digitExp*(point-(len(digits)-len(sig)))
	switch {
	case mag > n.maxMag:
		return overflow()
	case mag < n.minMag:
		return underflow()
	}
	m, _ := new(big.Int).SetString(string(sig), n.base)
	e := mag - n.digitExp*len(sig)
	p := new(big.Int).Exp(big.NewInt(n.expBase), big.NewInt(int64(abs(e))), nil)
	if e >= 0 {
		return new(big.Rat).SetInt(m.Mul(m, p))
	}
	return new(big.Rat).SetFrac(m, p)
}

// overflow and underflow are values beyond the format's range, which
// round makes an infinity and refuses as zero.
func overflow() *big.Rat {
	return new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), maxExp+1))
}

func underflow() *big.Rat {
	return new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Lsh(big.NewInt(1), subnormalBits+2))
}

// mantissa splits off the digits of base at the start of s, with at most
// one point among them: it returns the digits without the point, how many
// came before the point, and the rest of s.
func mantissa(s []byte, base int) (digits []byte, point int, rest []byte) {
	point = -1
	digits = make([]byte, 0, len(s))
	i := 0
	for ; i < len(s); i++ {
		if c := s[i]; isDigit(c, base) {
			digits = append(digits, c)
		} else if c == '.' && point < 0 {
			point = len(digits)
		} else {
			break
		}
	}
	if point < 0 {
		point = len(digits)
	}
	return digits, point, s[i:]
}

// exponent reads an optional exponent that is all of s: the letter (in
// either case), an optional sign and decimal digits. Its value is
// clamped to ±expLimit.
func exponent(s []byte, letter byte) (int, bool) {
	if len(s) == 0 {
		return 0, true
	}
	if s[0]|0x20 != letter {
		return 0, false
	}
	s = s[1:]
	neg := false
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if len(s) == 0 {
		return 0, false
	}
	n := 0
	for _, c := range s {
		if !isDigit(c, 10) {
			return 0, false
		}
		n = min(n*10+int(c-'0'), expLimit)
	}
	if neg {
		n = -n
	}
	return n, true
}

func isDigit(c byte, base int) bool {
	if '0' <= c && c <= '9' {
		return true
	}
	c |= 0x20
	return base == 16 && 'a' <= c && c <= 'f'
}

// isSpace is C's isspace in the C locale.
func isSpace(c byte) bool {
	return c == ' ' || ('\t' <= c && c <= '\r')
}

// equalFold reports whether s is word, ignoring ASCII case; word is lower
// case.
func equalFold(s []byte, word string) bool {
	return len(s) == len(word) && bytes.EqualFold(s, []byte(word))
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
