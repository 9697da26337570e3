package server

import (
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
