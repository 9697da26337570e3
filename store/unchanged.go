package store

import "github.com/presenced/presenced/proto"

// ReadUnchanged answers cmds on the read path when none of them would
// change the store — SETBITs that set a bit to the value it already has,
// which is what most presence heartbeats are — and reports whether it
// did. Such commands need no log entry: their replies are what applying
// them would answer, and the state stays the same (Redis too leaves them
// out of its AOF and replication stream). When any command would change
// something, or is not a SETBIT, it appends nothing and returns false.
func (s *Store) ReadUnchanged(cmds []Command, now int64, out *Replies) bool {
	// What is known to change something is sent on without waiting for
	// the lock, which an Apply may hold.
	for _, cmd := range cmds {
		if !isSetbit(cmd) {
			return false
		}
	}
	if len(cmds) == 0 || s.rearms(cmds[0]) {
		return false
	}
	return s.read(now, out, func(c *ctx) bool {
		for _, cmd := range cmds {
			if !c.setbitUnchanged(cmd) {
				return false
			}
		}
		for _, cmd := range cmds {
			// An unchanged SETBIT answers the value it was asked to set.
			out.Int(int64(cmd.Args[3][0] - '0'))
			out.Ends = append(out.Ends, out.Len())
		}
		return true
	})
}

// setbitUnchanged reports whether cmd, a SETBIT, is well-formed and sets
// a bit of an existing string, within its length, to the value it has. A
// SETBIT to 1 also changes a bit that has a deadline (it drops it) or
// that a bit-TTL rule covers (it re-arms it).
func (c *ctx) setbitUnchanged(cmd Command) bool {
	if len(cmd.Args) != 4 || cmd.DB < 0 || cmd.DB >= NumDBs {
		return false
	}
	off, ok := parseBitOffset(cmd.Args[2])
	if !ok {
		return false
	}
	on, ok := proto.ParseInt(cmd.Args[3])
	if !ok || on&^1 != 0 || len(cmd.Args[3]) != 1 {
		return false
	}
	e := c.getIn(c.s.mu.dbs[cmd.DB], cmd.Args[1])
	if e == nil || off/8 >= uint64(e.v.length()) || e.v.getBit(off) != (on == 1) {
		return false
	}
	if on == 0 {
		return true
	}
	_, armed := e.v.t.deadline(uint32(off))
	return !armed && c.ruleTTL(cmd.Args[1]) == 0
}

// isSetbit reports whether cmd is a SETBIT.
func isSetbit(cmd Command) bool { return cmd.is("setbit") }

// rearms reports whether cmd, a SETBIT, sets a bit to 1 in a key that a
// bit-TTL rule covers, as of the latest change of the rules: it arms the
// bit's TTL again, which changes the store.
func (s *Store) rearms(cmd Command) bool {
	rules := s.rules.Load()
	return rules != nil && len(cmd.Args) == 4 && string(cmd.Args[3]) == "1" && ruleTTLIn(*rules, cmd.Args[1]) != 0
}
