package store

import (
	"slices"
	"strconv"
	"testing"
)

// TestAppendFrom checks AppendFrom against appending the same replies one
// by one, for every slice of a batch's replies, into a batch that already
// holds replies of its own.
func TestAppendFrom(t *testing.T) {
	var src Replies
	for i := range 5 {
		src.Int(int64(i * 1000))
		src.Ends = append(src.Ends, src.Len())
		src.BulkString("reply " + strconv.Itoa(i))
		src.Ends = append(src.Ends, src.Len())
	}
	for k := 0; k <= len(src.Ends); k++ {
		for n := 0; k+n <= len(src.Ends); n++ {
			var got, want Replies
			for _, r := range []*Replies{&got, &want} {
				r.OK()
				r.Ends = append(r.Ends, r.Len())
			}
			got.AppendFrom(&src, k, n)
			for i := k; i < k+n; i++ {
				want.Raw(src.Reply(i))
				want.Ends = append(want.Ends, want.Len())
			}
			if string(got.B) != string(want.B) || !slices.Equal(got.Ends, want.Ends) {
				t.Fatalf("AppendFrom(k=%d, n=%d): got %q %v, want %q %v", k, n, got.B, got.Ends, want.B, want.Ends)
			}
		}
	}
}
