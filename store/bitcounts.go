package store

import (
	"slices"
	"strings"
)

// KeyBits is the number of set bits of one key.
type KeyBits struct {
	DB   int
	Key  string
	Bits int64
}

// BitCounts counts, as BITCOUNT key does at the store's time, the set bits
// of every key of every database whose name matches one of the glob
// patterns (see Match), in database then key order; a key whose TTL has
// passed is left out. A pattern without '*', '?', '[' or '\' names one
// key, which is looked up; any other visits every key of every database
// under the read lock, which writes wait for: such patterns are meant for
// databases of a few keys, such as the shards of a bitmap of users.
func (s *Store) BitCounts(patterns []string) []KeyBits {
	var literal, globs []string
	for _, p := range patterns {
		if strings.ContainsAny(p, `*?[\`) {
			globs = append(globs, p)
		} else {
			literal = append(literal, p)
		}
	}
	slices.Sort(literal)
	literal = slices.Compact(literal)
	s.mu.RLock()
	defer s.mu.RUnlock()
	now := s.mu.now
	var out []KeyBits
	for i, d := range s.mu.dbs {
		first := len(out)
		add := func(e *entry) {
			if e.expireAt == 0 || now <= e.expireAt {
				out = append(out, KeyBits{DB: i, Key: e.key, Bits: e.v.countBits(0, uint64(e.v.length())*8)})
			}
		}
		for _, k := range literal {
			if e := d.keys[k]; e != nil && !slices.ContainsFunc(globs, func(g string) bool { return globMatch(g, k) }) {
				add(e)
			}
		}
		if len(globs) > 0 {
			for k, e := range d.keys {
				if slices.ContainsFunc(globs, func(g string) bool { return globMatch(g, k) }) {
					add(e)
				}
			}
		}
		slices.SortFunc(out[first:], func(a, b KeyBits) int { return strings.Compare(a.Key, b.Key) })
	}
	return out
}
