package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/presenced/presenced/server/redisserver"
)

// The transaction replies below are redis-server 7.0.15's for the same
// requests.

func TestMultiExecIsAtomic(t *testing.T) {
	const bits, rounds = 100, 40
	srv := startServer(t)
	w, r := dial(t, srv.Addr()), dial(t, srv.Addr())

	var tx []byte
	tx = redisserver.AppendCommand(tx, "MULTI")
	for i := range bits {
		tx = redisserver.AppendCommand(tx, "SETBIT", "k", strconv.Itoa(i*13), "1")
	}
	tx = redisserver.AppendCommand(tx, "EXEC")
	wantExec := "*" + strconv.Itoa(bits) + "\r\n" + strings.Repeat(":0\r\n", bits)

	// The reader counts bits until the writer is done, reporting each
	// count; the writer starts each round after a fresh count, so the two
	// interleave.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	counts := make(chan []byte, 1)
	type result struct {
		seen map[string]int
		err  error
	}
	results := make(chan result, 1)
	go func() {
		res := result{seen: map[string]int{}}
		defer func() { results <- res }()
		cmd := argv("BITCOUNT", "k")
		for {
			select {
			case <-ctx.Done():
				return
			default:
			}
			var n []byte
			if n, res.err = r.conn.Do(cmd...); res.err != nil {
				return
			}
			res.seen[string(n)]++
			select {
			case counts <- n:
			default:
			}
		}
	}()
	for range rounds {
		<-counts
		w.send(tx)
		got := w.replies(bits + 2)
		if want := "+OK\r\n" + strings.Repeat("+QUEUED\r\n", bits) + wantExec; got != want {
			t.Fatalf("transaction replies: got %.200q", got)
		}
		<-counts
		w.expect(":1\r\n", "DEL", "k")
	}
	stop()
	res := <-results
	if res.err != nil {
		t.Fatalf("reader: %v", res.err)
	}
	for n, times := range res.seen {
		if n != ":0\r\n" && n != ":"+strconv.Itoa(bits)+"\r\n" {
			t.Errorf("a reader saw BITCOUNT %q (%d times): part of a transaction", n, times)
		}
	}
	if len(res.seen) < 2 {
		t.Errorf("the reader saw only %q: it did not interleave with the writer", fmt.Sprint(res.seen))
	}
}

// TestMultiKeepsQueuedArguments queues enough commands, of arguments
// short, empty and longer than a chunk, sent in many reads of one reused
// input buffer, that their copies span several argument chunks; each value
// must come back as it was queued.
func TestMultiKeepsQueuedArguments(t *testing.T) {
	const commands = 1500
	srv := startServer(t)
	c := dial(t, srv.Addr())
	value := func(i int) string {
		switch i % 7 {
		case 0:
			return ""
		case 3:
			return strings.Repeat(strconv.Itoa(i%10), queueChunkBytes+i)
		}
		return strings.Repeat("v", i%40) + strconv.Itoa(i)
	}
	c.expect("+OK\r\n", "MULTI")
	for i := 0; i < commands; i += 50 {
		var b []byte
		for j := i; j < i+50; j++ {
			b = redisserver.AppendCommand(b, "SET", "key:"+strconv.Itoa(j), value(j))
		}
		c.send(b)
		if got, want := c.replies(50), strings.Repeat("+QUEUED\r\n", 50); got != want {
			t.Fatalf("queueing SETs %d to %d: got %.100q", i, i+49, got)
		}
	}
	if got, want := c.do("EXEC"), "*"+strconv.Itoa(commands)+"\r\n"+strings.Repeat("+OK\r\n", commands); got != want {
		t.Fatalf("EXEC: got %.100q", got)
	}
	for i := range commands {
		v := value(i)
		c.expect("$"+strconv.Itoa(len(v))+"\r\n"+v+"\r\n", "GET", "key:"+strconv.Itoa(i))
	}
}

func TestMultiErrors(t *testing.T) {
	c := dial(t, startServer(t).Addr())
	c.expect("-ERR EXEC without MULTI\r\n", "EXEC")
	c.expect("-ERR DISCARD without MULTI\r\n", "DISCARD")
	c.expect("-ERR wrong number of arguments for 'multi' command\r\n", "MULTI", "x")
	c.expect("-EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command\r\n", "EXEC", "x")

	for _, tc := range []struct{ name, send, want string }{
		// Errors while queueing doom the transaction.
		{"queued errors", "MULTI\r\nSET a 1\r\nfoo\r\nGET\r\nEXEC\r\nEXISTS a\r\n",
			"+OK\r\n+QUEUED\r\n-ERR unknown command 'foo', with args beginning with: \r\n" +
				"-ERR wrong number of arguments for 'get' command\r\n" +
				"-EXECABORT Transaction discarded because of previous errors.\r\n:0\r\n"},
		// Errors while executing are replies like any other; the rest runs.
		{"runtime errors", "MULTI\r\nSET a x\r\nINCR a\r\nSET b 2\r\nEXEC\r\nGET b\r\n",
			"+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*3\r\n+OK\r\n-ERR value is not an integer or out of range\r\n+OK\r\n$1\r\n2\r\n"},
		// A nested MULTI is refused without dooming the transaction.
		{"nested MULTI", "MULTI\r\nMULTI\r\nSET na 1\r\nEXEC\r\nGET na\r\n",
			"+OK\r\n-ERR MULTI calls can not be nested\r\n+QUEUED\r\n*1\r\n+OK\r\n$1\r\n1\r\n"},
		// A refused EXEC ends the transaction.
		{"refused EXEC", "MULTI\r\nSET ex 1\r\nEXEC x\r\nEXEC\r\nEXISTS ex\r\n",
			"+OK\r\n+QUEUED\r\n-EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command\r\n-ERR EXEC without MULTI\r\n:0\r\n"},
		{"DISCARD", "MULTI\r\nSET d 1\r\nDISCARD x\r\nDISCARD\r\nEXISTS d\r\n",
			"+OK\r\n+QUEUED\r\n-ERR wrong number of arguments for 'discard' command\r\n+OK\r\n:0\r\n"},
		{"server commands in MULTI", "MULTI\r\nPING\r\nECHO x\r\nEXEC\r\n",
			"+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+PONG\r\n$1\r\nx\r\n"},
	} {
		c.send([]byte(tc.send))
		if got := c.replies(countReplies(t, tc.want)); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}

	c.send([]byte("MULTI\r\nSET q 1\r\nQUIT\r\n"))
	if got := c.replies(3); got != "+OK\r\n+QUEUED\r\n+OK\r\n" {
		t.Errorf("QUIT in MULTI: got %q", got)
	}
	c.expectClosed()
	dial(t, c.conn.NetConn().RemoteAddr().String()).expect(":0\r\n", "EXISTS", "q")
}

func TestSelectInsideMulti(t *testing.T) {
	c := dial(t, startServer(t).Addr())
	c.send([]byte("MULTI\r\nSET k db0\r\nSELECT 1\r\nSET k db1\r\nSELECT 99\r\nSET j db1\r\nEXEC\r\n"))
	want := "+OK\r\n" + strings.Repeat("+QUEUED\r\n", 5) +
		"*5\r\n+OK\r\n+OK\r\n+OK\r\n-ERR DB index is out of range\r\n+OK\r\n"
	if got := c.replies(7); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// The SELECT stays in force after EXEC.
	c.expect("$3\r\ndb1\r\n", "GET", "k")
	c.expect("$3\r\ndb1\r\n", "GET", "j")
	c.expect("+OK\r\n", "SELECT", "0")
	c.expect("$3\r\ndb0\r\n", "GET", "k")
	c.expect(":0\r\n", "EXISTS", "j")
}

// redisPyScript drives a server with redis-py's transactional pipelines
// and prints their results as JSON.
const redisPyScript = `
import json, sys, redis
r = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]))
p = r.pipeline(transaction=True)
for i in range(0, 1000, 10):
    p.setbit("online:bitmap:3", i, 1)
p.bitcount("online:bitmap:3")
p.set("online:total", 42, ex=15)
p.get("online:total")
p.ttl("online:total")
res = p.execute()
out = {"setbit": res[:100], "bitcount": res[100], "set": res[101], "get": res[102].decode(), "ttl": res[103]}
p = r.pipeline(transaction=True)
p.set("s", "x")
p.incr("s")
p.set("after", 1)
res = p.execute(raise_on_error=False)
out["errors"] = [type(e).__name__ + ": " + str(e) if isinstance(e, Exception) else e for e in res]
print(json.dumps(out))
`

// pythonWithRedis returns the first python3 on PATH that can import
// redis-py: a version manager's python3 may come before the system one
// that has the distribution's python3-redis. It skips the test when there
// is none, unless CI=true.
func pythonWithRedis(t *testing.T) string {
	t.Helper()
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		python := filepath.Join(dir, "python3")
		if osexec.Command(python, "-c", "import redis").Run() == nil {
			return python
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no python3 on PATH can import redis (python3-redis) and CI=true")
	}
	t.Skip("no python3 on PATH can import redis (python3-redis)")
	return ""
}

func TestRedisPyTransaction(t *testing.T) {
	python := pythonWithRedis(t)
	srv := startServer(t)
	_, port, _ := strings.Cut(srv.Addr(), ":")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := osexec.CommandContext(ctx, python, "-c", redisPyScript, port).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-py: %v\n%s", err, out)
	}
	var got struct {
		SetBit   []int64 `json:"setbit"`
		BitCount int64   `json:"bitcount"`
		Set      bool    `json:"set"`
		Get      string  `json:"get"`
		TTL      int64   `json:"ttl"`
		Errors   []any   `json:"errors"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("redis-py output %q: %v", out, err)
	}
	if len(got.SetBit) != 100 || got.BitCount != 100 || !got.Set || got.Get != "42" || got.TTL < 14 || got.TTL > 15 {
		t.Errorf("redis-py transaction results: %s", out)
	}
	for _, n := range got.SetBit {
		if n != 0 {
			t.Errorf("SETBIT of a fresh bit returned %d", n)
		}
	}
	wantErrors := []any{true, "ResponseError: value is not an integer or out of range", true}
	if !reflect.DeepEqual(got.Errors, wantErrors) {
		t.Errorf("redis-py transaction with an error: %q, want %q", got.Errors, wantErrors)
	}
	c := dial(t, srv.Addr())
	c.expect(":100\r\n", "BITCOUNT", "online:bitmap:3")
	c.expect("$1\r\n1\r\n", "GET", "after")
}
