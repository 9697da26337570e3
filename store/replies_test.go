package store

import (
	"slices"
	"strconv"
	"testing"

	"github.com/presenced/presenced/proto"
)

// TestAppendFrom checks AppendFrom against appending the same replies one
// by one, for every slice of a batch's replies, into a batch that already
// holds replies of its own: in RESP2, and converted to RESP3 as if written
// in it.
func TestAppendFrom(t *testing.T) {
	// fill writes the batch's replies in r's protocol.
	fill := func(r *Replies) {
		for i := range 5 {
			r.Int(int64(i * 1000))
			r.Ends = append(r.Ends, r.Len())
			r.BulkString("reply " + strconv.Itoa(i))
			r.Ends = append(r.Ends, r.Len())
			r.Array(2)
			r.Null()
			r.NullArray()
			r.Ends = append(r.Ends, r.Len())
		}
	}
	var src Replies
	fill(&src)
	for _, resp3 := range []bool{false, true} {
		like := Replies{Writer: proto.Writer{RESP3: resp3}}
		fill(&like)
		for k := 0; k <= len(src.Ends); k++ {
			for n := 0; k+n <= len(src.Ends); n++ {
				got, want := Replies{Writer: proto.Writer{RESP3: resp3}}, Replies{}
				for _, r := range []*Replies{&got, &want} {
					r.OK()
					r.Ends = append(r.Ends, r.Len())
				}
				got.AppendFrom(&src, k, n)
				for i := k; i < k+n; i++ {
					want.Raw(like.Reply(i))
					want.Ends = append(want.Ends, want.Len())
				}
				if string(got.B) != string(want.B) || !slices.Equal(got.Ends, want.Ends) {
					t.Fatalf("RESP3 %v: AppendFrom(k=%d, n=%d): got %q %v, want %q %v", resp3, k, n, got.B, got.Ends, want.B, want.Ends)
				}
			}
		}
	}
}
