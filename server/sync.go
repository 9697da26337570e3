package server

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/presenced/presenced/proto"
	"github.com/presenced/presenced/store"
)

// SYNC is how a Redis replica asks its master for the whole dataset, and
// how `redis-cli --rdb` takes a backup: the master answers with an RDB
// file, as a bulk string without the final CRLF. presenced answers with
// one written from a snapshot of this node's store (see
// store.Snapshot.WriteRDB), after a read barrier as for any read unless
// the connection sent READONLY, and then closes the connection: it
// streams no replication after the file, so a redis-server cannot follow
// it as a replica, but the file loads into one.

// syncChunk is how much of the file SYNC sends at a time.
const syncChunk = 256 << 10

// syncCommand answers SYNC.
func syncCommand(c *client, _ [][]byte) {
	if !c.readonly {
		if err := c.readBarrier(); err != nil {
			c.out.Error(replyError(err))
			return
		}
	}
	f, err := os.CreateTemp(c.s.node.Config().Dir, "temp-sync-*.rdb")
	if err != nil {
		c.out.Error("ERR " + err.Error())
		return
	}
	defer os.Remove(f.Name())
	defer f.Close()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	size, err := c.s.store.Snapshot().WriteRDB(f, store.RDBInfo{
		RedisVersion: redisVersion, Created: time.Now().Unix(), UsedMemory: int64(m.HeapAlloc),
	})
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		c.out.Error("ERR " + err.Error())
		return
	}
	c.closing = true
	c.s.stats.syncs.Add(1)
	c.out.B = fmt.Appendf(c.out.B, "$%d\r\n", size)
	buf := make([]byte, syncChunk)
	for err == nil {
		if err = c.writeOut(); err != nil {
			return
		}
		var n int
		n, err = f.Read(buf)
		c.out.B = append(c.out.B, buf[:n]...)
	}
	c.writeOut()
}

// replconf answers REPLCONF, with which a replica tells its master of
// itself before SYNC. presenced checks the options as Redis does and
// keeps none of them: `rdb-only` (`redis-cli --rdb` sends it) changes
// nothing, since SYNC always ends after the file. The options only a
// replica's link uses (ACK, GETACK) are not known here.
func replconf(c *client, args [][]byte) {
	if len(args)%2 == 0 {
		c.out.Error(proto.ErrSyntax)
		return
	}
	for j := 1; j < len(args); j += 2 {
		switch opt, val := strings.ToLower(string(args[j])), args[j+1]; opt {
		case "listening-port":
			if _, ok := proto.ParseInt(val); !ok {
				c.out.Error(proto.ErrNotInteger)
				return
			}
		case "ip-address":
			if len(val) >= replconfMaxAddr {
				c.out.Error(fmt.Sprintf("ERR REPLCONF ip-address provided by replica instance is too long: %d bytes", len(val)))
				return
			}
		case "capa":
		case "rdb-only":
			if n, ok := proto.ParseInt(val); !ok {
				c.out.Error(proto.ErrNotInteger)
				return
			} else if n < 0 || n > 1 {
				c.out.Error("ERR value is out of range, value must between 0 and 1")
				return
			}
		default:
			c.out.Error("ERR Unrecognized REPLCONF option: " + string(args[j]))
			return
		}
	}
	c.out.OK()
}

// replconfMaxAddr is Redis's NET_HOST_STR_LEN: the room for a host name
// in REPLCONF ip-address, its end included.
const replconfMaxAddr = 256
