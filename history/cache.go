package history

import (
	"container/list"
	"strconv"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
)

// cachedBitmap is a reconstructed snapshot; nobody modifies bm. Copies
// share its containers copy-on-write.
type cachedBitmap struct {
	key     string
	mu      sync.Mutex // held while bm is copied: copying marks its containers shared
	bm      *roaring.Bitmap
	byteLen uint64
	size    int64
}

// copy returns a copy of the bitmap the caller may change: it shares the
// containers until one side changes them, so it costs a slice of
// references rather than a copy of every container.
func (cb *cachedBitmap) copy() *roaring.Bitmap {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	c := cb.bm.Clone()
	c.SetCopyOnWrite(false)
	return c
}

// cache is an LRU of reconstructed snapshots keyed by (series, snapshot
// time), bounded by the total in-memory size of its bitmaps. A snapshot is
// admitted on its second rebuild, so one-off reads do not pay for a copy.
type cache struct {
	mu    sync.Mutex
	limit int64
	size  int64
	order *list.List // front = most recently used; values are *cachedBitmap
	items map[string]*list.Element
	seen  map[string]bool // rebuilt once, not cached yet
}

// maxSeen bounds the set of snapshots rebuilt once.
const maxSeen = 4096

func newCache(limit int64) *cache {
	return &cache{limit: limit, order: list.New(), items: map[string]*list.Element{}, seen: map[string]bool{}}
}

// admit reports whether a snapshot just rebuilt should be cached: true if
// it was rebuilt before.
func (c *cache) admit(series string, ts int64) bool {
	if c.limit == 0 {
		return false
	}
	key := cacheKey(series, ts)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen[key] {
		delete(c.seen, key)
		return true
	}
	if len(c.seen) >= maxSeen {
		c.seen = map[string]bool{}
	}
	c.seen[key] = true
	return false
}

func cacheKey(series string, ts int64) string {
	return strconv.FormatInt(ts, 10) + ":" + series
}

func (c *cache) get(series string, ts int64) *cachedBitmap {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.items[cacheKey(series, ts)]
	if e == nil {
		return nil
	}
	c.order.MoveToFront(e)
	return e.Value.(*cachedBitmap)
}

// put caches bm, which must not be modified afterwards, and returns its
// entry, or nil if it is larger than the whole cache.
func (c *cache) put(series string, ts int64, bm *roaring.Bitmap, byteLen uint64) *cachedBitmap {
	size := int64(bm.GetSizeInBytes())
	if size > c.limit {
		return nil
	}
	key := cacheKey(series, ts)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		return e.Value.(*cachedBitmap)
	}
	bm.SetCopyOnWrite(true)
	cb := &cachedBitmap{key: key, bm: bm, byteLen: byteLen, size: size}
	c.items[key] = c.order.PushFront(cb)
	c.size += size
	for c.size > c.limit {
		e := c.order.Back()
		old := e.Value.(*cachedBitmap)
		c.order.Remove(e)
		delete(c.items, old.key)
		c.size -= old.size
	}
	return cb
}

// clear empties the cache (after a purge or a restore changed the file).
func (c *cache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order.Init()
	c.items = map[string]*list.Element{}
	c.seen = map[string]bool{}
	c.size = 0
}
