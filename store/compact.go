package store

// Compact re-packs bitmaps into freshly allocated containers of exactly
// the size their contents need, and per-bit deadlines into one array of
// blocks and one slice of deadlines per directory page (see
// bitTimers.compact). Sparse (array) containers and blocks' deadlines
// grow in steps as bits are added, so a key loaded at random keeps spare
// capacity and leaves freed, partly used memory behind; MEMORY PURGE
// calls Compact before returning free memory to the operating system.
// Bitmaps made only of dense containers, which have a fixed size, are
// left alone: copying them would only scatter them. It changes no value.
func (s *Store) Compact() {
	s.lock()
	defer s.mu.Unlock()
	for _, d := range s.mu.dbs {
		for _, e := range d.keys {
			if e.v.bm != nil && e.v.bm.Stats().ArrayContainers > 0 {
				e.v.bm = e.v.bm.Clone()
			}
			if e.v.t != nil {
				e.v.t.compact()
			}
		}
	}
}
