package store

// Compact re-packs every bitmap into freshly allocated containers of
// exactly the size its contents need. Containers grow by doubling as bits
// are added, so a bitmap loaded at random keeps spare capacity and leaves
// freed, half-used memory behind; MEMORY PURGE calls Compact before
// returning free memory to the operating system. It changes no value.
func (s *Store) Compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.mu.dbs {
		for _, e := range d.keys {
			if e.v.bm != nil {
				e.v.bm = e.v.bm.Clone()
			}
		}
	}
}
