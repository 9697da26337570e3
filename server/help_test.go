package server

import (
	"strings"
	"testing"

	"github.com/presenced/presenced/server/redisserver"
)

// TestHelpFrameMatchesRedis compares the first line and the last two
// (HELP and its description) of each HELP reply of a Redis command
// presenced has with redis-server's; the lines between describe what
// presenced supports, in its words.
func TestHelpFrameMatchesRedis(t *testing.T) {
	ours, ref := dial(t, startServer(t).Addr()), dial(t, redisserver.StartForTest(t, redisserver.Options{}).Addr())
	frame := func(c *respConn, cmd string) []string {
		lines := strings.Split(strings.TrimSuffix(c.do(cmd, "HELP"), "\r\n"), "\r\n")
		if len(lines) < 4 {
			t.Fatalf("%s HELP: %q", cmd, lines)
		}
		return []string{lines[1], lines[len(lines)-2], lines[len(lines)-1]}
	}
	for _, cmd := range []string{"CLIENT", "CONFIG", "MEMORY", "PUBSUB", "COMMAND", "SLOWLOG", "LATENCY", "FUNCTION", "OBJECT", "ACL", "MODULE"} {
		got, want := frame(ours, cmd), frame(ref, cmd)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s HELP: presenced %q, redis-server %q", cmd, got, want)
		}
	}
}
