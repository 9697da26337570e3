package cluster

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/raft"
)

// replyError is a cluster error with the text of its Redis error reply.
type replyError struct {
	msg   string // Go error text
	reply string // RESP error text, code first
}

func (e *replyError) Error() string { return e.msg }

// RedisError returns the text of the error reply a client gets.
func (e *replyError) RedisError() string { return e.reply }

var (
	// ErrNotLeader is returned for a write submitted to a node that is not
	// the leader, or that lost leadership before the write entered the
	// log. The write was not applied; retrying it is safe.
	ErrNotLeader error = &replyError{"cluster: not leader",
		"TRYAGAIN This node is not the leader, retry the write"}

	// ErrUnknownOutcome is returned when leadership was lost or the node
	// shut down after a write entered the log but before it was known to
	// be committed: the write may or may not be applied. Retrying a
	// non-idempotent command may apply it twice. Its reply code is not
	// one that clients retry on their own.
	ErrUnknownOutcome error = &replyError{"cluster: unknown outcome",
		"UNCERTAIN Leadership changed while the write was being committed: it may or may not have been applied"}

	// ErrNoLeader is returned when no leader could be reached within the
	// configured wait (Config.LeaderWait): during an election, or when
	// this node is cut off from a majority. The write was not applied.
	ErrNoLeader error = &replyError{"cluster: no leader",
		"CLUSTERDOWN No leader is reachable from this node, retry later"}

	// ErrRemoved is returned instead of ErrNoLeader by a node that finds
	// no leader and whose latest configuration does not list it: a member
	// removed it (RAFT REMOVE), and since the leader no longer sends it
	// heartbeats it will not find one. The write was not applied.
	ErrRemoved error = &replyError{"cluster: removed from the cluster",
		"CLUSTERDOWN This node is no longer a member of the cluster (RAFT REMOVE took it out): RAFT ADD on a member adds it back"}

	// ErrBehind is returned for a linearizable read on a node that did
	// not apply, within Config.LeaderWait, the writes the read must see:
	// its state machine is slow, or it is catching up with the leader.
	// Nothing was read; the leader was reachable.
	ErrBehind error = &replyError{"cluster: behind the leader",
		"LOADING This node is still applying the writes this read must see, retry later"}

	// ErrClosed is returned for a write submitted to a closed node. The
	// write was not applied.
	ErrClosed error = &replyError{"cluster: closed",
		"CLUSTERDOWN The cluster is down: this node is shutting down"}
)

// TooLargeError refuses a batch of writes whose encoding would take more
// than Config.MaxBatchBytes in the log. Nothing was applied.
type TooLargeError struct {
	Size, Limit int // the batch's encoded size (a bound), and the limit
}

// Error returns the Go error text.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("cluster: a batch of %d bytes of writes is over the limit of %d", e.Size, e.Limit)
}

// RedisError returns the text of the error reply a client gets.
func (e *TooLargeError) RedisError() string {
	return fmt.Sprintf("ERR write too large for the raft log: %d bytes in one batch (a command, a pipeline's batch or a MULTI block), over --max-write-bytes %d", e.Size, e.Limit)
}

// LogWriteError is ErrNoLeader or ErrBehind (its Base) on a node whose
// last write to its raft log failed, a full disk say: such a node can
// neither lead, since raft steps a leader down when its log write fails,
// nor take the leader's entries as a follower. Its reply names the cause,
// as Redis's MISCONF names a failed write of its AOF. With Base
// ErrUnknownOutcome it is the error of the writes whose entry the leader
// failed to write: UNCERTAIN, with the cause.
type LogWriteError struct {
	Base  error  // ErrNoLeader, ErrBehind or ErrUnknownOutcome
	Cause string // the log write's error
}

// Error returns the Go error text.
func (e *LogWriteError) Error() string { return "cluster: writing the raft log: " + e.Cause }

// RedisError returns the text of the error reply a client gets.
func (e *LogWriteError) RedisError() string {
	if e.Base == ErrUnknownOutcome {
		return "UNCERTAIN The raft log could not be written while the write was being committed (" + e.Cause + "): it may or may not have been applied"
	}
	return "MISCONF Errors writing to the raft log: " + e.Cause
}

// Unwrap returns Base: callers tell the error apart as they tell Base.
func (e *LogWriteError) Unwrap() error { return e.Base }

// logWriteError is base caused by failed, a write of the log, whose text
// goes on one line of a reply.
func logWriteError(base, failed error) *LogWriteError {
	return &LogWriteError{Base: base, Cause: strings.ReplaceAll(failed.Error(), "\n", " ")}
}

// PasswordError is ErrNoLeader on a node whose calls another member
// refused to authenticate: they do not have the same password (their
// requirepass, which CONFIG SET changed on one of them, say). From and To
// are the two nodes' raft addresses: the node that called, and the
// member that refused it.
type PasswordError struct {
	From, To string
}

// passwordReply begins a PasswordError's reply, which a node relays.
const passwordReply = "CLUSTERDOWN The member at "

// Error returns the Go error text.
func (e *PasswordError) Error() string {
	return fmt.Sprintf("cluster: the member at %s refused the password of the node at %s", e.To, e.From)
}

// RedisError returns the text of the error reply a client gets.
func (e *PasswordError) RedisError() string {
	return fmt.Sprintf("%s%s refused the password of the node at %s: every member needs the same requirepass", passwordReply, e.To, e.From)
}

// Unwrap returns ErrNoLeader: callers tell the error apart as they tell it.
func (e *PasswordError) Unwrap() error { return ErrNoLeader }

// ErrAlone is Handover's refusal on a leader that is the only voter:
// nobody can take the leadership over.
var ErrAlone = memberError("no other voter to hand the leadership to")

// outcomeError maps the error of a write submitted to raft to a cluster
// error: refused before entering the log (definite), or anything else
// (unknown outcome), with the cause when logFailure, if not nil, says the
// log's latest write failed.
func outcomeError(err error, logFailure func() error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return ErrNotLeader
	}
	if logFailure != nil {
		if failed := logFailure(); failed != nil {
			return logWriteError(ErrUnknownOutcome, failed)
		}
	}
	return fmt.Errorf("%w: %v", ErrUnknownOutcome, err)
}

// memberError is a refused membership change; its reply is an ERR with
// the reason.
func memberError(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return &replyError{"cluster: " + msg, "ERR " + msg}
}
