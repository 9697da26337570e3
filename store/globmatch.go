package store

// MatchString reports, case-sensitively, whether s matches the glob
// pattern as Redis's stringmatchlen does (see globMatch). It takes
// strings, so that matching channel names against PSUBSCRIBE patterns
// copies nothing.
func MatchString(pattern, s string) bool { return globMatch(pattern, s) }
