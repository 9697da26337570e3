package store

import (
	"iter"
	"unsafe"
)

// blockDir holds the timer blocks of a key by id (offset >> blockShift):
// a two-level table indexed by the id, whose pages are allocated when a
// block in their range is first stored and dropped when their last block
// goes. A lookup is two dependent loads and no hashing, which matters on
// the arm path, where every heartbeat looks up a block at random; a
// 100M-id space takes 96 pages of 8 KB, less than a hash map of its
// 97k blocks.
type blockDir struct {
	pages []*dirPage // by id >> dirPageShift
	n     int        // blocks stored
}

// dirPage holds the blocks of dirPageSize consecutive ids.
type dirPage struct {
	n      int // blocks stored
	blocks [dirPageSize]*timerBlock
}

const (
	dirPageShift = 10
	dirPageSize  = 1 << dirPageShift
	dirPageBytes = int64(unsafe.Sizeof(dirPage{}))
)

// get returns block id, nil when there is none.
func (d *blockDir) get(id uint32) *timerBlock {
	if p := id >> dirPageShift; int(p) < len(d.pages) {
		if pg := d.pages[p]; pg != nil {
			return pg.blocks[id&(dirPageSize-1)]
		}
	}
	return nil
}

// set stores b, not nil, as block id.
func (d *blockDir) set(id uint32, b *timerBlock) {
	p := int(id >> dirPageShift)
	if p >= len(d.pages) {
		d.pages = append(d.pages, make([]*dirPage, p+1-len(d.pages))...)
	}
	pg := d.pages[p]
	if pg == nil {
		pg = new(dirPage)
		d.pages[p] = pg
	}
	slot := &pg.blocks[id&(dirPageSize-1)]
	if *slot == nil {
		pg.n++
		d.n++
	}
	*slot = b
}

// remove drops block id, if there is one.
func (d *blockDir) remove(id uint32) {
	p := int(id >> dirPageShift)
	if p >= len(d.pages) || d.pages[p] == nil {
		return
	}
	pg := d.pages[p]
	slot := &pg.blocks[id&(dirPageSize-1)]
	if *slot == nil {
		return
	}
	*slot = nil
	pg.n--
	d.n--
	if pg.n == 0 {
		d.pages[p] = nil
	}
}

// all yields the blocks in id order.
func (d *blockDir) all() iter.Seq2[uint32, *timerBlock] {
	return func(yield func(uint32, *timerBlock) bool) {
		for p, pg := range d.pages {
			if pg == nil {
				continue
			}
			for i, b := range pg.blocks {
				if b != nil && !yield(uint32(p)<<dirPageShift|uint32(i), b) {
					return
				}
			}
		}
	}
}

// clone returns a directory of the same blocks (shared, not copied).
func (d *blockDir) clone() blockDir {
	c := blockDir{pages: make([]*dirPage, len(d.pages)), n: d.n}
	for p, pg := range d.pages {
		if pg != nil {
			cp := *pg
			c.pages[p] = &cp
		}
	}
	return c
}

// memoryUsage estimates the bytes of the directory itself, not of its
// blocks.
func (d *blockDir) memoryUsage() int64 {
	n := int64(cap(d.pages)) * 8
	for _, pg := range d.pages {
		if pg != nil {
			n += dirPageBytes
		}
	}
	return n
}
