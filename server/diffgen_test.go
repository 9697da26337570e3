package server

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

var (
	diffSeed = flag.Uint64("diff.seed", 1, "first seed of the generated differential sequences")
	diffSeqs = flag.Int("diff.n", 1000, "number of generated differential sequences")
)

// TestDiffGenerated compares presenced with redis-server on generated
// command sequences, those of even seeds in RESP3 and the others in RESP2.
// Sequence i is generated from seed diff.seed+i alone;
// a mismatch prints the seed, the command and both replies, and
// -diff.seed=S -diff.n=1 replays that sequence.
func TestDiffGenerated(t *testing.T) {
	d := newDiffer(t)
	n := *diffSeqs
	if testing.Short() {
		n = min(n, 50)
	}
	for i := range uint64(n) {
		seed := *diffSeed + i
		d.resp3 = seed%2 == 0
		label := fmt.Sprintf("seed %d, RESP3: %v (replay: -run TestDiffGenerated -diff.seed=%d -diff.n=1)", seed, d.resp3, seed)
		d.run(label, generateSequence(seed), true)
	}
}

// TestGenerateSequenceDeterministic checks that a seed alone decides its
// sequence, so that a printed seed replays a failure.
func TestGenerateSequenceDeterministic(t *testing.T) {
	for seed := range uint64(20) {
		a, b := generateSequence(seed), generateSequence(seed)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("seed %d generated two different sequences", seed)
		}
	}
}

// gen produces the commands of one sequence.
type gen struct {
	r *rand.Rand
	// relative counts the relative expiry times handed out: each is 10s
	// apart from the others, so comparisons between them (GT, LT) do not
	// depend on when each server ran the command.
	relative int
}

// family produces one command of a kind.
type family func(g *gen) []string

// themes are the mixes a sequence draws most of its commands from; the
// rest come from all families, so that every kind of value meets every
// kind of command.
var themes = [][]family{
	{genSetbit, genStringWrite, genStringRead, genBitRead},
	{genSetbit, genStringWrite, genBitop, genBitRead, genStringRead},
	{genSetbit, genBitfield, genStringWrite, genStringRead, genBitRead},
	{genExpiry, genStringWrite, genSetbit, genKeys},
	{genKeys, genStringWrite, genSetbit, genStringRead},
	{genErrors, genKeys, genStringWrite, genBitRead},
	{genHLL, genHLL, genStringRead, genStringWrite, genSetbit, genKeys},
}

// allFamilies is every family once.
var allFamilies = []family{genSetbit, genStringWrite, genStringRead, genBitRead, genBitop, genBitfield, genExpiry, genKeys, genErrors, genHLL}

// generateSequence returns the commands of the sequence of seed.
func generateSequence(seed uint64) [][][]byte {
	g := &gen{r: rand.New(rand.NewPCG(seed, 0x70726573656e6365))}
	theme := themes[g.r.IntN(len(themes))]
	cmds := make([][][]byte, 20+g.r.IntN(40))
	for i := range cmds {
		fams := theme
		if g.chance(25) {
			fams = allFamilies
		}
		cmds[i] = argv(fams[g.r.IntN(len(fams))](g)...)
	}
	return cmds
}

// chance is true pct percent of the time.
func (g *gen) chance(pct int) bool { return g.r.IntN(100) < pct }

// pick returns one of words.
func (g *gen) pick(words ...string) string { return choose(g, words...) }

// choose returns one of xs.
func choose[T any](g *gen, xs ...T) T { return xs[g.r.IntN(len(xs))] }

// between returns a decimal integer in [lo, hi].
func (g *gen) between(lo, hi int64) string {
	return strconv.FormatInt(lo+g.r.Int64N(hi-lo+1), 10)
}

// keyPool is small, so that commands keep meeting the same keys, and its
// names give KEYS patterns something to tell apart.
var keyPool = []string{"a", "b", "c", "bm:1", "bm:2", "bm:10", "user:7", "x*y"}

func (g *gen) key() string { return g.pick(keyPool...) }

// keys returns 1 to 4 keys, maybe repeated.
func (g *gen) keys() []string {
	ks := make([]string, 1+g.r.IntN(4))
	for i := range ks {
		ks[i] = g.key()
	}
	return ks
}

// badInt is an argument that is not an integer Redis accepts, or is one
// out of every range.
func (g *gen) badInt() string {
	return g.pick("abc", "", "1.5", "+1", "01", " 1", "0x10", "-0", "9223372036854775808", "-9223372036854775809", "1e3")
}

// value is a string value: text, numbers, binary bytes, and now and then
// a long one.
func (g *gen) value() string {
	if g.chance(3) {
		return g.longValue()
	}
	switch g.r.IntN(4) {
	case 0:
		return g.pick("", "0", "1", "-5", "10", "abc", "foobar", "9223372036854775807", "-9223372036854775808", "12345678901234567890", " 3", "3.0")
	case 1:
		return g.pick("\x00", "\xff", "\x00\xff", "\xff\xf0\x00", "\x80", "\x01\x02\x03\x04\x05\x06\x07\x08\x09")
	default:
		b := make([]byte, 1+g.r.IntN(12))
		for i := range b {
			b[i] = byte(g.r.IntN(256))
		}
		return string(b)
	}
}

// longValue is up to 9000 bytes of one pattern: as a bitmap it fills more
// than one 65536-bit block, densely, sparsely or in runs.
func (g *gen) longValue() string {
	unit := choose(g, []byte{0xff}, []byte{0x00}, []byte{0xaa}, []byte{0x80, 0, 0, 0}, []byte{0xff, 0xff, 0, 0x01})
	b := make([]byte, 0, 9000)
	for n := g.r.IntN(9000); len(b) < n; {
		b = append(b, unit...)
	}
	return string(b)
}

// integer is an INCRBY-style argument.
func (g *gen) integer() string {
	switch {
	case g.chance(5):
		return g.badInt()
	case g.chance(8):
		return g.pick("9223372036854775807", "-9223372036854775808", "9223372036854775806", "-9223372036854775807")
	}
	return g.between(-100, 100)
}

// float is an INCRBYFLOAT increment: decimal, with or without an
// exponent, hexadecimal, out of range, or not a number.
func (g *gen) float() string {
	switch g.r.IntN(6) {
	case 0:
		return g.pick("0", "-0", "inf", "-inf", "nan", "1e4932", "-1e4932", "1e-4950", "0x1p-16440", "abc", "", " 1", "1e", "0x", "1.5.2")
	case 1:
		return fmt.Sprintf("%de%d", g.r.Int64N(2000)-1000, g.r.IntN(80)-40)
	case 2:
		return fmt.Sprintf("0x%x.%xp%d", g.r.Uint32(), g.r.Uint32(), g.r.IntN(200)-100)
	case 3:
		return g.integer()
	}
	return strconv.FormatFloat(g.r.NormFloat64()*math.Pow(10, float64(g.r.IntN(30)-15)), 'f', -1, 64)
}

// bitOffset is a SETBIT/GETBIT offset. Writes stay below a few hundred
// thousand bits: Redis allocates the whole string.
func (g *gen) bitOffset(write bool) string {
	switch {
	case g.chance(4):
		return g.pick("-1", "4294967296", "18446744073709551616", "abc", "", "1.0", "+3", "01")
	case !write && g.chance(3):
		return g.pick("4294967295", "4294967294", "3000000000")
	case g.chance(5):
		return g.pick("7", "8", "15", "16", "31", "32", "63", "64", "4095", "4096", "65535", "65536", "131071")
	case g.chance(2):
		return g.between(0, 300000)
	case g.chance(15):
		return g.between(0, 2048)
	}
	return g.between(0, 63)
}

// rangeIndex is a start or end of a byte or bit range, often negative.
func (g *gen) rangeIndex() string {
	switch {
	case g.chance(4):
		return g.badInt()
	case g.chance(8):
		return g.pick("0", "-1", "2147483647", "-2147483648", "9223372036854775807", "-9223372036854775808", "4294967296")
	case g.chance(25):
		return g.between(-200, 200)
	}
	return g.between(-20, 20)
}

// bitUnit is the BYTE|BIT option of BITCOUNT and BITPOS.
func (g *gen) bitUnit() string {
	if g.chance(10) {
		return g.pick("bytes", "BITS", "", "1")
	}
	return g.pick("BYTE", "BIT", "byte", "bit", "Bit")
}

// relSeconds is a relative expiry in seconds (EX, EXPIRE, SETEX). Valid
// ones are unique within the sequence and far below maxRelativeExpiry;
// the others are non-positive (immediate expiry or an error), overflow or
// are not integers.
func (g *gen) relSeconds() string {
	if g.chance(15) {
		return g.pick("0", "-1", "-100", "9223372036854775807", "9223372036854775", "9223372036854776", "-9223372036854775808", g.badInt())
	}
	g.relative++
	return strconv.Itoa(100 + 10*g.relative)
}

// relMillis is relMillis's counterpart in milliseconds (PX, PEXPIRE,
// PSETEX).
func (g *gen) relMillis() string {
	if g.chance(15) {
		return g.pick("0", "-1", "-100000", "9223372036854775807", "9223372036854775806", "-9223372036854775808", g.badInt())
	}
	g.relative++
	return strconv.Itoa((100+10*g.relative)*1000 + g.r.IntN(1000))
}

// absSeconds is an absolute unix time in seconds (EXAT, EXPIREAT): decades
// ahead, or invalid, or with past in the past so the key expires at once.
// SET takes no past times: Redis stores such a key and leaves it to the
// active expiry cycle, so DBSIZE counts it for a while.
func (g *gen) absSeconds(past bool) string {
	switch {
	case past && g.chance(8):
		return g.pick("1000000000", "1", "0", "-1")
	case g.chance(5):
		return g.pick("9223372036854775807", "9223372036854775", g.badInt())
	case g.chance(30):
		return g.pick("3000000000", "3000000001", "4102444800")
	}
	return g.between(3000000000, 3100000000)
}

// absMillis is absSeconds's counterpart in milliseconds (PXAT,
// PEXPIREAT).
func (g *gen) absMillis(past bool) string {
	switch {
	case past && g.chance(8):
		return g.pick("1000000000000", "1", "0", "-1")
	case g.chance(5):
		return g.pick("9223372036854775807", g.badInt())
	case g.chance(30):
		return g.pick("3000000000000", "3000000000001", "3000000001000", "4102444800000")
	}
	return g.between(3000000000000, 3100000000000)
}

// expiryOption is an option of SET or GETEX that sets a time to live;
// past allows absolute times in the past.
func (g *gen) expiryOption(past bool) []string {
	switch g.r.IntN(4) {
	case 0:
		return []string{g.pick("EX", "ex"), g.relSeconds()}
	case 1:
		return []string{g.pick("PX", "px"), g.relMillis()}
	case 2:
		return []string{g.pick("EXAT", "exat"), g.absSeconds(past)}
	}
	return []string{g.pick("PXAT", "pxat"), g.absMillis(past)}
}

// cmd builds a command from words and word lists.
func cmd(parts ...any) []string {
	var out []string
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			out = append(out, p)
		case []string:
			out = append(out, p...)
		}
	}
	return out
}

// genSetbit sets or clears a bit, sometimes with a bad bit value.
func genSetbit(g *gen) []string {
	bit := g.pick("0", "1", "1")
	if g.chance(4) {
		bit = g.pick("2", "-1", "", "true", "01")
	}
	return cmd(g.pick("SETBIT", "setbit"), g.key(), g.bitOffset(true), bit)
}

// genStringWrite writes string values with the string commands.
func genStringWrite(g *gen) []string {
	k := g.key()
	switch g.r.IntN(14) {
	case 0, 1:
		return cmd("SET", k, g.value(), g.setOptions())
	case 2:
		return cmd("APPEND", k, g.value())
	case 3, 4:
		off := g.between(0, 40)
		switch {
		case g.chance(8):
			off = g.pick("-1", "536870912", "4294967296", g.badInt())
		case g.chance(10):
			off = g.between(0, 5000)
		}
		return cmd("SETRANGE", k, off, g.value())
	case 5:
		return cmd(g.pick("INCR", "DECR"), k)
	case 6:
		return cmd(g.pick("INCRBY", "DECRBY"), k, g.integer())
	case 7:
		return cmd("SETNX", k, g.value())
	case 8:
		return cmd("GETSET", k, g.value())
	case 9:
		return cmd(g.pick("MSET", "MSETNX"), k, g.value(), g.key(), g.value())
	case 10:
		return cmd("SETEX", k, g.relSeconds(), g.value())
	case 11:
		return cmd("PSETEX", k, g.relMillis(), g.value())
	case 12:
		return cmd("INCRBYFLOAT", k, g.float())
	}
	return cmd("GETDEL", k)
}

// setOptions are SET's options in random order, valid or conflicting.
func (g *gen) setOptions() []string {
	var groups [][]string
	if g.chance(30) {
		groups = append(groups, []string{g.pick("NX", "XX", "nx")})
	}
	if g.chance(25) {
		groups = append(groups, []string{g.pick("GET", "get")})
	}
	if g.chance(40) {
		groups = append(groups, g.expiryOption(false))
	} else if g.chance(10) {
		groups = append(groups, []string{"KEEPTTL"})
	}
	if g.chance(8) {
		groups = append(groups, []string{g.pick("NX", "XX", "EX", "KEEPTTL", "PERSIST", "FOO")})
	}
	g.r.Shuffle(len(groups), func(i, j int) { groups[i], groups[j] = groups[j], groups[i] })
	var opts []string
	for _, grp := range groups {
		opts = append(opts, grp...)
	}
	return opts
}

// genStringRead reads values with the string commands.
func genStringRead(g *gen) []string {
	k := g.key()
	switch g.r.IntN(6) {
	case 0, 1:
		return cmd("GET", k)
	case 2:
		return cmd(g.pick("GETRANGE", "GETRANGE", "SUBSTR"), k, g.rangeIndex(), g.rangeIndex())
	case 3:
		return cmd("STRLEN", k)
	case 4:
		return cmd("LCS", k, g.key(), g.lcsOptions())
	}
	return cmd("MGET", g.keys())
}

// lcsOptions are LCS's options in random order, now and then conflicting
// or malformed.
func (g *gen) lcsOptions() []string {
	var opts []string
	for range g.r.IntN(4) {
		switch g.r.IntN(9) {
		case 0, 1:
			opts = append(opts, g.pick("IDX", "idx"))
		case 2, 3:
			opts = append(opts, "WITHMATCHLEN")
		case 4, 5:
			opts = append(opts, "MINMATCHLEN", g.between(-1, 5))
		case 6:
			opts = append(opts, "LEN")
		case 7:
			opts = append(opts, "MINMATCHLEN", g.pick("x", ""))
		default:
			opts = append(opts, g.pick("FOO", "MINMATCHLEN"))
		}
	}
	return opts
}

// genBitRead reads bits: GETBIT, BITCOUNT and BITPOS with every range form.
func genBitRead(g *gen) []string {
	k := g.key()
	switch g.r.IntN(5) {
	case 0:
		return cmd("GETBIT", k, g.bitOffset(false))
	case 1, 2:
		switch n := g.r.IntN(20); {
		case n < 4:
			return cmd("BITCOUNT", k)
		case n < 5:
			return cmd("BITCOUNT", k, g.rangeIndex()) // syntax error
		case n < 6:
			return cmd("BITCOUNT", k, g.rangeIndex(), g.rangeIndex(), g.bitUnit(), g.pick("BYTE", "x"))
		case n < 12:
			return cmd("BITCOUNT", k, g.rangeIndex(), g.rangeIndex())
		}
		return cmd("BITCOUNT", k, g.rangeIndex(), g.rangeIndex(), g.bitUnit())
	}
	bit := g.pick("0", "1")
	if g.chance(5) {
		bit = g.pick("2", "-1", "x", "")
	}
	switch n := g.r.IntN(20); {
	case n < 3:
		return cmd("BITPOS", k, bit)
	case n < 7:
		return cmd("BITPOS", k, bit, g.rangeIndex())
	case n < 12:
		return cmd("BITPOS", k, bit, g.rangeIndex(), g.rangeIndex())
	case n < 13:
		return cmd("BITPOS", k, bit, g.rangeIndex(), g.rangeIndex(), g.bitUnit(), g.pick("BIT", "extra"))
	}
	return cmd("BITPOS", k, bit, g.rangeIndex(), g.rangeIndex(), g.bitUnit())
}

// genBitop combines keys, missing ones and ones of different lengths
// included. Redis 8's DIFF, DIFF1, ANDOR and ONE are left out: the
// reference is Redis 7, which rejects them.
func genBitop(g *gen) []string {
	op := g.pick("AND", "OR", "XOR", "NOT", "and", "or", "xor", "not")
	if g.chance(5) {
		op = g.pick("NAND", "", "ANDX")
	}
	srcs := g.keys()
	if (op == "NOT" || op == "not") && g.chance(80) {
		srcs = srcs[:1]
	}
	return cmd("BITOP", op, g.key(), srcs)
}

// genBitfield runs BITFIELD and BITFIELD_RO with every overflow mode,
// signed and unsigned widths and #N offsets.
func genBitfield(g *gen) []string {
	if g.chance(15) {
		ops := make([]string, 0, 6)
		for range 1 + g.r.IntN(3) {
			ops = append(ops, "GET", g.bitfieldType(), g.bitfieldOffset())
		}
		if g.chance(15) {
			ops = append(ops, "SET", g.bitfieldType(), g.bitfieldOffset(), "1")
		}
		return cmd("BITFIELD_RO", g.key(), ops)
	}
	var ops []string
	for range g.r.IntN(5) {
		switch g.r.IntN(7) {
		case 0:
			mode := g.pick("WRAP", "SAT", "FAIL", "wrap", "sat", "fail")
			if g.chance(8) {
				mode = g.pick("SATURATE", "")
			}
			ops = append(ops, g.pick("OVERFLOW", "overflow"), mode)
		case 1, 2:
			ops = append(ops, g.pick("GET", "get"), g.bitfieldType(), g.bitfieldOffset())
		case 3, 4:
			typ := g.bitfieldType()
			ops = append(ops, g.pick("SET", "set"), typ, g.bitfieldOffset(), g.bitfieldValue(typ))
		case 5:
			typ := g.bitfieldType()
			ops = append(ops, g.pick("INCRBY", "incrby"), typ, g.bitfieldOffset(), g.bitfieldValue(typ))
		default:
			if g.chance(20) {
				ops = append(ops, g.pick("GET", "SET", "INCRBY", "OVERFLOW", "FOO"))
			} else {
				ops = append(ops, "GET", g.bitfieldType(), g.bitfieldOffset())
			}
		}
	}
	return cmd("BITFIELD", g.key(), ops)
}

// bitfieldType is i1..i64 or u1..u63, sometimes a type Redis rejects.
func (g *gen) bitfieldType() string {
	switch {
	case g.chance(2):
		return g.pick("u64", "i65", "i0", "u0", "x8", "i", "8", "I8", "U8", "i-1", "u08", "")
	case g.chance(50):
		return g.pick("u1", "i1", "u8", "i8", "u16", "i16", "u32", "i32", "i64", "u63", "u4", "i5")
	case g.chance(50):
		return "i" + g.between(1, 64)
	}
	return "u" + g.between(1, 63)
}

// bitfieldOffset is a bit offset or a #N offset in units of the type.
func (g *gen) bitfieldOffset() string {
	switch {
	case g.chance(2):
		return g.pick("-1", "#-1", "abc", "#", "4294967296", "#x", "# 1", "")
	case g.chance(30):
		return "#" + g.between(0, 20)
	}
	return g.between(0, 100)
}

// bitfieldValue is a SET value or INCRBY increment, inside or outside
// the range of typ so that every overflow mode has work to do.
func (g *gen) bitfieldValue(typ string) string {
	width, err := strconv.Atoi(typ[min(1, len(typ)):])
	switch {
	case g.chance(4):
		return g.badInt()
	case err != nil || width < 1 || width > 64 || g.chance(15):
		return strconv.FormatInt(int64(g.r.Uint64()), 10)
	case g.chance(20):
		return g.pick("9223372036854775807", "-9223372036854775808", "0", "-1", "1")
	}
	// Within twice the type's range, either sign.
	limit := int64(1)<<min(width, 62) - 1
	return strconv.FormatInt(g.r.Int64N(2*limit+1)-limit, 10)
}

// genExpiry sets, reads and removes times to live with every option.
func genExpiry(g *gen) []string {
	k := g.key()
	switch g.r.IntN(13) {
	case 0:
		return cmd(g.pick("EXPIRE", "expire"), k, g.relSeconds(), g.expireFlags())
	case 1:
		return cmd("PEXPIRE", k, g.relMillis(), g.expireFlags())
	case 2:
		return cmd("EXPIREAT", k, g.absSeconds(true), g.expireFlags())
	case 3:
		return cmd("PEXPIREAT", k, g.absMillis(true), g.expireFlags())
	case 4:
		return cmd(g.pick("TTL", "PTTL"), k)
	case 5, 6:
		return cmd(g.pick("EXPIRETIME", "PEXPIRETIME"), k)
	case 7:
		return cmd("PERSIST", k)
	case 8:
		return cmd("GETEX", k, g.getexOptions())
	case 9:
		return cmd("SET", k, g.value(), g.expiryOption(false), g.setOptions())
	case 10:
		return cmd("SETEX", k, g.relSeconds(), g.value())
	case 11:
		return cmd("PSETEX", k, g.relMillis(), g.value())
	case 12:
		return cmd("INCRBYFLOAT", k, g.float())
	}
	return cmd("GETDEL", k)
}

// expireFlags are the NX/XX/GT/LT options of EXPIRE, sometimes
// conflicting or unknown.
func (g *gen) expireFlags() []string {
	switch {
	case g.chance(40):
		return nil
	case g.chance(10):
		return []string{g.pick("NX", "XX", "GT", "LT"), g.pick("NX", "XX", "GT", "LT", "FOO")}
	}
	return []string{g.pick("NX", "XX", "GT", "LT", "nx", "gt")}
}

// getexOptions are GETEX's options, sometimes conflicting.
func (g *gen) getexOptions() []string {
	switch g.r.IntN(6) {
	case 0:
		return nil
	case 1:
		return []string{g.pick("PERSIST", "persist")}
	case 2:
		return append(g.expiryOption(true), g.pick("PERSIST", "EX", "KEEPTTL", "NX"))
	}
	return g.expiryOption(true)
}

// genKeys runs the keyspace commands across a few databases.
func genKeys(g *gen) []string {
	switch g.r.IntN(15) {
	case 0:
		return cmd(g.pick("DEL", "UNLINK"), g.keys())
	case 1:
		return cmd("EXISTS", g.keys())
	case 2:
		return cmd("TOUCH", g.keys())
	case 3:
		return cmd("TYPE", g.key())
	case 4:
		return cmd(g.pick("RENAME", "RENAMENX"), g.key(), g.key())
	case 5:
		opts := []string{}
		if g.chance(40) {
			opts = append(opts, "DB", g.db())
		}
		if g.chance(40) {
			opts = append(opts, g.pick("REPLACE", "replace"))
		}
		if g.chance(5) {
			opts = append(opts, g.pick("DB", "FOO"))
		}
		return cmd("COPY", g.key(), g.key(), opts)
	case 6:
		return cmd("MOVE", g.key(), g.db())
	case 7:
		return cmd("DBSIZE")
	case 8:
		return cmd("SELECT", g.db())
	case 9, 10:
		return cmd("KEYS", g.pick("*", "bm:*", "bm:?", "bm:[12]", "bm:[^1]*", "*[a-c]", "?", "x\\*y", "x*", "*:*", "user:[0-9]", "[", "bm:[2-1]", "\\a", "nomatch"))
	case 11:
		return cmd("SWAPDB", g.db(), g.db())
	case 12:
		if g.chance(20) {
			return cmd("FLUSHDB")
		}
		return cmd("EXISTS", g.key())
	}
	return cmd("SET", g.key(), g.value())
}

// genHLL produces HyperLogLog commands: PFADDs of up to thousands of
// elements (sparse strings grow until they turn dense), counts and merges
// of several keys, GETs of their bytes and PFDEBUG's views of them, and
// now and then a changed byte, so that corrupted strings meet the
// commands too.
func genHLL(g *gen) []string {
	k := g.key()
	switch g.r.IntN(8) {
	case 0, 1, 2:
		args := []string{"PFADD", k}
		n, from := choose(g, 0, 1, 2, 5, 40, 300, 3000), g.r.IntN(1000)
		for range n {
			args = append(args, strconv.Itoa(from+g.r.IntN(n*2+1)))
		}
		return args
	case 3:
		return cmd("PFCOUNT", k)
	case 4:
		return cmd("PFCOUNT", g.keys())
	case 5:
		return cmd("PFMERGE", k, g.keys())
	case 6:
		if g.chance(30) {
			return cmd("PFDEBUG", g.pick("GETREG", "DECODE", "ENCODING", "TODENSE"), k)
		}
		return cmd("GET", k)
	}
	b := []byte{byte(g.r.IntN(256))}
	return cmd("SETRANGE", k, g.between(0, 40), string(b))
}

// db is a database index, mostly 0 to 2 and sometimes out of range.
func (g *gen) db() string {
	if g.chance(8) {
		return g.pick("16", "-1", "15", "abc", "", "99999999999")
	}
	return g.between(0, 2)
}

// genErrors produces commands Redis rejects before or while running them:
// wrong arity, unknown commands, syntax errors and bad arguments.
func genErrors(g *gen) []string {
	k := g.key()
	switch g.r.IntN(6) {
	case 0:
		return choose(g,
			[]string{"GET"}, []string{"GET", k, k}, []string{"SETBIT", k, "1"}, []string{"GETBIT", k},
			[]string{"BITCOUNT"}, []string{"BITPOS", k}, []string{"BITOP", "AND", k}, []string{"BITOP"},
			[]string{"BITFIELD"}, []string{"TTL"}, []string{"EXISTS"}, []string{"KEYS"}, []string{"KEYS", "*", "*"},
			[]string{"DBSIZE", k}, []string{"SELECT"}, []string{"RENAME", k}, []string{"GETEX"}, []string{"SET", k},
			[]string{"EXPIRE", k}, []string{"COPY", k}, []string{"MSET", k}, []string{"MSET", k, "1", k},
			[]string{"SETRANGE", k, "0"}, []string{"APPEND", k}, []string{"INCRBY", k}, []string{"STRLEN"},
			[]string{"MOVE", k}, []string{"SETEX", k, "10"}, []string{"GETDEL", k, k}, []string{"PERSIST"},
		)
	case 1:
		// No real name followed by a NUL: see TestUnknownCommandText.
		name := g.pick("FOO", "foo", "bitcounts", "SETBIT2", "", "x y", "LPUSHX2", "\r\n")
		args := []string{name}
		for range g.r.IntN(4) {
			args = append(args, g.pick(k, "", "with space", "a\r\nb", string(make([]byte, 150))))
		}
		return args
	case 2:
		return cmd("SETBIT", k, g.pick("-1", "4294967296", "x"), g.pick("1", "2"))
	case 3:
		return cmd("SET", k, "v", g.pick("EX", "PX", "EXAT", "PXAT"), g.pick("0", "-5", "abc", "9223372036854775807"))
	case 4:
		return cmd("BITFIELD", k, g.pick("GET", "SET", "INCRBY"), g.pick("u64", "i65", "i0", "z4", "u-3"), "0", "1")
	}
	return choose(g,
		cmd("INCRBY", k, g.badInt()), cmd("DECRBY", k, g.badInt()), cmd("SETRANGE", k, g.badInt(), "v"),
		cmd("GETRANGE", k, g.badInt(), "1"), cmd("GETRANGE", k, "0", g.badInt()), cmd("EXPIRE", k, g.badInt()),
		cmd("BITCOUNT", k, "0", g.badInt()), cmd("BITPOS", k, "1", g.badInt()), cmd("GETBIT", k, g.badInt()),
		cmd("SELECT", g.badInt()), cmd("MOVE", k, g.badInt()), cmd("COPY", k, "b", "DB", g.badInt()),
		cmd("PEXPIREAT", k, g.badInt()), cmd("SETEX", k, g.badInt(), "v"),
	)
}
