package store

import "github.com/RoaringBitmap/roaring/v2"

// bitChanges follows the bits of a recorded key's bitmap that changed since
// the key's last history snapshot: each change flips a bit of flips, so
// flips is the XOR of that snapshot and the bitmap now. The next snapshot
// hands it to the sink (HistorySink.RecordChanges), which stores it as the
// snapshot's delta: the store then shares no copy of the bitmap (whose
// containers every write would copy afterwards) and the history writer
// compares no two whole bitmaps. A bitmap value gets one at each snapshot
// of its key (see recordBitmaps). It belongs to the value: a command that
// stores a new value drops it with the old one, one that edits bits it does
// not follow (SETRANGE, APPEND) drops it, and a value that moves to another
// key (RENAME, MOVE, SWAPDB) keeps one naming the key it was taken for,
// which the next snapshot then ignores. It is also dropped once it takes
// more than 1/changesShare of the memory of the bitmap it follows (as when
// a key is being filled), so that it never costs much. Without one, the
// next snapshot hands the sink the whole bitmap.
type bitChanges struct {
	db    int
	key   string
	since int64           // the boundary of the key's last snapshot
	flips *roaring.Bitmap // nil until a bit changes
	n     int             // flips since the last look at their size
}

// changesShare bounds the memory of a bitChanges to a share of its
// bitmap's, looked at every changesCheck changes.
const (
	changesShare = 8
	changesCheck = 1024
)

// changed records, for history, that bit off of a bitmap value changed.
func (v *value) changed(off uint32) {
	c := v.ch
	if c == nil {
		return
	}
	if c.flips == nil {
		c.flips = roaring.New()
	}
	if !c.flips.CheckedAdd(off) {
		c.flips.Remove(off)
	}
	if c.n++; c.n == changesCheck {
		c.n = 0
		if changesShare*c.flips.GetSizeInBytes() > v.bm.GetSizeInBytes() {
			v.ch = nil
		}
	}
}

// takeChanges returns the bits of e, key's entry in database db (nil when
// the key is absent), that changed since its last snapshot, and that
// snapshot's boundary, when its value followed them (else nil); it starts
// following them anew from boundary b.
func takeChanges(e *entry, db int, key string, b int64) (*roaring.Bitmap, int64) {
	if e == nil || e.v.bm == nil {
		return nil, 0
	}
	old := e.v.ch
	e.v.ch = &bitChanges{db: db, key: key, since: b}
	if old == nil || old.db != db || old.key != key {
		return nil, 0
	}
	if old.flips == nil {
		return roaring.New(), old.since
	}
	return old.flips, old.since
}
