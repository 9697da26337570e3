package server

import (
	"strconv"
	"strings"
	"sync"

	"github.com/presenced/presenced/cluster"
	"github.com/presenced/presenced/proto"
)

// relayedBatches remembers, for each member that relays PUBLISH messages
// to this node (cluster.Node.Relay), the latest batch delivered, so that
// a batch that arrives after a later one is dropped (see
// cluster.RelayBatch).
type relayedBatches struct {
	mu     sync.Mutex
	latest map[string]relayedFrom // by node ID
}

// relayedFrom is the latest batch delivered from one run of a member.
type relayedFrom struct {
	incarnation string
	seq         uint64
}

// relayedMessage is one PUBLISH or SPUBLISH of a relayed batch.
type relayedMessage struct {
	shard            bool
	channel, message []byte
}

// deliverRelayed is RAFT RELAYED node-id incarnation seq, followed by
// each command as its number of arguments and its arguments: it delivers
// the batch's messages to this node's subscribers, unless a later batch
// of that run of the node was delivered already. Only other members may
// send it, and only PUBLISH and SPUBLISH.
func (c *client) deliverRelayed(args [][]byte) {
	if !c.peer {
		c.out.Error("ERR RAFT RELAYED is sent by the other members of the cluster only")
		return
	}
	origin := cluster.RelayOrigin{NodeID: string(args[0]), Incarnation: string(args[1])}
	seq, err := strconv.ParseUint(string(args[2]), 10, 64)
	msgs, ok := parseRelayed(args[3:])
	if err != nil || !ok {
		c.out.Error(proto.ErrSyntax)
		return
	}
	r := &c.s.relayed
	r.mu.Lock()
	defer r.mu.Unlock()
	if last, seen := r.latest[origin.NodeID]; seen && last.incarnation == origin.Incarnation && seq <= last.seq {
		c.out.OK() // abandoned by its sender, which went on with later ones
		return
	}
	if r.latest == nil {
		r.latest = make(map[string]relayedFrom)
	}
	r.latest[origin.NodeID] = relayedFrom{origin.Incarnation, seq}
	for _, m := range msgs {
		if m.shard {
			c.s.pubsub.publishShard(string(m.channel), m.message)
		} else {
			c.s.pubsub.publish(string(m.channel), m.message)
		}
	}
	c.out.OK()
}

// parseRelayed reads the commands of a relayed batch, which must each be
// a PUBLISH or an SPUBLISH.
func parseRelayed(args [][]byte) ([]relayedMessage, bool) {
	var msgs []relayedMessage
	for len(args) > 0 {
		if string(args[0]) != "3" || len(args) < 4 {
			return nil, false
		}
		name := string(args[1])
		switch {
		case strings.EqualFold(name, "publish"), strings.EqualFold(name, "spublish"):
			msgs = append(msgs, relayedMessage{shard: len(name) == len("spublish"), channel: args[2], message: args[3]})
		default:
			return nil, false
		}
		args = args[4:]
	}
	return msgs, true
}
