package cluster

import (
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// TestMembershipMark follows the membership record of a node with its
// log in memory through the memberships it applies: a node that joined
// replays the memberships before its joining, which do not list it, and
// stays recorded as a member until one that listed it is followed by one
// that does not (RAFT REMOVE); a lone node is no member until another
// voter joins it.
func TestMembershipMark(t *testing.T) {
	conf := func(ids ...string) raft.Configuration {
		var c raft.Configuration
		for _, id := range ids {
			c.Servers = append(c.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(id), Address: raft.ServerAddress(id + ":1")})
		}
		return c
	}
	type step struct {
		conf raft.Configuration
		want uint64
	}
	cases := []struct {
		name   string
		joined bool
		steps  []step
	}{
		{"joined, replaying the log", true, []step{
			{conf("a1"), 1}, {conf("a1", "a2"), 1}, {conf("a1", "a2", "a3"), 1}, {conf("a1", "a2"), 0},
		}},
		{"lone, then joined by another", false, []step{
			{conf("a3"), 0}, {conf("a3", "b"), 1}, {conf("a3"), 0},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := &Node{cfg: Config{NodeID: "a3"}, stable: raft.NewInmemStore(), log: hclog.NewNullLogger()}
			if c.joined {
				n.markMember(true)
			}
			for i, s := range c.steps {
				n.noteMembership(s.conf)
				if got, err := n.stable.GetUint64(memberKey); err != nil || got != s.want {
					t.Fatalf("after membership %d %v: member %d (%v), want %d", i, s.conf.Servers, got, err, s.want)
				}
			}
		})
	}
}
