package proto

import (
	"strconv"

	"github.com/tidwall/redcon"
)

// Writer accumulates replies with redcon's append-style encoders, in
// RESP2 or, with RESP3 set, in RESP3 where the two differ: nulls, maps,
// sets, verbatim strings and pushes. The zero value is ready to use and
// writes RESP2; B holds the encoded bytes.
type Writer struct {
	B []byte
	// RESP3 selects RESP3, which a client asks for with HELLO 3.
	RESP3 bool
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

// Double writes a floating-point reply as Redis 7.0 does: C's %.17g, in
// a bulk string (RESP2) or a double (RESP3).
func (w *Writer) Double(v float64) {
	if !w.RESP3 {
		w.BulkString(strconv.FormatFloat(v, 'g', 17, 64))
		return
	}
	w.B = append(w.B, ',')
	w.B = strconv.AppendFloat(w.B, v, 'g', 17, 64)
	w.B = append(w.B, "\r\n"...)
}

// Bulk writes a bulk string reply.
func (w *Writer) Bulk(b []byte) { w.B = redcon.AppendBulk(w.B, b) }

// BulkString writes a bulk string reply.
func (w *Writer) BulkString(s string) { w.B = redcon.AppendBulkString(w.B, s) }

// BulkInt writes v as a bulk string, as Redis does for INCRBYFLOAT-like
// replies and CONFIG values.
func (w *Writer) BulkInt(v int64) { w.B = redcon.AppendBulkInt(w.B, v) }

// Null writes a null: RESP2's null bulk string ($-1), RESP3's null (_).
func (w *Writer) Null() {
	if w.RESP3 {
		w.B = append(w.B, "_\r\n"...)
		return
	}
	w.B = redcon.AppendNull(w.B)
}

// NullArray writes the null that stands for a missing array: RESP2's null
// array (*-1), RESP3's null (_).
func (w *Writer) NullArray() {
	if w.RESP3 {
		w.B = append(w.B, "_\r\n"...)
		return
	}
	w.B = append(w.B, "*-1\r\n"...)
}

// Array writes the header of an array of n elements; the caller writes the
// elements next.
func (w *Writer) Array(n int) { w.B = redcon.AppendArray(w.B, n) }

// Map writes the header of a map of n pairs; the caller writes each key
// and its value next. RESP2 has no maps: there it is an array of 2n
// elements, as Redis sends it.
func (w *Writer) Map(n int) {
	if w.RESP3 {
		w.header('%', n)
		return
	}
	w.Array(2 * n)
}

// Set writes the header of a set of n elements (RESP2: an array).
func (w *Writer) Set(n int) {
	if w.RESP3 {
		w.header('~', n)
		return
	}
	w.Array(n)
}

// Push writes the header of an out-of-band push of n elements, a pub/sub
// message or confirmation (RESP2: an array).
func (w *Writer) Push(n int) {
	if w.RESP3 {
		w.header('>', n)
		return
	}
	w.Array(n)
}

// Verbatim writes text that is meant to be shown as it is, INFO's and
// CLIENT LIST's: a RESP3 verbatim string of format "txt", a bulk string
// in RESP2.
func (w *Writer) Verbatim(text []byte) {
	if !w.RESP3 {
		w.Bulk(text)
		return
	}
	w.header('=', len(text)+len("txt:"))
	w.B = append(w.B, "txt:"...)
	w.B = append(w.B, text...)
	w.B = append(w.B, "\r\n"...)
}

// header writes a RESP type byte and a length line.
func (w *Writer) header(kind byte, n int) {
	w.B = append(w.B, kind)
	w.B = strconv.AppendInt(w.B, int64(n), 10)
	w.B = append(w.B, "\r\n"...)
}

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

// Reset empties the writer, keeping its buffer and its protocol.
func (w *Writer) Reset() { w.B = w.B[:0] }
