package server

import (
	"strconv"
	"testing"
)

// TestUnchangedWritesSkipTheLog checks that SETBITs that change nothing
// are answered without committing anything, and that any batch with a
// change still goes through the log, replies unchanged.
func TestUnchangedWritesSkipTheLog(t *testing.T) {
	srv := startServer(t)
	c := dial(t, srv.Addr())
	c.expect(":0\r\n", "SETBIT", "online", "7", "1")
	committed := func() uint64 { return srv.Node().Stats().Commands }
	before := committed()
	for range 10 {
		c.expect(":1\r\n", "SETBIT", "online", "7", "1")
		c.expect(":0\r\n", "SETBIT", "online", "6", "0")
	}
	if got := committed(); got != before {
		t.Errorf("unchanged SETBITs committed %d commands", got-before)
	}
	c.expect(":0\r\n", "SETBIT", "online", "5", "1")
	c.expect(":0\r\n", "SETBIT", "online", "100", "0") // grows the string
	if got := committed(); got != before+2 {
		t.Errorf("changing SETBITs committed %d commands, want 2", got-before)
	}
	c.expect(":1\r\n", "GETBIT", "online", "5")
	c.expect(":13\r\n", "STRLEN", "online")
}

// TestHyperLogLogReadsSkipTheLog checks that PFCOUNT of one key goes
// through the log only when it caches a count it computed, and PFADD
// only when it raises a register: a count read from the cache, or of a
// missing key, and an element counted already commit nothing.
func TestHyperLogLogReadsSkipTheLog(t *testing.T) {
	srv := startServer(t)
	c := dial(t, srv.Addr())
	committed := func() uint64 { return srv.Node().Stats().Commands }
	c.expect(":1\r\n", "PFADD", "h", "a", "b", "c")
	before := committed()
	c.expect(":3\r\n", "PFCOUNT", "h")
	if got := committed(); got != before+1 {
		t.Errorf("a count computed and cached committed %d commands, want 1", got-before)
	}
	for range 10 {
		c.expect(":3\r\n", "PFCOUNT", "h")
		c.expect(":0\r\n", "PFCOUNT", "nokey")
		c.expect(":3\r\n", "PFCOUNT", "h", "nokey")
		c.expect(":0\r\n", "PFADD", "h", "b", "a")
	}
	if got := committed(); got != before+1 {
		t.Errorf("cached counts and elements counted already committed %d commands", got-before-1)
	}
	c.expect(":1\r\n", "PFADD", "h", "a", "d")
	c.expect(":4\r\n", "PFCOUNT", "h")
	if got := committed(); got != before+3 {
		t.Errorf("a new element and its count committed %d commands, want 2", got-before-1)
	}
}

// TestChangingWritesSkipTheCheck checks that a connection whose SETBITs
// keep setting new bits sends them to the log without checking them
// first, but still checks one batch in checkEvery, and that a batch found
// to change nothing ends that: SETBITs that change nothing then commit
// nothing again. The run is the connection's own, and of one command.
func TestChangingWritesSkipTheCheck(t *testing.T) {
	srv := startServer(t)
	loader, other := dial(t, srv.Addr()), dial(t, srv.Addr())
	committed := func() uint64 { return srv.Node().Stats().Commands }
	for i := range changingBeforeSkip + 4 {
		loader.expect(":0\r\n", "SETBIT", "online", strconv.Itoa(i), "1")
	}
	other.expect(":1\r\n", "SETBIT", "online", "0", "1")
	loader.expect(":1\r\n", "PFADD", "h", "a")
	before := committed()
	loader.expect(":1\r\n", "SETBIT", "online", "0", "1")
	loader.expect(":0\r\n", "PFADD", "h", "a")
	if got := committed(); got != before {
		t.Errorf("a SETBIT and a PFADD that change nothing, each leading a run of its own, committed %d commands", got-before)
	}
	for i := range changingBeforeSkip + 4 {
		loader.expect(":0\r\n", "SETBIT", "online", strconv.Itoa(100+i), "1")
	}
	before = committed()
	for range checkEvery {
		loader.expect(":1\r\n", "SETBIT", "online", "1", "1")
	}
	skipped := committed() - before
	if skipped == 0 || skipped >= checkEvery {
		t.Errorf("after a run of new bits, %d SETBITs that change nothing committed %d commands, want from 1 to %d", checkEvery, skipped, checkEvery-1)
	}
	before = committed()
	for range 2 * checkEvery {
		loader.expect(":1\r\n", "SETBIT", "online", "2", "1")
		other.expect(":1\r\n", "SETBIT", "online", "3", "1")
	}
	if got := committed(); got != before {
		t.Errorf("once one was found to change nothing, SETBITs that change nothing committed %d commands", got-before)
	}
	loader.expect(":"+strconv.Itoa(2*(changingBeforeSkip+4))+"\r\n", "BITCOUNT", "online")
}
