package cluster

import "github.com/hashicorp/raft"

// serialTransport is raft's network transport without its fast path for
// heartbeats. On that path the transport's connection goroutine runs
// raft's handling of a heartbeat itself, beside raft's main loop, and a
// heartbeat from a newer leader moves this node's term and state under a
// leader loop that is still at work: a leader that resumes after a pause
// may then write the proposal it was dispatching with the new leader's
// term. Its log then holds an entry of that term the new leader never
// wrote, which no later AppendEntries tells apart from the new leader's
// own (they compare terms), and the node applies it when the index
// commits: its state diverges (hashicorp/raft#695). Without the fast path
// a heartbeat waits in line with the other RPCs, so the main loop alone
// changes the term; a heartbeat then waits for the log write ahead of it,
// a few milliseconds, well within an election timeout.
type serialTransport struct{ *raft.NetworkTransport }

// SetHeartbeatHandler implements raft.Transport: it leaves the fast path
// off, so heartbeats reach raft's main loop through Consumer.
func (serialTransport) SetHeartbeatHandler(func(raft.RPC)) {}
