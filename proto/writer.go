package proto

import "github.com/tidwall/redcon"

// Writer accumulates RESP2 replies with redcon's append-style encoders.
// The zero value is ready to use; B holds the encoded bytes.
type Writer struct {
	B []byte
}

// Int writes an integer reply.
func (w *Writer) Int(v int64) { w.B = redcon.AppendInt(w.B, v) }

// Bit appends the integer 1 if on, else 0: a bit's value.
func (w *Writer) Bit(on bool) {
	if on {
		w.Int(1)
	} else {
		w.Int(0)
	}
}

// Bulk writes a bulk string reply.
func (w *Writer) Bulk(b []byte) { w.B = redcon.AppendBulk(w.B, b) }

// BulkString writes a bulk string reply.
func (w *Writer) BulkString(s string) { w.B = redcon.AppendBulkString(w.B, s) }

// BulkInt writes v as a bulk string, as Redis does for INCRBYFLOAT-like
// replies and CONFIG values.
func (w *Writer) BulkInt(v int64) { w.B = redcon.AppendBulkInt(w.B, v) }

// Null writes the RESP2 null bulk string ($-1).
func (w *Writer) Null() { w.B = redcon.AppendNull(w.B) }

// NullArray writes the RESP2 null array (*-1).
func (w *Writer) NullArray() { w.B = append(w.B, "*-1\r\n"...) }

// Array writes the header of an array of n elements; the caller writes the
// elements next.
func (w *Writer) Array(n int) { w.B = redcon.AppendArray(w.B, n) }

// Simple writes a simple string reply (+s).
func (w *Writer) Simple(s string) { w.B = redcon.AppendString(w.B, s) }

// OK writes +OK.
func (w *Writer) OK() { w.B = redcon.AppendOK(w.B) }

// Error writes an error reply; line breaks in s become spaces, as in Redis.
func (w *Writer) Error(s string) { w.B = redcon.AppendError(w.B, s) }

// Raw appends already encoded RESP.
func (w *Writer) Raw(b []byte) { w.B = append(w.B, b...) }

// Len is the number of bytes written so far.
func (w *Writer) Len() int { return len(w.B) }

// Reset empties the writer, keeping its buffer.
func (w *Writer) Reset() { w.B = w.B[:0] }
