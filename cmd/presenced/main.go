// Command presenced runs the presenced server: a Redis-compatible presence
// store on roaring bitmaps.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	_ "net/http/pprof" // served only when --pprof-addr is set
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/presenced/presenced/history"
	"github.com/presenced/presenced/internal/gctune"
	"github.com/presenced/presenced/server"
	"github.com/presenced/presenced/store"
)

// gcHeadroom is how much the heap may grow between collections at least,
// however small the live heap, and gcSpacing the time at the pace of
// allocation that it may grow for, when that is more (see gctune).
const (
	gcHeadroom = 16 << 20
	gcSpacing  = 50 * time.Millisecond
)

func main() {
	cfg := server.DefaultConfig()
	fs := flag.NewFlagSet("presenced", flag.ExitOnError)
	fs.StringVar(&cfg.Bind, "bind", cfg.Bind, "address to listen on")
	fs.IntVar(&cfg.Port, "port", cfg.Port, "TCP port (0 picks a free one)")
	fs.StringVar(&cfg.Dir, "dir", cfg.Dir, "data directory")
	fs.StringVar(&cfg.RequirePass, "requirepass", cfg.RequirePass, "password clients must AUTH with")
	fs.IntVar(&cfg.MaxClients, "maxclients", cfg.MaxClients, "most clients served at once")
	fs.StringVar(&cfg.UnixSocket, "unixsocket", "", "path of a unix socket that serves clients too")
	fs.Func("unixsocketperm", "the unix socket's permissions, in octal (e.g. 700)", func(v string) error {
		perm, err := server.ParseUnixSocketPerm(v)
		cfg.UnixSocketPerm = perm
		return err
	})
	tc := server.DefaultTLSConfig()
	fs.IntVar(&tc.Port, "tls-port", 0, "port that serves clients over TLS, beside --port (0: none)")
	fs.StringVar(&tc.CertFile, "tls-cert-file", "", "the TLS port's certificate (PEM)")
	fs.StringVar(&tc.KeyFile, "tls-key-file", "", "the TLS port's private key (PEM)")
	fs.StringVar(&tc.CACertFile, "tls-ca-cert-file", "", "certificates (PEM) that TLS clients' certificates must chain to")
	fs.StringVar(&tc.AuthClients, "tls-auth-clients", tc.AuthClients, "yes: TLS clients must show a certificate; optional: checked if shown; no: not asked for")
	yesNoFlag(fs, &tc.Cluster, "tls-cluster", "yes: nodes call on each other over TLS too, with --tls-cert-file as their certificate, checked against --tls-ca-cert-file")
	cc := &cfg.Cluster
	fs.StringVar(&cc.NodeID, "node-id", cc.NodeID, "this node's name in the cluster (no spaces, control characters, ',' or '='), never reused")
	fs.StringVar(&cc.RaftAddr, "raft-addr", cc.RaftAddr, "host:port for raft and other nodes' calls; other nodes reach this node there")
	fs.StringVar(&cc.RaftAdvertise, "raft-advertise", "", "host:port other nodes reach --raft-addr at, if different (behind a proxy or NAT)")
	fs.StringVar(&cc.Join, "join", "", "host:port of any member's client port: join that cluster (when --dir holds no cluster yet)")
	yesNoFlag(fs, &cc.AppendOnly, "appendonly", "yes: keep the raft log and snapshots in --dir, to restart with the data; no: in memory")
	fs.StringVar(&cc.AppendFsync, "appendfsync", cc.AppendFsync, "always: fsync before acknowledging; everysec: once a second; no: leave it to the OS")
	fs.IntVar(&cc.MaxBatchBytes, "max-write-bytes", cc.MaxBatchBytes, "the most bytes one batch of writes (a command, a pipeline's batch, a MULTI block) may carry through the raft log; a node with other voters refuses a larger one")
	fs.StringVar(&cc.LogLevel, "raft-log-level", cc.LogLevel, "the least severe of raft's log lines written: trace, debug, info, warn or error")
	pprofAddr := fs.String("pprof-addr", "", "serve Go's pprof profiles over HTTP on this address (e.g. 127.0.0.1:6060)")
	var bitTTL []store.BitTTLRule
	fs.Func("bit-ttl", "a bit-TTL rule, <pattern>=<seconds>, e.g. 'online:*=90s': SETBIT 1 on a matching key arms that TTL for the bit (repeatable; the first match wins)", func(v string) error {
		r, err := server.ParseBitTTLFlag(v)
		bitTTL = append(bitTTL, r)
		return err
	})
	hc := &cfg.History
	fs.Func("history-interval", "time between two bitmap snapshots of a changed key, a multiple of 100ms (default 60s)", func(v string) error {
		d, err := parseHistoryInterval(v)
		hc.Interval = d
		return err
	})
	fs.Func("history-retention", "history kept, as step:keep tiers, e.g. '1m:2d,1h:90d' (the default): minute snapshots for 2 days, hourly ones for 90 days; counts for the longest", func(v string) error {
		tiers, err := history.ParseRetention(v)
		if err != nil {
			return fmt.Errorf("--history-retention %q: %w", v, err)
		}
		hc.Retention = tiers
		return nil
	})
	fs.Func("history-keys", "glob pattern of the keys whose history is recorded, e.g. 'online:*' (repeatable or comma-separated; default every key)", func(v string) error {
		keys, err := parseKeyPatterns("history-keys", v)
		hc.Keys = append(hc.Keys, keys...)
		return err
	})
	fs.StringVar(&cfg.AnnounceIP, "cluster-announce-ip", "", "the host clients are told to reach this node at (CLUSTER, SENTINEL), if not its listener's")
	fs.IntVar(&cfg.AnnouncePort, "cluster-announce-port", 0, "the port clients are told to reach this node at, if not --port (0)")
	fs.IntVar(&cfg.AnnounceTLSPort, "cluster-announce-tls-port", 0, "the port TLS clients are told to reach this node at, if not --tls-port (0)")
	yesNoFlag(fs, &cfg.ClusterEnabled, "cluster-enabled", "yes: answer CLUSTER as Redis Cluster's nodes do, one shard holding every slot, for clients built for Redis Cluster")
	fs.StringVar(&cfg.MasterName, "master-name", cfg.MasterName, "the master name SENTINEL answers for: clients built for Redis Sentinel find the leader by it")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus metrics over HTTP at /metrics on this address (e.g. 127.0.0.1:9121)")
	fs.Func("metrics-keys", "glob pattern of the keys whose set bits the metrics report, e.g. 'online:bitmap:*' (repeatable or comma-separated; default none)", func(v string) error {
		keys, err := parseKeyPatterns("metrics-keys", v)
		cfg.MetricsKeys = append(cfg.MetricsKeys, keys...)
		return err
	})
	recoverAlone := fs.Bool("recover", false, "make this node, with the data in --dir, the only voter of its cluster, and exit: for a cluster that lost a majority of its nodes for good (start it again without --recover, then join new nodes to it)")
	version := fs.Bool("version", false, "print the version and exit")
	fs.Parse(os.Args[1:])
	if *version {
		fmt.Println("presenced", server.Version)
		return
	}
	if tc.Port != 0 {
		cfg.TLS = &tc
	} else if tc.Cluster {
		log.Fatalf("presenced: --tls-cluster yes needs --tls-port and its certificates")
	}
	switch {
	case *recoverAlone && cc.Join != "":
		log.Fatalf("presenced: --recover makes a cluster of this node alone: it takes no --join")
	case *recoverAlone && !cc.AppendOnly:
		log.Fatalf("presenced: --recover needs --appendonly yes: it recovers the raft log and snapshots in --dir")
	}
	cc.Dir = cfg.Dir
	cc.Bootstrap = cc.Join == "" && !*recoverAlone
	cc.Recover = *recoverAlone
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		log.Fatalf("presenced: %v", err)
	}
	if os.Getenv("GOGC") == "" {
		// The heap is mostly long-lived, pointer-free bitmap containers:
		// collecting at a quarter of the usual growth keeps memory near
		// the data (containers that outgrow themselves leave garbage
		// behind) for little marking work. While the live heap is small,
		// a quarter of it is soon allocated by writes: the heap may then
		// grow by gcHeadroom, or by what it allocates in gcSpacing (by
		// four times the live heap at most), so that a node serving
		// writes, large values among them, does not collect dozens of
		// times a second.
		gctune.Tune(25, gcHeadroom, gcSpacing)
	}
	if *pprofAddr == "" {
		// Without pprof nobody reads heap profiles: don't keep their
		// buckets (about a megabyte of memory).
		runtime.MemProfileRate = 0
	} else {
		go func() { log.Printf("presenced: pprof: %v", http.ListenAndServe(*pprofAddr, nil)) }()
	}
	// Caught from before the first reply: a SIGTERM right after it stops
	// the server cleanly, as one later does.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	// Redis ignores SIGHUP and SIGPIPE: the server outlives the terminal it
	// started in, and the program reading its log.
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	srv, err := server.New(cfg)
	if err != nil {
		log.Fatalf("presenced: %v", err)
	}
	if *recoverAlone {
		applied := srv.Node().Applied()
		if err := srv.Close(); err != nil {
			log.Fatalf("presenced: %v", err)
		}
		log.Printf("presenced: recovered: node %s is its cluster's only voter, with its data up to raft index %d; start it without --recover, and join other nodes to it from empty data dirs", cc.NodeID, applied)
		return
	}
	if err := srv.Start(); err != nil {
		log.Fatalf("presenced: %v", err)
	}
	if *metricsAddr != "" {
		if err := serveMetrics(*metricsAddr, srv); err != nil {
			srv.Close()
			log.Fatalf("presenced: %v", err)
		}
	}
	if tlsAddr := srv.TLSAddr(); tlsAddr != "" {
		log.Printf("presenced: TLS clients on %s", tlsAddr)
	}
	log.Printf("presenced %s ready to accept connections on %s", server.Version, srv.Addr())
	if bitTTL != nil {
		go func() {
			if err := srv.SetBitTTL(context.Background(), bitTTL); err != nil {
				log.Printf("presenced: --bit-ttl rules not installed: %v", err)
			}
		}()
	}
	select {
	case <-sig:
		log.Printf("presenced: shutting down")
	case <-srv.ShutdownRequested():
		log.Printf("presenced: shutting down (SHUTDOWN from a client)")
	}
	srv.Close()
}

// parseHistoryInterval parses --history-interval: a Go duration that is a
// positive multiple of the history's tick.
func parseHistoryInterval(v string) (time.Duration, error) {
	tick := time.Duration(store.HistoryTick) * time.Millisecond
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 || d%tick != 0 {
		return 0, fmt.Errorf("--history-interval %q: want a positive multiple of %v, e.g. 60s", v, tick)
	}
	return d, nil
}

// parseKeyPatterns parses one value of the flag name (--history-keys,
// --metrics-keys): comma-separated glob patterns, none empty.
func parseKeyPatterns(name, v string) ([]string, error) {
	keys := strings.Split(v, ",")
	for _, k := range keys {
		if k == "" {
			return nil, fmt.Errorf("--%s %q: want comma-separated glob patterns, none empty, e.g. 'online:*'", name, v)
		}
	}
	return keys, nil
}

// serveMetrics serves the node's Prometheus metrics, with the Go
// runtime's and the process's, at /metrics on addr: it listens before it
// returns, and serves in a goroutine of its own.
func serveMetrics(addr string, srv *server.Server) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--metrics-addr: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(srv.Collector(), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	go func() { log.Printf("presenced: metrics: %v", http.Serve(ln, mux)) }()
	return nil
}

// yesNoFlag defines a flag that sets *p from "yes" or "no", as redis.conf
// spells such settings; its default is *p.
func yesNoFlag(fs *flag.FlagSet, p *bool, name, usage string) {
	fs.Func(name, fmt.Sprintf("%s (default %s)", usage, yesNo(*p)), func(v string) error {
		switch v {
		case "yes", "no":
			*p = v == "yes"
			return nil
		}
		return fmt.Errorf("--%s must be yes or no, not %q", name, v)
	})
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
