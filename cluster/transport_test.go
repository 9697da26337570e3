package cluster

import (
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestSerialTransportSendsHeartbeatsToTheMainLoop checks that a heartbeat
// reaches the node's transport as any other RPC, on Consumer, where raft's
// main loop takes it, and not the handler raft sets for the fast path;
// and, as a control, that raft's own transport does take the fast path
// for the same request.
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

	serial := serialTransport{newTestTCPTransport(t)}
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
