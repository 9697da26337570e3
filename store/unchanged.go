package store

import (
	"github.com/presenced/presenced/internal/bitprobe"
	"github.com/presenced/presenced/proto"
)

// ReadUnchanged answers cmds on the read path when none of them would
// change the store, and reports whether it did. Three kinds of batches
// qualify: SETBITs that set a bit to the value it already has, which is
// what most presence heartbeats are; PFADDs of elements a HyperLogLog
// has counted already, as heartbeats of users counted; and PFCOUNTs of
// one key whose count is cached in its value, which a write would only
// read. Such commands need no log entry: their replies are what applying
// them would answer, and the state stays the same (Redis too leaves such
// SETBITs and PFADDs out of its AOF and replication stream). When any
// command would change something, or is of another kind, it appends
// nothing and returns false.
//
// current makes sure the store is current, as before a read (a read
// barrier). It is called after a first check, so that batches which do
// change something pay nothing more; if it fails, ReadUnchanged appends
// nothing and returns its error. The first check's answer stands when
// the store did not change meanwhile (see Changes); otherwise the batch
// is checked again.
func (s *Store) ReadUnchanged(cmds []Command, now int64, out *Replies, current func() error) (bool, error) {
	// What is known to change something is sent on without waiting for
	// the lock, which an Apply may hold. A batch is mostly of one
	// command: its first tells; the check under the lock rejects a later
	// command of another kind.
	if len(cmds) == 0 {
		return false, nil
	}
	var answer func(cmds []Command, now int64, out *Replies) (uint64, bool)
	switch {
	case cmds[0].is("setbit") && !s.rearms(cmds[0]):
		answer = s.answerUnchanged
	case cmds[0].is("pfadd"):
		answer = func(cmds []Command, now int64, out *Replies) (uint64, bool) {
			return s.answerIf(cmds, now, out, (*ctx).elementsCounted, func(*ctx, Command) { out.Int(0) })
		}
	case cmds[0].is("pfcount"):
		answer = func(cmds []Command, now int64, out *Replies) (uint64, bool) {
			return s.answerIf(cmds, now, out, (*ctx).countCached, (*ctx).exec)
		}
	default:
		return false, nil
	}
	mark, ends := out.Len(), len(out.Ends)
	checked, ok := answer(cmds, now, out)
	if !ok {
		return false, nil
	}
	err := current()
	if err == nil && s.Changes() == checked {
		return true, nil
	}
	out.B, out.Ends = out.B[:mark], out.Ends[:ends]
	if err != nil {
		return false, err
	}
	_, ok = answer(cmds, now, out)
	return ok, nil
}

// answerUnchanged appends the replies of cmds, SETBITs, if none of them
// would change the store, and returns the store's Changes as of that
// answer.
func (s *Store) answerUnchanged(cmds []Command, now int64, out *Replies) (changes uint64, ok bool) {
	ok = s.read(now, out, func(c *ctx) bool {
		changes = s.changes.Load() // as of the state read under the lock
		for rest := cmds; len(rest) > 0; {
			n := c.setbitRunUnchanged(rest)
			if n == 0 {
				return false
			}
			rest = rest[n:]
		}
		for _, cmd := range cmds {
			// An unchanged SETBIT answers the value it was asked to set.
			out.Int(int64(cmd.Args[3][0] - '0'))
			out.Ends = append(out.Ends, out.Len())
		}
		return true
	})
	return changes, ok
}

// answerIf appends the replies of cmds, as answer gives each one's on
// the read path, if check finds that none of them would change the
// store, tells the tracker of the keys the read-only ones read, and
// returns the store's Changes as of that answer.
func (s *Store) answerIf(cmds []Command, now int64, out *Replies, check func(*ctx, Command) bool, answer func(*ctx, Command)) (changes uint64, ok bool) {
	ok = s.read(now, out, func(c *ctx) bool {
		changes = s.changes.Load()
		for _, cmd := range cmds {
			if !check(c, cmd) {
				return false
			}
		}
		for _, cmd := range cmds {
			answer(c, cmd)
			out.Ends = append(out.Ends, out.Len())
		}
		c.reported(cmds)
		return true
	})
	return changes, ok
}

// setbitRunUnchanged checks the SETBITs at the start of cmds: a run of
// SETBITs to 1 on one key (a client's pipeline of heartbeats) together,
// with one lookup of the key and the bits read side by side (see
// value.getBits), or else the first alone. It returns how many it found
// unchanged, or 0 when one of them would change something.
func (c *ctx) setbitRunUnchanged(cmds []Command) int {
	first := cmds[0]
	if !setbitRunStarts(cmds) {
		if c.setbitUnchanged(first) {
			return 1
		}
		return 0
	}
	// A batch that sets new bits mostly shows it at its first: the rest
	// of the run is neither parsed nor read for it. A bad offset goes to
	// the write path, which answers its error.
	e := c.getIn(c.s.mu.dbs[first.DB], first.Args[1])
	off, ok := parseBitOffset(first.Args[2])
	if e == nil || !ok || !e.v.getBit(off) || c.ruleTTL(first.Args[1]) != 0 {
		return 0
	}
	if _, armed := e.v.t.deadline(uint32(off)); armed {
		return 0
	}
	// The rest goes a group at a time: a batch of heartbeats of users
	// online reads them all, and one that sets a new bit past its first
	// stops in the group where it does.
	inRun := func(cmd Command) bool { return sameRun(first, cmd, "setbit") }
	checked, limit := 1, min(len(cmds), probeChunk)
	for checked < limit {
		var stack [bitprobe.Group]uint64
		offs, bad := runOffsets(cmds[checked:limit], stack[:], inRun)
		if bad {
			return 0
		}
		var bits [bitprobe.Group]bool
		e.v.getBits(offs, bits[:len(offs)])
		for i, off := range offs { // a bit set is within the string
			if _, armed := e.v.t.deadline(uint32(off)); !bits[i] || armed {
				return 0
			}
		}
		checked += len(offs)
		if len(offs) < len(stack) {
			break // the run ended (or the group before was its last)
		}
	}
	return checked
}

// setbitUnchanged reports whether cmd is a well-formed SETBIT that sets
// a bit of an existing string, within its length, to the value it has. A
// SETBIT to 1 also changes a bit that has a deadline (it drops it) or
// that a bit-TTL rule covers (it re-arms it).
func (c *ctx) setbitUnchanged(cmd Command) bool {
	if len(cmd.Args) != 4 || !cmd.is("setbit") || cmd.DB < 0 || cmd.DB >= NumDBs {
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

// rearms reports whether cmd, a SETBIT, sets a bit to 1 in a key that a
// bit-TTL rule covers, as of the latest change of the rules: it arms the
// bit's TTL again, which changes the store.
func (s *Store) rearms(cmd Command) bool {
	rules := s.rules.Load()
	return rules != nil && len(cmd.Args) == 4 && string(cmd.Args[3]) == "1" && ruleTTLIn(*rules, cmd.Args[1]) != 0
}
