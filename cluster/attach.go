package cluster

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// Attachment is node-local state that travels with raft snapshots
// without being part of them: the history of the store, say. A snapshot
// taken by this node holds the store alone; when the snapshot is opened,
// to be sent to a follower or restored at start, a copy of the attachment
// is appended to it, and restoring such a snapshot hands the copy to
// RestoreCopy. So the attachment costs nothing while the store is
// snapshotted, and a node that joins late still receives it.
type Attachment interface {
	// OpenCopy returns a consistent copy of the attachment and its exact
	// size in bytes. The caller closes the reader.
	OpenCopy() (io.ReadCloser, int64, error)
	// RestoreCopy installs a copy written by OpenCopy on any node, unless
	// the local state is at least as new: then it keeps the local state.
	// It reads r to the end or returns an error.
	RestoreCopy(r io.Reader) error
	// Err returns the error that stopped the attachment from following
	// the applied log, nil while it follows it. A node whose log is on
	// disk takes no snapshot meanwhile, which would drop from the log the
	// entries a restart replays into the attachment.
	Err() error
}

// A framed snapshot is the state machine's snapshot followed by a copy of
// the attachment:
//
//	[8]byte magic "PSDFRAME" (a snapshot's first byte is its version, 1)
//	uint64  size of the snapshot, little endian
//	uint64  size of the attachment's copy, little endian
//	uint32  CRC-32C of the 24 bytes before it, little endian
//	        the snapshot, then the attachment's copy
const (
	frameMagic     = "PSDFRAME"
	frameHeaderLen = len(frameMagic) + 8 + 8 + 4
)

func encodeFrameHeader(state, attachment int64) []byte {
	h := make([]byte, 0, frameHeaderLen)
	h = append(h, frameMagic...)
	h = binary.LittleEndian.AppendUint64(h, uint64(state))
	return appendChecksum(binary.LittleEndian.AppendUint64(h, uint64(attachment)))
}

// readFrameHeader reads the frame header at the start of r, if there is
// one: framed is false, and nothing is consumed, for a snapshot without.
func readFrameHeader(r *bufio.Reader) (state, attachment int64, framed bool, err error) {
	if !isFramed(r) {
		return 0, 0, false, nil
	}
	var h [frameHeaderLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, 0, true, fmt.Errorf("%w: frame header: %v", ErrBadSnapshot, err)
	}
	body := h[:frameHeaderLen-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(h[frameHeaderLen-4:]) {
		return 0, 0, true, fmt.Errorf("%w: frame header checksum mismatch", ErrBadSnapshot)
	}
	state = int64(binary.LittleEndian.Uint64(body[len(frameMagic):]))
	attachment = int64(binary.LittleEndian.Uint64(body[len(frameMagic)+8:]))
	if state < 0 || attachment < 0 {
		return 0, 0, true, fmt.Errorf("%w: frame sizes out of range", ErrBadSnapshot)
	}
	return state, attachment, true, nil
}

// attachedSnapshots wraps raft's snapshot store so that a leader opening
// a snapshot, to send it to a follower, appends a copy of its attachment
// as it is now to the snapshot's state; a snapshot that is already framed
// (one the node received as a follower and stored) has its old copy
// replaced. On any other node, and until live is set while raft restores
// the node's own snapshot at start, a snapshot is opened as it is stored:
// a follower restores the copy it received, and at start the node's own
// attachment would only be handed back to itself.
type attachedSnapshots struct {
	raft.SnapshotStore
	att     Attachment
	live    *atomic.Bool
	leading func() bool // called only once live is set
}

// Open implements raft.SnapshotStore.
func (s attachedSnapshots) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, err := s.SnapshotStore.Open(id)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReader(rc)
	if !s.live.Load() || !s.leading() {
		return meta, readCloser{br, []io.Closer{rc}}, nil
	}
	state, _, framed, err := readFrameHeader(br)
	if err != nil {
		rc.Close()
		return nil, nil, err
	}
	if !framed {
		state = meta.Size
	}
	ac, size, err := s.att.OpenCopy()
	if err != nil {
		rc.Close()
		return nil, nil, fmt.Errorf("cluster: copying the snapshot attachment: %w", err)
	}
	framedMeta := *meta
	framedMeta.Size = int64(frameHeaderLen) + state + size
	body := io.MultiReader(bytes.NewReader(encodeFrameHeader(state, size)),
		exactReader(br, state), exactReader(ac, size))
	return &framedMeta, readCloser{body, []io.Closer{rc, ac}}, nil
}

// isFramed reports whether r starts with a frame header, without
// consuming anything.
func isFramed(r *bufio.Reader) bool {
	magic, _ := r.Peek(len(frameMagic))
	return string(magic) == frameMagic
}

// readCloser reads from one reader and closes others.
type readCloser struct {
	io.Reader
	closers []io.Closer
}

// Close closes every closer and returns the first error.
func (r readCloser) Close() error {
	var err error
	for _, c := range r.closers {
		err = errors.Join(err, c.Close())
	}
	return err
}

// exactReader reads exactly n bytes of r: it fails with
// io.ErrUnexpectedEOF if r ends early, and stops after n.
func exactReader(r io.Reader, n int64) io.Reader {
	return &exact{r: io.LimitReader(r, n), left: n}
}

type exact struct {
	r    io.Reader
	left int64
}

func (e *exact) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if err == io.EOF && e.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// restoreFramed restores a snapshot as written by a snapshot store
// wrapped by attachedSnapshots: a framed one restores its state with
// restore and hands its attachment's copy to att (or skips it when att is
// nil); an unframed one (taken before attachments, or by a node without
// one) restores its state alone.
func restoreFramed(r io.Reader, att Attachment, restore func(io.Reader) error) error {
	br := bufio.NewReader(r)
	state, attachment, framed, err := readFrameHeader(br)
	if err != nil {
		return err
	}
	if !framed {
		return restore(br)
	}
	part := exactReader(br, state)
	if err := restore(part); err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, part); err != nil {
		return fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	part = exactReader(br, attachment)
	if att != nil {
		if err := att.RestoreCopy(part); err != nil {
			return fmt.Errorf("cluster: restoring the snapshot attachment: %w", err)
		}
	}
	if _, err := io.Copy(io.Discard, part); err != nil {
		return fmt.Errorf("%w: attachment: %v", ErrBadSnapshot, err)
	}
	return nil
}
