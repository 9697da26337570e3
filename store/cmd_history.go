package store

import (
	"bytes"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/presenced/presenced/proto"
)

// The commands of history (see history.go). BITHISTORY and HISTORY INFO
// read the history files, which the server holds: the store only answers
// that they are not its to serve.

var historyCommands = map[string]handler{
	"bitrestore": bitrestore,
	"bithistory": bithistory,
	"history":    historyCmd,
}

// Error replies of the history commands. A payload that is not a bitmap
// gets RESTORE's text.
const (
	errBadPayload   = "ERR DUMP payload version or checksum are wrong"
	errByteLen      = "ERR bytelen is out of range"
	errByteLenShort = "ERR value is out of range, bytelen must cover the bitmap"
	errServedByNode = " is served by the server"
)

// historyHelp is the reply to HISTORY HELP.
var historyHelp = []string{
	"HISTORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"INFO [<key>]",
	"    Return the retention, the oldest and newest points and the bytes on disk",
	"    of the history, or of the history of <key>.",
	"PURGE <key>",
	"    Erase every recorded point of <key>; its present state is recorded again",
	"    at the next tick.",
	"HELP",
	"    Prints this help.",
}

// bitrestore implements BITRESTORE key bytelen payload [REPLACE]: it
// stores the bitmap payload (roaring's portable serialization) as a
// string of bytelen bytes without TTL, replying 1, or 0 when the key
// exists and REPLACE is not given. Everything is checked first.
func bitrestore(c *ctx, args [][]byte) {
	replace := false
	for _, a := range args[4:] {
		if !isOption(a, "replace") {
			c.w.Error(proto.ErrSyntax)
			return
		}
		replace = true
	}
	n, ok := c.intArg(args[2])
	switch {
	case !ok:
		return
	case n < 0:
		c.w.Error(errByteLen)
		return
	case n > MaxStringLen:
		c.w.Error(proto.ErrStringTooLong)
		return
	}
	bm, ok := parseBitmapPayload(args[3])
	switch {
	case !ok:
		c.w.Error(errBadPayload)
		return
	case !bm.IsEmpty() && int64(bm.Maximum()/8) >= n:
		c.w.Error(errByteLenShort)
		return
	case !replace && c.get(args[1]) != nil:
		c.w.Int(0)
		return
	}
	c.putIn(c.dbIndex, string(args[1]), value{bm: bm, n: n}, 0)
	c.w.Int(1)
}

// parseBitmapPayload decodes a whole payload in roaring's portable
// serialization, reporting whether it is exactly one valid bitmap.
func parseBitmapPayload(p []byte) (bm *roaring.Bitmap, ok bool) {
	defer func() {
		// Fuzzing found no input that makes the decoder panic; a
		// replicated command must not bring every replica down if one
		// exists.
		if recover() != nil {
			bm, ok = nil, false
		}
	}()
	bm = roaring.New()
	read, err := bm.ReadFrom(bytes.NewReader(p))
	if err != nil || read != int64(len(p)) || bm.Validate() != nil {
		return nil, false
	}
	return bm, true
}

func bithistory(c *ctx, _ [][]byte) {
	c.w.Error("ERR BITHISTORY" + errServedByNode)
}

// historyCmd dispatches HISTORY's subcommands. PURGE goes through the
// log: every replica erases the key's points and records its present
// state again.
func historyCmd(c *ctx, args [][]byte) {
	sub := c.subcommand(args)
	switch {
	case sub == nil:
	case sub.Name == "help":
		c.help(historyHelp)
	case sub.Name == "purge":
		c.purge(sub, args[2])
	default:
		c.w.Error("ERR HISTORY " + strings.ToUpper(sub.Name) + errServedByNode)
	}
}

// purge erases the history of key and marks it, so that its present
// state is recorded again.
func (c *ctx) purge(sub *proto.Spec, key []byte) {
	if !c.write {
		c.w.Error("ERR store: write command '" + sub.FullName() + "' on the read path")
		return
	}
	if c.hist != nil {
		c.hist.sink.Purge(c.now, c.dbIndex, string(key))
		c.mark(c.dbIndex, key)
	}
	c.w.OK()
}

// subcommand returns the table entry of the subcommand args[1] of the
// container args[0] when it exists and takes len(args) arguments, and
// otherwise replies Redis's error and returns nil.
func (c *ctx) subcommand(args [][]byte) *proto.Spec {
	parent := proto.Lookup(args[0])
	sub := parent.Sub(args[1])
	switch {
	case sub == nil:
		c.w.Error(proto.ErrUnknownSubcommand(args[1], strings.ToUpper(parent.Name)))
		return nil
	case !sub.CheckArity(len(args)):
		c.w.Error(proto.ErrArity(sub.FullName()))
		return nil
	}
	return sub
}

// help replies a container's help text, one status line each.
func (c *ctx) help(lines []string) {
	c.w.Array(len(lines))
	for _, line := range lines {
		c.w.Simple(line)
	}
}
