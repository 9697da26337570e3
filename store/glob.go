package store

// globMaxNesting is how many '*' deep a pattern may recurse before the
// match gives up, as Redis's stringmatchlen protects itself from abusive
// patterns.
const globMaxNesting = 1000

// globMatch reports whether s matches the glob pattern as Redis's
// stringmatchlen does for KEYS and SCAN MATCH: '*' any run of bytes, '?'
// one byte, "[abc]", "[^abc]" and "[a-z]" classes, and '\' escaping the
// next byte. Malformed patterns behave as in Redis: an unclosed class
// ends at the pattern's end, and bytes compare as C's signed chars in
// ranges.
func globMatch(pattern, s string) bool {
	m := globMatcher{}
	return m.match(pattern, s, 0)
}

// Match reports whether s matches the glob pattern as Redis's
// stringmatchlen does, ignoring ASCII case when nocase is set (as CONFIG
// GET and COMMAND LIST do); see globMatch.
func Match(pattern, s []byte, nocase bool) bool {
	m := globMatcher{nocase: nocase}
	return m.match(string(pattern), string(s), 0)
}

// globMatcher carries the state shared by the recursive calls of one
// match.
type globMatcher struct {
	nocase bool // compare bytes ignoring ASCII case
	// skipLonger is set once the rest of a pattern after a '*' matched
	// nowhere in the rest of the string: then no earlier '*' can match
	// either, which keeps the match polynomial.
	skipLonger bool
}

func (m *globMatcher) match(p, s string, nesting int) bool {
	if nesting > globMaxNesting {
		return false
	}
	for len(p) > 0 && len(s) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for len(s) > 0 {
				if m.match(p[1:], s, nesting+1) {
					return true
				}
				if m.skipLonger {
					return false
				}
				s = s[1:]
			}
			m.skipLonger = true
			return false
		case '?':
			p = p[1:]
		case '[':
			var ok bool
			if p, ok = m.matchClass(p[1:], s[0]); !ok {
				return false
			}
		default:
			if p[0] == '\\' && len(p) >= 2 {
				p = p[1:]
			}
			if m.fold(p[0]) != m.fold(s[0]) {
				return false
			}
			p = p[1:]
		}
		s = s[1:]
		if len(s) == 0 {
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
		}
	}
	return len(p) == 0 && len(s) == 0
}

// matchClass matches c against the class that p starts just after its
// '['. It returns the pattern after the class and whether c matched. An
// unclosed class runs to the end of the pattern.
func (m *globMatcher) matchClass(p string, c byte) (string, bool) {
	not := len(p) > 0 && p[0] == '^'
	if not {
		p = p[1:]
	}
	match := false
	for len(p) > 0 {
		switch {
		case p[0] == '\\' && len(p) >= 2:
			p = p[1:]
			if p[0] == c {
				match = true
			}
		case p[0] == ']':
			return p[1:], match != not
		case len(p) >= 3 && p[1] == '-':
			// Redis compares C chars, which are signed.
			lo, hi, x := int8(p[0]), int8(p[2]), int8(c)
			if lo > hi {
				lo, hi = hi, lo
			}
			lo, hi, x = int8(m.fold(byte(lo))), int8(m.fold(byte(hi))), int8(m.fold(byte(x)))
			if x >= lo && x <= hi {
				match = true
			}
			p = p[2:]
		default:
			if m.fold(p[0]) == m.fold(c) {
				match = true
			}
		}
		p = p[1:]
	}
	return p, match != not
}

// fold lowers ASCII letters when matching without case.
func (m *globMatcher) fold(c byte) byte {
	if m.nocase && 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
