package server

import "sync/atomic"

// A connection reads into one input buffer and writes its replies from one
// output buffer, each grown to hold its largest batch. Between batches a
// buffer larger than maxIdleBuf is dropped (the input buffer shrinks back
// to readChunk), unless the connection keeps it for its next batch (see
// bufferBudget.keep): a client that sends or reads large values one at a
// time would otherwise have a buffer allocated, zeroed or copied into
// and faulted in for each of them.
const (
	readChunk     = 16 << 10 // bytes asked of each read
	maxIdleBuf    = 64 << 10 // a larger buffer is dropped between batches, unless kept
	maxKeptBuffer = 4 << 20  // the largest buffer a connection keeps
	keptBudget    = 64 << 20 // the most memory the kept buffers take together
)

// bufferBudget counts the memory of the buffers larger than maxIdleBuf
// that connections keep between batches.
type bufferBudget struct {
	kept  atomic.Int64
	limit int64 // keptBudget, unless a test sets another
}

// take counts n more bytes of kept buffers (n may be negative) and
// reports true, unless that would pass the limit: it then counts nothing
// and reports false.
func (b *bufferBudget) take(n int64) bool {
	if b.kept.Add(n) > b.limit && n > 0 {
		b.kept.Add(-n)
		return false
	}
	return true
}

// keep reports whether a connection keeps a buffer of size bytes, larger
// than maxIdleBuf, that its last batch filled to used bytes, for its next
// batch; *counted is what the budget counts for that buffer of the
// connection, which keep sets. The connection keeps it while its batches
// fill at least half of it and it is at most maxKeptBuffer, as long as
// the budget has room; otherwise keep takes it out of the budget and
// reports false, and the connection drops it.
func (b *bufferBudget) keep(counted *int, size, used int) bool {
	if 2*used >= size && size <= maxKeptBuffer && b.take(int64(size-*counted)) {
		*counted = size
		return true
	}
	b.release(counted)
	return false
}

// release takes a buffer a connection kept out of the budget (*counted is
// what the budget counts for it, which release zeroes).
func (b *bufferBudget) release(counted *int) {
	b.take(-int64(*counted))
	*counted = 0
}
