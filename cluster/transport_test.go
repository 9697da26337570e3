package cluster

import (
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestSerialTransportSendsHeartbeatsToTheMainLoop checks that, before
// raft runs, a heartbeat reaches the node's transport as any other RPC,
// on Consumer, where raft's main loop takes it, and not the handler raft
// sets for the fast path; and, as a control, that raft's own transport
// does take the fast path for the same request.
func TestSerialTransportSendsHeartbeatsToTheMainLoop(t *testing.T) {
	sender := newTestTCPTransport(t)
	heartbeat := func(term uint64) *raft.AppendEntriesRequest {
		return &raft.AppendEntriesRequest{
			RPCHeader: raft.RPCHeader{ID: []byte("leader"), Addr: []byte(sender.LocalAddr())},
			Term:      term,
		}
	}

	plain := newTestTCPTransport(t)
	fast := make(chan uint64, 1)
	plain.SetHeartbeatHandler(func(rpc raft.RPC) {
		req := rpc.Command.(*raft.AppendEntriesRequest)
		fast <- req.Term
		rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, Success: true}, nil)
	})
	var resp raft.AppendEntriesResponse
	if err := sender.AppendEntries("plain", plain.LocalAddr(), heartbeat(3), &resp); err != nil {
		t.Fatal(err)
	}
	if got := <-fast; got != 3 || !resp.Success {
		t.Fatalf("raft's transport: handler saw term %d, reply %+v; want its fast path to answer term 3", got, resp)
	}

	serial := newTestSerialTransport(t, "serial")
	serial.SetHeartbeatHandler(func(rpc raft.RPC) {
		t.Error("the fast path handled a heartbeat")
		rpc.Respond(&raft.AppendEntriesResponse{}, nil)
	})
	sent := make(chan error, 1)
	go func() { sent <- sender.AppendEntries("serial", serial.LocalAddr(), heartbeat(7), &resp) }()
	select {
	case rpc := <-serial.Consumer():
		req, ok := rpc.Command.(*raft.AppendEntriesRequest)
		if !ok || req.Term != 7 {
			t.Fatalf("consumer got %#v, want the heartbeat of term 7", rpc.Command)
		}
		rpc.Respond(&raft.AppendEntriesResponse{Term: 7, Success: true}, nil)
	case err := <-sent:
		t.Fatalf("the heartbeat was answered without reaching the consumer: %v, %+v", err, resp)
	case <-time.After(10 * time.Second):
		t.Fatal("the heartbeat never reached the consumer")
	}
	if err := <-sent; err != nil || resp.Term != 7 || !resp.Success {
		t.Fatalf("sender got %+v, %v; want the consumer's reply", resp, err)
	}
}

// TestSerialTransportConfirmsHeartbeats checks that a heartbeat from the
// leader a follower follows, in its term, is answered while raft's main
// loop takes no RPC (held up by a slow log write, say) and still reaches
// the main loop afterwards; and that every other heartbeat waits for the
// main loop's answer.
func TestSerialTransportConfirmsHeartbeats(t *testing.T) {
	sender := newTestTCPTransport(t)
	serial := newTestSerialTransport(t, "f")
	view := &fakeView{state: raft.Follower, term: 5, leader: "l", last: 42}
	serial.follow(view)
	heartbeat := func(from string, term uint64) *raft.AppendEntriesRequest {
		return &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte(from), Addr: []byte(sender.LocalAddr())}, Term: term}
	}

	var resp raft.AppendEntriesResponse
	if err := sender.AppendEntries("f", serial.LocalAddr(), heartbeat("l", 5), &resp); err != nil {
		t.Fatal(err)
	}
	if !resp.Success || resp.Term != 5 || resp.LastLog != 42 || string(resp.ID) != "f" {
		t.Fatalf("answer %+v, want success in term 5 from f with its last index 42", resp)
	}
	select {
	case rpc := <-serial.Consumer():
		if req := rpc.Command.(*raft.AppendEntriesRequest); req.Term != 5 || string(req.ID) != "l" {
			t.Fatalf("main loop got %+v, want the heartbeat answered", req)
		}
		rpc.Respond(&raft.AppendEntriesResponse{}, nil) // dropped
	case <-time.After(10 * time.Second):
		t.Fatal("the heartbeat answered never reached the main loop")
	}

	inLine := []struct {
		name string
		req  *raft.AppendEntriesRequest
		view fakeView
	}{
		{"a newer term", heartbeat("l", 6), *view},
		{"an older term", heartbeat("l", 4), *view},
		{"another sender", heartbeat("x", 5), *view},
		{"no leader known", heartbeat("l", 5), fakeView{state: raft.Follower, term: 5}},
		{"a candidate", heartbeat("l", 5), fakeView{state: raft.Candidate, term: 5, leader: "l"}},
		{"a leader", heartbeat("l", 5), fakeView{state: raft.Leader, term: 5, leader: "l"}},
	}
	for _, c := range inLine {
		serial.follow(&c.view)
		sent := make(chan error, 1)
		go func() { sent <- sender.AppendEntries("f", serial.LocalAddr(), c.req, &resp) }()
		select {
		case err := <-sent:
			t.Fatalf("%s: answered without the main loop: %v, %+v", c.name, err, resp)
		case rpc := <-serial.Consumer():
			rpc.Respond(&raft.AppendEntriesResponse{Term: 99}, nil)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the heartbeat never reached the main loop", c.name)
		}
		if err := <-sent; err != nil || resp.Term != 99 {
			t.Fatalf("%s: sender got %+v, %v; want the main loop's answer", c.name, resp, err)
		}
	}
}

// fakeView is a raftView of a fixed state.
type fakeView struct {
	state  raft.RaftState
	term   uint64
	leader raft.ServerID
	last   uint64
}

func (v *fakeView) State() raft.RaftState { return v.state }
func (v *fakeView) CurrentTerm() uint64   { return v.term }
func (v *fakeView) LastIndex() uint64     { return v.last }
func (v *fakeView) LeaderWithID() (raft.ServerAddress, raft.ServerID) {
	if v.leader == "" {
		return "", ""
	}
	return "somewhere", v.leader
}

// newTestSerialTransport returns the serial transport of node id on
// loopback, relaying until the test ends.
func newTestSerialTransport(t *testing.T, id raft.ServerID) *serialTransport {
	t.Helper()
	quit := make(chan struct{})
	st := newSerialTransport(newTestTCPTransport(t), id, quit)
	done := make(chan struct{})
	go func() {
		defer close(done)
		st.relay()
	}()
	t.Cleanup(func() {
		close(quit)
		<-done
	})
	return st
}

// newTestTCPTransport returns a raft transport listening on loopback,
// closed when the test ends.
func newTestTCPTransport(t *testing.T) *raft.NetworkTransport {
	t.Helper()
	tr, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 10*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}
