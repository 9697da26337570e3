package history

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// A copy (OpenCopy, RestoreCopy) is a 32-byte header, the bbolt file as of
// one read transaction, and a 4-byte CRC-32C of that file:
//
//	[0:8]   magic "PDHIST\x00\x01"
//	[8:16]  Newest of the copy (unix ms)
//	[16:24] length of the file part
//	[24:28] reserved, zero
//	[28:32] CRC-32C of bytes 0..28
const copyHeaderLen = 32

var (
	copyMagic = []byte("PDHIST\x00\x01")
	castagoli = crc32.MakeTable(crc32.Castagnoli)

	// ErrBadCopy is returned by RestoreCopy for input that is not an intact copy.
	ErrBadCopy = errors.New("history: the history copy is damaged or not a history copy")
)

// OpenCopy returns a consistent copy of the file (see RestoreCopy) and its
// exact size in bytes. The reader must be closed; until then the copy's
// read transaction stays open.
func (h *History) OpenCopy() (io.ReadCloser, int64, error) {
	h.dbMu.RLock()
	defer h.dbMu.RUnlock()
	if h.db == nil {
		return nil, 0, ErrClosed
	}
	// Every record up to the newest Advance is committed before it is
	// read here (batches of Advances alone leave it ahead of the file's).
	held := h.newest.Load()
	tx, err := h.db.Begin(false)
	if err != nil {
		return nil, 0, err
	}
	newest := max(getU64(tx.Bucket(bucketMeta).Get(metaNewest)), uint64(held))
	size := tx.Size()
	hdr := make([]byte, copyHeaderLen)
	copy(hdr, copyMagic)
	binary.BigEndian.PutUint64(hdr[8:], newest)
	binary.BigEndian.PutUint64(hdr[16:], uint64(size))
	binary.BigEndian.PutUint32(hdr[28:], crc32.Checksum(hdr[:28], castagoli))
	pr, pw := io.Pipe()
	go func() {
		defer tx.Rollback()
		crc := crc32.New(castagoli)
		if _, err := pw.Write(hdr); err != nil {
			return
		}
		if _, err := tx.WriteTo(io.MultiWriter(pw, crc)); err != nil {
			pw.CloseWithError(err)
			return
		}
		_, err := pw.Write(binary.BigEndian.AppendUint32(nil, crc.Sum32()))
		pw.CloseWithError(err)
	}()
	return pr, copyHeaderLen + size + 4, nil
}

// restoreReq asks the writer to swap in a restored file.
type restoreReq struct {
	tmp    string
	newest int64
	done   chan error
}

// RestoreCopy installs a copy made by OpenCopy. If the local file is at
// least as new (Newest >= the copy's), it reads nothing past the header and
// keeps the local file. Otherwise it writes the copy to a temporary file
// next to the history file, checks and syncs it, waits until everything
// recorded before is written, and renames it over the history file.
func (h *History) RestoreCopy(r io.Reader) error {
	hdr := make([]byte, copyHeaderLen)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return fmt.Errorf("%w: %v", ErrBadCopy, err)
	}
	if string(hdr[:8]) != string(copyMagic) || binary.BigEndian.Uint32(hdr[28:]) != crc32.Checksum(hdr[:28], castagoli) {
		return ErrBadCopy
	}
	newest := int64(binary.BigEndian.Uint64(hdr[8:]))
	size := int64(binary.BigEndian.Uint64(hdr[16:]))
	if err := h.Sync(); err != nil {
		return err
	}
	if h.Newest() >= newest {
		return nil
	}
	tmp := h.cfg.Path + ".restore.tmp"
	if err := writeCopy(tmp, r, size); err != nil {
		os.Remove(tmp)
		return err
	}
	req := &restoreReq{tmp: tmp, newest: newest, done: make(chan error, 1)}
	if !h.enqueue(op{kind: opRestore, restore: req}, 64) {
		os.Remove(tmp)
		return ErrClosed
	}
	return <-req.done
}

// writeCopy writes the file part of a copy to path, checks its CRC and
// that it opens as a history file, and syncs it.
func writeCopy(path string, r io.Reader, size int64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	crc := crc32.New(castagoli)
	_, err = io.CopyN(io.MultiWriter(f, crc), r, size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadCopy, err)
	}
	var sum [4]byte
	if _, err := io.ReadFull(r, sum[:]); err != nil || binary.BigEndian.Uint32(sum[:]) != crc.Sum32() {
		return ErrBadCopy
	}
	return nil
}

// swap renames the restored file over the history file and reopens it, in
// the writer goroutine with queries shut out. A local file that became at
// least as new meanwhile is kept.
func (w *writer) swap(req *restoreReq) error {
	h := w.h
	if h.Newest() >= req.newest {
		os.Remove(req.tmp)
		return nil
	}
	h.dbMu.Lock()
	defer h.dbMu.Unlock()
	if err := h.db.Close(); err != nil {
		return err
	}
	renameErr := os.Rename(req.tmp, h.cfg.Path)
	if renameErr == nil {
		renameErr = syncDir(filepath.Dir(h.cfg.Path))
	}
	db, err := openDB(h.cfg)
	if err != nil {
		h.db = nil
		w.finish(nil, err) // nothing more can be written
		return err
	}
	h.db = db
	w.series = map[string]*seriesState{}
	w.compactPending, w.compactNext = nil, 0
	h.cache.clear()
	if err := h.loadMeta(); err != nil {
		return err
	}
	h.newest.Store(max(h.newest.Load(), req.newest)) // the copy's header may be ahead of its file
	return renameErr
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
