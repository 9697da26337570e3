package server

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/presenced/presenced/history"
	"github.com/presenced/presenced/proto"
	"github.com/presenced/presenced/store"
)

// The commands that read the past: the read-only bitmap commands with a
// trailing AT <unix-seconds> or ATMS <unix-ms>, COPY ... AT, BITHISTORY
// and HISTORY INFO. History is local to each node and recorded as the log
// is applied, so they read this node's history once it recorded what the
// node applied (after the read barrier that live reads have).

// Error replies of the history commands.
const (
	errHistoryOff    = "ERR history is not enabled on this server"
	errFromTime      = "ERR BITHISTORY: invalid from time (unix seconds, - or +)"
	errToTime        = "ERR BITHISTORY: invalid to time (unix seconds, - or +)"
	errStep          = "ERR BITHISTORY: STEP must be a positive number of seconds"
	errAggregate     = "ERR BITHISTORY: AGGREGATE must be LAST, MIN, MAX or AVG"
	errAggregateStep = "ERR BITHISTORY: AGGREGATE needs STEP"
)

// errInMulti is the reply to a command that reads the past inside MULTI,
// in the words of Redis's "WATCH inside MULTI is not allowed".
func errInMulti(what string) string { return "ERR " + what + " inside MULTI is not allowed" }

// pastReads are the commands that take a trailing AT or ATMS.
var pastReads = map[string]bool{
	"getbit": true, "getbits": true, "bitcount": true, "bitpos": true, "bitscan": true, "bitopcount": true,
}

// pastTime is an AT <unix-seconds> or ATMS <unix-ms> clause, unparsed.
type pastTime struct {
	word, arg []byte
}

// ms returns the time in unix ms, or false if it is not an integer or
// out of range.
func (p *pastTime) ms() (int64, bool) {
	n, ok := proto.ParseInt(p.arg)
	if !ok || !strings.EqualFold(string(p.word), "AT") {
		return n, ok
	}
	if n > math.MaxInt64/1000 || n < math.MinInt64/1000 {
		return 0, false
	}
	return n * 1000, true
}

// isTimeWord reports whether b is AT or ATMS. It runs for every command
// (see cutPastTime): most arguments are told apart by their first byte,
// since only 'a' and 'A' fold to 'a'.
func isTimeWord(b []byte) bool {
	if len(b) < 2 || b[0]|0x20 != 'a' {
		return false
	}
	return strings.EqualFold(string(b), "AT") || strings.EqualFold(string(b), "ATMS")
}

// cutPastTime removes the AT or ATMS clause of a command that reads the
// past: the trailing pair of a read, an option of COPY. Other commands,
// and commands without the clause, are returned as they are, with nil.
// The arguments are not copied: the result shares args's array.
func cutPastTime(spec *proto.Spec, args [][]byte) ([][]byte, *pastTime) {
	n := len(args)
	switch {
	case n >= 3 && isTimeWord(args[n-2]) && pastReads[spec.Name]:
		return args[:n-2], &pastTime{args[n-2], args[n-1]}
	case spec.Name == "copy":
		for i := 3; i+1 < len(args); i++ {
			switch {
			case strings.EqualFold(string(args[i]), "DB"):
				i++
			case isTimeWord(args[i]):
				at := &pastTime{args[i], args[i+1]}
				return append(args[:i:i], args[i+2:]...), at
			}
		}
	}
	return args, nil
}

// readsHistory reports whether a command is served from the history by
// the server: BITHISTORY and HISTORY INFO.
func readsHistory(spec *proto.Spec, args [][]byte) bool {
	return spec.Name == "bithistory" || spec.Name == "history" && strings.EqualFold(string(args[1]), "INFO")
}

// historyCommand runs a command that reads the history.
func (c *client) historyCommand(spec *proto.Spec, args [][]byte, at *pastTime) {
	if c.multi {
		what := strings.ToUpper(spec.Name)
		if at != nil {
			what = strings.ToUpper(string(at.word))
		} else if spec.Name == "history" {
			what = "HISTORY INFO"
		}
		c.reject(spec, errInMulti(what))
		return
	}
	c.flushPending()
	c.counted(spec, args, func() {
		switch {
		case c.s.history == nil:
			c.out.Error(errHistoryOff)
		case at != nil:
			c.readPast(spec, args, at)
		case spec.Name == "bithistory":
			c.bitHistory(args)
		default:
			c.historyInfo(args)
		}
	})
}

// syncHistory makes sure the history holds, for a query up to time t,
// what this node applied up to now, with the read barrier of a live read
// first; math.MaxInt64 stands for the present. A quiet leader proposes no
// ticks, and the history's newest point moves only with the log's time:
// when that is behind the boundary the query asks about, the leader is
// asked for a tick.
func (c *client) syncHistory(t int64) error {
	if !c.readonly && !c.peer {
		ctx := context.Background()
		if err := c.s.node.ReadBarrier(ctx); err != nil {
			return err
		}
		if c.s.historyBehind(t) {
			if err := c.s.node.Tick(ctx); err != nil {
				return err
			}
		}
	}
	return c.s.history.SyncFor(t)
}

// historyBehind reports whether a history query of time t needs the log's
// time moved on: the history holds nothing after t, and the log's time is
// before the boundary at or before t (or the present, if earlier).
func (s *Server) historyBehind(t int64) bool {
	b := min(t, time.Now().UnixMilli())
	b -= b % store.HistoryTick
	return t > s.history.Newest() && s.store.Now() < b
}

// readPast runs a read (or COPY) at the time of its AT or ATMS clause.
func (c *client) readPast(spec *proto.Spec, args [][]byte, at *pastTime) {
	t, ok := at.ms()
	if !ok {
		c.out.Error(proto.ErrNotInteger)
		return
	}
	if err := c.syncHistory(t); err != nil {
		c.out.Error(replyError(err))
		return
	}
	var err error
	switch {
	case spec.Name == "copy":
		err = c.copyPast(args, t)
	case spec.Name == "bitcount" && len(args) == 2:
		var n uint64
		if n, err = c.s.history.CountAt(c.db, string(args[1]), t); err == nil {
			c.out.Int(int64(n))
		}
	case spec.Name == "bitcount":
		err = c.countPast(args, t)
	case spec.Name == "getbit" && validOffset(args[2]):
		off, _ := proto.ParseInt(args[2])
		var set bool
		if set, err = c.s.history.ContainsAt(c.db, string(args[1]), t, uint32(off)); err == nil {
			c.out.Int(int64(boolInt(set)))
		}
	default:
		err = c.readMaterialized(spec, args, t)
	}
	if err != nil {
		c.out.Error(historyError(err))
	}
}

// countPast runs BITCOUNT key start end [BYTE | BIT] at t, counting in
// the snapshot chain without rebuilding the bitmap; the arguments are
// checked as BITCOUNT checks them, against the key's length at t.
func (c *client) countPast(args [][]byte, t int64) error {
	var msg string
	n, err := c.s.history.CountRangeAt(c.db, string(args[1]), t, func(byteLen uint64) (from, to uint64) {
		from, to, msg = store.BitcountSpan(args, int64(byteLen))
		return from, to
	})
	switch {
	case err != nil:
		return err
	case msg != "":
		c.out.Error(msg)
	default:
		c.out.Int(int64(n))
	}
	return nil
}

// validOffset reports whether b is a bit offset GETBIT accepts.
func validOffset(b []byte) bool {
	n, ok := proto.ParseInt(b)
	return ok && n >= 0 && n <= math.MaxUint32
}

// historyError is the reply to an error of the history: its text (which
// names the range held, for a time outside it) as an ERR.
func historyError(err error) string { return "ERR " + err.Error() }

// readMaterialized runs a read on a store that holds the bitmaps of the
// keys it reads as they were at t, so that its reply is the one the
// command got then.
func (c *client) readMaterialized(spec *proto.Spec, args [][]byte, t int64) error {
	past := store.New()
	var err error
	spec.EachKey(args, func(key []byte) {
		if err != nil {
			return
		}
		var bm *roaring.Bitmap
		var n uint64
		if bm, n, err = c.s.history.BitmapAt(c.db, string(key), t); err == nil && (n > 0 || !bm.IsEmpty()) {
			past.LoadBitmap(0, string(key), bm, n)
		}
	})
	if err != nil {
		return err
	}
	r := c.newReplies()
	past.Read([]store.Command{{DB: 0, Args: args, Spec: spec}}, t, &r)
	c.out.Raw(r.B)
	return nil
}

// copyPast runs COPY source destination [DB n] [REPLACE] at t: the
// source's bitmap at t is written to the destination through the log, as
// BITRESTORE. A source without a bitmap at t copies nothing (:0).
func (c *client) copyPast(args [][]byte, t int64) error {
	db, replace, msg := store.CopyOptions(args, c.db)
	if msg != "" {
		c.out.Error(msg)
		return nil
	}
	bm, n, err := c.s.history.BitmapAt(c.db, string(args[1]), t)
	if err != nil {
		return err
	}
	if n == 0 && bm.IsEmpty() {
		c.out.Int(0)
		return nil
	}
	bm.RunOptimize()
	payload, err := bm.ToBytes()
	if err != nil {
		return err
	}
	restore := [][]byte{[]byte("BITRESTORE"), args[2], strconv.AppendUint(nil, n, 10), payload}
	if replace {
		restore = append(restore, []byte("REPLACE"))
	}
	cmd := store.Command{DB: db, Args: restore, Spec: proto.Lookup(restore[0])}
	r := c.newReplies()
	saved := c.out
	c.out = r
	err = c.runStore([]store.Command{cmd}, true, time.Now())
	r, c.out = c.out, saved
	if err != nil {
		c.out.Error(replyError(err))
		return nil
	}
	c.out.Raw(r.B)
	return nil
}

// historyRange is a parsed BITHISTORY request.
type historyRange struct {
	from, to, step int64 // unix ms; step 0: raw points
	agg            string
}

// parseHistoryRange parses BITHISTORY key from to [STEP seconds]
// [AGGREGATE last|min|max|avg], with from and to in unix seconds, "-" the
// oldest point and "+" the newest. It returns the error reply, if any.
func parseHistoryRange(args [][]byte, oldest, newest int64) (historyRange, string) {
	r := historyRange{agg: history.AggLast}
	var ok bool
	if r.from, ok = rangeEnd(args[2], oldest, newest); !ok {
		return r, errFromTime
	}
	if r.to, ok = rangeEnd(args[3], oldest, newest); !ok {
		return r, errToTime
	}
	aggregate := false
	for i := 4; i < len(args); i += 2 {
		if i+1 == len(args) {
			return r, proto.ErrSyntax
		}
		switch strings.ToLower(string(args[i])) {
		case "step":
			n, isInt := proto.ParseInt(args[i+1])
			if !isInt || n <= 0 || n > math.MaxInt64/1000 {
				return r, errStep
			}
			r.step = n * 1000
		case "aggregate":
			r.agg = strings.ToLower(string(args[i+1]))
			switch r.agg {
			case history.AggLast, history.AggMin, history.AggMax, history.AggAvg:
			default:
				return r, errAggregate
			}
			aggregate = true
		default:
			return r, proto.ErrSyntax
		}
	}
	if aggregate && r.step == 0 {
		return r, errAggregateStep
	}
	return r, ""
}

// rangeEnd parses an end of a BITHISTORY range: unix seconds, or "-" and
// "+" for the oldest and newest times held.
func rangeEnd(b []byte, oldest, newest int64) (int64, bool) {
	switch string(b) {
	case "-":
		return oldest, true
	case "+":
		return newest, true
	}
	n, ok := proto.ParseInt(b)
	if !ok || n > math.MaxInt64/1000 || n < 0 {
		return 0, false
	}
	return n * 1000, true
}

// bitHistory answers BITHISTORY as TS.RANGE does: an array of
// [timestamp in ms, value] pairs, the value a bulk string.
func (c *client) bitHistory(args [][]byte) {
	if err := c.syncHistory(math.MaxInt64); err != nil {
		c.out.Error(replyError(err))
		return
	}
	key := string(args[1])
	r, msg := parseHistoryRange(args, c.s.history.Oldest(), c.s.history.Newest())
	if msg != "" {
		c.out.Error(msg)
		return
	}
	samples, err := c.s.history.Range(c.db, key, r.from, r.to, r.step, r.agg)
	if err != nil {
		c.out.Error(historyError(err))
		return
	}
	c.out.Array(len(samples))
	for _, s := range samples {
		c.out.Array(2)
		c.out.Int(s.Time)
		c.out.BulkString(strconv.FormatFloat(s.Value, 'f', -1, 64))
	}
}

// historyInfo answers HISTORY INFO [key]: key:value lines, as INFO and
// RAFT INFO give, in a bulk string (RESP3: a verbatim string).
func (c *client) historyInfo(args [][]byte) {
	if len(args) > 3 {
		c.out.Error(proto.ErrSyntax)
		return
	}
	if err := c.syncHistory(math.MaxInt64); err != nil {
		c.out.Error(replyError(err))
		return
	}
	var b strings.Builder
	var err error
	if len(args) == 3 {
		err = c.s.keyHistoryInfo(&b, c.db, string(args[2]))
	} else {
		err = c.s.historyTotals(&b)
	}
	if err != nil {
		c.out.Error(historyError(err))
		return
	}
	c.out.Verbatim([]byte(b.String()))
}

// keyHistoryInfo writes the history of one key as key:value lines.
func (s *Server) keyHistoryInfo(b *strings.Builder, db int, key string) error {
	info, err := s.history.Info(db, key)
	if err != nil {
		return err
	}
	fmt.Fprintf(b, "key:%s\r\ndb:%d\r\n", key, db)
	writeHistoryInfo(b, info)
	fmt.Fprintf(b, "oldest_count_ms:%d\r\nnewest_count_ms:%d\r\n", info.OldestCount, info.NewestCount)
	fmt.Fprintf(b, "oldest_snapshot_ms:%d\r\nnewest_snapshot_ms:%d\r\n", info.OldestSnapshot, info.NewestSnapshot)
	return nil
}

// historyTotals writes the history of every key as key:value lines.
func (s *Server) historyTotals(b *strings.Builder) error {
	info, err := s.history.Totals()
	if err != nil {
		return err
	}
	writeHistoryInfo(b, info)
	return nil
}

// infoHistory is INFO's "# History" section.
func (s *Server) infoHistory(b *strings.Builder) {
	b.WriteString("# History\r\n")
	if s.history == nil {
		b.WriteString("history_enabled:0\r\n")
		return
	}
	b.WriteString("history_enabled:1\r\n")
	if err := s.historyTotals(b); err != nil {
		fmt.Fprintf(b, "history_error:%s\r\n", strings.ReplaceAll(err.Error(), "\r\n", " "))
	}
}

// writeHistoryInfo writes info's fields as key:value lines.
func writeHistoryInfo(b *strings.Builder, info history.Info) {
	fmt.Fprintf(b, "retention:%s\r\noldest_ms:%d\r\nnewest_ms:%d\r\n", history.FormatRetention(info.Retention), info.Oldest, info.Newest)
	fmt.Fprintf(b, "points:%d\r\nsnapshots:%d\r\nbytes_on_disk:%d\r\n", info.Points, info.Snapshots, info.Bytes)
}
